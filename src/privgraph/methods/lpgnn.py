"""LPGNN: locally private GNNs (Sajadmanesh & Gatica-Perez; slides §5).

Feature privacy: every node (train, validation and test alike) perturbs its
feature vector with a local randomizer (multi-bit by default, Algorithm 1);
the server rectifies the reports (unbiased estimator) and trains a two-layer
GNN whose first layer is KProp (Algorithm 2) followed by a linear UPDATE.

Label privacy (optional, ``epsilon_y``): training/validation nodes report
their label through k-ary randomized response; the server denoises by KProp
propagation of the noisy one-hot labels (K_y steps) and takes the arg-max.
With K_y = 0 the noisy labels are used as they are, with forward loss
correction by the known randomized-response channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, Unit
from privgraph.mechanisms import (
    FEATURE_MECHANISMS,
    RandomizedResponse,
    RandomSource,
    check_delta,
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
from privgraph.nn import KProp
from privgraph.progress import ProgressHook


@dataclass(frozen=True)
class FeatureParams(MethodParams):
    """A local feature randomizer's settings (LPGNN and the feature-level baselines).

    The default, ``multibit``, is Algorithm 1 of the LPGNN slides (§5); the other mechanisms serve
    HeteroRR's feature baselines (:class:`~privgraph.methods.heterorr.method.FeatureLDP`)."""

    mechanism: str = param("multibit", f"feature mechanism: {', '.join(FEATURE_MECHANISMS)}")
    delta: float | None = param(None, "the Gaussian mechanism's δ per node (mechanism='gaussian'; default 1e-5)")
    clip: bool = param(
        False,
        "clip features into the declared domain (data.feature_domain, default [0, 1]) "
        "instead of refusing values outside it",
    )

    def validate(self) -> None:
        if self.mechanism not in FEATURE_MECHANISMS:
            raise ValueError(f"unknown mechanism {self.mechanism!r}; choose from {', '.join(FEATURE_MECHANISMS)}")
        if self.delta is not None:
            if self.mechanism != "gaussian":
                raise ValueError(f"delta is the Gaussian mechanism's δ; the {self.mechanism} mechanism has none")
            check_delta(self.delta)


@register_method
class LPGNN(Method):
    """Feature LDP by a local randomizer (multi-bit, Algorithm 1), KProp on the server (Algorithm 2).

    Releases every node's perturbed feature vector, rectified to an unbiased estimate (the slides'
    "Approximation of Graph Convolution").  Privacy unit: one node's feature vector, ε-LDP in the local
    model (untrusted server; Theorem 3.1 for multi-bit).  The graph and labels are public to the server
    (slides §5 setting); label privacy, when asked for, is :func:`report_labels`, outside this release."""

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
        domain = tuple(getattr(data, "feature_domain", (0.0, 1.0)))
        extra = {} if p.delta is None else {"delta": p.delta}  # Gaussian's own default
        mech = get_feature_mechanism(p.mechanism, eps, domain=domain, clip=p.clip, **extra)
        x = mech.privatize(data.x, rng)
        return Release(x, mech.guarantee(), {"mechanism": mech.name})

    def kprop_steps(self, hp: Hyperparameters) -> int:
        return hp.kprop_steps


@dataclass
class LabelReports:
    """Randomized-response label reports of training/validation nodes (-1: not collected)."""

    reported: torch.Tensor
    mechanism: RandomizedResponse

    def guarantee(self) -> PrivacyGuarantee:
        return self.mechanism.guarantee().with_note(
            "labels of training/validation nodes only; test nodes report no label"
        )


def report_labels(data: Data, epsilon_y: float, rng: RandomSource, num_classes: int | None = None) -> LabelReports:
    """Node side: k-ary randomized response on the label of every training and
    validation node (the one-time label collection)."""
    for name in ("y", "train_mask", "val_mask"):
        if getattr(data, name, None) is None:
            raise ValueError(f"label privacy needs data.{name}")
    k = int(num_classes or int(data.y.max()) + 1)
    rr = RandomizedResponse(epsilon_y, k)
    labelled = data.train_mask | data.val_mask
    reported = torch.full_like(data.y, -1)
    reported[labelled] = rr.perturb(data.y[labelled], rng)
    return LabelReports(reported, rr)


def denoise_labels(data: Data, reports: LabelReports, label_steps: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Server side (post-processing): KProp propagation of the noisy one-hot
    labels for ``label_steps`` steps and arg-max (nodes whose propagated
    vector is empty keep their own report).  ``label_steps = 0`` keeps the
    reports and returns the randomized-response channel for forward loss
    correction.  Returns ``(observed labels, transition matrix or None)``.
    """
    reported, k = reports.reported, reports.mechanism.k
    labelled = reported >= 0
    if label_steps == 0:
        return reported.clone(), reports.mechanism.transition_matrix().to(torch.float32)
    onehot = torch.zeros((reported.numel(), k))
    onehot[labelled] = torch.nn.functional.one_hot(reported[labelled], k).float()
    votes = KProp(label_steps, "mean", cached=False)(onehot, data.edge_index)
    observed = torch.where(votes.sum(dim=1) > 0, votes.argmax(dim=1), reported)
    return torch.where(labelled, observed, torch.full_like(observed, -1)), None
