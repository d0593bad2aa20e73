"""Validation of a guarantee's parameters: ε and δ (every mechanism and accountant checks them here)."""

from __future__ import annotations

import math

MAX_EPSILON = 20.0
"""The largest ε any mechanism here accepts (budget shares ε/m, ε/d, θ_i·ε,
(1 − δ)ε are at most ε, so the bound covers them too).

* The guarantee is vacuous long before: e^20 ≈ 5·10^8 bounds the likelihood
  ratio of two inputs; for no protection run a non-private baseline
  (``gcn-raw``, ``mlp``) instead.
* The discrete mechanisms must *realise* probabilities as small as ≈ e^{−ε}
  (a flip, a report of another class) with 53-bit uniforms (resolution
  2^{−53} ≈ e^{−36.7}).  At ε ≤ 20 that is ≥ 10^7 steps, so the realised
  privacy loss is ε to within 2^{−53}·e^ε < 10^{−7}; near ε ≈ 37 the flip can
  never happen and the true loss is infinite while ε would be reported.
* Every closed form is finite and accurate (e^20 ≈ 4.9·10^8; exp overflows
  only above ε ≈ 709.8, e^{2ε} above ≈ 354.9).
"""


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """ε must be a number in (0, :data:`MAX_EPSILON`]."""
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {epsilon!r}") from None
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {epsilon!r}")
    if eps > MAX_EPSILON:
        raise ValueError(f"{name} = {eps:g} exceeds the maximum epsilon {MAX_EPSILON:g} (a vacuous guarantee)")
    return eps


def check_delta(delta: float, name: str = "delta") -> float:
    """δ must lie in the open interval (0, 1)."""
    d = float(delta)
    if not (0.0 < d < 1.0):
        raise ValueError(f"{name} must lie in (0, 1), got {delta!r}")
    return d


__all__ = ["MAX_EPSILON", "check_delta", "check_epsilon"]
