"""Convolutions over a dense weight matrix that is never held whole.

Blink-Soft (Blink paper, eq. 9) aggregates over *all* pairs with weights
P_ij.  A :class:`BlockwiseAdjacency` produces P row block by row block (for
Blink, from the evidence states and β: :class:`privgraph.methods.blink.soft.PosteriorAdjacency`);
:func:`propagate` computes P·H in blocks, memory O(block·n), and its
gradient Pᵀ·G = P·G (P is symmetric) the same way.  Row blocks are computed
once and kept while the whole float matrix fits ``max_cached_bytes`` (Cora:
29 MB; a GCN training then multiplies cached blocks instead of recomputing P
four times an epoch); above that they are recomputed on every use, memory
O(block·n).  The layers are the
weighted forms of Appendix B.1 written for such a P (not PyG's ``DenseGCNConv`` /
``DenseSAGEConv``, which take a whole batched dense adjacency):

* :class:`BlockwiseGCNConv` — eq. (20), P̂ = P + I, symmetric normalisation;
* :class:`BlockwiseSAGEConv` — eq. (22), root transform plus the P-weighted mean.

The linear transform is applied before the propagation (P·(XW) = (P·X)W),
so each propagation multiplies by an n × hidden matrix, not n × features.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import torch
from torch import Tensor, nn


class BlockwiseAdjacency:
    """A symmetric n × n non-negative weight matrix with a zero diagonal,
    available as row blocks.  Subclasses implement :meth:`rows`."""

    num_nodes: int
    block: int = 1024
    max_cached_bytes: int = 512 * 2**20  # keep the float32 row blocks when n² · 4 bytes fit
    release_name: str | None = None  # the name a release file gives the subclass (None: not written)
    # every subclass with a release_name, by that name: what a release file's operator is rebuilt with
    operators: ClassVar[dict[str, type[BlockwiseAdjacency]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.release_name:
            BlockwiseAdjacency.operators[cls.release_name] = cls

    def release_state(self) -> dict[str, Any]:
        """What defines P, as CPU tensors and plain values (no caches): a release file holds it."""
        return {k: v.detach().cpu() if torch.is_tensor(v) else v for k, v in vars(self).items() if k[0] != "_"}

    @classmethod
    def from_release_state(cls, state: dict[str, Any]) -> BlockwiseAdjacency:
        """The operator :meth:`release_state` describes."""
        out = cls.__new__(cls)
        vars(out).update(state)
        return out

    def rows(self, start: int, stop: int) -> Tensor:
        """float32 [stop − start, n]: rows ``start:stop`` of P."""
        raise NotImplementedError

    def blocks(self):
        """(start, stop, rows) over the row blocks, from the cache where it is kept."""
        cache = getattr(self, "_blocks", None)
        if cache is not None:
            yield from cache
            return
        keep = 4 * self.num_nodes * self.num_nodes <= self.max_cached_bytes
        kept = []
        for s in range(0, self.num_nodes, self.block):
            e = min(s + self.block, self.num_nodes)
            block = (s, e, self.rows(s, e))
            if keep:
                kept.append(block)
            yield block
        if keep:
            self._blocks = kept

    def to(self, device: torch.device | str) -> BlockwiseAdjacency:
        """A copy whose row blocks are computed (and cached) on ``device``: every tensor attribute is
        moved, so a subclass's :meth:`rows` computes where its inputs are."""
        out = copy.copy(self)
        for name, value in vars(self).items():
            if torch.is_tensor(value):
                setattr(out, name, value.to(device))
        if getattr(self, "_blocks", None) is not None:
            out._blocks = [(s, e, rows.to(device)) for s, e, rows in self._blocks]
        return out

    def matmul(self, h: Tensor) -> Tensor:
        """P·H, block by block (no autograd; use :func:`propagate`)."""
        out = torch.empty((self.num_nodes, h.shape[1]), dtype=h.dtype, device=h.device)
        for s, e, rows in self.blocks():
            out[s:e] = rows.to(h.dtype) @ h
        return out

    def degree(self) -> Tensor:
        """Row sums Σ_j P_ij (cached)."""
        cached = getattr(self, "_degree", None)
        if cached is None:
            cached = torch.cat([rows.sum(1) for _, _, rows in self.blocks()])
            self._degree = cached
        return cached

    def to_dense(self) -> Tensor:
        """The whole matrix (tests and small graphs only)."""
        return self.rows(0, self.num_nodes)


class _Propagate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h: Tensor, adjacency: BlockwiseAdjacency) -> Tensor:  # type: ignore[override]
        ctx.adjacency = adjacency
        return adjacency.matmul(h)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        return ctx.adjacency.matmul(grad), None  # Pᵀ = P


def propagate(adjacency: BlockwiseAdjacency, h: Tensor) -> Tensor:
    """P·H with autograd, in row blocks."""
    return _Propagate.apply(h, adjacency)


class BlockwiseGCNConv(nn.Module):
    """Eq. (20) over a blockwise P: x' = D̂^{-1/2}(P + I)D̂^{-1/2} X W + b, D̂ = diag(P̂·1)."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def reset_parameters(self) -> None:
        self.lin.reset_parameters()
        nn.init.zeros_(self.bias)

    def forward(self, x: Tensor, adjacency: BlockwiseAdjacency) -> Tensor:
        d_inv_sqrt = (adjacency.degree().to(x.dtype) + 1.0).rsqrt().unsqueeze(-1)
        h = d_inv_sqrt * self.lin(x)
        return d_inv_sqrt * (propagate(adjacency, h) + h) + self.bias


class BlockwiseSAGEConv(nn.Module):
    """Eq. (22) over a blockwise P: x' = W₁x_i + W₂ Σ_j P_ij x_j / Σ_j P_ij + b."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.lin_root = nn.Linear(in_channels, out_channels, bias=True)
        self.lin_neigh = nn.Linear(in_channels, out_channels, bias=False)

    def reset_parameters(self) -> None:
        self.lin_root.reset_parameters()
        self.lin_neigh.reset_parameters()

    def forward(self, x: Tensor, adjacency: BlockwiseAdjacency) -> Tensor:
        norm = adjacency.degree().to(x.dtype).clamp(min=1e-12).unsqueeze(-1)
        return self.lin_root(x) + propagate(adjacency, self.lin_neigh(x)) / norm


BLOCKWISE_LAYERS = (BlockwiseGCNConv, BlockwiseSAGEConv)
