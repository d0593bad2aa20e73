"""The neighbour sum Aᵀx (GAP's Algorithm 1 hop, KProp's propagation, the out-of-core ``propagate``) as one
sparse CSR product: row v of the CSR matrix lists the sources u of the edges u → v, its values the per-edge
weights (GAP-NDP's sender weights a(d_u), KProp's normalisation), and ``torch.sparse.mm`` sums each row.

The sum equals the gather-then-scatter it replaces (``x[src] · w`` then ``index_add_``) to float32 rounding:
the terms are the same, only the order of the additions (and a fused multiply-add for the weight) differs.
Repeated edges become one entry of summed weight (a valid CSR); the noise of a noisy hop is drawn apart from the sum,
so seeded releases draw the same noise.  Torch applies every weight this code needs, so the product needs no
fused loop of our own; the matrix is built by a compiled counting sort (numba), not a sort of the edges."""

from __future__ import annotations

import warnings

import numba as nb
import numpy as np
import torch
from torch import Tensor

INT32_LIMIT = 2**31 - 1


def _index_dtype(num_rows: int, num_cols: int, nnz: int) -> torch.dtype:
    """int32 indices where they fit (the product runs about a quarter faster than with int64)."""
    return torch.int32 if max(num_rows, num_cols, nnz) < INT32_LIMIT else torch.int64


def csr_matrix(crow: Tensor, col: Tensor, values: Tensor, shape: tuple[int, int]) -> Tensor:
    """A sparse CSR tensor of ``shape`` (rows: targets, columns: sources), indices in the narrowest dtype."""
    dtype = _index_dtype(shape[0], shape[1], col.numel())
    with warnings.catch_warnings():  # torch's "sparse CSR is beta" notice
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            crow.to(dtype),
            col.to(dtype),
            values,
            shape,
            check_invariants=False,  # built sorted and in range
        )


@nb.njit(cache=True)
def _by_target(src: np.ndarray, dst: np.ndarray, values: np.ndarray, n: int):  # pragma: no cover (compiled)
    """Counting sort of the edges by target (O(m + n)), then each row's sources sorted and repeats merged;
    ``values`` empty: every edge weighs 1.  The columns in ``src``'s integer type, the values in float64."""
    m, weighted = src.shape[0], values.shape[0] > 0
    start = np.zeros(n + 1, np.int64)
    for e in range(m):
        start[dst[e] + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    col, val = np.empty(m, src.dtype), np.empty(m if weighted else 0, np.float64)
    for e in range(m):
        p = fill[dst[e]]
        col[p] = src[e]
        if weighted:
            val[p] = values[e]
        fill[dst[e]] = p + 1
    crow = np.zeros(n + 1, np.int64)
    merged = np.empty(m, np.float64)  # the entries' summed weights
    out = 0
    for v in range(n):
        a, b = start[v], start[v + 1]
        if b - a > 32:  # a long row: a sort; a short one: insertion
            order = np.argsort(col[a:b], kind="mergesort")
            col[a:b] = col[a:b][order]
            if weighted:
                val[a:b] = val[a:b][order]
        else:
            for i in range(a + 1, b):
                c, j = col[i], i - 1
                x = val[i] if weighted else 1.0
                while j >= a and col[j] > c:
                    col[j + 1] = col[j]
                    if weighted:
                        val[j + 1] = val[j]
                    j -= 1
                col[j + 1] = c
                if weighted:
                    val[j + 1] = x
        for i in range(a, b):
            w = val[i] if weighted else 1.0
            if out > crow[v] and col[out - 1] == col[i]:
                merged[out - 1] += w
            else:
                col[out], merged[out] = col[i], w
                out += 1
        crow[v + 1] = out
    return crow, col[:out], merged[:out]


def _by_target_torch(
    src: Tensor, dst: Tensor, values: Tensor, n: int, num_sources: int | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`_by_target` with torch's sort (off the CPU); ``num_sources``: the columns (default n)."""
    ns = n if num_sources is None else num_sources
    key, order = torch.sort(dst * ns + src)
    values = values[order]
    if key.numel() > 1:
        first = torch.ones(key.numel(), dtype=torch.bool, device=key.device)
        first[1:] = key[1:] != key[:-1]
        segment = torch.cumsum(first, 0) - 1
        values = torch.zeros(int(first.sum()), dtype=values.dtype, device=key.device).index_add_(0, segment, values)
        key = key[first]
    crow = torch.zeros(n + 1, dtype=torch.long, device=key.device)
    if key.numel():
        crow[1:] = torch.cumsum(torch.bincount(key // ns, minlength=n), 0)
    return crow, key % ns if ns else key, values


def csr_adjacency(
    edge_index: Tensor,
    num_nodes: int,
    *,
    sender_weights: Tensor | None = None,
    edge_weights: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    num_sources: int | None = None,
) -> Tensor:
    """Aᵀ as an n × ``num_sources`` (default n) CSR matrix, on ``edge_index``'s device: entry (v, u) = Σ
    over the edges u → v of ``sender_weights[u]`` (one per node) × ``edge_weights[e]`` (one per edge), either
    or both 1 when None (the products and their sums in float64, then cast to ``dtype``).  A well-formed CSR
    (torch's invariants: columns sorted and distinct in each row; repeated edges are one entry, their weights
    summed), built on the CPU by a counting sort (O(m + n)), elsewhere by torch's sort."""
    n, device = num_nodes, edge_index.device
    ns = n if num_sources is None else num_sources
    index = _index_dtype(n, ns, edge_index.shape[1]) if device.type == "cpu" else torch.long
    src, dst = edge_index[0].to(index), edge_index[1].to(index)
    values = torch.ones(src.numel() if device.type != "cpu" else 0, dtype=torch.float64, device=device)
    if sender_weights is not None:
        values = sender_weights.to(device, torch.float64)[src.long()]
    if edge_weights is not None:
        values = (values if values.numel() else 1.0) * edge_weights.to(device, torch.float64)
    if device.type == "cpu":
        s, d, w = (t.contiguous().numpy() for t in (src, dst, values))
        crow, col, vals = (torch.from_numpy(a) for a in _by_target(s, d, w, n))
    else:
        crow, col, vals = _by_target_torch(src, dst, values, n, ns)
    return csr_matrix(crow, col, vals.to(dtype), (n, ns))


def csr_sum(adj: Tensor, x: Tensor) -> Tensor:
    """``adj @ x`` (``torch.sparse.mm``): row v = Σ over row v's entries of value · x_u; ``adj``'s values are
    cast to ``x``'s dtype and device if they differ."""
    if adj.dtype != x.dtype or adj.device != x.device:
        adj = adj.to(x.device, x.dtype)
    return torch.sparse.mm(adj, x)


def csr_block_sum(indptr: np.ndarray, indices: np.ndarray, x: Tensor, values: np.ndarray | None = None) -> Tensor:
    """The rows of a CSR block times ``x``: ``indptr`` (the block's b + 1 offsets, absolute), ``indices`` (its
    sources, ``indptr[0]`` … ``indptr[-1]``), ``values`` (one per entry, float32; None: ones) — the
    out-of-core ``propagate``'s row block, [b, x.shape[1]]."""
    crow = torch.from_numpy(np.asarray(indptr, dtype=np.int64) - int(indptr[0]))
    col = torch.from_numpy(np.array(indices, copy=True))  # a writable copy of a memory-mapped slice
    vals = torch.ones(col.numel(), dtype=x.dtype) if values is None else torch.from_numpy(values).to(x.dtype)
    return torch.sparse.mm(csr_matrix(crow, col, vals, (crow.numel() - 1, x.shape[0])), x)


__all__ = ["csr_adjacency", "csr_block_sum", "csr_matrix", "csr_sum"]
