"""Node ids as a user's edge list writes them, parsed without guessing (:mod:`privgraph.data.io` documents
the rule): an id is an *integer id* only when it is ASCII digits (``[0-9]+``: no sign, no ``_``, no
Unicode digits such as ``１``, ``١٢`` or ``²``); every other id is text.  Integer ids are the node
indices 0..n−1 (:func:`index_ids`) only when they are written plainly (no leading zero), fit an int64
and make a plausible node count (:func:`plausible_nodes`); otherwise they are ids like any other,
mapped through the id map, never used as an array size."""

from __future__ import annotations

import re

import numpy as np

INTEGER_ID = re.compile(r"[0-9]+", re.ASCII)  # an integer id: ASCII digits only
_INDEX = re.compile(r"0|[1-9][0-9]{0,17}", re.ASCII)  # a node index: no leading zero, below 10**18 (int64)

# A node count is plausible when at most this many nodes, or at most twice the nodes the file names:
# ids 0..n-1 with more isolated nodes than named ones (e.g. ids up to 10**12 on 5 nodes) are ids, not sizes.
MIN_NODES_ALLOWED = 1 << 20


def is_integer_id(text: str) -> bool:
    """Whether ``text`` is an integer id: ASCII digits only (``[0-9]+``)."""
    return INTEGER_ID.fullmatch(text) is not None


def plausible_nodes(num_nodes: int, named: int) -> bool:
    """Whether ``num_nodes`` nodes, of which ``named`` appear in the input, is a size to allocate: at most
    ``MIN_NODES_ALLOWED`` (2**20), or at most twice the named nodes."""
    return num_nodes <= max(MIN_NODES_ALLOWED, 2 * named)


def index_ids(tokens: np.ndarray, size: int | None = None) -> np.ndarray | None:
    """The ids as node indices (int64) when every one is written as an index (``0`` or ASCII digits without
    a leading zero, below 10**18) and the node count they imply is plausible (``size``, the side files' row
    count, when given: then any index, the reader refuses one past the rows; else the largest id + 1,
    :func:`plausible_nodes`), else None (the ids are mapped)."""
    flat = tokens.reshape(-1).tolist()
    if not flat or not all(_INDEX.fullmatch(t) for t in flat):
        return None
    indices = tokens.astype(np.int64)
    if size is None and not plausible_nodes(int(indices.max()) + 1, len(set(flat))):
        return None
    return indices


def id_order(ids: set[str] | list[str]) -> list[str]:
    """The nodes' order (node i is the i-th id): by integer value when every id is an integer id (ASCII
    digits; equal values written differently, ``7`` and ``07``, are two ids, by text), else by text (Unicode
    code points).  It depends on the set of ids alone, not on the files' row order."""
    if all(is_integer_id(i) for i in ids):
        return sorted(ids, key=lambda i: (len(i.lstrip("0")), i.lstrip("0"), i))
    return sorted(ids)


def sparse_note(num_ids: int, largest: str) -> tuple[str, str]:
    """The note (curator's, public) when integer ids are mapped rather than used as indices."""
    return (
        f"integer node ids up to {largest} name only {num_ids} nodes: read as ids (mapped to 0..n-1), "
        "not as indices, so no node count is taken from them",
        "integer node ids too sparse or too large to be indices: read as ids (mapped to 0..n-1)",
    )
