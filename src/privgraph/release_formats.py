"""The files a release's data is written to, each readable without privgraph or PyG.

``PrivateRelease.save(path, format=...)`` (``privgraph release --format``):

* ``pt`` (default) — ``torch.save`` of plain values only, so ``torch.load(path)``
  (``weights_only=True``, torch's default) reads it with torch alone::

      {"format": "privgraph-release/2", "kind": "Data", "method": "lpgnn",
       "graph": {"x": Tensor, "edge_index": Tensor, "y": Tensor, "num_nodes": 60, ...}}
      {"format": ..., "kind": "HeteroData", "method": "hetedp", "graph": {...graph-level fields...},
       "nodes": {"paper": {"x": ..., "num_nodes": 60}, ...},
       "edges": {"paper__cites__paper": {"edge_index": ...}, ...},
       "edge_types": {"paper__cites__paper": ["paper", "cites", "paper"], ...}}

  Blink-Soft's dense posterior P (``dense_adjacency``) is held as what defines it,
  ``{"operator": "blink-posterior", "beta": [n], "states": [n, n] uint8, "shift": [3], ...}``:
  P_ij = σ(β_i + β_j + shift[s_ij]) for i ≠ j, P_ii = 0 (Blink paper, eq. 9).
  :func:`from_payload` (``privgraph.load_release``) rebuilds the ``Data``/``HeteroData``.
* ``npz`` — ``numpy.savez_compressed``, read by ``numpy.load(path)`` (no pickles): one array
  per field, named ``FIELD`` for a ``Data`` (``x``, ``edge_index``, ``num_nodes`` as a 0-d array),
  ``NODETYPE__FIELD`` (``paper__x``) and ``SRC__REL__DST__FIELD``
  (``paper__cites__paper__edge_index``) for a ``HeteroData``, graph-level fields by their name.
  Blink-Soft's P is written materialised, ``dense_adjacency`` [n, n] float32, for n ≤
  :data:`DENSE_LIMIT` (larger: refused, write ``pt``).
* ``csv`` — edge lists and node tables (comma separated, one header row):
  ``PATH.edges.csv`` (``source,target``, then ``weight`` where the release has ``edge_weight``,
  then any other per-edge field; an undirected graph lists every edge in both directions, as PyG
  stores it, and the report says so: ``"edge_direction": "both directions"``) and
  ``PATH.nodes.csv`` (``node``, then every per-node field:
  a matrix as ``x_0..x_{d-1}``/``z_0..``, a vector by its name: ``y``, ``y_reported``, the masks
  as 0/1).  A ``HeteroData`` gets one file per type: ``PATH.SRC__REL__DST.edges.csv`` and
  ``PATH.NODETYPE.nodes.csv`` (node ids 0..n−1 within each type).  In a ``Data`` the fields
  named ``edge_*`` are per edge, the other tensors per node.  Graph-level values (a
  label-LDP release's ``label_epsilon`` and ``num_classes``) go to ``PATH.graph.csv``
  (``field,value``).  Blink-Soft's P is written as the weighted edge list of every pair
  i ≠ j with P_ij > 0 for n ≤ :data:`DENSE_LIMIT` (larger: refused).
  Floats are written with enough digits to read back the same float32/float64.

The report goes to ``PATH.json`` and a released model's weights (HeteDP) to
``PATH.model.pt`` (a plain state dict) in every format.  A graph read from an edge list that names its
nodes by its own ids (:func:`privgraph.data.read_graph`'s ``data.node_ids``) has them in
``PATH.ids.csv`` (``node,id``: node i's id), in every format, listed in the report's ``files`` and
``node_ids``; the csv tables then write the ids themselves in ``source``, ``target`` and ``node``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
from torch import Tensor
from torch_geometric.data import Data, HeteroData

from privgraph.nn.dense import BlockwiseAdjacency

if TYPE_CHECKING:
    from privgraph.release_files import Staging

FORMAT_V1 = "privgraph-release/1"  # the pickled PyG object (PyG's classes allow-listed); still read
FORMAT = "privgraph-release/2"
FILE_FORMATS = ("pt", "npz", "csv")
SEP = "__"
DENSE_LIMIT = 2048  # nodes up to which npz/csv write Blink-Soft's P materialised (16 MiB float32; 4.2M csv rows)
PLAIN = (bool, int, float, str, type(None))


StoreKey = str | tuple[str, str, str]  # a node type, or an edge type (source, relation, destination)


def store_name(key: StoreKey) -> str:
    """A node type as is, an edge type as ``SRC__REL__DST``."""
    return key if isinstance(key, str) else SEP.join(key)


def _dense_operators() -> dict[str, type[BlockwiseAdjacency]]:
    """The dense operators a release file may hold, registered by their subclasses' definition (Blink-Soft's
    :class:`~privgraph.methods.blink.soft.PosteriorAdjacency` once :mod:`privgraph.methods` is imported, as
    :func:`privgraph.load_release` does)."""
    return BlockwiseAdjacency.operators


def _fields(data: Data | HeteroData) -> tuple[dict[str, Any], dict[StoreKey, dict], dict[StoreKey, dict]]:
    """(graph-level fields, node stores by type, edge stores by type)."""
    if isinstance(data, HeteroData):
        glob = data.stores[0].to_dict()  # the global store comes first
        return glob, {t: data[t].to_dict() for t in data.node_types}, {t: data[t].to_dict() for t in data.edge_types}
    return data.to_dict(), {}, {}


def _encode(value: Any, where: str) -> Any:
    if isinstance(value, Tensor):
        return value.detach().cpu()
    if isinstance(value, BlockwiseAdjacency):
        if value.release_name is None:
            raise ValueError(f"cannot write {where}: a {type(value).__name__} has no release form")
        return {"operator": value.release_name, **value.release_state()}
    if isinstance(value, PLAIN):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, PLAIN) for v in value):
        return value
    raise ValueError(f"cannot write {where}: a {type(value).__name__} is not a tensor or a plain value")


def to_payload(data: Data | HeteroData, method: str) -> dict[str, Any]:
    """The ``pt`` file's content (module docstring): tensors and plain values only."""
    glob, nodes, edges = _fields(data)
    out: dict[str, Any] = {
        "format": FORMAT,
        "kind": type(data).__name__,
        "method": method,
        "graph": {k: _encode(v, k) for k, v in glob.items()},
    }
    if isinstance(data, HeteroData):
        out["nodes"] = {t: {k: _encode(v, f"{t}.{k}") for k, v in s.items()} for t, s in nodes.items()}
        out["edges"] = {
            store_name(t): {k: _encode(v, f"{store_name(t)}.{k}") for k, v in s.items()} for t, s in edges.items()
        }
        out["edge_types"] = {store_name(t): list(t) for t in edges}
    return out


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and "operator" in value:
        state = dict(value)
        name = state.pop("operator")
        operators = _dense_operators()
        if name not in operators:
            raise ValueError(f"unknown dense operator {name!r} in a release file (read it with privgraph.load_release)")
        return operators[name].from_release_state(state)
    return value


def from_payload(payload: Any) -> Data | HeteroData:
    """The ``Data``/``HeteroData`` a ``pt`` file holds (``ValueError`` if it is not one)."""
    kinds = {"Data": Data, "HeteroData": HeteroData}
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or payload.get("kind") not in kinds:
        raise ValueError(f"not a {FORMAT} data file")
    data = kinds[payload["kind"]]()
    try:
        for k, v in payload["graph"].items():
            data[k] = _decode(v)
        if isinstance(data, HeteroData):
            for t, fields in payload["nodes"].items():
                for k, v in fields.items():
                    data[t][k] = _decode(v)
            for name, fields in payload["edges"].items():
                for k, v in fields.items():
                    data[tuple(payload["edge_types"][name])][k] = _decode(v)
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"not a {FORMAT} data file ({type(err).__name__}: {err})") from None
    return data


def _dense_matrix(op: BlockwiseAdjacency, where: str, file_format: str) -> np.ndarray:
    if op.num_nodes > DENSE_LIMIT:
        raise ValueError(
            f"cannot write {where} as {file_format}: it is a dense {op.num_nodes} × {op.num_nodes} weight matrix "
            f"(Blink-Soft's P), written materialised only up to {DENSE_LIMIT} nodes; use --format pt "
            "(format='pt'), which holds what defines P"
        )
    return op.to_dense().cpu().numpy()


def _array(value: Any, where: str) -> np.ndarray:
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, BlockwiseAdjacency):
        return _dense_matrix(value, where, "npz")
    out = np.asarray(value)
    if out.dtype == object:
        raise ValueError(f"cannot write {where} as npz: a {type(value).__name__} is not an array")
    return out


def npz_arrays(data: Data | HeteroData) -> dict[str, np.ndarray]:
    """The ``npz`` file's arrays by name (module docstring)."""
    glob, nodes, edges = _fields(data)
    named = {k: v for k, v in glob.items()}
    for t, s in [*nodes.items(), *edges.items()]:
        named.update({f"{store_name(t)}{SEP}{k}": v for k, v in s.items()})
    if len(named) != len(glob) + sum(len(s) for s in [*nodes.values(), *edges.values()]):
        raise ValueError("cannot write the release as npz: two fields get the same array name")
    return {name: _array(v, name) for name, v in named.items()}


def csv_files(data: Data | HeteroData, path: Path) -> list[tuple[Path, str, Any]]:
    """(file, ``"edges"``/``"nodes"``/``"graph"``, the fields) of every csv table (module docstring)."""
    glob, nodes, edges = _fields(data)
    glob = dict(glob)
    glob.pop("num_nodes", None)
    if not isinstance(data, HeteroData):
        edge_fields = {k: glob.pop(k) for k in list(glob) if k.startswith("edge_") or k == "dense_adjacency"}
        node_fields = {k: glob.pop(k) for k in list(glob) if isinstance(glob[k], Tensor)}
        edges = {"": edge_fields} if edge_fields else {}
        nodes = {"": {**node_fields, "num_nodes": data.num_nodes}}
    else:
        nodes = {t: {**s, "num_nodes": data[t].num_nodes} for t, s in nodes.items()}
    out = [(_with(path, f"{store_name(t)}.edges.csv".lstrip(".")), "edges", s) for t, s in edges.items()]
    out += [(_with(path, f"{t}.nodes.csv".lstrip(".")), "nodes", s) for t, s in nodes.items()]
    return out + ([(_with(path, "graph.csv"), "graph", glob)] if glob else [])


def _with(path: Path, suffix: str) -> Path:
    return path.with_name(f"{path.name}.{suffix}")


def _columns(label: str, value: Any, rows: int, unit: str, where: str) -> list[tuple[str, np.ndarray]]:
    """A per-``unit`` field as csv columns: a vector as ``label``, a matrix as ``label_0..label_{d-1}``."""
    if not isinstance(value, Tensor) or value.dim() not in (1, 2) or value.shape[0] != rows:
        raise ValueError(f"cannot write {where} as csv: not one value or one row per {unit}; use --format pt or npz")
    a = value.detach().cpu().numpy()
    return [(label, a)] if a.ndim == 1 else [(f"{label}_{j}", a[:, j]) for j in range(a.shape[1])]


def _text(a: np.ndarray) -> np.ndarray:
    """A column as strings: 0/1 for booleans, integers as such, floats with the digits that read back the same."""
    if a.dtype.kind == "U":
        return a
    if a.dtype == np.bool_:
        return a.astype(np.int8).astype(str)
    if np.issubdtype(a.dtype, np.integer):
        return a.astype(str)
    if a.dtype == np.float64:
        return np.char.mod("%.17g", a)
    return np.char.mod("%.9g", a.astype(np.float32))


def _write_table(file: BinaryIO, columns: list[tuple[str, np.ndarray]]) -> None:
    with io.TextIOWrapper(file, encoding="utf-8", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow([name for name, _ in columns])
        out.writerows(zip(*(_text(a) for _, a in columns)))


def write_ids(node_ids: list[str], file: BinaryIO) -> None:
    """The id map ``PATH.ids.csv`` to ``file``: ``node,id`` rows, node i's own id (as the input file wrote it)."""
    _write_table(file, [("node", np.arange(len(node_ids))), ("id", np.asarray(node_ids, dtype=str))])


def read_ids(path: Path, num_nodes: int | None) -> list[str]:
    """The ids :func:`write_ids` wrote (``ValueError`` for a damaged file or one of another size)."""
    if not path.exists():
        raise ValueError(f"the release's id map {path} is missing")
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != ["node", "id"] or any(len(r) != 2 or r[0] != str(i) for i, r in enumerate(rows[1:])):
        raise ValueError(f"{path} is not a release's id map (node,id rows, nodes 0..n-1 in order)")
    if num_nodes is not None and len(rows) - 1 != num_nodes:
        raise ValueError(f"the id map {path} has {len(rows) - 1} ids, expected {num_nodes} (one per node)")
    return [r[1] for r in rows[1:]]


def write_csv(data: Data | HeteroData, path: Path, stage: Staging, node_ids: list[str] | None = None) -> list[Path]:
    """The csv tables of ``data`` (module docstring), each to its temporary file of ``stage``; returns the
    files they will be.  With ``node_ids`` (a ``Data``'s), the ``node``, ``source`` and ``target`` columns hold
    the nodes' own ids."""
    names = None if node_ids is None else np.asarray(node_ids, dtype=str)
    own = (lambda a: a) if names is None else (lambda a: names[np.asarray(a, dtype=np.int64)])  # noqa: E731
    tables = []
    for file, kind, fields in csv_files(data, path):
        where = file.name
        if kind == "graph":
            for k, v in fields.items():
                if not isinstance(v, PLAIN):
                    raise ValueError(f"cannot write the graph-level field {k} as csv; use --format pt or npz")
            cols = [("field", np.array(list(fields))), ("value", np.array([str(v) for v in fields.values()]))]
        elif kind == "nodes":
            n = int(fields.pop("num_nodes"))
            cols = [("node", own(np.arange(n)))]
            for k, v in fields.items():
                cols += _columns(k, v, n, "node", f"{where}: {k}")
        elif "dense_adjacency" in fields:
            p = _dense_matrix(fields.pop("dense_adjacency"), "dense_adjacency", "csv")
            src, dst = np.nonzero(p)
            cols = [("source", own(src)), ("target", own(dst)), ("weight", p[src, dst])]
            if fields:
                raise ValueError(f"cannot write {', '.join(fields)} beside a dense weight matrix as csv")
        else:
            edge_index = fields.pop("edge_index", None)
            if edge_index is None:
                raise ValueError(f"cannot write {where}: per-edge fields ({', '.join(fields)}) without edge_index")
            e = edge_index.shape[1]
            cols = [("source", own(edge_index[0].cpu().numpy())), ("target", own(edge_index[1].cpu().numpy()))]
            if "edge_weight" in fields:
                cols.append(("weight", fields.pop("edge_weight").detach().cpu().numpy()))
            for k, v in fields.items():
                cols += _columns(k, v, e, "edge", f"{where}: {k}")
        tables.append((file, cols))
    for file, cols in tables:  # every table checked before any is written
        _write_table(stage.open(file), cols)
    return [file for file, _ in tables]


def data_files(data: Data | HeteroData, path: Path, file_format: str) -> list[Path]:
    """The files ``write`` puts the data in (the report and a model's weights aside)."""
    return [path] if file_format != "csv" else [file for file, _, _ in csv_files(data, path)]


def write(
    data: Data | HeteroData,
    path: Path,
    file_format: str,
    method: str,
    node_ids: list[str] | None = None,
    *,
    stage: Staging,
) -> list[Path]:
    """Write ``data`` for ``path`` in ``file_format`` (module docstring) to temporary files of ``stage``
    (:mod:`privgraph.release_files`: renamed into place by its commit); returns the files they will be
    (``node_ids``: the csv tables name the nodes by them)."""
    if file_format == "pt":
        stage.torch_save(to_payload(data, method), path)
        return [path]
    if file_format == "npz":
        arrays: dict[str, Any] = npz_arrays(data)  # every name an array: none is savez's allow_pickle
        with stage.open(path) as f:  # a file object: numpy adds no ".npz" to the name
            np.savez_compressed(f, **arrays)
        return [path]
    if file_format == "csv":
        return write_csv(data, path, stage, node_ids)
    raise ValueError(f"unknown release format {file_format!r}: one of {', '.join(FILE_FORMATS)}")
