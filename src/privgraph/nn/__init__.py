"""Layers and models not in PyG (KProp) and the two-layer node classifiers."""

from privgraph.nn.kprop import KProp, normalized_adjacency
from privgraph.nn.models import MODELS, NodeClassifier

__all__ = ["MODELS", "KProp", "NodeClassifier", "normalized_adjacency"]
