"""An edge list's written node ids turned into the node indices 0..n−1 (:mod:`privgraph.data.io` documents the
rule; :mod:`privgraph.data.ids` parses the ids): the ids themselves when they are plain indices, else the id
map in :func:`~privgraph.data.ids.id_order`, with the node tables (features/labels keyed by id) matched to it.
Every refusal names the file, the first line (in file order) and the id as written."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from privgraph.data.files import input_error
from privgraph.data.ids import id_order, index_ids, is_integer_id, sparse_note
from privgraph.data.tables import NodeTable, table_values
from privgraph.data.validation import Note, plural

ORDER_NOTE = "by integer value when every id is an integer, else by text"


class NodeMap(NamedTuple):
    """The edge list in node indices: ``edge_index`` [2, E], ``num_nodes``, the ids in node order (None for
    plain indices), the features and labels (from the node tables when keyed), and the edge rows kept
    (None: all; else their positions, after edges naming unknown ids were dropped)."""

    edge_index: Tensor
    num_nodes: int
    node_ids: list[str] | None
    x: Tensor | None
    y: Tensor | None
    kept: np.ndarray | None


def _positional(indices: np.ndarray, tokens: np.ndarray, lines: np.ndarray, size: int | None, path: Path, side):
    """An edge list of node indices 0..n-1 (the side files' rows in node order): n is their row count, or the
    largest id + 1.  The first line naming an index past the rows blames the side file (``side``: role, file)."""
    if size is None:
        return torch.from_numpy(indices), int(indices.max()) + 1
    bad = np.flatnonzero((indices >= size).any(0))
    if bad.size:
        col = int(bad[0])
        node = str(tokens[0, col] if indices[0, col] >= size else tokens[1, col])
        role, file = side
        unit = "rows" if role == "features" else "labels"
        raise input_error(
            f"{path.name}, line {int(lines[col])}: node id {node} is past the {role} file {Path(file).name}, which "
            f"has {size} {unit}, one per node 0..{size - 1} (node ids are 0..n-1 and row i is node i; or key the "
            "rows by an id column: docs/usage.md#your-own-graph)"
        )
    return torch.from_numpy(indices), size


def _not_index(tokens: np.ndarray) -> int:
    """The first edge row (file order) with an id that is not a plain node index."""
    for col in range(tokens.shape[1]):
        if index_ids(tokens[:, col : col + 1], size=1 << 62) is None:
            return col
    return 0


def map_nodes(
    tokens: np.ndarray,
    lines: np.ndarray,
    *,
    tables: dict[str, NodeTable],
    x: Tensor | None,
    y: Tensor | None,
    size: int | None,
    side: tuple[str, str | Path] | None,
    path: Path,
    drop_unknown: bool,
    missing: str | None = None,
    notes: list,
) -> NodeMap:
    """The nodes of an edge list (module docstring).  With node tables the nodes are the tables' ids (the
    tables must agree); an edge naming an id of no table is refused, or dropped with ``drop_unknown``."""
    indices = None if tables else index_ids(tokens, size)
    if indices is not None:
        edge_index, num_nodes = _positional(indices, tokens, lines, size, path, side)
        return NodeMap(edge_index, num_nodes, None, x, y, None)
    if side is not None and tables:
        role, file = side
        keyed = next(iter(tables.values()))
        raise input_error(
            f"the {keyed.role} file {keyed.path.name} is keyed by an id column, but the {role} file "
            f"{Path(file).name} has no id column: key its rows by a header column named id too "
            "(docs/usage.md#your-own-graph)"
        )
    if side is not None:
        col = _not_index(tokens)
        role, file = side
        raise input_error(
            f"{path.name}, line {int(lines[col])}: node id {str(tokens[0, col])!r} (or {str(tokens[1, col])!r}) is "
            f"not a node index 0..n-1, but the {role} file {Path(file).name} has no id column: key its rows by a "
            "header column named id (docs/usage.md#your-own-graph)"
        )
    flat = tokens.reshape(-1).tolist()
    kept = None
    if tables:
        known = _check_tables(tables)
        unknown = ~np.isin(tokens, np.asarray(sorted(known), dtype=str)).all(0) if known else None
        if unknown is not None and unknown.any():
            bad = np.flatnonzero(unknown)
            col = int(bad[0])
            node = str(tokens[0, col] if tokens[0, col] not in known else tokens[1, col])
            table = next(iter(tables.values()))
            if not drop_unknown:
                raise input_error(
                    f"{path.name}, line {int(lines[col])}: node id {node!r} has no row in the {table.role} file "
                    f"{table.path.name} ({plural(bad.size, 'edge row names', 'edge rows name')} ids of no row; it has "
                    f"{len(table.ids)} rows); add the nodes, or "
                    "drop_unknown=True (--drop-unknown) drops those edges"
                )
            first_line = int(lines[col])
            kept = np.flatnonzero(~unknown)
            tokens, lines = tokens[:, kept], lines[kept]
            notes.append(
                Note(
                    f"{plural(bad.size, 'edge row')} naming node ids of no {table.role} row dropped (first: line "
                    f"{first_line}, id {node!r}; "
                    "drop_unknown / --drop-unknown)",
                    "edge rows naming node ids of no node-table row dropped (--drop-unknown)",
                )
            )
            flat = tokens.reshape(-1).tolist()
        seen = set(known)
    else:
        seen = set(flat)
        if all(is_integer_id(t) for t in seen) and not any(len(t) > 1 and t[0] == "0" for t in seen):
            largest = max(seen, key=lambda t: (len(t), t))
            notes.append(Note(*sparse_note(len(seen), largest)))
    node_ids = id_order(seen)
    index = {node: i for i, node in enumerate(node_ids)}
    for table in tables.values():
        rows = table.index()
        value = table_values(table, [rows[node] for node in node_ids], missing)
        if table.role == "features":
            x = value
        else:
            y = value
    mapped = np.fromiter((index[t] for t in flat), dtype=np.int64, count=len(flat))
    edge_index = torch.from_numpy(mapped.reshape(2, -1))
    notes.append(
        Note(
            f"node ids mapped to 0..{len(node_ids) - 1} in the order of the ids ({ORDER_NOTE}); "
            "the map is released beside the graph",
            f"node ids mapped to 0..n-1 in the order of the ids ({ORDER_NOTE})",
        )
    )
    return NodeMap(edge_index, len(node_ids), node_ids, x, y, kept)


def _check_tables(tables: dict[str, NodeTable]) -> set[str]:
    """The ids of the node tables, which must agree: a node of one table missing from another is refused,
    naming the first such row (file order) of the table that has it."""
    ids = {role: set(table.ids) for role, table in tables.items()}
    known = set().union(*ids.values())
    for role, table in tables.items():
        for other_role, other in tables.items():
            if other_role == role:
                continue
            for node, line in zip(other.ids, other.lines):
                if node not in ids[role]:
                    missing = len(ids[other_role] - ids[role])
                    raise input_error(
                        f"{other.path.name}, line {line}: node id {node!r} has no row in the {table.role} file "
                        f"{table.path.name} ({plural(missing, 'node')} missing; it has {len(table.ids)} rows, "
                        f"expected one per node: {len(known)})"
                    )
    return known
