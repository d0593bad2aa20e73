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

``feature_dim=k`` (opt-in, not in the paper): each raw row is first multiplied
by a public k × d matrix P with orthonormal rows (:func:`projection_matrix`,
drawn from ``projection_seed`` alone — data independent, stated in the
release, never from the noise stream), *then* clipped to C_f in k dimensions
and perturbed there.  Any fixed per-node map followed by clipping to C_f has
L2 sensitivity 2·C_f, so σ is unchanged while the noise covers k coordinates
instead of d: the row keeps up to C_f of signal (‖Px‖ ≈ √(k/d)·‖x‖ on
average, and ‖Px‖ ≤ ‖x‖ always, so fewer rows are clipped) against k·σ² of
noise instead of d·σ².  The order matters: clipping in d dimensions and *then*
projecting gives P·clip(x) + N(0, σ²I_k), which has the law of P applied to
the unprojected release (P·N(0, σ²I_d) = N(0, σ²I_k) since PPᵀ = I) — mere
post-processing, no gain in signal.

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
import zlib
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.base import check_delta, check_epsilon
from privgraph.mechanisms.gaussian import analytic_gaussian_sigma, classical_gaussian_sigma
from privgraph.mechanisms.randomness import derive_seed, make_generator, normal, randn
from privgraph.param_checks import feature_options

CALIBRATIONS = ("clipped", "paper")
FEATURE_MODES = ("noisy", "none")  # HeteDP link release: noisy features (ε_f = share·ε) or none read (ε_s = ε)
PAPER_LAMBDA = 0.01  # §V-A: "a hyperparameter λ to 0.01"; the code's ``features + 0.01 * noise``
PAPER_SENSITIVITY = 2.0  # the code's ``sens_size = 2.0`` (featDP.py), assumed, not enforced


def check_calibration(calibration: str) -> str:
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS} ('paper' is not DP), got {calibration!r}")
    return calibration


def check_feature_mode(mode: str) -> str:
    if mode not in FEATURE_MODES:
        raise ValueError(
            f"features must be one of {FEATURE_MODES} ('none': the private features are not read, "
            f"all of ε goes to DP-SGD), got {mode!r}"
        )
    return mode


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


def check_feature_dim(k: int | None) -> int | None:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"feature_dim (the projection's dimension k) must be an integer >= 1 or None, got {k!r}")
    return k


def check_feature_options(calibration: str, feature_dim: int | None, features: str = "noisy") -> None:
    """The feature-release options that exclude each other: a projection (``feature_dim``) only with the
    clipped calibration, and neither with ``features="none"`` (no feature is read)."""
    check_calibration(calibration)
    check_feature_dim(feature_dim)
    feature_options(calibration, feature_dim, check_feature_mode(features))  # the Params' rule, the same check


def projection_matrix(d: int, k: int, seed: int) -> Tensor:
    """A k × d matrix P with orthonormal rows (PPᵀ = I_k, so ‖Px‖ ≤ ‖x‖), uniformly (Haar) distributed,
    from the public ``seed`` alone: the QR factor of a d × k standard normal matrix, signs fixed by R's
    diagonal.  It reads no data, so releasing it (or its seed) costs no privacy (module docstring)."""
    k = check_feature_dim(k)
    if k > d:
        raise ValueError(f"feature_dim k = {k} exceeds the feature dimension d = {d}: a projection needs k <= d")
    g = randn((d, k), make_generator(seed), dtype=torch.float64)
    q, r = torch.linalg.qr(g)
    signs = torch.sign(torch.diagonal(r))
    q = q * torch.where(signs == 0, torch.ones_like(signs), signs)
    return q.T.contiguous().float()


def type_projection_seed(seed: int, node_type: str) -> int:
    """The public seed of ``node_type``'s projection: ``seed`` and the type's name (crc32), nothing else."""
    return derive_seed(seed, zlib.crc32(node_type.encode()))


def project_rows(x: Tensor, k: int, seed: int) -> Tensor:
    """The rows of ``x`` [n, d] times the public projection Pᵀ (:func:`projection_matrix`) [n, k]."""
    return x.float() @ projection_matrix(int(x.shape[1]), k, seed).T


def prepare_rows(
    x: Tensor, node_type: str, clip_bound: float, feature_dim: int | None = None, projection_seed: int = 0
) -> tuple[Tensor, int, bool]:
    """The signal part of a type's release, before the noise: the rows projected to ``feature_dim``
    dimensions when the type has more (:func:`project_rows`, seed :func:`type_projection_seed`), then
    clipped to ``clip_bound``.  Returns the rows, how many were clipped, and whether they were projected."""
    projected = feature_dim is not None and x.shape[1] > feature_dim
    if projected:
        x = project_rows(x, feature_dim, type_projection_seed(projection_seed, node_type))
    rows, clipped = clip_rows(x, clip_bound)
    return rows, clipped, projected


@dataclass
class FeatureRelease:
    x: dict[str, Tensor]  # noisy, clipped features per node type
    guarantee: PrivacyGuarantee
    details: dict[str, Any] = field(default_factory=dict)


def privatize_features(
    data: HeteroData,
    epsilon: float,
    delta: float,
    clip_bound: float,
    rng: RandomSource,
    noise_multiplier: float = 1.0,
    node_types: list[str] | None = None,
    calibration: str = "clipped",
    feature_dim: int | None = None,
    projection_seed: int = 0,
) -> FeatureRelease:
    """Clip and perturb the features of ``node_types`` (default: every type with ``x``) once.

    ``feature_dim=k``: the rows of each type with more than k features are first projected to k
    dimensions by the public matrix of :func:`projection_matrix` (seed :func:`type_projection_seed` of
    ``projection_seed``), then clipped and perturbed there with the same σ (module docstring); types with
    d ≤ k are released as without it.  ``calibration="paper"``: the paper's noise scale on the unclipped
    features instead (:func:`paper_release`; not DP, the guarantee says so)."""
    epsilon, delta = check_epsilon(epsilon, "epsilon_f"), check_delta(delta)
    clip_bound = check_clip_bound(clip_bound)
    if not noise_multiplier >= 1.0:
        raise ValueError(
            f"the noise multiplier λ must be >= 1 (a smaller one voids the guarantee), got {noise_multiplier}"
        )
    types = node_types if node_types is not None else [t for t in data.node_types if "x" in data[t]]
    if not types:
        raise ValueError("the graph has no node features to protect")
    for t in types:
        if t not in data.node_types or "x" not in data[t]:
            raise ValueError(f"node type {t!r} has no features")
    check_feature_options(calibration, feature_dim)
    if calibration == "paper":
        return paper_release(data, epsilon, delta, rng, types)
    sensitivity = 2.0 * clip_bound
    sigma = noise_multiplier * analytic_gaussian_sigma(epsilon, delta, sensitivity)
    out, clipped, projected = {}, {}, []
    for t in types:
        x, clipped[t], was_projected = prepare_rows(data[t].x, t, clip_bound, feature_dim, projection_seed)
        projected += [t] if was_projected else []
        out[t] = x + normal(tuple(x.shape), sigma, rng).to(x.dtype)
    classical = classical_gaussian_sigma(epsilon, delta, sensitivity) if epsilon < 1 else None
    details = {
        "clip_bound": clip_bound,
        "sensitivity": sensitivity,
        "noise_std": sigma,
        "classical_noise_std": classical,
        "noise_multiplier": noise_multiplier,
        "clipped_rows": clipped,
        "node_types": types,
    }
    projection: tuple[str, ...] = ()
    if feature_dim is not None:
        dims = {t: int(data[t].x.shape[1]) for t in types}
        kept = [t for t in types if t not in projected]
        details["projection"] = {
            "dim": feature_dim,
            "seed": projection_seed,
            "input_dims": dims,
            "projected": projected,
            "not_projected (d <= k)": kept,
            "type_seeds": {t: type_projection_seed(projection_seed, t) for t in projected},
            "order": "project, then clip, then noise",
        }
        projection = (
            f"rows of {', '.join(projected) or 'no type'} first projected to k = {feature_dim} dimensions (from "
            f"{dims}) by a public random matrix with orthonormal rows, drawn from public seed {projection_seed} "
            "(per type: derive_seed(seed, crc32(type))) and no data; then clipped and perturbed in k dimensions: "
            "the sensitivity 2·C_f and σ are unchanged"
            + (f"; {', '.join(kept)} (d <= k) released unprojected" if kept else ""),
        )
    notes = (
        *projection,
        f"features clipped to L2 norm ≤ C_f = {clip_bound:g} (how many rows were clipped is a curator-only "
        "diagnostic, not released); sensitivity "
        f"2·C_f of replacing one node's vector; noise std {sigma:.4g} (analytic Gaussian), added once",
        "each node's noise is independent of the others', so the same holds if nodes perturb their own features",
        "eq. 14's attention-weighted sensitivity is not used (see privgraph.methods.hetedp.features)",
        "graph structure and labels are not protected by this part",
    )
    guarantee = PrivacyGuarantee(
        Unit.NODE_FEATURES,
        TrustModel.CENTRAL,
        epsilon,
        delta,
        f"HeteDP features: clip + Gaussian ({', '.join(types)})",
        notes,
    )
    return FeatureRelease(out, guarantee, details)


def paper_release(
    data: HeteroData, epsilon: float, delta: float, rng: RandomSource, node_types: list[str]
) -> FeatureRelease:
    """The paper's feature noise (eq. 14 as its code computes it; module docstring): the raw features
    plus N(0, σ²) per coordinate with σ = :func:`paper_noise_std` — **not** differentially private.
    The guarantee states ε = ∞; the (ε_f, δ) the paper claims is in the notes and ``details``."""
    sigma = paper_noise_std(epsilon, delta)
    out = {}
    for t in node_types:
        x = data[t].x.float()
        out[t] = x + normal(tuple(x.shape), sigma, rng).to(x.dtype)
    details = {
        "calibration": "paper",
        "claimed_epsilon": epsilon,
        "claimed_delta": delta,
        "lambda": PAPER_LAMBDA,
        "assumed_sensitivity": PAPER_SENSITIVITY,
        "noise_std": sigma,
        "node_types": node_types,
    }
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
    guarantee = PrivacyGuarantee(
        Unit.NODE_FEATURES,
        TrustModel.CENTRAL,
        math.inf,
        0.0,
        f"HeteDP features: the paper's calibration, NOT DP ({', '.join(node_types)})",
        notes,
    )
    return FeatureRelease(out, guarantee, details)
