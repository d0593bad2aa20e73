"""The KProp layer of LPGNN (Sajadmanesh & Gatica-Perez, "Locally Private Graph Neural Networks", CCS 2021;
Algorithm 2 of Sajadmanesh's talk "Privacy-Preserving Deep Learning over Graphs" (2020))."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import remove_self_loops, scatter

from privgraph.mechanisms.csr_sum import csr_adjacency

AGGREGATORS = ("gcn", "mean", "add")


def normalized_adjacency(edge_index: Tensor, num_nodes: int, aggregator: str = "gcn") -> Tensor:
    """Sparse propagation matrix over N(v) − {v} (self-loops removed).

    ``gcn``: D^{-1/2} A D^{-1/2}; ``mean``: D^{-1} A; ``add``: A.  Row v of the
    result aggregates the neighbours u of v (messages flow source → target).
    """
    if aggregator not in AGGREGATORS:
        raise ValueError(f"aggregator must be one of {AGGREGATORS}, got {aggregator!r}")
    edge_index, _ = remove_self_loops(edge_index)
    src, dst = edge_index
    if aggregator == "gcn":
        edge_index, weight = gcn_norm(edge_index, None, num_nodes, add_self_loops=False)
        src, dst = edge_index
    else:
        weight = torch.ones(src.numel(), device=src.device)
        if aggregator == "mean":
            deg = scatter(weight, dst, 0, dim_size=num_nodes, reduce="sum")
            weight = weight / deg.clamp(min=1)[dst]
    # the shared CSR kernel's matrix (repeated edges one entry, their weights summed, as the coalesced COO was)
    return csr_adjacency(torch.stack([src, dst]), num_nodes, edge_weights=weight, dtype=weight.dtype)


# columns propagated together by :func:`propagate_columns` (a block of 22 470 nodes: 22 MiB per buffer)
KPROP_BLOCK_COLUMNS = 256


def _propagate(adj: Tensor, x: Tensor, steps: int) -> Tensor:
    h = x
    for _ in range(steps):
        h = adj @ h
    return h


def propagate_columns(adj: Tensor, x: Tensor, steps: int, block: int = KPROP_BLOCK_COLUMNS) -> Tensor:
    """``adj^steps · x`` a block of columns at a time, into one output matrix.

    A column of the product depends on that column of ``x`` alone, and each entry is the same sum
    in the same (CSR row) order whatever the number of columns, so the result equals the
    whole-matrix loop value for value (``tests/nn/test_kprop.py``); the whole-matrix loop holds
    two n × d intermediates beside ``x`` and the result, this one two n × ``block`` buffers."""
    if steps == 0 or x.shape[1] <= block:
        return _propagate(adj, x, steps)
    out = torch.empty_like(x)
    for start in range(0, x.shape[1], block):
        out[:, start : start + block] = _propagate(adj, x[:, start : start + block], steps)
    return out


class KProp(nn.Module):
    """K consecutive AGGREGATE steps over each node's neighbourhood excluding
    itself (Algorithm 2, lines 2–5); UPDATE is the next layer.

    The propagation has no parameters, so with ``cached=True`` it is computed
    once per (features, graph) pair — like PyG's ``cached`` convolutions,
    valid for transductive training on a fixed graph.
    """

    def __init__(self, steps: int, aggregator: str = "gcn", cached: bool = True):
        super().__init__()
        if int(steps) != steps or steps < 0:
            raise ValueError(f"KProp steps must be a non-negative integer, got {steps!r}")
        if aggregator not in AGGREGATORS:
            raise ValueError(f"aggregator must be one of {AGGREGATORS}, got {aggregator!r}")
        self.steps, self.aggregator, self.cached = int(steps), aggregator, cached
        self._cache: tuple[tuple, Tensor] | None = None

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        key = (x.device, x.data_ptr(), tuple(x.shape), edge_index.data_ptr(), edge_index.shape[1])
        if self.cached and self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        adj = normalized_adjacency(edge_index, x.shape[0], self.aggregator).to(x.dtype)
        h = propagate_columns(adj, x, self.steps) if not x.requires_grad else _propagate(adj, x, self.steps)
        if self.cached:
            self._cache = (key, h.detach())
        return h

    def extra_repr(self) -> str:
        return f"steps={self.steps}, aggregator={self.aggregator}"
