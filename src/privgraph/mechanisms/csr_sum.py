"""The neighbour sum Aᵀx (GAP's Algorithm 1 hop, KProp's propagation, the out-of-core ``propagate``) as one
sparse CSR product: row v of the CSR matrix lists the sources u of the edges u → v, its values the per-edge
weights (GAP-NDP's sender weights a(d_u), KProp's normalisation), and ``torch.sparse.mm`` sums each row.

The sum equals the gather-then-scatter it replaces (``x[src] · w`` then ``index_add_``) to float32 rounding:
the terms are the same, only the order of the additions (and a fused multiply-add for the weight) differs.
Duplicate edges stay separate entries and are summed; the noise of a noisy hop is drawn apart from the sum,
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
    """Aᵀ as an n × n CSR matrix: row v holds one entry per edge u → v (duplicates kept, in their edge order:
    a stable sort by target), value ``sender_weights[u]`` (one per node), ``edge_weights[e]`` (one per edge),
    their product, or 1; on ``edge_index``'s device."""
    src, dst = edge_index[0], edge_index[1]
    device = edge_index.device
    order = torch.argsort(dst, stable=True)
    col = src[order]
    crow = torch.zeros(num_nodes + 1, dtype=torch.long, device=device)
    if dst.numel():
        crow[1:] = torch.cumsum(torch.bincount(dst, minlength=num_nodes), 0)
    if sender_weights is None and edge_weights is None:
        values = torch.ones(col.numel(), dtype=dtype, device=device)
    else:
        values = torch.ones((), dtype=dtype, device=device)
        if sender_weights is not None:
            values = sender_weights.to(device, dtype)[col]
        if edge_weights is not None:
            values = values * edge_weights.to(device, dtype)[order]
    return csr_matrix(crow, col, values, (num_nodes, num_nodes))


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
