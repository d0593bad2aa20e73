"""HeteDP's feature privacy (§IV-A, eq. 14), with a sensitivity that holds.

Eq. 14 adds ``λ·N(0, σ_{ε_f}²·Δ²)`` to the *embedding* z_u with
``Δ = max α_u^m β_m ‖S(D) − S(D')‖₂``.  Two things keep that from being a
guarantee: ‖S(D) − S(D')‖₂ is unbounded for raw features, and z_u mixes the
features of u's metapath neighbours through attention computed from those
same features, so one node's features move many embeddings (and the
attention weights that scale the noise are themselves private).  Also, with
softmax-normalised attention Σ_v W_uv = 1, so eq. 9's α_u = σ(1) for every
node with a neighbour: the "node-level" factor is a constant.

What we release instead (``privatize_features``): each node's feature vector
clipped to L2 norm ≤ C_f, plus Gaussian noise calibrated once, for the
release, to the L2 sensitivity 2·C_f of replacing one node's vector (analytic
Gaussian, Balle & Wang 2018).  Everything computed from the noisy features —
attention, embeddings, the downstream model — is post-processing.  Scaling a
node's features by a public weight w scales both signal and sensitivity by w,
so eq. 14's attention weighting cannot lower the noise-to-signal ratio; it
is not used.  ``λ`` (the paper's hyperparameter) may only scale the noise
*up* (λ ≥ 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.base import check_delta, check_epsilon
from privgraph.mechanisms.gaussian import analytic_gaussian_sigma, classical_gaussian_sigma
from privgraph.mechanisms.randomness import normal


def check_clip_bound(bound: float) -> float:
    if not (bound > 0 and math.isfinite(bound)):
        raise ValueError(f"the clipping bound C_f must be a finite number > 0, got {bound}")
    return float(bound)


def clip_rows(x: Tensor, bound: float) -> tuple[Tensor, int]:
    """Scale every row with L2 norm above ``bound`` down to ``bound``; returns the rows and how many were clipped."""
    bound = check_clip_bound(bound)
    norms = torch.linalg.vector_norm(x.float(), dim=1, keepdim=True)
    factor = torch.clamp(bound / norms.clamp_min(1e-30), max=1.0)
    return x.float() * factor, int((norms.squeeze(1) > bound).sum())


@dataclass
class FeatureRelease:
    x: dict[str, Tensor]  # noisy, clipped features per node type
    guarantee: PrivacyGuarantee
    details: dict[str, Any] = field(default_factory=dict)


def privatize_features(data: HeteroData, epsilon: float, delta: float, clip_bound: float, rng: RandomSource,
                       noise_multiplier: float = 1.0, node_types: list[str] | None = None) -> FeatureRelease:
    """Clip and perturb the features of ``node_types`` (default: every type with ``x``) once."""
    epsilon, delta = check_epsilon(epsilon, "epsilon_f"), check_delta(delta)
    clip_bound = check_clip_bound(clip_bound)
    if not noise_multiplier >= 1.0:
        raise ValueError(f"the noise multiplier λ must be >= 1 (a smaller one voids the guarantee), got "
                         f"{noise_multiplier}")
    types = node_types if node_types is not None else [t for t in data.node_types if "x" in data[t]]
    if not types:
        raise ValueError("the graph has no node features to protect")
    for t in types:
        if t not in data.node_types or "x" not in data[t]:
            raise ValueError(f"node type {t!r} has no features")
    sensitivity = 2.0 * clip_bound
    sigma = noise_multiplier * analytic_gaussian_sigma(epsilon, delta, sensitivity)
    out, clipped = {}, {}
    for t in types:
        x, clipped[t] = clip_rows(data[t].x, clip_bound)
        out[t] = x + normal(tuple(x.shape), sigma, rng).to(x.dtype)
    classical = classical_gaussian_sigma(epsilon, delta, sensitivity) if epsilon < 1 else None
    details = {"clip_bound": clip_bound, "sensitivity": sensitivity, "noise_std": sigma,
               "classical_noise_std": classical, "noise_multiplier": noise_multiplier, "clipped_rows": clipped,
               "node_types": types}
    notes = (
        f"features clipped to L2 norm ≤ C_f = {clip_bound:g} (how many rows were clipped is a curator-only "
        "diagnostic, not released); sensitivity "
        f"2·C_f of replacing one node's vector; noise std {sigma:.4g} (analytic Gaussian), added once",
        "each node's noise is independent of the others', so the same holds if nodes perturb their own features",
        "eq. 14's attention-weighted sensitivity is not used (see privgraph.methods.hetedp.features)",
        "graph structure and labels are not protected by this part",
    )
    guarantee = PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.CENTRAL, epsilon, delta,
                                 f"HeteDP features: clip + Gaussian ({', '.join(types)})", notes)
    return FeatureRelease(out, guarantee, details)
