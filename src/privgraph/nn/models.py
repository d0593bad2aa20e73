"""Two-layer node classifiers: GCN, GraphSAGE, GAT, MLP, and LPGNN's
KProp-first variant (KProp aggregation + linear UPDATE, then a GNN layer)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GATConv, SAGEConv

from privgraph.nn.dense import BLOCKWISE_LAYERS, BlockwiseAdjacency, BlockwiseGCNConv, BlockwiseSAGEConv
from privgraph.nn.gcn import CachedGCNConv
from privgraph.nn.kprop import KProp
from privgraph.nn.weighted import WeightedGATConv, WeightedSAGEConv

MODELS = ("gcn", "sage", "gat", "mlp")
KPROP_AGGREGATOR = {"gcn": "gcn", "sage": "mean", "gat": "mean", "mlp": "mean"}


def make_conv(
    model: str,
    in_dim: int,
    out_dim: int,
    heads: int = 1,
    last: bool = False,
    weighted: bool = False,
    dense: bool = False,
) -> nn.Module:
    """One layer; ``weighted`` picks the edge-weighted forms of Blink's Appendix B.1
    (PyG's GCNConv already implements eq. 20 with ``edge_weight``); ``dense``
    their forms over a :class:`~privgraph.nn.dense.BlockwiseAdjacency` (Blink-Soft)."""
    if dense and model in ("gcn", "sage"):
        return BlockwiseGCNConv(in_dim, out_dim) if model == "gcn" else BlockwiseSAGEConv(in_dim, out_dim)
    if dense and model == "gat":
        raise ValueError(
            "GAT over a dense weight matrix (every node attending to all others) is not supported; "
            "Blink's authors do not run Blink-Soft with GAT either — use gcn or sage"
        )
    if model == "gcn":
        return CachedGCNConv(in_dim, out_dim)
    if model == "sage":
        return WeightedSAGEConv(in_dim, out_dim) if weighted else SAGEConv(in_dim, out_dim, aggr="mean")
    if model == "gat":
        if not last and out_dim % heads:
            raise ValueError(f"GAT hidden size {out_dim} must be divisible by heads={heads}")
        h, width = (1, out_dim) if last else (heads, out_dim // heads)
        return WeightedGATConv(in_dim, width, heads=h) if weighted else GATConv(in_dim, width, heads=h)
    if model == "mlp":
        return nn.Linear(in_dim, out_dim)
    raise ValueError(f"unknown model {model!r}; choose from {MODELS}")


class NodeClassifier(nn.Module):
    """``out = layer2(dropout(relu(layer1(x))))``.

    Dropout acts on the hidden layer only: on CPU, sampling a dropout mask for
    a high-dimensional input (e.g. 22k × 4.7k features) costs more than the
    rest of an epoch together.

    With ``kprop_steps = K > 0`` (LPGNN), layer 1 is KProp (K aggregation
    steps over N(v)−{v}, aggregator matching ``model``) followed by a linear
    UPDATE; layer 2 is the ``model``'s GNN layer.
    """

    def __init__(
        self,
        model: str,
        in_dim: int,
        hidden: int,
        out_dim: int,
        dropout: float = 0.5,
        kprop_steps: int = 0,
        heads: int = 4,
        weighted: bool = False,
        dense: bool = False,
    ):
        super().__init__()
        if model not in MODELS:
            raise ValueError(f"unknown model {model!r}; choose from {MODELS}")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
        self.model, self.dropout = model, float(dropout)
        self.kprop = KProp(kprop_steps, KPROP_AGGREGATOR[model]) if kprop_steps > 0 else None
        first = "mlp" if self.kprop is not None else model
        self.layer1 = make_conv(first, in_dim, hidden, heads=heads, weighted=weighted, dense=dense)
        self.layer2 = make_conv(model, hidden, out_dim, last=True, weighted=weighted, dense=dense)

    def _layer(
        self, layer: nn.Module, x: Tensor, edge_index: Tensor | BlockwiseAdjacency, edge_weight: Tensor | None
    ) -> Tensor:
        if isinstance(layer, nn.Linear):
            return layer(x)
        if isinstance(layer, BLOCKWISE_LAYERS) != isinstance(edge_index, BlockwiseAdjacency):
            raise ValueError("dense layers need a BlockwiseAdjacency graph and sparse layers an edge_index")
        if isinstance(layer, BLOCKWISE_LAYERS):
            return layer(x, edge_index)
        return layer(x, edge_index) if edge_weight is None else layer(x, edge_index, edge_weight)

    def forward(self, x: Tensor, edge_index: Tensor | BlockwiseAdjacency, edge_weight: Tensor | None = None) -> Tensor:
        """``edge_index`` is a [2, E] graph, or a :class:`BlockwiseAdjacency` for dense layers."""
        x = F.dropout(self.embed(x, edge_index, edge_weight), self.dropout, self.training)
        return self._layer(self.layer2, x, edge_index, edge_weight)

    def embed(self, x: Tensor, edge_index: Tensor | BlockwiseAdjacency, edge_weight: Tensor | None = None) -> Tensor:
        """The hidden layer ``relu(layer1(x))`` (after KProp for LPGNN): what an attribute-inference
        attacker reads from the model."""
        if edge_weight is not None and isinstance(self.layer2, (SAGEConv, GATConv)):
            raise ValueError("edge weights given to an unweighted SAGE/GAT model; build it with weighted=True")
        if self.kprop is not None:
            x = self.kprop(x, edge_index)
        return F.relu(self._layer(self.layer1, x, edge_index, edge_weight))

    def reset_parameters(self) -> None:
        for layer in (self.layer1, self.layer2):
            layer.reset_parameters()


__all__ = ["KPROP_AGGREGATOR", "MODELS", "NodeClassifier", "make_conv"]
