"""An edge list's rows checked in file order, before the graph checks (:func:`~privgraph.data.check_graph`):
every defect is named by its line (1-based, the first in the file) and its node ids as written.  Self-loops
(when not allowed) and copies of one edge that disagree on the private flag are refused; a duplicated edge is
merged (its first row kept, the curator told which row repeated which) unless ``strict``; in an undirected
graph the two directions of an edge must carry the same private flag."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from privgraph.data.files import input_error
from privgraph.data.validation import Note, plural


class EdgeRows(NamedTuple):
    """An edge list after its row checks: the columns kept (internal indices), their private flags, the lines
    they were read from and the written ids [2, E]."""

    edge_index: Tensor
    mask: Tensor | None
    lines: np.ndarray
    tokens: np.ndarray


def _pair(tokens: np.ndarray, column: int) -> str:
    return f"({tokens[0, column]}, {tokens[1, column]})"


def check_rows(
    rows: EdgeRows, *, num_nodes: int, self_loops: bool, strict: bool, directed: bool, name: str, notes: list
) -> EdgeRows:
    """``rows`` checked in file order (module docstring); returns them without the repeated copies, with a
    curator's note (:class:`Note`: the public text has no ids and no count) when some were merged."""
    edge_index, mask, lines, tokens = rows
    src, dst = (edge_index[0].numpy(), edge_index[1].numpy())
    if not self_loops:
        loops = np.flatnonzero(src == dst)
        if loops.size:
            first = int(loops[0])
            raise input_error(
                f"{name}, line {int(lines[first])}: self-loop {_pair(tokens, first)} ({plural(loops.size, 'self-loop')}"
                " in the file); the method needs a simple graph: remove the rows whose two ids are one node"
            )
    keys = src.astype(np.int64) * int(num_nodes) + dst.astype(np.int64)
    _, first_of, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    repeated = np.flatnonzero(first_of[inverse] != np.arange(keys.size))
    if repeated.size:
        if mask is not None:
            flags = mask.numpy()
            clash = repeated[flags[repeated] != flags[first_of[inverse[repeated]]]]
            if clash.size:
                col, orig = int(clash[0]), int(first_of[inverse[clash[0]]])
                raise input_error(
                    f"{name}, line {int(lines[col])}: edge {_pair(tokens, col)} repeats line {int(lines[orig])} "
                    "with another private flag; decide whether the edge is private and keep one row"
                )
        col, orig = int(repeated[0]), int(first_of[inverse[repeated[0]]])
        where = f"{name}, line {int(lines[col])}: edge {_pair(tokens, col)} repeats line {int(lines[orig])}"
        if strict:
            raise input_error(
                f"{where} ({plural(repeated.size, 'repeated row')}); every copy would be counted, multiplying the "
                "sensitivity: remove the repeated rows, or drop strict (--strict) to merge them"
            )
        keep = np.sort(first_of)
        notes.append(
            Note(
                f"{plural(repeated.size, 'repeated edge row')} merged, the first row of each edge kept (first: "
                f"line {int(lines[col])}, edge {_pair(tokens, col)}, repeats line {int(lines[orig])}; "
                "strict=True / --strict refuses them)",
                "repeated edge rows merged, the first row of each edge kept",
            )
        )
        index = torch.from_numpy(keep)
        edge_index, lines, tokens = edge_index[:, index], lines[keep], tokens[:, keep]
        mask = None if mask is None else mask[index]
        src, dst, keys = src[keep], dst[keep], keys[keep]
    if mask is not None and not directed:
        _check_flags(keys, dst.astype(np.int64) * int(num_nodes) + src.astype(np.int64), mask, lines, tokens, name)
    return EdgeRows(edge_index, mask, lines, tokens)


def _check_flags(
    keys: np.ndarray, reverse: np.ndarray, mask: Tensor, lines: np.ndarray, tokens: np.ndarray, name: str
) -> None:
    """An undirected graph: the rows (u, v) and (v, u), when both are listed, carry the same flag (the first
    disagreeing row in file order is named with the row of its reverse)."""
    order = np.argsort(keys, kind="stable")
    pos = np.searchsorted(keys[order], reverse).clip(max=max(keys.size - 1, 0))
    partner = order[pos]
    listed = keys[partner] == reverse
    flags = mask.numpy()
    bad = np.flatnonzero(listed & (flags != flags[partner]))
    if bad.size:
        col = int(bad[0])
        other = int(partner[col])
        raise input_error(
            f"{name}, line {int(lines[max(col, other)])}: edge {_pair(tokens, max(col, other))} has another private "
            f"flag than its reverse on line {int(lines[min(col, other)])}; an undirected edge has one flag: give "
            "both rows the same (or --directed to keep two directed edges)"
        )
