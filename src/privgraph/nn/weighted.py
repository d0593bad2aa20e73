"""Convolutions on weighted graphs (Blink paper, Appendix B.1).

* GCN, eq. (20): x_i' = W Σ_j P̂_ij / sqrt(Σ_k P̂_jk Σ_k P̂_ik) x_j + b with
  P̂ = P + I — exactly PyG's ``GCNConv`` with ``edge_weight`` (self-loops of
  weight 1, symmetric normalisation by weighted degrees), so no new layer.
* GraphSAGE, eq. (22): x_i' = W₁ x_i + W₂ Σ_j P_ij x_j / Σ_j P_ij + b.
* GAT, eq. (24): α_ij = P̂_ij exp(e_ij) / Σ_t P̂_it exp(e_it), i.e. the
  attention logits are shifted by log P̂_ij before the softmax.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import add_remaining_self_loops, scatter, softmax


class WeightedSAGEConv(MessagePassing):
    """Eq. (22): root transform plus the P-weighted mean of the neighbours."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__(aggr="add")
        self.lin_root = nn.Linear(in_channels, out_channels, bias=True)
        self.lin_neigh = nn.Linear(in_channels, out_channels, bias=False)

    def reset_parameters(self) -> None:
        self.lin_root.reset_parameters()
        self.lin_neigh.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        if edge_weight is None:
            edge_weight = torch.ones(edge_index.shape[1], device=x.device)
        total = self.propagate(edge_index, x=x, edge_weight=edge_weight)
        norm = scatter(edge_weight, edge_index[1], 0, dim_size=x.shape[0], reduce="sum")
        mean = total / norm.clamp(min=1e-12).unsqueeze(-1)
        return self.lin_root(x) + self.lin_neigh(mean)

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.unsqueeze(-1) * x_j


class WeightedGATConv(MessagePassing):
    """Eq. (24): single-layer GAT whose attention is reweighted by P̂ = P + I
    (multi-head, concatenated or averaged like PyG's ``GATConv``)."""

    def __init__(
        self, in_channels: int, out_channels: int, heads: int = 1, concat: bool = True, negative_slope: float = 0.2
    ):
        super().__init__(aggr="add", node_dim=0)
        self.heads, self.out_channels, self.concat, self.negative_slope = heads, out_channels, concat, negative_slope
        self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = nn.Parameter(torch.empty(heads * out_channels if concat else out_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.lin.reset_parameters()
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)
        nn.init.zeros_(self.bias)

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        n = x.shape[0]
        if edge_weight is None:
            edge_weight = torch.ones(edge_index.shape[1], device=x.device)
        edge_index, edge_weight = add_remaining_self_loops(edge_index, edge_weight, fill_value=1.0, num_nodes=n)
        h = self.lin(x).view(n, self.heads, self.out_channels)
        a_src = (h * self.att_src).sum(-1)
        a_dst = (h * self.att_dst).sum(-1)
        out = self.propagate(edge_index, h=h, a_src=a_src, a_dst=a_dst, log_w=edge_weight.clamp_min(1e-30).log())
        out = out.reshape(n, -1) if self.concat else out.mean(dim=1)
        return out + self.bias

    def message(
        self,
        h_j: Tensor,
        a_src_j: Tensor,
        a_dst_i: Tensor,
        log_w: Tensor,
        index: Tensor,
        ptr: Tensor | None,
        size_i: int | None,
    ) -> Tensor:
        logits = F.leaky_relu(a_src_j + a_dst_i, self.negative_slope) + log_w.unsqueeze(-1)
        alpha = softmax(logits, index, ptr, size_i)
        return alpha.unsqueeze(-1) * h_j
