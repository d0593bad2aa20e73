"""Training PPCVGAE / VGAE embeddings and releasing them with their guarantee.

* :func:`train_embedding` — full-batch Adam on the negative ELBO (eq. 3 or 4,
  per node) plus the privacy penalty ``λ·Δν/N`` (§5.2: Δν sums over the N
  nodes, so λ weighs its per-node mean against the per-node ELBO) and,
  optionally, ``λ_μ·Δμ²/N`` on the encoder mean itself (our addition, off by
  default: the quantity the DP release's noise is calibrated on).
* :func:`release_embedding` — the released embedding is the encoder mean
  ``μ(X, A, s)``; PPCVGAE+DP adds Gaussian noise.

Calibration of PPCVGAE+DP (corrected).  The paper adds noise of variance
``max(γ(Δν) − 1, 0)`` (eq. 6 with Δν), arguing that ``Z ~ N(ν(s), I)`` already
carries unit variance.  That is the model's *prior*; the embedding actually
released comes from the encoder, whose mean ``μ(X, A, s)`` differs from ν and
whose variance σ² is learnt (and itself depends on s), so the argument does
not bound the release.  Here the release is ``μ(X, A, s) + N(0, σ²·I)`` with
``Δμ = max_{s'∈S} ‖μ(X, A, s) − μ(X, A, s')‖_F`` computed exactly — the
Gaussian mechanism applied to the map ``s ↦ μ(X, A, s)`` on the candidate set
S, hence (ε, δ)-DP *with respect to S* (Definition 2) for fixed trained
weights.  σ comes from the analytic Gaussian calibration (Balle & Wang 2018,
the default: the smallest σ whose exact δ(ε) is ≤ δ, any ε > 0), which needs
a fraction of the σ of eq. 6's classical bound ``σ² = γ(Δμ)`` (at δ = 10⁻⁴:
0.40× at ε = 0.01, 0.56× at 0.1, 0.68× at 0.5); the classical bound
(Dwork & Roth Thm A.1, ε < 1 only) over-noises — at its σ the exact δ is far
below the δ claimed — and stays available as ``calibration="classical"``.
With Δμ = 0 the release does not depend on s over S and no noise is added.
The noise is drawn from an explicit ``rng`` (a seeded ``torch.Generator``
for experiments, :class:`privgraph.mechanisms.SecureRandom` for real
releases).  The paper's variance, the classical σ² and the exact δ at the σ
used are reported in the details.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit, unprotected
from privgraph.data.transforms import standardize_columns
from privgraph.device import current_device, to_device
from privgraph.mechanisms.base import check_delta
from privgraph.mechanisms.gaussian import gaussian_delta
from privgraph.mechanisms.randomness import RandomSource, SecureRandom, normal
from privgraph.methods.ppcvgae.privacy import (
    check_calibration,
    check_candidate_epsilon,
    detection_error_bound,
    gaussian_variance,
    paper_noise_variance,
    privacy_penalty,
    release_noise_std,
)
from privgraph.nn.cvgae import CVGAE, VGAEBaseline
from privgraph.progress import ProgressHook


@dataclass(frozen=True)
class EmbeddingConfig:
    """Hyperparameters of the autoencoders (the paper gives none; ours, fixed for all datasets)."""

    latent: int = 16
    hidden: int = 32
    epochs: int = 300
    lr: float = 0.01
    kl_weight: float = 1.0  # 1: the ELBO of eq. 3/4, per node
    penalty: float = 10.0  # λ on Δν/N
    encoder_penalty: float = 0.0  # λ_μ on Δμ²/N (ours)

    def __post_init__(self) -> None:
        if self.latent < 1 or self.hidden < 1 or self.epochs < 1:
            raise ValueError("latent, hidden and epochs must be >= 1")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        for name in ("kl_weight", "penalty", "encoder_penalty"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def standardize(x: Tensor) -> Tensor:
    """Zero mean, unit variance per column in float32 (constant columns → 0), so that the
    decoders' unit-variance Gaussian likelihood ``N(φ, I)`` fits the data's scale."""
    return standardize_columns(x.float())


def check_sensitive(data: Data) -> None:
    """PPCVGAE needs ``data.sens`` (binary, one per node) and ``data.private_mask``."""
    sens = getattr(data, "sens", None)
    if sens is None:
        raise ValueError("the graph has no sensitive attribute (data.sens): load it with load_sensitive() or set one")
    if sens.shape != (data.num_nodes,):
        raise ValueError(f"data.sens must hold one value per node, shape ({data.num_nodes},), got {tuple(sens.shape)}")
    if getattr(data, "private_mask", None) is None:
        raise ValueError("the graph has no private_mask: say whose attribute is protected (split_sensitive())")


def build_autoencoder(kind: str, in_dim: int, config: EmbeddingConfig, seed: int = 0) -> nn.Module:
    """``kind`` is "a" or "b" (CVGAE of §4.1 / §4.2) or "vgae" (Kipf & Welling); weights initialised from ``seed``."""
    torch.manual_seed(seed)
    if kind == "vgae":
        return VGAEBaseline(in_dim, config.latent, config.hidden)
    return CVGAE(in_dim, config.latent, config.hidden, case=kind, kl_weight=config.kl_weight)


def _encoder_mean(model: nn.Module, x: Tensor, edge_index: Tensor) -> Callable[[Tensor], Tensor]:
    return lambda s: model.encode(x, s, edge_index)[0]


_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)


@contextlib.contextmanager
def keep_freed_memory() -> Iterator[None]:
    """While training, let glibc keep freed memory for reuse: by default it gives every freed block
    over 32 MB back to the OS and zero-fills fresh pages for the next, and on Recidivism (0.6 M edges)
    the adjacency term's 40 MB tensors made those page faults cost as much as the arithmetic.  Sets
    M_MMAP_MAX = 0 (large blocks from the heap) and a 1 GB trim threshold, then sets both back to
    glibc's documented defaults and trims the heap (glibc's dynamic mmap threshold stays off for the
    rest of the process, as after any ``mallopt``).  Changes no value; a no-op off Linux/glibc
    (measured on Recidivism, CVGAE (b), 20 epochs, one thread: 0.2 s of system time against 4.0 s
    without it, 5.1 s of user time either way)."""
    libc = ctypes.CDLL(None) if sys.platform.startswith("linux") else None
    if libc is None or not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):
        yield
        return
    libc.mallopt(_M_MMAP_MAX, 0)
    libc.mallopt(_M_TRIM_THRESHOLD, 2**30)
    try:
        yield
    finally:
        libc.mallopt(_M_MMAP_MAX, 65536)
        libc.mallopt(_M_TRIM_THRESHOLD, 128 * 1024)
        libc.malloc_trim(0)


def train_embedding(
    model: nn.Module,
    data: Data,
    candidate: Tensor | None,
    config: EmbeddingConfig,
    seed: int,
    progress: ProgressHook | None = None,
) -> list[dict[str, float]]:
    """Train ``model`` on ``data`` (features standardised) on :func:`~privgraph.device.current_device`,
    where the model stays; returns the loss trace (every 10th epoch and the last).  With a ``candidate``
    s' and ``config.penalty`` > 0 this is PPCVGAE.  ``progress(task, epoch, epochs)`` after every epoch (no loss:
    it reads the private data)."""
    check_sensitive(data)
    torch.manual_seed(seed)
    device = current_device()
    model.to(device)
    x, sens, edge_index = (v.to(device) for v in (standardize(data.x), data.sens, data.edge_index))
    candidate, n = to_device(candidate, device), data.num_nodes
    conditional = isinstance(model, CVGAE)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    trace: list[dict[str, float]] = []
    with keep_freed_memory():  # the same values, fewer page faults on large graphs
        for epoch in range(1, config.epochs + 1):
            model.train()
            opt.zero_grad()
            loss, parts = model.loss(x, sens if conditional else None, edge_index)
            if conditional and candidate is not None and config.penalty > 0:
                delta_nu = privacy_penalty(lambda s: model.prior_mean(s, edge_index), sens, [candidate])
                loss = loss + config.penalty * delta_nu / n
                parts["delta_nu"] = float(delta_nu.detach())
            if conditional and candidate is not None and config.encoder_penalty > 0:
                delta_mu = privacy_penalty(_encoder_mean(model, x, edge_index), sens, [candidate])
                loss = loss + config.encoder_penalty * delta_mu / n
                parts["delta_mu_squared"] = float(delta_mu.detach())
            loss.backward()
            opt.step()
            if epoch % 10 == 0 or epoch == config.epochs:
                trace.append({"epoch": epoch, "loss": float(loss.detach()), **parts})
            if progress is not None:  # counts only: the loss reads the sensitive attribute
                progress("training the autoencoder (epochs)", epoch, config.epochs)
    model.eval()
    return trace


@dataclass
class EmbeddingRelease:
    """The released embedding, its guarantee (unit: the private nodes' sensitive attribute) and details."""

    z: Tensor
    guarantee: PrivacyGuarantee
    details: dict[str, Any]


def unprotected_attribute(mechanism: str, *notes: str) -> PrivacyGuarantee:
    """An embedding release without a guarantee for the sensitive attribute (curator-side)."""
    return unprotected(Unit.SENSITIVE_ATTRIBUTE, mechanism, *notes, trust_model=TrustModel.CENTRAL)


CANDIDATES_NOTE = (
    "DP with respect to the privacy candidates S = {s, s'} (Definition 2): s' flips the sensitive "
    "attribute of every private node and keeps the public nodes'; this is not standard DP — it "
    "bounds how well the release tells s from s', not one node's attribute against all values"
)


def _paper_release(
    mu: Tensor,
    delta_nu: float,
    delta_mu: float,
    epsilon: float,
    delta: float,
    rng: RandomSource,
    case: str,
    details: dict[str, Any],
    notes: list[str],
) -> EmbeddingRelease:
    """``calibration="paper"``: μ + N(0, max(γ(Δν) − 1, 0)·I), the variance §5.2 states, for reproducing the
    paper's PPCVGAE+DP rows only.  Not DP: the variance is set by the prior's Δν, not by the released
    encoder mean's Δμ, so the guarantee is stated as none (ε = ∞) with the exact δ(ε) it would need."""
    variance = paper_noise_variance(delta_nu, epsilon, delta)
    sigma = math.sqrt(variance)
    z = mu + normal(tuple(mu.shape), sigma, rng).to(mu.dtype) if sigma > 0 else mu.clone()
    exact = gaussian_delta(sigma, epsilon, delta_mu) if sigma > 0 else (1.0 if delta_mu > 0 else 0.0)
    details.update(
        {
            "epsilon": epsilon,
            "delta": delta,
            "calibration": "paper",
            "noise_std": sigma,
            "noise_variance": variance,
            "paper_noise_variance": variance,
            "exact_delta": exact,
        }
    )
    covered = "happens to be within" if exact <= delta else "is NOT within"
    why = (
        f"calibration='paper' reproduces §5.2's noise variance max(γ(Δν) − 1, 0) = {variance:.4g} and is NOT "
        f"a DP mechanism, even w.r.t. the candidates: the variance is set by the prior's Δν = {delta_nu:.4g} "
        f"(the model's N(ν(s), I), not what is released), while the released encoder mean moves by "
        f"Δμ = {delta_mu:.4g} between s and s'; for this release the exact δ at ε = {epsilon:g} is {exact:.3g}, "
        f"which {covered} δ = {delta:g} — nothing ties the two, so no guarantee is stated (ε = ∞)"
    )
    return EmbeddingRelease(
        z, unprotected_attribute(f"PPCVGAE+DP case ({case}), the paper's calibration (not DP)", why, *notes), details
    )


@torch.no_grad()
def release_embedding(
    model: nn.Module,
    data: Data,
    candidate: Tensor | None,
    dp: tuple[float, float] | None,
    rng: RandomSource | None = None,
    method: str = "ppcvgae",
    *,
    calibration: str = "analytic",
) -> EmbeddingRelease:
    """Release ``μ(X, A, s)``; with ``dp = (ε, δ)`` plus Gaussian noise calibrated on Δμ (module docstring).

    ``rng`` (a ``torch.Generator`` or :class:`~privgraph.mechanisms.SecureRandom`) is required for the DP
    release and unused without it.  ``calibration``: ``"analytic"`` (Balle & Wang 2018, default, ε > 0) or
    ``"classical"`` (eq. 6, the paper's; ε ∈ (0, 1), loose).
    """
    calibration = check_calibration(calibration)
    if dp is not None:
        epsilon, delta = dp
        epsilon, delta = check_candidate_epsilon(epsilon, calibration), check_delta(delta)
        if rng is None:
            raise ValueError(
                "the DP release needs an explicit rng: a seeded torch.Generator (experiments) or "
                "privgraph.mechanisms.SecureRandom() (real releases); no global RNG is used"
            )
        if not isinstance(rng, (torch.Generator, SecureRandom)):
            raise TypeError(
                f"rng must be a torch.Generator or privgraph.mechanisms.SecureRandom, got {type(rng).__name__}"
            )
    check_sensitive(data)
    device = next(model.parameters()).device  # where it was trained; the noise is added on the CPU
    x, sens, edge_index = (v.to(device) for v in (standardize(data.x), data.sens, data.edge_index))
    candidate = to_device(candidate, device)
    conditional = isinstance(model, CVGAE)
    mu = model.encode(x, sens if conditional else None, edge_index)[0].cpu()
    details: dict[str, Any] = {"latent": mu.shape[1]}
    if not conditional:
        if dp is not None:
            raise ValueError(
                "the DP release needs a conditional model (PPCVGAE): the VGAE has no candidates to "
                "compare — its embedding does not take s as an input"
            )
        return EmbeddingRelease(mu, unprotected_attribute("VGAE embedding (unsanitised)"), details)
    if candidate is None:
        raise ValueError("PPCVGAE needs the privacy candidate s' (see flip_candidate)")
    delta_nu = float(privacy_penalty(lambda s: model.prior_mean(s, edge_index), sens, [candidate]))
    delta_mu = math.sqrt(float(privacy_penalty(_encoder_mean(model, x, edge_index), sens, [candidate])))
    prior_min = 0.5  # the two candidates, equally likely a priori
    details.update(
        {
            "delta_nu": delta_nu,
            "delta_mu": delta_mu,
            "mi_bound_prior_model": delta_nu,
            "detection_error_bound_prior_model": detection_error_bound(delta_nu, prior_min),
        }
    )
    notes = [
        f"Appendix A under the model's prior N(ν(s), I): I(Z; s) ≤ Δν = {delta_nu:.4g} nats, so an adversary "
        f"telling s from s' errs with probability ≥ {details['detection_error_bound_prior_model']:.3g} "
        "(binary Fano) — a property of the model, not of the released encoder mean"
    ]
    if dp is None:
        mechanism = f"{method.upper()} case ({model.case}) encoder mean, no noise"
        return EmbeddingRelease(mu, unprotected_attribute(mechanism, *notes), details)
    if calibration == "paper":
        return _paper_release(mu, delta_nu, delta_mu, epsilon, delta, rng, model.case, details, notes)
    sigma = release_noise_std(delta_mu, epsilon, delta, calibration)
    variance = sigma**2
    # eq. 6 for comparison (defined for ε < 1 only), and the exact δ(ε) at the σ used (Balle & Wang Thm 8)
    classical_variance = gaussian_variance(delta_mu**2, epsilon, delta) if epsilon < 1 else None
    exact_delta = gaussian_delta(sigma, epsilon, delta_mu) if sigma > 0 else 0.0
    if sigma > 0:
        z = mu + normal(tuple(mu.shape), sigma, rng).to(mu.dtype)
    else:
        z = mu.clone()  # Δμ = 0: the release is the same under every candidate
    mi_release = delta_mu**2 / (2 * variance) if variance > 0 else 0.0
    details.update(
        {
            "epsilon": epsilon,
            "delta": delta,
            "calibration": calibration,
            "noise_std": sigma,
            "noise_variance": variance,
            "classical_noise_variance": classical_variance,
            "exact_delta": exact_delta,
            "paper_noise_variance": paper_noise_variance(delta_nu, epsilon, delta) if epsilon < 1 else None,
            "mi_bound_release": mi_release,
            "detection_error_bound_release": detection_error_bound(mi_release, prior_min),
        }
    )
    if calibration == "classical":
        calibration_note = (
            f"classical Gaussian calibration (eq. 6, Dwork & Roth Thm A.1): σ² = γ(Δμ) = "
            f"{variance:.4g}; this bound is loose — the exact δ at this σ is {exact_delta:.3g}, "
            f"below the δ = {delta:g} claimed, so the release is over-noised (the analytic "
            "calibration of Balle & Wang 2018 gives the same (ε, δ) with less noise)"
        )
    else:
        classical = (
            f"eq. 6's classical σ² = γ(Δμ) = {classical_variance:.4g} would over-noise"
            if classical_variance is not None
            else "eq. 6's classical bound is not defined for ε ≥ 1"
        )
        calibration_note = (
            f"analytic Gaussian calibration (Balle & Wang 2018): σ² = {variance:.4g}, the smallest "
            f"variance whose exact δ(ε) ({exact_delta:.3g}) is ≤ δ = {delta:g}; {classical}"
        )
    if delta_mu == 0.0:
        calibration_note = (
            "Δμ = 0: the encoder mean does not depend on s over the candidates, the release is the "
            "same under each, and no noise is added"
        )
    paper = details["paper_noise_variance"]
    paper_note = (
        f"the paper's max(γ(Δν) − 1, 0) = {paper:.4g}"
        if paper is not None
        else "the paper's max(γ(Δν) − 1, 0) (undefined for ε ≥ 1)"
    )
    notes = [
        CANDIDATES_NOTE,
        f"Gaussian mechanism on the encoder mean with Δμ = ‖μ(s) − μ(s')‖_F = {delta_mu:.4g}; {calibration_note}",
        f"{paper_note} assumes Z ~ N(ν, I), the prior, not the released encoder output, and is not used",
        "the networks' weights were trained on s and are held fixed: the guarantee covers the release given the "
        "weights (as the paper's), not what training stored in them",
        f"for this release I(Z̃; s) ≤ Δμ²/(2σ²) = {mi_release:.4g} nats, detection error ≥ "
        f"{details['detection_error_bound_release']:.3g}",
        *notes,
    ]
    guarantee = PrivacyGuarantee(
        Unit.SENSITIVE_ATTRIBUTE,
        TrustModel.CENTRAL,
        epsilon,
        delta,
        f"PPCVGAE+DP case ({model.case}): Gaussian on μ(X, A, s), {calibration} calibration",
        tuple(notes),
    )
    return EmbeddingRelease(z, guarantee, details)
