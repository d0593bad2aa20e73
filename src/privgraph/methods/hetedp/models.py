"""Heterogeneous encoders: HeteDP's attention feature encoder (HAN layer:
node-level attention per metapath, eq. 7–9, and semantic attention, eq. 11–13,
as PyG's ``HANConv``) and the non-private baselines RGCN (Schlichtkrull et al.:
one GraphConv per relation, summed) and HGT (PyG ``HGTConv``).  Node types
without features get fixed random inputs drawn from a seed (public, data
independent).  Each classifier's ``forward(x_dict, edge_index_dict)`` returns
the logits of its target type (so the homogeneous trainer can drive it);
``embed`` returns the hidden representations of every type."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.data import HeteroData
from torch_geometric.nn import GraphConv, HANConv, HeteroConv, HGTConv


def node_inputs(data: HeteroData, dim: int = 64, seed: int = 0) -> dict[str, Tensor]:
    """``x`` per node type; featureless types get N(0, 1/dim) rows from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for t in data.node_types:
        if "x" in data[t]:
            out[t] = data[t].x.float()
        else:
            out[t] = torch.randn(data[t].num_nodes, dim, generator=g) / dim**0.5
    return out


class HANClassifier(nn.Module):
    """HANConv over the metapath graphs of ``target`` (eq. 7–13), then a linear layer."""

    def __init__(self, in_dim: int, hidden: int, num_classes: int, metadata, target: str, heads: int = 8,
                 dropout: float = 0.6):
        super().__init__()
        self.target = target
        self.conv = HANConv({target: in_dim}, hidden, metadata, heads=heads, dropout=dropout)
        self.out = nn.Linear(hidden, num_classes)
        self.dropout = dropout

    def embed(self, x_dict: dict[str, Tensor], edge_index_dict) -> dict[str, Tensor]:
        return self.conv({self.target: x_dict[self.target]}, edge_index_dict)

    def forward(self, x_dict: dict[str, Tensor], edge_index_dict) -> Tensor:
        h = self.embed(x_dict, edge_index_dict)[self.target]
        return self.out(nn.functional.dropout(h, self.dropout, self.training))


class RGCNClassifier(nn.Module):
    """Two relational layers (GraphConv with mean aggregation per relation, summed over relations)."""

    def __init__(self, in_dims: dict[str, int], hidden: int, num_classes: int, metadata, target: str,
                 dropout: float = 0.5):
        super().__init__()
        self.target, self.dropout = target, dropout
        self.inp = nn.ModuleDict({t: nn.Linear(d, hidden) for t, d in in_dims.items()})
        self.convs = nn.ModuleList(
            HeteroConv({et: GraphConv(hidden, hidden, aggr="mean") for et in metadata[1]}, aggr="sum")
            for _ in range(2))
        self.out = nn.Linear(hidden, num_classes)

    def embed(self, x_dict: dict[str, Tensor], edge_index_dict) -> dict[str, Tensor]:
        h = {t: torch.relu(self.inp[t](x)) for t, x in x_dict.items()}
        for i, conv in enumerate(self.convs):
            new = conv(h, edge_index_dict)
            h = {t: new.get(t, h[t]) for t in h}
            if i == 0:
                h = {t: nn.functional.dropout(torch.relu(v), self.dropout, self.training) for t, v in h.items()}
        return h

    def forward(self, x_dict: dict[str, Tensor], edge_index_dict) -> Tensor:
        return self.out(self.embed(x_dict, edge_index_dict)[self.target])


class HGTClassifier(nn.Module):
    """Per-type input projection, two HGT layers, a linear output."""

    def __init__(self, in_dims: dict[str, int], hidden: int, num_classes: int, metadata, target: str,
                 heads: int = 2, dropout: float = 0.5):
        super().__init__()
        self.target, self.dropout = target, dropout
        self.inp = nn.ModuleDict({t: nn.Linear(d, hidden) for t, d in in_dims.items()})
        self.convs = nn.ModuleList(HGTConv(hidden, hidden, metadata, heads=heads) for _ in range(2))
        self.out = nn.Linear(hidden, num_classes)

    def embed(self, x_dict: dict[str, Tensor], edge_index_dict) -> dict[str, Tensor]:
        h = {t: torch.relu(self.inp[t](x)) for t, x in x_dict.items()}
        for conv in self.convs:
            new = conv(h, edge_index_dict)
            h = {t: nn.functional.dropout(new[t] if new.get(t) is not None else h[t], self.dropout, self.training)
                 for t in h}
        return h

    def forward(self, x_dict: dict[str, Tensor], edge_index_dict) -> Tensor:
        return self.out(self.embed(x_dict, edge_index_dict)[self.target])
