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
not bound the release.  Here the release is ``μ(X, A, s) + N(0, γ(Δμ)·I)``
with ``Δμ = max_{s'∈S} ‖μ(X, A, s) − μ(X, A, s')‖_F`` computed exactly — the
classical Gaussian mechanism (eq. 6) applied to the map ``s ↦ μ(X, A, s)`` on
the candidate set S, hence (ε, δ)-DP *with respect to S* (Definition 2) for
fixed trained weights.  The paper's variance is reported in the details.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit, unprotected
from privgraph.methods.ppcvgae.privacy import (
    detection_error_bound,
    gaussian_variance,
    paper_noise_variance,
    privacy_penalty,
)
from privgraph.nn.cvgae import CVGAE, VGAEBaseline

ProgressHook = Callable[[str, int, int], None]


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
    """Zero mean, unit variance per column (constant columns → 0), so that the
    decoders' unit-variance Gaussian likelihood ``N(φ, I)`` fits the data's scale."""
    x = x.float()
    std = x.std(dim=0, unbiased=False)
    return (x - x.mean(dim=0)) / torch.where(std > 0, std, torch.ones_like(std))


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


def train_embedding(model: nn.Module, data: Data, candidate: Tensor | None, config: EmbeddingConfig, seed: int,
                    progress: ProgressHook | None = None) -> list[dict[str, float]]:
    """Train ``model`` on ``data`` (features standardised); returns the loss trace
    (every 10th epoch and the last).  With a ``candidate`` s' and ``config.penalty``
    > 0 this is PPCVGAE."""
    check_sensitive(data)
    torch.manual_seed(seed)
    x, sens, edge_index, n = standardize(data.x), data.sens, data.edge_index, data.num_nodes
    conditional = isinstance(model, CVGAE)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    trace: list[dict[str, float]] = []
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
        if progress is not None and (epoch % 25 == 0 or epoch == config.epochs):
            progress("training the autoencoder", epoch, config.epochs)
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


CANDIDATES_NOTE = ("DP with respect to the privacy candidates S = {s, s'} (Definition 2): s' flips the sensitive "
                   "attribute of every private node and keeps the public nodes'; this is not standard DP — it "
                   "bounds how well the release tells s from s', not one node's attribute against all values")


@torch.no_grad()
def release_embedding(model: nn.Module, data: Data, candidate: Tensor | None, dp: tuple[float, float] | None,
                      generator: torch.Generator | None = None, method: str = "ppcvgae") -> EmbeddingRelease:
    """Release ``μ(X, A, s)`` (plus calibrated Gaussian noise with ``dp = (ε, δ)``); module docstring."""
    check_sensitive(data)
    x, sens, edge_index = standardize(data.x), data.sens, data.edge_index
    conditional = isinstance(model, CVGAE)
    mu, _ = model.encode(x, sens if conditional else None, edge_index)
    details: dict[str, Any] = {"latent": mu.shape[1]}
    if not conditional:
        if dp is not None:
            raise ValueError("the DP release needs a conditional model (PPCVGAE): the VGAE has no candidates to "
                             "compare — its embedding does not take s as an input")
        return EmbeddingRelease(mu, unprotected_attribute("VGAE embedding (unsanitised)"), details)
    if candidate is None:
        raise ValueError("PPCVGAE needs the privacy candidate s' (see flip_candidate)")
    delta_nu = float(privacy_penalty(lambda s: model.prior_mean(s, edge_index), sens, [candidate]))
    delta_mu = math.sqrt(float(privacy_penalty(_encoder_mean(model, x, edge_index), sens, [candidate])))
    prior_min = 0.5  # the two candidates, equally likely a priori
    details.update({
        "delta_nu": delta_nu, "delta_mu": delta_mu,
        "mi_bound_prior_model": delta_nu,
        "detection_error_bound_prior_model": detection_error_bound(delta_nu, prior_min),
    })
    notes = [f"Appendix A under the model's prior N(ν(s), I): I(Z; s) ≤ Δν = {delta_nu:.4g} nats, so an adversary "
             f"telling s from s' errs with probability ≥ {details['detection_error_bound_prior_model']:.3g} "
             "(binary Fano) — a property of the model, not of the released encoder mean"]
    if dp is None:
        mechanism = f"{method.upper()} case ({model.case}) encoder mean, no noise"
        return EmbeddingRelease(mu, unprotected_attribute(mechanism, *notes), details)
    epsilon, delta = dp
    variance = gaussian_variance(delta_mu**2, epsilon, delta)
    z = mu + math.sqrt(variance) * torch.randn(mu.shape, generator=generator, dtype=mu.dtype)
    mi_release = delta_mu**2 / (2 * variance) if variance > 0 else 0.0
    details.update({
        "epsilon": epsilon, "delta": delta, "noise_variance": variance,
        "paper_noise_variance": paper_noise_variance(delta_nu, epsilon, delta),
        "mi_bound_release": mi_release, "detection_error_bound_release": detection_error_bound(mi_release, prior_min),
    })
    notes = [
        CANDIDATES_NOTE,
        f"Gaussian mechanism on the encoder mean: σ² = γ(Δμ) = {variance:.4g} (eq. 6) with Δμ = ‖μ(s) − μ(s')‖_F = "
        f"{delta_mu:.4g}; the paper's max(γ(Δν) − 1, 0) = {details['paper_noise_variance']:.4g} assumes Z ~ N(ν, I), "
        "the prior, not the released encoder output, and is not used",
        "the networks' weights were trained on s and are held fixed: the guarantee covers the release given the "
        "weights (as the paper's), not what training stored in them",
        f"for this release I(Z̃; s) ≤ Δμ²/(2σ²) = {mi_release:.4g} nats, detection error ≥ "
        f"{details['detection_error_bound_release']:.3g}",
        *notes,
    ]
    guarantee = PrivacyGuarantee(Unit.SENSITIVE_ATTRIBUTE, TrustModel.CENTRAL, epsilon, delta,
                                 f"PPCVGAE+DP case ({model.case}): Gaussian on μ(X, A, s)", tuple(notes))
    return EmbeddingRelease(z, guarantee, details)
