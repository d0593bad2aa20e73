"""Rényi-DP accounting of DP-SGD: ``steps`` compositions of the Poisson-subsampled
Gaussian mechanism (rate q, noise multiplier σ), and the σ that reaches a target
(ε, δ).

The RDP of one step is Mironov, Talwar & Zhang (2019), "Rényi Differential Privacy of
the Sampled Gaussian Mechanism": for an integer order α,
A_α = Σ_{i=0}^{α} C(α, i) qⁱ (1−q)^{α−i} exp((i² − i)/(2σ²)) (their eq. 3.3), for a
fractional order the two-sided series of their §3.3, and RDP(α) = log A_α/(α − 1).
(ε, δ) follows by Canonne, Kamath & Steinke (2020), Prop. 12:
ε = min_α RDP(α)·T + log(1 − 1/α) − log(δα)/(α − 1).  This is the computation of
dp-accounting's ``RdpAccountant`` (the tests check agreement to 1e-6 in ε, and
against Opacus), vectorised over orders and terms with NumPy: one ε costs about a
millisecond instead of seconds of pure-Python sums, so σ is calibrated by bisection
without delay, and nothing is logged (dp-accounting warns through absl when a
fractional order's series is slow; here that order is left out the same way, silently).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special

from privgraph.accounting.search import least_satisfying, smallest_noise
from privgraph.accounting.validation import check_delta

# RDP orders: Opacus' defaults stop at 63, where log(1/δ)/(α − 1) alone exceeds small targets
# (0.19 at δ = 1e-5), and its sums give NaN above α ≈ 700, so ε = 0.01 could not be certified.
# Large orders are evaluated stably here; 1.25…1.75 (for large ε), integers 2…32, then ×1.3
# up to ~2.3·10⁴ (any set of orders gives a valid bound).
RDP_ORDERS: tuple[float, ...] = tuple(
    [1.25, 1.5, 1.75] + [float(a) for a in range(2, 33)] + [float(round(33 * 1.3**k)) for k in range(26)]
)

_FRACTIONAL_TERMS = 1000  # dp-accounting's _MAX_STEPS_LOG_A_FRAC: an order whose series is slower is left out
_INTEGER_ORDERS = np.array([a for a in RDP_ORDERS if float(a).is_integer()], dtype=np.int64)
_FRACTIONAL_ORDERS = np.array([a for a in RDP_ORDERS if not float(a).is_integer()])
# every (order, i) pair of the integer sums, flattened once: order index and i = 0 … α
_INT_OWNER = np.repeat(np.arange(len(_INTEGER_ORDERS)), _INTEGER_ORDERS + 1)
_INT_I = np.concatenate([np.arange(a + 1) for a in _INTEGER_ORDERS]).astype(np.float64)
_INT_ALPHA = _INTEGER_ORDERS[_INT_OWNER].astype(np.float64)
_INT_LOG_COMB = special.gammaln(_INT_ALPHA + 1) - special.gammaln(_INT_I + 1) - special.gammaln(_INT_ALPHA - _INT_I + 1)


def _segment_logsumexp(values: np.ndarray, owner: np.ndarray, groups: int) -> np.ndarray:
    """log Σ exp(values) within each group ``owner`` (stable: the group's maximum is taken out)."""
    top = np.full(groups, -np.inf)
    np.maximum.at(top, owner, values)
    sums = np.zeros(groups)
    np.add.at(sums, owner, np.exp(values - top[owner]))
    return top + np.log(sums)


def _log_a_integer(q: float, sigma: float) -> np.ndarray:
    """log A_α for every integer order (the binomial sum, all orders at once)."""
    terms = (
        _INT_LOG_COMB
        + _INT_I * math.log(q)
        + (_INT_ALPHA - _INT_I) * math.log1p(-q)
        + (_INT_I * _INT_I - _INT_I) / (2 * sigma**2)
    )
    return _segment_logsumexp(terms, _INT_OWNER, len(_INTEGER_ORDERS))


def _log_a_fractional(q: float, sigma: float) -> np.ndarray:
    """log A_α for the fractional orders: the series of Mironov et al. §3.3, summed until both
    halves' terms decrease and lie 30 nats below the total (dp-accounting's rule); ∞ where that
    does not happen within 1,000 terms (the order is then left out of the minimum)."""
    alpha = _FRACTIONAL_ORDERS[:, None]
    i = np.arange(_FRACTIONAL_TERMS, dtype=np.float64)[None, :]
    j = alpha - i
    log_comb = special.gammaln(alpha + 1) - special.gammaln(i + 1) - special.gammaln(alpha - i + 1)
    z0 = sigma**2 * math.log(1 / q - 1) + 0.5
    log_e0 = math.log(0.5) + math.log(2) + special.log_ndtr(-(i - z0) / sigma)
    log_e1 = math.log(0.5) + math.log(2) + special.log_ndtr(-(z0 - j) / sigma)
    log_s0 = log_comb + i * math.log(q) + j * math.log1p(-q) + (i * i - i) / (2 * sigma**2) + log_e0
    log_s1 = log_comb + j * math.log(q) + i * math.log1p(-q) + (j * j - j) / (2 * sigma**2) + log_e1
    total = np.logaddexp(np.logaddexp.accumulate(log_s0, axis=1), np.logaddexp.accumulate(log_s1, axis=1))
    decreasing = np.zeros_like(total, dtype=bool)
    decreasing[:, 1:] = (log_s0[:, 1:] < log_s0[:, :-1]) & (log_s1[:, 1:] < log_s1[:, :-1])
    done = decreasing & (np.maximum(log_s0, log_s1) < total - 30)
    first = np.where(done.any(axis=1), done.argmax(axis=1), -1)
    return np.where(first >= 0, total[np.arange(len(first)), first], np.inf)


def rdp_orders(noise_multiplier: float, sample_rate: float) -> tuple[np.ndarray, np.ndarray]:
    """(orders, RDP of one Poisson-subsampled Gaussian step at each order)."""
    if not 0 <= sample_rate <= 1:
        raise ValueError(f"sampling rate must be in [0, 1], got {sample_rate}")
    if not noise_multiplier >= 0:
        raise ValueError(f"noise multiplier must be >= 0, got {noise_multiplier}")
    orders = np.concatenate([_FRACTIONAL_ORDERS, _INTEGER_ORDERS.astype(np.float64)])
    if sample_rate == 0:
        return orders, np.zeros_like(orders)
    if noise_multiplier == 0:
        return orders, np.full_like(orders, np.inf)
    if sample_rate == 1:
        return orders, orders / (2 * noise_multiplier**2)
    with np.errstate(over="ignore", invalid="ignore"):
        log_a = np.concatenate(
            [_log_a_fractional(sample_rate, noise_multiplier), _log_a_integer(sample_rate, noise_multiplier)]
        )
    return orders, log_a / (orders - 1)


def rdp_to_epsilon(orders: np.ndarray, rdp: np.ndarray, delta: float) -> float:
    """(ε, δ) from RDP curves (Canonne, Kamath & Steinke 2020, Prop. 12; ε = 0 where the KL bound
    δ ≤ √(1 − e^(−RDP)) already holds), as dp-accounting's ``compute_epsilon``."""
    if delta == 0:
        return 0.0 if np.all(rdp == 0) else math.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        eps = rdp + np.log1p(-1 / orders) - np.log(delta * orders) / (orders - 1)
        eps = np.where(rdp < 0, 0.0, eps)
        eps = np.where((rdp >= 0) & (delta**2 + np.expm1(-rdp) > 0), 0.0, eps)
    eps = np.where(np.isnan(eps), np.inf, eps)
    return max(0.0, float(np.min(eps)))


def rdp_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """ε of ``steps`` Poisson-subsampled Gaussian steps at δ (the RDP accountant)."""
    check_delta(delta)
    orders, rdp = rdp_orders(noise_multiplier, sample_rate)
    return rdp_to_epsilon(orders, rdp * steps, delta)


def gaussian_epsilon(mu: float, delta: float) -> float:
    """ε at δ of a μ-GDP mechanism — a Gaussian whose sensitivity over its noise std is μ, or the composition
    of Gaussians of multipliers z_i, μ = √(Σ 1/z_i²) (Dong, Roth & Su 2022, Cor. 3.3): the smallest ε ≥ 0 with
    Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) ≤ δ (Balle & Wang 2018, Thm. 8; exact), found by root finding in log
    space and rounded up."""
    check_delta(delta)
    if not (mu >= 0 and math.isfinite(mu)):
        raise ValueError(f"mu must be a finite number >= 0, got {mu}")
    if mu == 0:
        return 0.0

    def log_excess(eps: float) -> float:  # log δ(ε) − log δ, decreasing in ε
        first = special.log_ndtr(mu / 2 - eps / mu)
        second = eps + special.log_ndtr(-mu / 2 - eps / mu)
        gap = second - first
        return (first + math.log1p(-math.exp(gap)) if gap < 0 else -math.inf) - math.log(delta)

    if log_excess(0.0) <= 0:
        return 0.0
    hi = max(1.0, mu)
    while log_excess(hi) > 0:
        hi *= 2
    eps = least_satisfying(lambda e: log_excess(e) <= 0, 0.0, hi, tol=1e-12)
    return eps * (1 + 1e-9) + 1e-12


@lru_cache(maxsize=1024)
def noise_multiplier_for(epsilon: float, delta: float, sample_rate: float, steps: int, rel_tol: float = 1e-4) -> float:
    """The smallest σ (to ``rel_tol``, rounded up) whose accountant ε is ≤ ``epsilon``: the
    bracket is doubled until it holds ε, then bisected; the σ returned always meets the target
    (:func:`composed_noise_multiplier` with one part).  Memoised: a setting (ε, δ, q, T) repeated
    across trials and candidates is calibrated once."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon_s must be a finite number > 0, got {epsilon}")
    return composed_noise_multiplier(epsilon, delta, ((sample_rate, steps),), rel_tol)


def composed_rdp(parts: tuple[tuple[float, float, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """(orders, RDP of the composition): each part (σ, q, steps) is ``steps`` Poisson-subsampled
    Gaussian steps of rate q and noise multiplier σ (q = 1: the plain Gaussian); RDP adds up over
    the parts at each order (Mironov 2017, Prop. 1)."""
    if not parts:
        raise ValueError("a composition needs at least one part")
    total: np.ndarray | None = None
    for sigma, rate, steps in parts:
        if steps < 0:
            raise ValueError(f"steps must be >= 0, got {steps}")
        orders, rdp = rdp_orders(sigma, rate)
        term = np.zeros_like(rdp) if steps == 0 else rdp * steps
        total = term if total is None else total + term
    assert total is not None  # at least one part (checked above)
    return orders, total


def composed_epsilon(parts: tuple[tuple[float, float, int], ...], delta: float) -> float:
    """ε at δ of the composition of ``parts`` (:func:`composed_rdp`), by the RDP conversion of
    :func:`rdp_to_epsilon`: what dp-accounting's ``RdpAccountant`` gives for a ``ComposedDpEvent`` of
    ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(σ)), steps)`` terms."""
    check_delta(delta)
    orders, rdp = composed_rdp(parts)
    return rdp_to_epsilon(orders, rdp, delta)


@lru_cache(maxsize=256)
def composed_noise_multiplier(
    epsilon: float, delta: float, parts: tuple[tuple[float, int], ...], rel_tol: float = 1e-4
) -> float:
    """The smallest σ (to ``rel_tol``, rounded up) such that the composition of the ``parts``
    (q, steps), every one with the same noise multiplier σ, has ε ≤ ``epsilon`` at ``delta``: one
    noise scale shared by all the mechanisms, found by bisection as GAP calibrates its composed
    mechanism (github sisaman/GAP, ``core/privacy/mechanisms/noisy.py``: one ``noise_scale`` for
    the encoder's DP-SGD, the K aggregations and the classifier's DP-SGD)."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    check_delta(delta)
    return smallest_noise(
        lambda sigma: composed_epsilon(tuple((sigma, q, t) for q, t in parts), delta), epsilon, rel_tol
    )
