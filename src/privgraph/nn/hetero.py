"""Heterogeneous encoders: HeteDP's attention feature encoder (HAN layer:
node-level attention per metapath, eq. 7–9, and semantic attention, eq. 11–13,
as PyG's ``HANConv``), its link encoder (eq. 18: one RGCN layer, then VGAE's μ
and log σ) and the non-private baselines RGCN (Schlichtkrull et al.: one
GraphConv per relation, summed) and HGT (PyG ``HGTConv``).  Featureless node
types get fixed random inputs (:func:`privgraph.data.hetero.node_inputs`).
Each classifier's ``forward(x_dict, edge_index_dict)`` returns the logits of
its target type (so the homogeneous trainer can drive it); ``embed`` returns
the hidden representations of every type."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch_geometric.nn import GraphConv, HANConv, HeteroConv, HGTConv

from privgraph.data.hetero import EdgeType


def relation_key(edge_type: EdgeType) -> str:
    """A module-dict key for a relation (``src__rel__dst``)."""
    return "__".join(edge_type)


class RelationalVGAEEncoder(nn.Module):
    """Eq. 18's encoder: one RGCN layer (Schlichtkrull et al.: a projection per node type, a weight
    per relation on the mean of the neighbours' projections, summed with the node's own, ReLU),
    then μ and log σ per encoded type.  With no relations it is a per-node MLP.
    ``self_connection=False`` drops the node's own term: the authors' ``model.TopoDP`` (DGL
    ``GraphConv`` per relation, summed, no self-loop), where a node's embedding reads its neighbours only."""

    def __init__(
        self,
        in_dims: dict[str, int],
        encoded_types: Sequence[str],
        relations: Sequence[EdgeType],
        hidden: int,
        latent: int,
        self_connection: bool = True,
    ):
        super().__init__()
        self.self_connection = self_connection
        self.inp = nn.ModuleDict({t: nn.Linear(d, hidden) for t, d in in_dims.items()})
        self.rel = nn.ModuleDict({relation_key(r): nn.Linear(hidden, hidden, bias=False) for r in relations})
        self.mu = nn.ModuleDict({t: nn.Linear(hidden, latent) for t in encoded_types})
        self.logstd = nn.ModuleDict({t: nn.Linear(hidden, latent) for t in encoded_types})

    def forward(self, node_type: str, x: Tensor, means: dict[str, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        own = self.inp[node_type]
        h = own(x) if self.self_connection else x.new_zeros(*x.shape[:-1], own.out_features)
        return self.combine(node_type, h, {key: self.inp[key.split("__")[0]](m) for key, m in (means or {}).items()})

    def combine(self, node_type: str, own: Tensor, projected: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """Eq. 18 after the input layers: ``own`` = the node's projected input (zeros without the self
        connection), ``projected[key]`` = the input layer of the relation's source type applied to the
        neighbour mean; returns μ and log σ."""
        h = own
        for key, p in projected.items():
            h = h + self.rel[key](p)
        h = torch.relu(h)
        return self.mu[node_type](h), self.logstd[node_type](h).clamp(-10, 10)


class HANClassifier(nn.Module):
    """HANConv over the metapath graphs of ``target`` (eq. 7–13), then a linear layer."""

    def __init__(
        self, in_dim: int, hidden: int, num_classes: int, metadata, target: str, heads: int = 8, dropout: float = 0.6
    ):
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

    def __init__(
        self, in_dims: dict[str, int], hidden: int, num_classes: int, metadata, target: str, dropout: float = 0.5
    ):
        super().__init__()
        self.target, self.dropout = target, dropout
        self.inp = nn.ModuleDict({t: nn.Linear(d, hidden) for t, d in in_dims.items()})
        self.convs = nn.ModuleList(
            HeteroConv({et: GraphConv(hidden, hidden, aggr="mean") for et in metadata[1]}, aggr="sum") for _ in range(2)
        )
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

    def __init__(
        self,
        in_dims: dict[str, int],
        hidden: int,
        num_classes: int,
        metadata,
        target: str,
        heads: int = 2,
        dropout: float = 0.5,
    ):
        super().__init__()
        self.target, self.dropout = target, dropout
        self.inp = nn.ModuleDict({t: nn.Linear(d, hidden) for t, d in in_dims.items()})
        self.convs = nn.ModuleList(HGTConv(hidden, hidden, metadata, heads=heads) for _ in range(2))
        self.out = nn.Linear(hidden, num_classes)

    def embed(self, x_dict: dict[str, Tensor], edge_index_dict) -> dict[str, Tensor]:
        h = {t: torch.relu(self.inp[t](x)) for t, x in x_dict.items()}
        for conv in self.convs:
            new = conv(h, edge_index_dict)
            h = {
                t: nn.functional.dropout(new[t] if new.get(t) is not None else h[t], self.dropout, self.training)
                for t in h
            }
        return h

    def forward(self, x_dict: dict[str, Tensor], edge_index_dict) -> Tensor:
        return self.out(self.embed(x_dict, edge_index_dict)[self.target])
