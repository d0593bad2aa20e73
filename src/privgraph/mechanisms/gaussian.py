"""Gaussian mechanism calibration: the analytic one (Balle & Wang, ICML 2018),
exact and valid for every ε > 0, and the classical bound (Dwork & Roth,
Thm A.1), loose and valid for ε < 1 only, kept for comparison and for
reproducing papers that use it."""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import log_ndtr

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.search import least_satisfying
from privgraph.mechanisms.base import FeatureMechanism, check_delta, check_epsilon
from privgraph.mechanisms.randomness import RandomSource, normal


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism (Balle & Wang 2018, Theorem 8):

    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), evaluated in log space.
    """
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = math.exp(log_ndtr(a - b))
    second = math.exp(epsilon + log_ndtr(-a - b))
    return max(0.0, first - second)


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest σ with δ(σ) ≤ δ (δ(σ) is decreasing in σ), by bisection on log σ (the end where δ(σ) ≤ δ)."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if not sensitivity > 0:
        raise ValueError(f"sensitivity must be > 0, got {sensitivity}")

    def f(log_sigma: float) -> float:
        return gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta

    lo, hi = math.log(sensitivity) - 10.0, math.log(sensitivity) + 1.0
    while f(hi) > 0:
        hi += 2.0
    while f(lo) < 0:
        lo -= 2.0
    sigma = math.exp(least_satisfying(lambda log_sigma: f(log_sigma) <= 0, lo, hi, tol=1e-12))
    while gaussian_delta(sigma, epsilon, sensitivity) > delta:  # round up, never down
        sigma = float(np.nextafter(sigma, math.inf)) * (1 + 1e-12)
    return sigma


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """σ = √(2 ln(1.25/δ))·Δ/ε, the classical Gaussian mechanism (Dwork & Roth 2014, Theorem A.1).

    Valid only for ε ∈ (0, 1), checked here.  The bound is loose: at this σ the
    exact δ(ε) (:func:`gaussian_delta`) is far below the δ asked for, i.e. the
    mechanism adds more noise than (ε, δ) needs — :func:`analytic_gaussian_sigma`
    gives the same (ε, δ) with a smaller σ and for any ε > 0.  ``sensitivity``
    is the L2 sensitivity Δ ≥ 0 (Δ = 0 gives σ = 0: no noise needed).
    """
    eps = check_epsilon(epsilon)
    if not eps < 1.0:
        raise ValueError(
            f"the classical Gaussian mechanism (Dwork & Roth Thm A.1) needs epsilon in (0, 1), got "
            f"{epsilon!r}; use analytic_gaussian_sigma for epsilon >= 1"
        )
    d = check_delta(delta)
    sensitivity = float(sensitivity)
    if not (sensitivity >= 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be a finite number >= 0, got {sensitivity}")
    return math.sqrt(2.0 * math.log(1.25 / d)) * sensitivity / eps


DEFAULT_DELTA = 1e-5  # the Gaussian feature mechanism's δ when none is given


class AnalyticGaussian(FeatureMechanism):
    """x + N(0, σ²)^d with σ from the analytic calibration for L2 sensitivity (β−α)√d.

    Guarantee: (ε, δ)-LDP per node feature vector.  δ is a per-node failure
    probability: with n nodes, about n·δ of them may lose protection, so pick
    δ ≪ 1/n.
    """

    name = "gaussian"

    def __init__(
        self,
        epsilon: float,
        delta: float = DEFAULT_DELTA,
        domain: tuple[float, float] = (0.0, 1.0),
        clip: bool = False,
    ):
        super().__init__(epsilon, domain, clip)
        self.delta = check_delta(delta)

    def sigma(self, d: int) -> float:
        return analytic_gaussian_sigma(self.epsilon, self.delta, (self.beta - self.alpha) * math.sqrt(d))

    def perturb(self, x: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        x = self.validate(x)
        return x + normal(tuple(x.shape), self.sigma(x.shape[1]), rng)

    def estimate(self, reports: torch.Tensor) -> torch.Tensor:
        return reports.to(torch.float64)

    def guarantee(self) -> PrivacyGuarantee:
        notes = self._notes() + (
            "analytic Gaussian calibration (Balle & Wang 2018)",
            "continuous noise sampled in floating point (inverse CDF); see Mironov (CCS 2012)",
        )
        return PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.LOCAL, self.epsilon, self.delta, self.name, notes)
