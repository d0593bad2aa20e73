"""The comparison rows of the LPGNN table: GCN+RAW, GCN+RND, GCN+OHD, MLP."""

from __future__ import annotations

import torch
from torch_geometric.data import Data

from privgraph.accounting import NON_PRIVATE, PrivacyGuarantee, TrustModel, Unit
from privgraph.data.transforms import one_hot_degree
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.randomness import uniform
from privgraph.methods.base import Method, Release, register_method
from privgraph.progress import ProgressHook

FEATURES_UNUSED = PrivacyGuarantee(
    Unit.NODE_FEATURES, TrustModel.LOCAL, 0.0, 0.0, "features not collected",
    ("the private features never leave the nodes; the graph is public in this setting",),
)


@register_method
class RawFeatures(Method):
    name = "gcn-raw"
    description = "GNN on raw features (non-private)"
    private_fields = ()

    def release(self, data: Data, epsilon: float | None, rng: RandomSource,
                progress: ProgressHook | None = None) -> Release:
        return Release(data.x.to(torch.float32), NON_PRIVATE)


@register_method
class MLP(RawFeatures):
    name = "mlp"
    description = "MLP on raw features, no graph (non-private)"
    default_model = "mlp"


@register_method
class RandomFeatures(Method):
    name = "gcn-rnd"
    description = "GNN on random features (fully private)"

    def release(self, data: Data, epsilon: float | None, rng: RandomSource,
                progress: ProgressHook | None = None) -> Release:
        x = uniform((data.num_nodes, data.num_features), rng).to(torch.float32)
        return Release(x, FEATURES_UNUSED)


@register_method
class OneHotDegree(Method):
    name = "gcn-ohd"
    description = "GNN on one-hot degree features (fully private)"

    def release(self, data: Data, epsilon: float | None, rng: RandomSource,
                progress: ProgressHook | None = None) -> Release:
        return Release(one_hot_degree(data.edge_index, data.num_nodes), FEATURES_UNUSED)


__all__ = ["MLP", "OneHotDegree", "RandomFeatures", "RawFeatures"]
