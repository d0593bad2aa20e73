"""The neighbour sum Aᵀx (GAP's Algorithm 1 hop, KProp's propagation, the out-of-core ``propagate``) as one
sparse CSR product: row v of the CSR matrix lists the sources u of the edges u → v, its values the per-edge
weights (GAP-NDP's sender weights a(d_u), KProp's normalisation), and ``torch.sparse.mm`` sums each row.

The sum equals the gather-then-scatter it replaces (``x[src] · w`` then ``index_add_``) to float32 rounding:
the terms are the same, only the order of the additions (and a fused multiply-add for the weight) differs.
Repeated edges become one entry of summed weight (a valid CSR); the noise of a noisy hop is drawn apart from the sum,
so seeded releases draw the same noise.  Torch applies every weight this code needs, so no fused loop of
our own is used."""

from __future__ import annotations

import warnings

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


def csr_adjacency(
    edge_index: Tensor,
    num_nodes: int,
    *,
    sender_weights: Tensor | None = None,
    edge_weights: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Aᵀ as an n × n CSR matrix, on ``edge_index``'s device: entry (v, u) = Σ over the edges u → v of
    ``sender_weights[u]`` (one per node) × ``edge_weights[e]`` (one per edge), either or both 1 when None.  A
    well-formed CSR (torch's invariants: columns sorted and distinct in each row): repeated edges are one entry,
    their weights summed."""
    n, device = num_nodes, edge_index.device
    key, order = torch.sort(edge_index[1] * n + edge_index[0], stable=True)  # by target, then source
    col = key % n if n else key
    values = torch.ones(col.numel(), dtype=dtype, device=device)
    if sender_weights is not None:
        values = sender_weights.to(device, dtype)[col]
    if edge_weights is not None:
        values = values * edge_weights.to(device, dtype)[order]
    if key.numel() > 1:
        first = torch.ones(key.numel(), dtype=torch.bool, device=device)
        first[1:] = key[1:] != key[:-1]
        if not bool(first.all()):  # repeated edges: one entry, the weights summed
            segment = torch.cumsum(first, 0) - 1
            values = torch.zeros(int(segment[-1]) + 1, dtype=dtype, device=device).index_add_(0, segment, values)
            key, col = key[first], col[first]
    crow = torch.zeros(n + 1, dtype=torch.long, device=device)
    if key.numel():
        crow[1:] = torch.cumsum(torch.bincount(key // n, minlength=n), 0)
    return csr_matrix(crow, col, values, (n, n))


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
