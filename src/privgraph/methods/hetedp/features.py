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

``calibration="paper"`` (opt-in, never the default; **not** differentially
private) reproduces the noise scale of the paper as its code computes it
(github.com/AixWinnie/HeteDP, ``utilsDP.feat_noise`` and ``featDP.py``):
σ_u = λ·√(2 ln(1.25/δ))·Δ_u/ε_f on the raw, *unclipped* features, with
λ = 0.01 (§V-A, the code's ``0.01 * noise``) and Δ_u = 2 (the code's
``sens_size = 2.0``).  The code then multiplies Δ by the learned attention
matrix every epoch (``sens_size = atten @ sens_size``); its columns sum to 1,
so the mean Δ stays 2 and only its spread over the nodes is data dependent —
we keep Δ_u = 2 for every node, the code's initial value and its per-epoch
mean.  Not DP because: (i) the raw features are not bounded, so no finite Δ
bounds ‖x_u − x_u′‖₂ (2 is an assumption about the data, false for e.g.
bag-of-words rows of L2 norm up to ~40); (ii) λ = 0.01 divides the noise by
100 after the calibration; (iii) the classical formula is applied at
ε_f ≥ 1 where it does not hold; (iv) in the paper Δ is scaled by attention
weights computed from the private data.  The release states ε = ∞ (no
guarantee) and names the (ε_f, δ) the paper would claim
(:data:`PAPER_LAMBDA`, :func:`paper_noise_std`).  Two further departures of
the code are not calibration and are not reproduced: it redraws the noise at
each of its 100 training epochs (no composition), and releases the embedding
of the *clean* features after training.
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


CALIBRATIONS = ("clipped", "paper")
PAPER_LAMBDA = 0.01  # §V-A: "a hyperparameter λ to 0.01"; the code's ``features + 0.01 * noise``
PAPER_SENSITIVITY = 2.0  # the code's ``sens_size = 2.0`` (featDP.py), assumed, not enforced


def check_calibration(calibration: str) -> str:
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS} ('paper' is not DP), got {calibration!r}")
    return calibration


def paper_noise_std(epsilon: float, delta: float) -> float:
    """The paper's per-coordinate noise std (eq. 3 and 14 with λ, as its code computes it):
    λ·√(2 ln(1.25/δ))·Δ/ε with λ = 0.01 and Δ = 2, for any ε > 0 — **not** a DP calibration
    (module docstring)."""
    return PAPER_LAMBDA * math.sqrt(2.0 * math.log(1.25 / delta)) * PAPER_SENSITIVITY / epsilon


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
                       noise_multiplier: float = 1.0, node_types: list[str] | None = None,
                       calibration: str = "clipped") -> FeatureRelease:
    """Clip and perturb the features of ``node_types`` (default: every type with ``x``) once.

    ``calibration="paper"``: the paper's noise scale on the unclipped features instead
    (:func:`paper_release`; not DP, the guarantee says so)."""
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
    if check_calibration(calibration) == "paper":
        return paper_release(data, epsilon, delta, rng, types)
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


def paper_release(data: HeteroData, epsilon: float, delta: float, rng: RandomSource,
                  node_types: list[str]) -> FeatureRelease:
    """The paper's feature noise (eq. 14 as its code computes it; module docstring): the raw features
    plus N(0, σ²) per coordinate with σ = :func:`paper_noise_std` — **not** differentially private.
    The guarantee states ε = ∞; the (ε_f, δ) the paper claims is in the notes and ``details``."""
    sigma = paper_noise_std(epsilon, delta)
    out = {}
    for t in node_types:
        x = data[t].x.float()
        out[t] = x + normal(tuple(x.shape), sigma, rng).to(x.dtype)
    details = {"calibration": "paper", "claimed_epsilon": epsilon, "claimed_delta": delta,
               "lambda": PAPER_LAMBDA, "assumed_sensitivity": PAPER_SENSITIVITY, "noise_std": sigma,
               "node_types": node_types}
    notes = (
        f"NOT differentially private: the paper's calibration (eq. 14, its code's feat_noise), which it claims "
        f"is ({epsilon:g}, {delta:g})-DP; noise std {sigma:.4g} = λ·√(2 ln(1.25/δ))·Δ/ε with λ = {PAPER_LAMBDA:g} "
        f"and Δ = {PAPER_SENSITIVITY:g}",
        "why not DP: the raw features are not clipped, so Δ = 2 bounds nothing (one node's vector can move by any "
        "amount); λ = 0.01 divides the noise by 100 after "
        "calibration; the classical Gaussian bound is used for ε ≥ 1 too; the paper scales Δ by attention "
        "computed from the private data",
        "use calibration='clipped' (the default) for a DP release",
    )
    guarantee = PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.CENTRAL, math.inf, 0.0,
                                 f"HeteDP features: the paper's calibration, NOT DP ({', '.join(node_types)})", notes)
    return FeatureRelease(out, guarantee, details)
