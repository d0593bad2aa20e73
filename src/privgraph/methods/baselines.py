"""The comparison rows of the LPGNN table: GCN+RAW, GCN+RND, GCN+OHD, MLP."""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Data

from privgraph.accounting import NON_PRIVATE, PrivacyGuarantee, TrustModel, Unit
from privgraph.data.transforms import one_hot_degree
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.randomness import uniform
from privgraph.methods.base import Release, Hyperparameters, Method

FEATURES_UNUSED = PrivacyGuarantee(
    Unit.NODE_FEATURES, TrustModel.LOCAL, 0.0, 0.0, "features not collected",
    ("the private features never leave the nodes; the graph is public in this setting",),
)


class RawFeatures(Method):
    name = "gcn-raw"
    description = "GNN on raw features (non-private)"

    def release(self, data: Data, epsilon, rng: RandomSource, hp: Hyperparameters, options: dict[str, Any]):
        return Release(data.x.to(torch.float32), NON_PRIVATE)


class MLP(RawFeatures):
    name = "mlp"
    description = "MLP on raw features, no graph (non-private)"
    default_model = "mlp"


class RandomFeatures(Method):
    name = "gcn-rnd"
    description = "GNN on random features (fully private)"

    def release(self, data: Data, epsilon, rng: RandomSource, hp: Hyperparameters, options: dict[str, Any]):
        x = uniform((data.num_nodes, data.num_features), rng).to(torch.float32)
        return Release(x, FEATURES_UNUSED)


class OneHotDegree(Method):
    name = "gcn-ohd"
    description = "GNN on one-hot degree features (fully private)"

    def release(self, data: Data, epsilon, rng: RandomSource, hp: Hyperparameters, options: dict[str, Any]):
        return Release(one_hot_degree(data.edge_index, data.num_nodes), FEATURES_UNUSED)


__all__ = ["MLP", "OneHotDegree", "RandomFeatures", "RawFeatures"]
