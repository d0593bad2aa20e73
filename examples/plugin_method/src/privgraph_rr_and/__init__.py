"""An example privgraph plugin: RR-AND (:class:`~privgraph_rr_and.method.RandomizedResponseAnd`), registered
through the entry point ``rr-and`` of the group ``privgraph.methods`` (pyproject.toml)."""

from privgraph_rr_and.method import RandomizedResponseAnd

__all__ = ["RandomizedResponseAnd"]
