"""The package version (the bottom layer: release files and stored trials record it)."""

__version__ = "0.1.0"
