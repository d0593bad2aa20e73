"""Reading a user's own graph from files (the CLI's ``--input``), with one clear
:class:`GraphInputError` line for every defect.

The graph file's suffix picks its format:

* ``.pt`` / ``.pth`` — a PyG ``Data`` or ``HeteroData`` saved with
  ``torch.save``, read with ``torch.load(weights_only=True)``: tensors, plain
  values and PyG's data classes only (allow-listed), so a file cannot run code
  when it is read.  A file that needs anything else is refused, naming
  ``trust_pickle`` (``--trust-pickle``): with it the file is unpickled with
  ``weights_only=False``, which runs whatever code the file holds, and the
  notes say that it was trusted;
* ``.csv`` (comma) and ``.tsv`` / ``.txt`` / ``.edges`` (any whitespace) — an
  edge list: one edge per row, source and target node ids in the first two
  columns, an optional header row (:data:`~privgraph.data.tables.HEADER_RULE`,
  the same for every text file, said in the notes whenever taken), blank lines
  skipped, comment lines only when declared (``comment``).  Ids are parsed
  without guessing (:mod:`privgraph.data.ids`): integer ids are ASCII digits
  only, anything else is text.  Ids written as indices (no leading zero), with
  plain side files and a plausible count, are the node indices 0..n−1; n is the
  features' (or else the labels') row count, or the largest id + 1.  Other ids
  (text; integers keyed by a node table, or too large or sparse to be an array
  size) are mapped to 0..n−1 in sorted order (by value when all are integers,
  else by text: the id set alone decides the order, not the rows' order), kept
  as ``data.node_ids``; a features or labels text file whose header has an
  ``id`` column is a node table keyed by id (the tables agree on the nodes; an
  edge naming an id of no row is refused, or dropped with ``drop_unknown``).
  A header column named ``private`` is the private-edge flag unless another
  column or a mask file is given;
* ``.npz`` — a SciPy sparse adjacency matrix (``scipy.sparse.save_npz``);
  every stored nonzero (equal to 1) is an edge, read in row-major order.

Side files: features (``.npy`` 2-D, or ``.csv``/``.tsv``/``.txt`` rows of
numbers) → ``data.x`` float32; labels (``.npy`` 1-D, or one integer per line)
→ ``data.y`` long; a private-edge mask (``.npy`` bool or 0/1, one entry per
edge row / nonzero / ``edge_index`` column) → ``data.private_edge_mask``.
A graph needs no features: the link-level methods release it without ``x``.

Direction: an edge list or a matrix is an undirected graph unless
``directed=True`` (``--directed``): the reverse of every edge listed in one
direction only is added, with that edge's private flag, and the notes count
them.  With ``directed=True`` it is kept as given.  A ``.pt`` graph is kept as
given either way; the notes say when it is directed (edges without their
reverse).

Split: a labelled ``Data`` without ``train_mask``/``val_mask``/``test_mask`` gets a seeded stratified
50/25/25 split (``split_seed``, the command line's ``--seed``: :func:`~privgraph.data.splits.add_missing_split`,
the one rule of both), and the notes say so.

An edge list's rows are checked in file order (:mod:`privgraph.data.edge_rows`):
a repeated row is merged unless ``strict``; self-loops when not allowed, copies
of an edge with different private flags, and an undirected edge whose two
rows carry different flags are errors naming the line and the ids as written.
A ``.pt`` graph's duplicates are errors (:func:`~privgraph.data.check_graph`).
Every change made is in the notes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData

from privgraph.data.edge_rows import EdgeRows, check_rows
from privgraph.data.files import (
    EDGE_LIST_SUFFIXES,
    FEATURE_SUFFIXES,
    GRAPH_SUFFIXES,
    LABEL_SUFFIXES,
    TORCH_SUFFIXES,
    GraphInputError,
    existing_file,
    input_error,
)
from privgraph.data.node_map import map_nodes
from privgraph.data.safe_load import (
    TRUST_PICKLE_NOTE,
    allow_pyg_objects_in_torch_load,
    load_torch_file,
    pyg_safe_globals,
    weights_only_caches,
)
from privgraph.data.splits import add_missing_split
from privgraph.data.tables import (
    check_finite,
    read_edge_list,
    read_edge_mask,
    read_features,
    read_labels,
    read_node_table,
    read_npz,
    split_label_column,
)
from privgraph.data.validation import Note, check_graph, one_way_edges, plural, public_note


def _load_torch(path: Path, trust_pickle: bool, notes: list[str]) -> Data | HeteroData:
    obj = load_torch_file(path, trust_pickle, "if you trust the file, --trust-pickle (trust_pickle=True) loads it")
    if trust_pickle:
        notes.append(f"{path.name} {TRUST_PICKLE_NOTE}")
    if not isinstance(obj, (Data, HeteroData)):
        kind = type(obj)
        raise input_error(
            f"{path.name} holds a {kind.__module__}.{kind.__qualname__}, not a torch_geometric "
            "Data or HeteroData (save the graph itself with torch.save(data, path))"
        )
    return obj


# ---------------------------------------------------------------------------------------- checks


def _check_domain(domain) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in domain)
    except (TypeError, ValueError):
        raise input_error(f"the feature domain must be two numbers (lo, hi), got {domain!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise input_error(f"the feature domain must be finite with lo < hi, got ({lo:g}, {hi:g})")
    return lo, hi


def _apply_domain(
    xs: dict[str, Tensor], domain: tuple[float, float], clip: bool, notes: list[str]
) -> dict[str, Tensor]:
    """Features checked against (or, with ``clip``, clipped into) ``domain``."""
    lo, hi = domain
    shown = f"[{lo:g}, {hi:g}]"
    out = {}
    for what, x in xs.items():
        x = x.float() if not x.is_floating_point() else x
        outside = (x < lo) | (x > hi)
        count = int(outside.sum())
        if count and not clip:
            raise input_error(
                f"{count} values of {what} lie outside the declared domain {shown} (found "
                f"[{float(x.min()):g}, {float(x.max()):g}]); rescale them, or clip them into "
                "the domain (clip=True / --clip)"
            )
        if clip:  # the report's note whether or not a value moved (that is a statistic of the input)
            x = x.clamp(lo, hi)
            notes.append(Note(f"{what} clipped to {shown}: {count} values changed", f"{what} clipped to {shown}"))
        out[what] = x
    return out


def _symmetrize(data: Data, notes: list[str]) -> Data:
    """Add the reverse of every edge listed in one direction only; the reverse copies its edge's
    per-edge values (private flag, weights)."""
    one_way = one_way_edges(data.edge_index, int(data.num_nodes)).nonzero().view(-1)
    keep = "directed=True / --directed keeps the file as given"
    public = f"undirected: added the reverse direction of the edges listed one way only ({keep})"
    if one_way.numel() == 0:  # the same report whether or not an edge was added (that is a statistic of the input)
        notes.append(Note(f"undirected: every edge is listed in both directions, none added ({keep})", public))
        return data
    num_edges = data.edge_index.shape[1]
    for key in set(data.edge_attrs()) | ({"private_edge_mask"} & set(data.keys())):
        value = data[key]
        if key == "edge_index":
            data[key] = torch.cat([value, value[:, one_way].flip(0)], dim=1)
        elif "index" not in key and isinstance(value, Tensor) and value.dim() and value.shape[0] == num_edges:
            data[key] = torch.cat([value, value[one_way]], dim=0)
    notes.append(
        Note(
            f"undirected: added the reverse direction of {plural(one_way.numel(), 'edge')} listed one way "
            f"only ({num_edges} → {data.edge_index.shape[1]} columns; {keep})",
            public,
        )
    )
    return data


def _check_edges(data: Data, directed: bool, symmetrize: bool, self_loops: bool, what: str, notes: list[str]) -> Data:
    """Simple-graph checks (:func:`check_graph`, duplicates refused), then the direction (module
    docstring): the missing reverse edges added when ``symmetrize``; a graph with one-way edges is
    noted; an undirected one (not ``directed``) must flag both directions of an edge alike."""
    if data.edge_index is None or data.edge_index.numel() == 0:
        raise input_error(f"{what} holds no edges")
    try:
        check_graph(
            data.edge_index,
            data.num_nodes,
            undirected=False,
            self_loops=self_loops,
            duplicates="refuse",
            private_edge_mask=getattr(data, "private_edge_mask", None),
            what=what,
        )
        data.edge_index = data.edge_index.long()
        if symmetrize:
            data = _symmetrize(data, notes)
        one_way = int(one_way_edges(data.edge_index, int(data.num_nodes)).sum())
        if one_way or directed:  # --directed: the same report whether or not an edge lacks its reverse
            counted = (
                f"{plural(one_way, 'edge has', 'edges have')} no reverse" if one_way else "every edge has its reverse"
            )
            notes.append(
                Note(f"directed: {counted} (kept as given)", "directed: edges without their reverse kept as given")
            )
        else:  # undirected: one private flag per edge
            check_graph(
                data.edge_index,
                data.num_nodes,
                undirected=True,
                self_loops=self_loops,
                duplicates="refuse",
                private_edge_mask=getattr(data, "private_edge_mask", None),
                what=what,
            )
    except GraphInputError:
        raise
    except ValueError as exc:
        raise input_error(str(exc)) from exc
    if getattr(data, "private_edge_mask", None) is not None:
        data.private_edge_mask = data.private_edge_mask.bool()
    return data


def _check_hetero(data: HeteroData, self_loops: bool, path: Path) -> None:
    """Per relation: ids in range, no duplicate columns (and no self-loops within one node type
    unless allowed); no symmetry requirement."""
    if not data.edge_types or all(data[t].edge_index.numel() == 0 for t in data.edge_types if "edge_index" in data[t]):
        raise input_error(f"the HeteroData in {path.name} holds no edges")
    for edge_type in data.edge_types:
        store = data[edge_type]
        if "edge_index" not in store:
            continue
        src, _, dst = edge_type
        sizes = []
        for node_type in (src, dst):
            size = data[node_type].num_nodes
            if size is None:
                raise input_error(f"node type {node_type!r} in {path.name} has no num_nodes (and no x to infer it)")
            sizes.append(int(size))
        num_nodes = sizes[0] if src == dst else (sizes[0], sizes[1])
        try:
            check_graph(
                store.edge_index,
                num_nodes,
                undirected=False,
                self_loops=self_loops,
                duplicates="refuse",
                what=f"relation {edge_type} in {path.name}",
            )
        except ValueError as exc:
            raise input_error(str(exc)) from exc


# ---------------------------------------------------------------------------------------- entry point


def _size_from(features: Tensor | None, labels: Tensor | None) -> tuple[int | None, str]:
    if features is not None:
        return features.shape[0], "the features have"
    if labels is not None:
        return labels.shape[0], "the labels have"
    return None, ""


class GraphRead(NamedTuple):
    """What :func:`read_graph` returns: the graph and the notes on every change reading made (or assumed).  A
    named pair: ``data, notes = read_graph(...)`` unpacks it, ``read_graph(...).data`` names it."""

    data: Data | HeteroData
    notes: list[str]


def read_graph(
    path: str | Path,
    *,
    features: str | Path | None = None,
    labels: str | Path | None = None,
    private_edges: str | Path | None = None,
    private_column: str | None = None,
    domain: tuple[float, float] | None = None,
    clip: bool = False,
    directed: bool = False,
    self_loops: bool = True,
    trust_pickle: bool = False,
    name: str | None = None,
    split_seed: int | None = 0,
    comment: str | None = None,
    strict: bool = False,
    drop_unknown: bool = False,
    missing_label: str | None = None,
    label_column: str | None = None,
) -> GraphRead:
    """Read a graph (``.pt``/``.pth``, an edge list ``.csv``/``.tsv``/``.txt``/``.edges``, or an
    ``.npz`` adjacency matrix) with optional features, labels and private-edge flags (a mask
    file, or ``private_column`` of an edge list: a header name or 0-based index).  ``domain``
    declares the features' range (default for ``.pt``: the file's ``data.feature_domain``);
    values outside it are an error, or clipped with ``clip``.

    An edge list or matrix is undirected (the missing reverse edges are added) unless
    ``directed``; a ``.pt`` graph is kept as given.  ``self_loops=False`` refuses self-loops.
    A ``.pt`` file is read with ``torch.load(weights_only=True)``; ``trust_pickle`` allows any
    pickle (``weights_only=False``: the file's code runs), said in the notes.

    A homogeneous graph with labels and no ``train_mask``/``val_mask``/``test_mask`` gets the seeded
    stratified 50/25/25 split of ``split_seed`` (:func:`~privgraph.data.splits.add_missing_split`, said in
    the notes; the command line's ``--seed``); ``split_seed=None`` leaves it without one.

    Text files: ``comment`` declares the comment-line prefix (none by default: a ``#`` row is data); the
    header rule is :data:`~privgraph.data.tables.HEADER_RULE`, said in the notes whenever a row is taken.  An
    edge list's repeated rows are merged (the notes name the first) unless ``strict``; an edge naming an id of
    no node-table row is refused unless ``drop_unknown`` (dropped, counted); ``missing_label`` (or an empty
    cell) marks a node without a label: in no split.  ``label_column`` names the column of a features node
    table (keyed by id) that holds the labels, instead of a labels file.

    Returns a :class:`GraphRead`, ``(data, notes)``: the graph (with ``data.name``, and
    ``data.feature_domain`` when a domain applies) and notes on every change made.  Raises
    :class:`GraphInputError` (one line) on any bad input."""
    graph_path = existing_file(path, "graph", GRAPH_SUFFIXES)
    suffix = graph_path.suffix.lower()
    notes: list[str] = []
    if domain is not None:
        domain = _check_domain(domain)
    if clip and domain is None and suffix not in TORCH_SUFFIXES:
        raise input_error("clip=True (--clip) needs a feature domain (--domain LO HI) to clip into")
    if private_column is not None and suffix not in EDGE_LIST_SUFFIXES:
        raise input_error(
            f"a private column applies to edge-list files ({', '.join(EDGE_LIST_SUFFIXES)}), "
            f"not to {suffix}; give a private-edge mask file instead"
        )
    if private_column is not None and private_edges is not None:
        raise input_error("give the private edges either as a column of the edge list or as a mask file, not both")
    if trust_pickle and suffix not in TORCH_SUFFIXES:
        raise input_error(
            f"trust_pickle (--trust-pickle) applies to torch files ({', '.join(TORCH_SUFFIXES)}), "
            f"not to {suffix}, which is read without unpickling"
        )

    if suffix in TORCH_SUFFIXES:
        data = _load_torch(graph_path, trust_pickle, notes)
        if isinstance(data, HeteroData):
            hetero = _finish_hetero(
                data, graph_path, features, labels, private_edges, domain, clip, self_loops, name, notes
            )
            return GraphRead(weights_only_caches(hetero[0]), hetero[1])
    tables = {
        role: table
        for role, file in (("features", features), ("labels", labels))
        if file is not None and (table := read_node_table(file, role, comment=comment, notes=notes)) is not None
    }
    if label_column is not None:
        if labels is not None or "features" not in tables:
            raise input_error(
                "label_column (--label-column) names the label column of a features node table (a header with an "
                "id column), given instead of a labels file"
            )
        rest, tables["labels"] = split_label_column(tables.pop("features"), label_column)
        if rest is not None:
            tables["features"] = rest
        features, labels = (features if rest is not None else None), features
    if tables and suffix not in EDGE_LIST_SUFFIXES:
        table = next(iter(tables.values()))
        raise input_error(
            f"the {table.role} file {table.path.name} is keyed by an id column, which names the nodes of an edge "
            f"list; the nodes of {graph_path.name} are 0..n-1: give one row per node in that order, without ids"
        )
    plain_features = features is not None and "features" not in tables
    x = read_features(features, comment=comment, notes=notes) if plain_features else None
    y = (
        read_labels(labels, comment=comment, missing=missing_label, notes=notes)
        if labels is not None and "labels" not in tables
        else None
    )
    rows = None
    what = f"the edge list {graph_path.name}"

    if suffix in TORCH_SUFFIXES:
        what = f"the graph in {graph_path.name}"
        if data.edge_index is None:
            raise input_error(f"{what} has no edge_index")
        num_nodes = data.num_nodes
        for value, label, old in ((x, "features", data.x), (y, "labels", data.y)):
            if value is None:
                continue
            if value.shape[0] != num_nodes:
                unit = "rows" if label == "features" else "labels"
                file = Path(features if label == "features" else labels).name
                raise input_error(
                    f"the {label} file {file} has {value.shape[0]} {unit}, expected {num_nodes} "
                    f"(one per node of {graph_path.name})"
                )
            if old is not None:
                notes.append(f"{label} from the {label} file replace those stored in {graph_path.name}")
        if x is not None:
            data.x = x
        if y is not None:
            data.y = y
        if domain is None and getattr(data, "feature_domain", None) is not None:
            domain = _check_domain(data.feature_domain)
            notes.append(f"feature domain [{domain[0]:g}, {domain[1]:g}] taken from {graph_path.name}")
        elif (
            domain is not None
            and getattr(data, "feature_domain", None) is not None
            and tuple(float(v) for v in data.feature_domain) != domain
        ):
            notes.append(
                f"the declared feature domain [{domain[0]:g}, {domain[1]:g}] replaces the "
                f"{tuple(data.feature_domain)} stored in {graph_path.name}"
            )
        if clip and domain is None:
            raise input_error("clip=True (--clip) needs a feature domain (--domain LO HI) to clip into")
    else:
        if x is not None and y is not None and y.shape[0] != x.shape[0]:
            raise input_error(
                f"the labels file {Path(labels).name} has {y.shape[0]} labels, expected {x.shape[0]} "
                "(one per feature row)"
            )
        size, source = _size_from(x, y)
        column_mask = node_ids = None
        if suffix == ".npz":
            what = f"the adjacency matrix in {graph_path.name}"
            edge_index, order = read_npz(graph_path)
            if edge_index.numel() == 0:
                raise input_error(f"no edges in {graph_path}: the adjacency matrix is all zeros")
            if size is not None and order != size:
                raise input_error(
                    f"the adjacency matrix in {graph_path.name} is {order}×{order} but {source} {size} rows"
                )
            num_nodes = order
        else:
            tokens, column_mask, lines = read_edge_list(
                graph_path, private_column, private_edges is not None, notes, comment
            )
            side = None
            if size is not None:
                side = ("features", features) if x is not None else ("labels", labels)
            mapped = map_nodes(
                tokens,
                lines,
                tables=tables,
                x=x,
                y=y,
                size=size,
                side=side,
                path=graph_path,
                drop_unknown=drop_unknown,
                missing=missing_label,
                notes=notes,
            )
            edge_index, num_nodes, node_ids, x, y, kept = mapped
            dropped = 0 if kept is None else tokens.shape[1] - kept.size
            if kept is not None:
                tokens, lines = tokens[:, kept], lines[kept]
                column_mask = None if column_mask is None else column_mask[torch.from_numpy(kept)]
            rows = EdgeRows(edge_index, column_mask, lines, tokens)
        data = Data(edge_index=edge_index, num_nodes=num_nodes)
        if x is not None:
            data.x = x
        if y is not None:
            data.y = y
        if column_mask is not None:
            data.private_edge_mask = column_mask
        if node_ids is not None:
            data.node_ids = node_ids

    if private_edges is not None:
        mask = read_edge_mask(private_edges)
        expected = data.edge_index.shape[1] if rows is None else int(rows.lines.size + dropped)
        unit = {".npz": "stored nonzero of the matrix"}.get(suffix, "edge row of the edge list")
        if suffix in TORCH_SUFFIXES:
            unit = "column of edge_index"
        if mask.numel() != expected:
            raise input_error(
                f"the private-edge mask has {mask.numel()} entries, expected {expected} "
                f"(one per {unit} in {graph_path.name})"
            )
        if getattr(data, "private_edge_mask", None) is not None:
            notes.append(f"the private-edge mask file replaces the mask stored in {graph_path.name}")
        if rows is not None and mapped.kept is not None:
            mask = mask[torch.from_numpy(mapped.kept)]
        data.private_edge_mask = mask
    if rows is not None:  # an edge list: its rows checked in file order, by line and written id
        rows = rows._replace(mask=getattr(data, "private_edge_mask", None))
        checked = check_rows(
            rows,
            num_nodes=int(data.num_nodes),
            self_loops=self_loops,
            strict=strict,
            directed=directed,
            name=graph_path.name,
            notes=notes,
        )
        data.edge_index = checked.edge_index
        if checked.mask is not None:
            data.private_edge_mask = checked.mask

    data = _check_edges(data, directed, not directed and suffix not in TORCH_SUFFIXES, self_loops, what, notes)
    if data.x is not None:
        check_finite(data.x, "the features")
    if domain is not None:
        if data.x is None:
            raise input_error(f"a feature domain was declared but {graph_path.name} comes with no features")
        data.x = _apply_domain({"the features": data.x}, domain, clip, notes)["the features"]
        data.feature_domain = domain
    if split_seed is not None:
        try:
            added = add_missing_split(data, split_seed)
        except ValueError as exc:
            raise input_error(f"{graph_path.name}: {exc}") from exc
        if added is not None:
            notes.append(added)
    data.name = name or graph_path.stem
    return GraphRead(weights_only_caches(data), notes)


def _finish_hetero(
    data: HeteroData,
    path: Path,
    features,
    labels,
    private_edges,
    domain,
    clip: bool,
    self_loops: bool,
    name: str | None,
    notes: list[str],
) -> tuple[HeteroData, list[str]]:
    given = [
        flag
        for flag, value in (("features", features), ("labels", labels), ("private edges", private_edges))
        if value is not None
    ]
    if given:
        raise input_error(
            f"{path.name} holds a HeteroData: separate {', '.join(given)} files apply to "
            "homogeneous graphs only (store them on the node and edge types)"
        )
    _check_hetero(data, self_loops, path)
    xs = {f"the {t!r} features": data[t].x for t in data.node_types if "x" in data[t] and isinstance(data[t].x, Tensor)}
    for what, x in xs.items():
        check_finite(x, what)
    stored = getattr(data, "feature_domain", None)
    if domain is None and stored is not None:
        domain = _check_domain(stored)
        notes.append(f"feature domain [{domain[0]:g}, {domain[1]:g}] taken from {path.name}")
    if clip and domain is None:
        raise input_error("clip=True (--clip) needs a feature domain (--domain LO HI) to clip into")
    if domain is not None:
        if not xs:
            raise input_error(f"a feature domain was declared but the HeteroData in {path.name} has no features")
        clipped = _apply_domain(xs, domain, clip, notes)
        for t in data.node_types:
            key = f"the {t!r} features"
            if key in clipped:
                data[t].x = clipped[key]
        data.feature_domain = domain
    data.name = name or path.stem
    return data, notes


__all__ = [
    "allow_pyg_objects_in_torch_load",
    "EDGE_LIST_SUFFIXES",
    "FEATURE_SUFFIXES",
    "GRAPH_SUFFIXES",
    "GraphInputError",
    "GraphRead",
    "LABEL_SUFFIXES",
    "load_torch_file",
    "Note",
    "public_note",
    "pyg_safe_globals",
    "read_edge_mask",
    "read_features",
    "read_graph",
    "read_labels",
    "TRUST_PICKLE_NOTE",
]
