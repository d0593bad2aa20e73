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
    Unit.NODE_FEATURES,
    TrustModel.LOCAL,
    0.0,
    0.0,
    "features not collected",
    ("the private features never leave the nodes; the graph is public in this setting",),
)


@register_method
class RawFeatures(Method):
    """GCN+RAW (LPGNN talk §5, comparison methods): the GNN trained on the raw features.

    Non-private upper bound: the release is the input features as they are, reported as unprotected
    (no privacy unit or trust model applies); the graph and labels are used as given."""

    name = "gcn-raw"
    description = "GNN on raw features (non-private)"
    private_fields = ()

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The raw features (float32) with the non-private guarantee; ``epsilon`` is ignored."""
        return Release(data.x.to(torch.float32), NON_PRIVATE)


@register_method
class MLP(RawFeatures):
    """An MLP on the raw features, no graph: :class:`RawFeatures`'s release, non-private.

    Not a row of the LPGNN talk's table (§5 lists GCN+RAW, LPGNN, GCN+RND, GCN+OHD); the Blink paper (§5.1)
    uses it as the fully *link*-private reference.  The features are released as they are, so the guarantee
    reported is the non-private one."""

    name = "mlp"
    description = "MLP on raw features, no graph (non-private)"
    default_model = "mlp"


@register_method
class RandomFeatures(Method):
    """GCN+RND (LPGNN talk §5): uniform random features in place of x, the GNN on the public graph.

    Fully feature-private: the features never leave the nodes (ε = 0 per node feature vector, local model).
    The graph and labels are public to the server, as in LPGNN's setting."""

    name = "gcn-rnd"
    reads_nothing_private = True
    description = "GNN on random features (fully private)"

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """Uniform random features of x's shape, with the ε = 0 feature guarantee."""
        x = uniform((data.num_nodes, data.num_features), rng).to(torch.float32)
        return Release(x, FEATURES_UNUSED)


@register_method
class OneHotDegree(Method):
    """GCN+OHD (LPGNN talk §5): one-hot degree features computed from the public graph.

    Fully feature-private like :class:`RandomFeatures` (ε = 0 per node feature vector, local model): only
    the graph, which the server holds in this setting, is used."""

    name = "gcn-ohd"
    reads_nothing_private = True
    description = "GNN on one-hot degree features (fully private)"

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """One-hot degree features of the public graph, with the ε = 0 feature guarantee."""
        return Release(one_hot_degree(data.edge_index, data.num_nodes), FEATURES_UNUSED)


__all__ = ["MLP", "OneHotDegree", "RandomFeatures", "RawFeatures"]
