"""PPCVGAE (privacy-preserving conditional variational graph autoencoders)."""
