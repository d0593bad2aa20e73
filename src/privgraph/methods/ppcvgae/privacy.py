"""PPCVGAE's privacy quantities (§5, Appendix A).

* Privacy candidates (Definition 1): ``S = {s, s'}`` with ``s'`` equal to ``s``
  on the public nodes Q and flipped on the private nodes P (the paper's §6.2).
* Penalty ``Δν = max_{s'∈S} Σ_i ‖ν_i(s) − ν_i(s')‖²`` (§5.2) — a *squared*
  L2 distance between the conditional prior means.
* Eq. 6: ``γ(Δ) = 2 log(1.25/δ)·‖Δ‖²/ε²``, the classical Gaussian mechanism's
  variance (:func:`privgraph.mechanisms.gaussian.classical_gaussian_sigma`),
  valid for ε < 1 only (Dwork & Roth Thm. A.1), so ε and δ are checked to lie
  in (0, 1); with the penalty, ``‖Δ‖² = Δν`` and PPCVGAE+DP's extra noise has
  variance ``max(γ(Δν) − 1, 0)`` (the prior's own unit variance counted).
  The bound is loose: at σ² = γ(Δ) the exact δ(ε) is orders of magnitude
  below the δ claimed.  Our release (:func:`release_noise_std`) therefore
  calibrates with the analytic Gaussian (Balle & Wang 2018) by default —
  the smallest σ with exact δ(ε) ≤ δ, for any ε > 0 — and keeps eq. 6 behind
  ``calibration="classical"``.
* Appendix A: ``I(Z; s) ≤ Δν`` (nats).  Its detection-error bound divides by
  ``log(|S| − 1)``, which is 0 for the paper's two candidates; for |S| = 2
  Fano's inequality reads ``H(s|Z) ≤ h(P_e)``, so
  ``P_e ≥ h⁻¹(max(H(s) − Δν, 0))`` (binary entropy in nats), reported here.
* The guarantee is DP *with respect to the candidates* (Definition 2), not
  standard DP: it compares the release under ``s`` and under ``s'`` for the
  same trained networks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch

from privgraph.mechanisms.base import check_delta
from privgraph.mechanisms.gaussian import analytic_gaussian_sigma, classical_gaussian_sigma

CASE_MODELS = {"a": "gcn", "b": "mlp"}  # the threat model's cases (§4.1 / §4.2) and the adversary's model in each


def check_case(case: str) -> str:
    """A threat-model case: "a" (the adversary knows A) or "b" (it does not)."""
    if case not in CASE_MODELS:
        raise ValueError(f"case must be 'a' (the adversary knows A) or 'b' (it does not), got {case!r}")
    return case


def flip_candidate(sens: torch.Tensor, private_mask: torch.Tensor) -> torch.Tensor:
    """``s'``: the binary sensitive attribute flipped on the private nodes, unchanged on the public ones."""
    sens = torch.as_tensor(sens)
    if sens.numel() == 0:
        raise ValueError("no sensitive attribute given")
    values = set(torch.unique(sens).tolist())
    if not values <= {0, 1}:
        raise ValueError(f"the sensitive attribute must be binary (0/1), got values {sorted(values)}")
    mask = torch.as_tensor(private_mask, dtype=torch.bool)
    if mask.shape != sens.shape:
        raise ValueError(f"private_mask shape {tuple(mask.shape)} does not match the attribute's {tuple(sens.shape)}")
    return torch.where(mask, 1 - sens, sens)


def privacy_penalty(
    prior_mean: Callable[[torch.Tensor], torch.Tensor], sens: torch.Tensor, candidates: Iterable[torch.Tensor]
) -> torch.Tensor:
    """Δν = max over candidates of Σ_i ‖ν_i(s) − ν_i(s')‖² (differentiable)."""
    base = prior_mean(sens.float())
    gaps = [((base - prior_mean(c.float())) ** 2).sum() for c in candidates]
    if not gaps:
        raise ValueError("need at least one other privacy candidate")
    return torch.stack(gaps).max()


CALIBRATIONS = ("analytic", "classical", "paper")


def check_calibration(calibration: str) -> str:
    """``"analytic"`` (Balle & Wang 2018, the default), ``"classical"`` (eq. 6 on Δμ) or ``"paper"``
    (§5.2's variance max(γ(Δν) − 1, 0) on the prior's Δν: reproduces the paper, NOT DP)."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"unknown Gaussian calibration {calibration!r}; choose from {CALIBRATIONS}")
    return calibration


def check_candidate_epsilon(epsilon: float, calibration: str = "analytic") -> float:
    """ε for PPCVGAE+DP: finite and > 0 for the analytic calibration, in (0, 1) for the classical one (eq. 6)."""
    calibration = check_calibration(calibration)
    eps = float(epsilon)
    if calibration in ("classical", "paper"):
        if not (0.0 < eps < 1.0):
            raise ValueError(
                f"the classical Gaussian calibration (eq. 6, Dwork & Roth Thm A.1) needs epsilon in "
                f"(0, 1); got {epsilon!r} (the analytic calibration works for any epsilon > 0)"
            )
    elif not (0.0 < eps < math.inf):
        raise ValueError(f"PPCVGAE+DP needs a finite epsilon > 0; got {epsilon!r}")
    return eps


def gaussian_variance(squared_sensitivity: float, epsilon: float, delta: float) -> float:
    """γ of eq. 6 for ‖Δ‖² = ``squared_sensitivity``: the classical Gaussian variance (ε, δ ∈ (0, 1); loose)."""
    if not squared_sensitivity >= 0:
        raise ValueError("the squared sensitivity must be >= 0")
    return classical_gaussian_sigma(epsilon, delta, math.sqrt(float(squared_sensitivity))) ** 2


def release_noise_std(sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """σ of PPCVGAE+DP's noise for the L2 sensitivity Δμ: the analytic Gaussian
    (Balle & Wang 2018; default, any ε > 0) or eq. 6 (``"classical"``, ε < 1).

    Δμ = 0 gives σ = 0: μ does not depend on s over the candidates, the release
    is the same under all of them, and no noise is needed.
    """
    calibration = check_calibration(calibration)
    if calibration == "paper":
        raise ValueError("the paper's calibration is on Δν, not a sensitivity: see paper_noise_variance")
    eps = check_candidate_epsilon(epsilon, calibration)
    d = check_delta(delta)
    sensitivity = float(sensitivity)
    if not (sensitivity >= 0 and math.isfinite(sensitivity)):
        raise ValueError(f"the sensitivity must be a finite number >= 0, got {sensitivity}")
    if sensitivity == 0.0:
        return 0.0
    if calibration == "classical":
        return classical_gaussian_sigma(eps, d, sensitivity)
    return analytic_gaussian_sigma(eps, d, sensitivity)


def paper_noise_variance(delta_nu: float, epsilon: float, delta: float) -> float:
    """PPCVGAE+DP's extra noise variance max(γ(Δν) − 1, 0) (§5.2)."""
    return max(gaussian_variance(delta_nu, epsilon, delta) - 1.0, 0.0)


def binary_entropy(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -p * math.log(p) - (1 - p) * math.log(1 - p)


def detection_error_bound(mutual_information: float, prior_min: float = 0.5) -> float:
    """Lower bound on an adversary's error in telling the two candidates apart:
    ``P_e ≥ h⁻¹(max(h(p_min) − I, 0))`` (Fano for |S| = 2, nats)."""
    if not 0.0 < prior_min <= 0.5:
        raise ValueError(f"prior_min must lie in (0, 0.5], got {prior_min}")
    target = max(binary_entropy(prior_min) - float(mutual_information), 0.0)
    lo, hi = 0.0, 0.5
    for _ in range(100):  # h is increasing on [0, 1/2]
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if binary_entropy(mid) < target else (lo, mid)
    return lo
