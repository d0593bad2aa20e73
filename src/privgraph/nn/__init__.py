"""Layers and models not in PyG (KProp), the two-layer node classifiers and the
heterogeneous encoders (HAN, RGCN, HGT, the relational VGAE encoder)."""

from privgraph.nn.hetero import HANClassifier, HGTClassifier, RelationalVGAEEncoder, RGCNClassifier
from privgraph.nn.kprop import KProp, normalized_adjacency
from privgraph.nn.models import MODELS, NodeClassifier

__all__ = [
    "MODELS",
    "HANClassifier",
    "HGTClassifier",
    "KProp",
    "NodeClassifier",
    "RelationalVGAEEncoder",
    "RGCNClassifier",
    "normalized_adjacency",
]
