"""Out-of-core node tables and graphs: what node classification reads when a dense table does not fit in memory.

* :class:`NodeTable` — an ``[n, d]`` float32 table in a file, stored as column blocks (each block a
  contiguous ``[n, w]`` row-major array), read and written a row block or a column block at a time with
  ``pread``/``pwrite`` (no mapping: the process holds only the block it reads, the rest stays in the file /
  the kernel's page cache) and gathered by row index through a read-only ``numpy.memmap``;
* :class:`CSRGraph` — the in-adjacency as CSR (row v lists the sources u of the edges u → v), ``indptr`` and
  ``indices`` in ``.npy`` files opened memory-mapped, built from edge chunks by a two-pass counting sort and a
  sort of each row on its own (:func:`csr_from_edge_chunks`), duplicates and self-loops dropped;
* :func:`propagate` — one aggregation step ``out = D_out Aᵀ D_in · x`` (+ Gaussian noise per entry) over row
  blocks of the CSR, into another table, never holding the n × d product;
* :func:`synthetic_graph` — a planted-partition (SBM-like) graph of n nodes, m directed edges and d binary
  features with class-correlated topics (the conventions of :func:`~privgraph.data.synthetic.sbm_graph`),
  written in chunks.

The tables live in a directory: :func:`table_dir` (under ``PRIVGRAPH_CACHE``, else the system's temp dir).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from privgraph.mechanisms.csr_sum import csr_block_sum
from privgraph.mechanisms.randomness import RandomSource, randn

DEFAULT_BLOCK_BYTES = 256 * 2**20  # a row block read at once: 256 MiB
DEFAULT_COLUMN_BYTES = 2**30  # a column block ([n, w]) read whole by propagate: at most 1 GiB (w ≥ 1)


def table_dir(root: str | os.PathLike | None = None) -> Path:
    """A fresh directory for out-of-core tables: under ``root``, else ``$PRIVGRAPH_CACHE/outofcore``, else the
    system's temp dir.  The caller removes it (:func:`shutil.rmtree`) when done."""
    base = root if root is not None else os.environ.get("PRIVGRAPH_CACHE")
    if base is not None:
        Path(base, "outofcore").mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="tables-", dir=Path(base, "outofcore")))
    return Path(tempfile.mkdtemp(prefix="privgraph-tables-"))


def rows_per_block(width: int, block_bytes: int = DEFAULT_BLOCK_BYTES, itemsize: int = 4) -> int:
    """How many rows of ``width`` entries fit in ``block_bytes`` (at least 1)."""
    return max(1, block_bytes // max(1, width * itemsize))


@dataclass
class NodeTable:
    """An ``[n, d]`` float32 table in the file ``path``, stored as column blocks of ``col_block`` columns
    (the last one narrower): block b holds columns [b·w, min(d, (b+1)·w)) of every row, row-major."""

    path: Path
    num_rows: int
    num_cols: int
    col_block: int
    _memmap: np.memmap | None = field(default=None, repr=False)

    @classmethod
    def create(cls, path: str | os.PathLike, num_rows: int, num_cols: int, col_block: int | None = None) -> NodeTable:
        """A new table of zeros (a sparse file: nothing is written until rows are); ``col_block`` columns per
        block, default as many as fit in :data:`DEFAULT_COLUMN_BYTES` (all of them up to 2 million rows × 128)."""
        if num_rows < 0 or num_cols < 1:
            raise ValueError("a node table needs num_rows >= 0 and num_cols >= 1")
        if col_block is None:
            col_block = DEFAULT_COLUMN_BYTES // (4 * max(1, num_rows))
        w = max(1, min(int(col_block), num_cols))
        path = Path(path)
        with open(path, "wb") as f:
            f.truncate(4 * num_rows * num_cols)
        return cls(path, int(num_rows), int(num_cols), w)

    @classmethod
    def from_tensor(cls, path: str | os.PathLike, x: Tensor | np.ndarray, col_block: int | None = None) -> NodeTable:
        """A table holding ``x`` (written a row block at a time)."""
        x = x.detach().cpu().numpy() if isinstance(x, Tensor) else np.asarray(x)
        table = cls.create(path, x.shape[0], x.shape[1], col_block)
        step = rows_per_block(table.num_cols)
        for start in range(0, table.num_rows, step):
            table.write_rows(start, x[start : start + step])
        return table

    @property
    def shape(self) -> tuple[int, int]:
        return self.num_rows, self.num_cols

    def blocks(self) -> list[tuple[int, int]]:
        """The column blocks' [start, stop)."""
        return [(c, min(c + self.col_block, self.num_cols)) for c in range(0, self.num_cols, self.col_block)]

    def _offset(self, c0: int, row: int, width: int) -> int:
        return 4 * (self.num_rows * c0 + row * width)

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as a new ``[stop − start, d]`` array."""
        stop = min(stop, self.num_rows)
        out = np.empty((max(0, stop - start), self.num_cols), dtype=np.float32)
        if out.shape[0] == 0:
            return out
        with open(self.path, "rb") as f:
            for c0, c1 in self.blocks():
                w = c1 - c0
                buf = os.pread(f.fileno(), 4 * w * out.shape[0], self._offset(c0, start, w))
                out[:, c0:c1] = np.frombuffer(buf, dtype=np.float32).reshape(-1, w)
        return out

    def write_rows(self, start: int, values: np.ndarray | Tensor) -> None:
        """Rows [start, start + len(values)) := ``values``."""
        v = values.detach().cpu().numpy() if isinstance(values, Tensor) else np.asarray(values)
        v = np.asarray(v, dtype=np.float32).reshape(-1, self.num_cols)
        if start < 0 or start + v.shape[0] > self.num_rows:
            raise IndexError(f"rows [{start}, {start + v.shape[0]}) outside a table of {self.num_rows}")
        self._memmap = None
        with open(self.path, "r+b") as f:
            for c0, c1 in self.blocks():
                os.pwrite(f.fileno(), np.ascontiguousarray(v[:, c0:c1]).tobytes(), self._offset(c0, start, c1 - c0))

    def read_cols(self, c0: int, c1: int) -> np.ndarray:
        """Columns [c0, c1) of every row, where [c0, c1) is one of :meth:`blocks` (a contiguous read)."""
        if (c0, c1) not in self.blocks():
            raise ValueError(f"columns [{c0}, {c1}) are not a column block of this table: {self.blocks()}")
        with open(self.path, "rb") as f:
            buf = os.pread(f.fileno(), 4 * (c1 - c0) * self.num_rows, self._offset(c0, 0, c1 - c0))
        return np.frombuffer(buf, dtype=np.float32).reshape(self.num_rows, c1 - c0).copy()

    def write_cols(self, c0: int, values: np.ndarray, row_start: int = 0) -> None:
        """Rows [row_start, row_start + len(values)) of the column block starting at ``c0``."""
        (c1,) = [b for a, b in self.blocks() if a == c0]
        v = np.ascontiguousarray(values, dtype=np.float32).reshape(-1, c1 - c0)
        self._memmap = None
        with open(self.path, "r+b") as f:
            os.pwrite(f.fileno(), v.tobytes(), self._offset(c0, row_start, c1 - c0))

    def gather(self, index: np.ndarray | Tensor) -> np.ndarray:
        """The rows at ``index`` (any order, repeats allowed), through a read-only memory map."""
        idx = index.cpu().numpy() if isinstance(index, Tensor) else np.asarray(index)
        if self._memmap is None:
            self._memmap = np.memmap(self.path, dtype=np.float32, mode="r", shape=(self.num_rows * self.num_cols,))
        out = np.empty((idx.shape[0], self.num_cols), dtype=np.float32)
        for c0, c1 in self.blocks():
            w = c1 - c0
            block = self._memmap[self.num_rows * c0 : self.num_rows * c1].reshape(self.num_rows, w)
            out[:, c0:c1] = block[idx]
        return out

    def iter_rows(self, block_rows: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """(start, rows) over the table, ``block_rows`` rows at a time (default: about 256 MiB)."""
        step = block_rows or rows_per_block(self.num_cols)
        for start in range(0, self.num_rows, step):
            yield start, self.read_rows(start, start + step)

    def select(self, mask: np.ndarray | Tensor) -> np.ndarray:
        """The rows where ``mask`` is true, in order, read a row block at a time."""
        m = mask.cpu().numpy() if isinstance(mask, Tensor) else np.asarray(mask)
        parts = [rows[m[start : start + rows.shape[0]]] for start, rows in self.iter_rows()]
        return np.concatenate(parts) if parts else np.empty((0, self.num_cols), np.float32)

    def subset(self, mask: np.ndarray | Tensor, path: str | os.PathLike) -> NodeTable:
        """A new table at ``path`` holding the rows where ``mask`` is true, in order, copied a row block at a
        time (memory: one block): a gather from it maps only those rows' pages, not the whole table's."""
        m = mask.cpu().numpy() if isinstance(mask, Tensor) else np.asarray(mask)
        out = NodeTable.create(path, int(m.sum()), self.num_cols, self.col_block)
        written = 0
        for start, rows in self.iter_rows():
            kept = rows[m[start : start + rows.shape[0]]]
            if kept.shape[0]:
                out.write_rows(written, kept)
                written += kept.shape[0]
        return out

    def to_tensor(self) -> Tensor:
        """The whole table in memory (small tables, tests)."""
        return torch.from_numpy(self.read_rows(0, self.num_rows))


def concat_rows(tables: list[NodeTable], start: int, stop: int) -> np.ndarray:
    """Rows [start, stop) of the tables side by side (GAP's [x⁰ … x^K])."""
    return np.concatenate([t.read_rows(start, stop) for t in tables], axis=1)


@dataclass
class CSRGraph:
    """The in-adjacency of a directed graph (each undirected link both ways): row v of ``indices[indptr[v] :
    indptr[v+1]]`` lists the sources u of the edges u → v, sorted, without repeats or self-loops."""

    indptr: np.ndarray  # int64 [n + 1] (memory-mapped when loaded from files)
    indices: np.ndarray  # int32 or int64 [m]

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def num_edges(self) -> int:
        return int(self.indptr[-1])

    def in_degrees(self) -> np.ndarray:
        return np.diff(self.indptr)

    def out_degrees(self, block_edges: int = 2**24) -> np.ndarray:
        """Every node's out-degree: how often it is a source in ``indices`` (counted a block of edges at a time)."""
        out = np.zeros(self.num_nodes, dtype=np.int64)
        for start in range(0, self.num_edges, block_edges):
            out += np.bincount(np.asarray(self.indices[start : start + block_edges]), minlength=self.num_nodes)
        return out

    def rows(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(local target row of each edge in [0, stop − start), source) for the targets [start, stop)."""
        ptr = np.asarray(self.indptr[start : stop + 1], dtype=np.int64)
        src = np.asarray(self.indices[ptr[0] : ptr[-1]], dtype=np.int64)
        local = np.repeat(np.arange(stop - start, dtype=np.int64), np.diff(ptr))
        return local, src

    def neighbours(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``nodes`` of each edge's target, source) for the targets ``nodes``."""
        nodes = np.asarray(nodes, dtype=np.int64)
        starts, stops = np.asarray(self.indptr[nodes]), np.asarray(self.indptr[nodes + 1])
        counts = stops - starts
        pos = np.repeat(np.arange(nodes.shape[0], dtype=np.int64), counts)
        offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        return pos, np.asarray(self.indices[np.repeat(starts, counts) + offsets], dtype=np.int64)

    def edge_index(self) -> Tensor:
        """The edges as a PyG ``[2, m]`` edge_index (source, target): for small graphs and tests."""
        local, src = self.rows(0, self.num_nodes)
        return torch.from_numpy(np.stack([src, local]))

    def save(self, directory: str | os.PathLike) -> CSRGraph:
        """Write ``indptr.npy`` and ``indices.npy`` to ``directory``; returns the memory-mapped copy."""
        d = Path(directory)
        np.save(d / "indptr.npy", np.asarray(self.indptr))
        np.save(d / "indices.npy", np.asarray(self.indices))
        return CSRGraph.load(d)

    @classmethod
    def load(cls, directory: str | os.PathLike) -> CSRGraph:
        d = Path(directory)
        return cls(np.load(d / "indptr.npy", mmap_mode="r"), np.load(d / "indices.npy", mmap_mode="r"))


EdgeChunks = Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]


def csr_from_edge_chunks(chunks: EdgeChunks, num_nodes: int, directory: str | os.PathLike) -> CSRGraph:
    """The in-adjacency CSR of the directed edges (src → dst) that ``chunks()`` yields (called twice: it
    must yield the same chunks each time), by a two-pass counting sort: pass 1 counts the in-degrees, pass 2
    places each source in its target's row (:func:`~privgraph.data.csr_kernels.place_sources`); then each row
    is sorted on its own, its repeats and self-loop dropped and the rows compacted in place
    (:func:`~privgraph.data.csr_kernels.sort_dedup_rows`: a repeated edge is counted once, as on a simple
    graph).  No global sort: O(m log d) for rows of d entries.  Memory: the m indices of the placement (int32
    below 2³¹ nodes), three n-long int64 arrays and one chunk; the result is written to ``directory`` and
    returned memory-mapped.  A target or source outside [0, n), or chunks that differ between the passes,
    raise :class:`ValueError`."""
    from privgraph.data.csr_kernels import place_sources, sort_dedup_rows

    dtype = np.int32 if num_nodes < 2**31 else np.int64
    counts = np.zeros(num_nodes, dtype=np.int64)
    for _, dst in chunks():
        dst = np.asarray(dst)
        if dst.size and (dst.min() < 0 or dst.max() >= num_nodes):
            raise ValueError(f"an edge's target lies outside [0, {num_nodes})")
        counts += np.bincount(dst, minlength=num_nodes)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    del counts
    placed = np.empty(int(indptr[-1]), dtype=dtype)
    fill = indptr[:-1].copy()
    for src, dst in chunks():
        src, dst = np.ascontiguousarray(src, dtype=np.int64), np.ascontiguousarray(dst, dtype=np.int64)
        if src.shape != dst.shape:
            raise ValueError("each chunk needs as many sources as targets")
        code = place_sources(src, dst, fill, indptr, placed)
        if code == -1:
            raise ValueError(f"an edge's source or target lies outside [0, {num_nodes})")
        if code == -2:
            raise ValueError("chunks() yielded more edges to a target in its second pass than in its first")
    if not np.array_equal(fill, indptr[1:]):
        raise ValueError("chunks() yielded fewer edges to a target in its second pass than in its first")
    del fill
    new_ptr = np.empty(num_nodes + 1, dtype=np.int64)
    written = sort_dedup_rows(indptr, placed, new_ptr)
    del indptr
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / "indptr.npy", new_ptr)
    np.save(d / "indices.npy", placed[:written])  # a view: the kept prefix, no copy
    del placed
    return CSRGraph.load(d)


def csr_from_edge_index(edge_index: Tensor, num_nodes: int, directory: str | os.PathLike) -> CSRGraph:
    """:func:`csr_from_edge_chunks` of an in-memory ``[2, m]`` edge_index (one chunk)."""
    ei = edge_index.cpu().numpy().astype(np.int64)
    return csr_from_edge_chunks(lambda: iter([(ei[0], ei[1])]), num_nodes, directory)


NORMS = ("sum", "gcn", "mean")


def _edge_weights(graph: CSRGraph, norm: str) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(per-source scale, per-target scale) of ``norm``: sum Aᵀ (none), gcn D^-1/2 A D^-1/2, mean D^-1 A."""
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if norm == "sum":
        return None, None
    deg = graph.in_degrees().astype(np.float32)
    inv = np.where(deg > 0, 1.0 / np.maximum(deg, 1.0), 0.0).astype(np.float32)
    if norm == "mean":
        return None, inv
    half = np.sqrt(inv).astype(np.float32)
    return half, half


def propagate(
    graph: CSRGraph,
    x: NodeTable,
    out: NodeTable,
    norm: str = "sum",
    noise_std: float = 0.0,
    rng: RandomSource | None = None,
    block_edges: int | None = None,
) -> NodeTable:
    """One aggregation step into ``out``: row v = Σ_{u → v} w_uv x_u (+ N(0, noise_std²) per entry, drawn
    from ``rng`` a row block at a time: the same law as one draw of the n × d noise), the weights of ``norm``
    (:data:`NORMS`; ``sum`` is GAP's Aᵀx, ``gcn`` KProp's D^-1/2 A D^-1/2 without self-loops).

    A column block of ``x`` is read whole ([n, w]: the table's ``col_block`` bounds it) and the targets
    are processed a row block at a time (about ``block_edges`` edges): memory is one column block, one row
    block's CSR (its indices and weights: 16 bytes an edge at most, no gathered messages) and ``out``'s row
    block, never the n × d product.
    A row block is one CSR product (:func:`~privgraph.mechanisms.csr_sum.csr_block_sum`, the per-source scale
    folded into its values, the per-target scale on its rows after): equal to the former gather and
    ``index_add_`` and to :func:`~privgraph.methods.gap.neighbour_sum` to float32 rounding (the summation order
    differs; the tests check 1e-5 relative); the noise is drawn as before, so seeded runs draw the same."""
    if x.shape != out.shape or x.col_block != out.col_block:
        raise ValueError("propagate needs an output table of the input's shape and column blocks")
    if noise_std > 0 and rng is None:
        raise ValueError("the aggregation noise needs an explicit random source")
    src_scale, dst_scale = _edge_weights(graph, norm)
    n = graph.num_nodes
    block_edges = block_edges or max(2**16, DEFAULT_BLOCK_BYTES // (4 * x.col_block))  # gathered: ≤ 256 MiB
    bounds = [0]
    while bounds[-1] < n:
        nxt = int(np.searchsorted(graph.indptr, graph.indptr[bounds[-1]] + block_edges, side="right")) - 1
        bounds.append(min(n, max(nxt, bounds[-1] + 1)))
    for c0, c1 in x.blocks():
        xb = torch.from_numpy(x.read_cols(c0, c1))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            ptr = np.asarray(graph.indptr[a : b + 1], dtype=np.int64)
            src = graph.indices[ptr[0] : ptr[-1]]
            agg = csr_block_sum(ptr, src, xb, None if src_scale is None else src_scale[src])
            if dst_scale is not None:
                agg.mul_(torch.from_numpy(dst_scale[a:b])[:, None])
            if noise_std > 0:
                agg.add_(randn((b - a, c1 - c0), rng, torch.float32) * noise_std)  # type: ignore[arg-type]
            out.write_cols(c0, agg.numpy(), row_start=a)
        del xb
    return out


def normalize_rows(table: NodeTable, out: NodeTable | None = None, eps: float = 1e-12) -> NodeTable:
    """Each row divided by its L2 norm (``F.normalize``'s max(‖x‖, eps)), a row block at a time."""
    out = table if out is None else out
    for start, rows in table.iter_rows():
        norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), eps)
        out.write_rows(start, rows / norms)
    return out


@dataclass
class OutOfCoreGraph:
    """A node-classification graph whose features and adjacency live in files under ``directory``; the labels
    and the split (one byte or int per node) in memory."""

    directory: Path
    graph: CSRGraph
    x: NodeTable
    y: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    feature_domain: tuple[float, float] | None = None  # the features' declared public range (None: undeclared)

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes

    @property
    def num_classes(self) -> int:
        return int(self.y.max()) + 1

    def cleanup(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    @classmethod
    def from_data(cls, data, directory: str | os.PathLike | None = None, col_block: int | None = None):
        """A PyG ``Data`` (features, edge_index, y and the split masks) written out of core."""
        d = Path(directory) if directory is not None else table_dir()
        graph = csr_from_edge_index(data.edge_index, int(data.num_nodes), d)
        x = NodeTable.from_tensor(d / "x.f32", data.x.to(torch.float32), col_block)
        train, val, test = (
            getattr(data, m).cpu().numpy().astype(bool) for m in ("train_mask", "val_mask", "test_mask")
        )
        domain = getattr(data, "feature_domain", None)  # as declared: a feature mechanism refuses None
        y = data.y.cpu().numpy().astype(np.int64)
        lo_hi = None if domain is None else (float(domain[0]), float(domain[1]))
        return cls(d, graph, x, y, train, val, test, feature_domain=lo_hi)


def synthetic_edges(
    *, num_nodes: int, num_edges: int, num_classes: int, homophily: float, seed: int, chunk: int = 2**22
) -> EdgeChunks:
    """:func:`synthetic_graph`'s edge chunks: ``num_edges``/2 links u–v, u uniform, v uniform in u's class
    (c, c + k, c + 2k, … for k = ``num_classes``) with probability ``homophily``, else uniform; each chunk of
    ``chunk`` links both ways, drawn from its own seed (the same chunks at every call)."""
    pairs = num_edges // 2
    per_class = num_nodes // num_classes

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for i, start in enumerate(range(0, pairs, chunk)):
            size = min(chunk, pairs - start)
            g = np.random.default_rng([seed, 1, i])
            u = g.integers(0, per_class * num_classes, size)
            same = g.random(size) < homophily
            v = np.where(
                same, g.integers(0, per_class, size) * num_classes + u % num_classes, g.integers(0, num_nodes, size)
            )
            yield np.concatenate([u, v]), np.concatenate([v, u])

    return chunks


def synthetic_graph(
    num_nodes: int,
    num_edges: int,
    num_features: int = 128,
    num_classes: int = 4,
    homophily: float = 0.8,
    feature_signal: float = 0.25,
    base_rate: float = 0.05,
    train_ratio: float = 0.1,
    val_ratio: float = 0.05,
    test_ratio: float | None = None,
    seed: int = 0,
    directory: str | os.PathLike | None = None,
    chunk: int = 2**22,
    col_block: int | None = None,
) -> OutOfCoreGraph:
    """A planted-partition graph written in chunks: node v in class v mod c; ``num_edges``/2 undirected
    links, each from a uniform node u to a uniform node of u's class with probability ``homophily``, else
    to a uniform node (both directions stored; repeats and self-loops dropped, so slightly fewer than
    ``num_edges`` directed edges remain); binary features, class c's "topic" columns on with probability
    ``base_rate + feature_signal``, the others with ``base_rate`` (as :func:`~privgraph.data.synthetic.sbm_graph`);
    a random split with the given ratios (``test_ratio`` None: the rest is test; else the rest is
    unlabelled).  Memory: one chunk of edges or rows, and the CSR's placement (4 bytes per directed edge)."""
    if num_classes < 2 or num_nodes < 2 * num_classes:
        raise ValueError("need num_classes >= 2 and at least two nodes per class")
    if not 0 <= homophily <= 1:
        raise ValueError("homophily must lie in [0, 1]")
    d = Path(directory) if directory is not None else table_dir()
    d.mkdir(parents=True, exist_ok=True)
    chunks = synthetic_edges(
        num_nodes=num_nodes, num_edges=num_edges, num_classes=num_classes, homophily=homophily, seed=seed, chunk=chunk
    )
    graph = csr_from_edge_chunks(chunks, num_nodes, d)
    y = (np.arange(num_nodes) % num_classes).astype(np.int64)
    g = np.random.default_rng([seed, 2])
    topic = g.random((num_classes, num_features)) < 1.0 / num_classes
    x = NodeTable.create(d / "x.f32", num_nodes, num_features, col_block)
    step = rows_per_block(num_features, 64 * 2**20)
    for i, start in enumerate(range(0, num_nodes, step)):
        stop = min(num_nodes, start + step)
        gi = np.random.default_rng([seed, 3, i])
        probs = base_rate + feature_signal * topic[y[start:stop]]
        x.write_rows(start, (gi.random((stop - start, num_features), dtype=np.float32) < probs).astype(np.float32))
    r = np.random.default_rng([seed, 4]).random(num_nodes)
    train, val = r < train_ratio, (r >= train_ratio) & (r < train_ratio + val_ratio)
    test = (
        ~(train | val)
        if test_ratio is None
        else (r >= train_ratio + val_ratio) & (r < train_ratio + val_ratio + test_ratio)
    )
    return OutOfCoreGraph(d, graph, x, y, train, val, test, feature_domain=(0.0, 1.0))  # binary by construction


__all__ = [
    "CSRGraph",
    "NodeTable",
    "OutOfCoreGraph",
    "concat_rows",
    "csr_from_edge_chunks",
    "csr_from_edge_index",
    "normalize_rows",
    "propagate",
    "synthetic_edges",
    "synthetic_graph",
    "table_dir",
]
