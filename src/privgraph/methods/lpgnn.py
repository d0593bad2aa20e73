"""LPGNN: locally private GNNs (Sajadmanesh & Gatica-Perez, "Locally Private Graph Neural Networks", CCS 2021;
§5 of Sajadmanesh's talk "Privacy-Preserving Deep Learning over Graphs" (2020)).

Feature privacy: every node (train, validation and test alike) perturbs its
feature vector with a local randomizer (multi-bit by default, Algorithm 1);
the server rectifies the reports (unbiased estimator) and trains a two-layer
GNN whose first layer is KProp (Algorithm 2) followed by a linear UPDATE.

Label privacy (optional, ``label_epsilon``) is :mod:`privgraph.methods.label_ldp`,
shared by every node-classification method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch_geometric.data import Data

from privgraph.accounting import TrustModel, Unit
from privgraph.input_rules import declared_domain
from privgraph.mechanisms import (
    FEATURE_MECHANISMS,
    RandomSource,
    get_feature_mechanism,
)
from privgraph.mechanisms.gaussian import DEFAULT_DELTA as GAUSSIAN_DEFAULT_DELTA
from privgraph.methods.base import (
    Hyperparameters,
    Method,
    MethodParams,
    Release,
    gaussian_multiplier_event,
    param,
    register_method,
)
from privgraph.param_checks import delta_of_gaussian
from privgraph.progress import ProgressHook


@dataclass(frozen=True)
class FeatureParams(MethodParams):
    """A local feature randomizer's settings (LPGNN and the feature-level baselines).

    The default, ``multibit``, is Algorithm 1 of the LPGNN talk (§5); the other mechanisms serve
    HeteroRR's feature baselines (:class:`~privgraph.methods.heterorr.method.FeatureLDP`)."""

    mechanism: str = param(
        "multibit", f"feature mechanism: {', '.join(FEATURE_MECHANISMS)}", choices=tuple(FEATURE_MECHANISMS)
    )
    delta: float | None = param(
        None, "the Gaussian mechanism's δ per node (mechanism='gaussian'; default 1e-5)", bound="in (0, 1)"
    )
    clip: bool = param(
        False,
        "clip features into the declared domain (data.feature_domain) instead of refusing values outside it",
    )

    rules = (delta_of_gaussian,)


@register_method
class LPGNN(Method):
    """Feature LDP by a local randomizer (multi-bit, Algorithm 1), KProp on the server (Algorithm 2).

    Releases every node's perturbed feature vector, rectified to an unbiased estimate (the talk's
    "Approximation of Graph Convolution").  Privacy unit: one node's feature vector, ε-LDP in the local
    model (untrusted server; Theorem 3.1 for multi-bit).  The graph and labels are public to the server
    (the talk's §5 setting); label privacy, when asked for, is
    :func:`~privgraph.methods.label_ldp.report_labels`, outside this release."""

    trust_models = (TrustModel.LOCAL,)

    name = "lpgnn"
    description = "LPGNN: feature-LDP (multi-bit) + KProp + GNN"
    Params = FeatureParams
    delta_param = "delta"

    def dp_delta(self, data: Any = None) -> float:
        """The Gaussian mechanism's δ (``delta``, default 1e-5, the mechanism's); 0 for the pure-ε mechanisms."""
        if self.params.mechanism != "gaussian":
            return 0.0
        return GAUSSIAN_DEFAULT_DELTA if self.params.delta is None else float(self.params.delta)

    def spend_event(self, unit: str, epsilon: float, delta: float, data: Any = None) -> dict[str, Any] | None:
        """The Gaussian mechanism's event (one analytic Gaussian per node vector); None for the pure-ε ones."""
        if self.params.mechanism != "gaussian" or unit != Unit.NODE_FEATURES:
            return None
        return gaussian_multiplier_event(epsilon, delta)

    private = True
    tunable = ("lr", "weight_decay", "dropout", "kprop_steps")
    needs_domain = True

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The rectified perturbed features of every node, with the mechanism's ε-LDP guarantee."""
        eps = self.check_epsilon_given(epsilon)
        p = self.params
        domain = declared_domain(self.name, data)
        extra = {} if p.delta is None else {"delta": p.delta}  # Gaussian's own default
        mech = get_feature_mechanism(p.mechanism, eps, domain=domain, clip=p.clip, **extra)
        x = mech.privatize(data.x, rng)
        return Release(x, mech.guarantee(), {"mechanism": mech.name})

    def kprop_steps(self, hp: Hyperparameters) -> int:
        return hp.kprop_steps
