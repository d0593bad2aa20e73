"""Node features and labels (local): one node's feature vector at the extremes of the declared domain, its
label 0 vs 1, and the whole release beside each."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, Unit
from privgraph.audit.definitions.registry import (
    WHOLE_RELEASE_TEST,
    AuditInput,
    audits_kind,
    homogeneous,
    nominal_claim,
    release,
    whole_release_row,
)
from privgraph.audit.neighbours import Neighbours, clamped_sum, feature_domain, first_column, projection, with_row
from privgraph.methods import Method


def audited_node(data: Data) -> int:
    """The node whose features (or label) change: the first training node that is not public."""
    public = getattr(data, "public_node_mask", None)
    train = getattr(data, "train_mask", torch.ones(data.num_nodes, dtype=torch.bool))
    ok = train & (~public if public is not None else True)
    if not bool(ok.any()):
        raise ValueError("the audit needs a training node that is not public")
    return int(ok.nonzero()[0])


def feature_request(method: Method, inp: AuditInput) -> float | None:
    """The ε asked for the feature unit: HeteroRR's ``epsilon_f`` when given, else the audit's ε; 0 under the
    experimental control ``control='constant-input'`` (its release ignores x: 0-LDP, as it states)."""
    if inp.epsilon is None:
        return None
    if getattr(method.params, "control", "none") != "none":
        return 0.0
    return getattr(method.params, "epsilon_f", None) or inp.epsilon


def feature_units(method: Method, inp: AuditInput, u: int | None = None) -> list[Neighbours]:
    """The feature unit's two rows: node u's released row, and the whole release."""
    own = feature_unit(method, inp, u)
    return [own, whole_release_row(own, f"x_u = all α vs all β; {WHOLE_RELEASE_TEST}")]


def feature_unit(method: Method, inp: AuditInput, u: int | None = None) -> Neighbours:
    """One node's feature vector at the two extreme points of the declared domain (u's released row)."""
    data = homogeneous(method, inp.data)
    u = audited_node(data) if u is None else u
    lo, hi = feature_domain(data)
    d = data.x.shape[1]
    worlds = (with_row(data, u, torch.full((d,), lo)), with_row(data, u, torch.full((d,), hi)))
    gaussian = getattr(method.params, "mechanism", None) == "gaussian"
    score = projection(np.ones(d)) if gaussian else clamped_sum(lo, hi)
    test = (
        "⟨x̃_u, 1⟩ (the Gaussian likelihood ratio)"
        if gaussian
        else "Σ_j clamp(x̃_uj, α, β) (the likelihood ratio of multi-bit, one-bit, Laplace, Duchi)"
    )
    claim, label, notes, requested = None, "node feature vector", [], feature_request(method, inp)
    if getattr(method.params, "accounting", None) == "released-code":  # FeatureRR's opt-in mode (not ε-LDP)
        from privgraph.accounting import TrustModel

        claim = nominal_claim(
            PrivacyGuarantee(
                Unit.NODE_FEATURES, TrustModel.LOCAL, requested, 0.0, "the paper's claim for FeatureRR (Theorem 3)"
            )
        )
        label = "node feature vector — accounting=released-code, NOT ε-LDP: vs the paper's claimed ε"
        notes = ["accounting='released-code' states the composed total Σε_i; the row tests the ε the paper claims"]
    return Neighbours(
        Unit.NODE_FEATURES,
        label,
        f"x_u = all α vs all β; {test}",
        lambda side, rng: release(method, inp, worlds[side], rng),
        lambda rel: rel.data.x[u].detach().double().numpy(),
        score,
        claim,
        notes,
        requested,
    )


def label_unit(method: Method, inp: AuditInput) -> Neighbours:
    """One training node's label, 0 vs 1, through label LDP (``label_epsilon``)."""
    data = homogeneous(method, inp.data)
    u = audited_node(data)
    worlds = []
    for label in (0, 1):
        w = data.clone()
        w.y = data.y.clone()
        w.y[u] = label
        worlds.append(w)
    return Neighbours(
        Unit.NODE_LABEL,
        "node label",
        "y_u = 0 vs 1; [ỹ_u = 1] − [ỹ_u = 0] (the k-ary RR likelihood ratio)",
        lambda side, rng: release(method, inp, worlds[side], rng, label_epsilon=inp.label_epsilon),
        lambda rel: np.array([float(rel.data.y_reported[u] == 1) - float(rel.data.y_reported[u] == 0)]),
        first_column,
        requested=inp.label_epsilon,
    )


def label_units(method: Method, inp: AuditInput) -> list[Neighbours]:
    """The label unit's two rows (u's reported label, the whole release) when labels are privatized too
    (``label_epsilon``), else none."""
    if inp.label_epsilon is None:
        return []
    own = label_unit(method, inp)
    return [own, whole_release_row(own, f"y_u = 0 vs 1; {WHOLE_RELEASE_TEST}")]


@audits_kind(Unit.NODE_FEATURES)
def _features(method: Method, inp: AuditInput) -> list[Neighbours]:
    return [*feature_units(method, inp), *label_units(method, inp)]
