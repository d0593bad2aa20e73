"""Rényi-DP accounting of DP-SGD: ``steps`` compositions of the Poisson-subsampled
Gaussian mechanism (rate q, noise multiplier σ), with dp-accounting's RDP
accountant (checked against Opacus in the tests), and the σ that reaches a
target (ε, δ)."""

from __future__ import annotations

import math

# RDP orders: Opacus' defaults stop at 63, where log(1/δ)/(α − 1) alone exceeds small targets
# (0.19 at δ = 1e-5), and its sums give NaN above α ≈ 700, so ε = 0.01 could not be certified.
# dp-accounting evaluates large orders stably; 1.25…1.75 (for large ε), integers 2…32, then ×1.3
# up to ~2.3·10⁴ (any set of orders gives a valid bound).
RDP_ORDERS: tuple[float, ...] = tuple(
    [1.25, 1.5, 1.75] + [float(a) for a in range(2, 33)] + [float(round(33 * 1.3**k)) for k in range(26)])


def _check_delta(delta: float) -> float:
    # imported here: privgraph.mechanisms imports privgraph.accounting
    from privgraph.mechanisms.base import check_delta

    return check_delta(delta)


def _sampled_gaussian(noise_multiplier: float, sample_rate: float, steps: int):
    import dp_accounting

    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier)), steps)


def _accountant():
    import dp_accounting

    return dp_accounting.rdp.RdpAccountant(orders=list(RDP_ORDERS))


def rdp_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """ε of ``steps`` Poisson-subsampled Gaussian steps (RDP accountant, dp-accounting)."""
    _check_delta(delta)
    accountant = _accountant()
    accountant.compose(_sampled_gaussian(noise_multiplier, sample_rate, steps))
    return float(accountant.get_epsilon(delta))


def noise_multiplier_for(epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """The smallest σ (bisection to 0.5 % of ε) whose accountant ε is ≤ ``epsilon``."""
    import dp_accounting

    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon_s must be a finite number > 0, got {epsilon}")
    _check_delta(delta)
    sigma = float(dp_accounting.calibrate_dp_mechanism(
        _accountant, lambda s: _sampled_gaussian(s, sample_rate, steps), epsilon, delta, tol=epsilon / 200))
    if rdp_epsilon(sigma, sample_rate, steps, delta) > epsilon:  # never round down
        raise RuntimeError(f"noise calibration failed: σ = {sigma} does not reach ε = {epsilon}")
    return sigma
