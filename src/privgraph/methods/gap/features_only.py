"""``mlp-ndp``: features-only node-level DP-SGD — GAP-NDP's encoder and classifier with K = 0 (no hop), an MLP
trained by DP-SGD on the training nodes' own features and labels.  It reads no edge (the graph is dropped
before the boundary's checks), so one node's removal changes one example and nothing else: node-DP on every
graph with no test and no lemma (the soft cap's design: the honest node-level baseline, and GAP-NDP's
fail branch).  The whole (ε, δ) goes to the two DP-SGD runs (Poisson rate q = B/N, clip C, noise σC, RDP
composition, N the public ``num_train``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.mechanisms.randomness import RandomSource
from privgraph.methods.base import MethodParams, param, register_method
from privgraph.methods.gap.node import GAPNode, privatize_over
from privgraph.methods.gap.params import GAPParams
from privgraph.methods.node_domain import NUM_TRAIN_HELP
from privgraph.methods.request_view import RequestView
from privgraph.param_checks import no_batch_norm, no_hops, whole_num_train
from privgraph.release import PrivateRelease


@dataclass(frozen=True)
class MLPNodeParams(GAPParams):
    """GAP-NDP's DP-SGD settings with no hop (``hops`` is 0, and refused otherwise)."""

    hops: int = param(0, "K: always 0 (no aggregation: no edge is read)", bound=">= 0")
    batch_norm: bool = param(False, "batch normalisation: not under DP-SGD (per-example gradients), always false")
    num_train: int | None = param(None, NUM_TRAIN_HELP)
    clip: float = param(1.0, "C: DP-SGD's per-example gradient norm bound", bound="> 0")
    batch_size: int = param(256, "B: expected Poisson batch of DP-SGD (rate q = B / num_train)", bound=">= 1")

    rules = (no_batch_norm, whole_num_train, no_hops)


@register_method
class MLPNode(GAPNode):
    """Features-only node-level DP-SGD (module docstring)."""

    name = "mlp-ndp"
    description = "features-only node-level DP-SGD: an MLP encoder and classifier (GAP-NDP, K = 0), reads no edge"
    Params: ClassVar[type[MethodParams]] = MLPNodeParams

    @property
    def enforced(self) -> bool:
        return False

    @property
    def tested(self) -> bool:
        return False

    def hop_ratio(self) -> float:
        return 1.0  # no hop: the rule has nothing to split

    def sensitivity(self) -> float:
        return 0.0

    def privatize(self, data: Any, request: RequestView, rng: RandomSource) -> PrivateRelease:
        """The graph is dropped before anything reads it: no check, note or refusal depends on an edge."""
        if not isinstance(data, Data) or getattr(data, "edge_index", None) is None:
            return super().privatize(data, request, rng)
        return privatize_over(super().privatize, data, torch.empty(2, 0, dtype=torch.long), request, rng)

    def guarantee(
        self, epsilon: float | None, sigma: float, delta: float, inside: bool = True, passed: bool | None = None
    ) -> PrivacyGuarantee:
        eps = math.inf if epsilon is None else float(epsilon)
        return PrivacyGuarantee(
            Unit.NODE_WITH_EDGES,
            TrustModel.CENTRAL,
            eps,
            delta if math.isfinite(eps) else 0.0,
            f"features-only DP-SGD: MLP encoder + classifier (GAP-NDP with K = 0), σ={sigma:.4g}, RDP composition",
            (
                "node-DP on every input graph: no edge is read, so one node added or removed changes one training "
                "example (Poisson-subsampled Gaussian, add/remove) and nothing else",
                *self.common_notes(),
            ),
        )


__all__ = ["MLPNode", "MLPNodeParams"]
