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


MIN_EPSILON = 1e-6
"""The smallest ε any mechanism here accepts.

Below it the outputs stop being numbers: the unbiased estimators divide by ``e^{ε/m} − 1`` (LPGNN's
multi-bit rectifier with m up to the feature count, ~10⁴) or by ``1 − 2p`` with ``p → ½`` (randomized
response), so their scale grows as ``m/ε``; at ε = 10⁻³⁰⁰ it overflows to ±inf and NaN under a
"10⁻³⁰⁰-LDP" report, and ε = 5·10⁻³²⁴ divides by zero.  At ε ≥ 10⁻⁶ with a domain at most
:data:`MAX_DOMAIN_WIDTH` wide the largest scale is below 10⁴·10⁶·10²⁰ = 10³⁰, inside float32's 3.4·10³⁸.
An ε that small protects completely and tells nothing: every output is noise."""

MAX_DOMAIN_WIDTH = 1e20
"""The widest declared feature domain ``β − α`` accepted (with :data:`MIN_EPSILON`, it keeps every estimate
finite in float32: a domain of (−10³⁰⁸, 10³⁰⁸) overflowed ``β − α`` to inf)."""


def _number(value: object, name: str) -> float:
    """``value`` as a float; ``bool`` is not a number (``epsilon=True`` was read as 1)."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """ε must be a number in [:data:`MIN_EPSILON`, :data:`MAX_EPSILON`]."""
    eps = _number(epsilon, name)
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {epsilon!r}")
    if eps < MIN_EPSILON:
        raise ValueError(
            f"{name} = {eps:g} is below the minimum epsilon {MIN_EPSILON:g} (the estimates would overflow: "
            "at that ε every output is noise)"
        )
    if eps > MAX_EPSILON:
        raise ValueError(f"{name} = {eps:g} exceeds the maximum epsilon {MAX_EPSILON:g} (a vacuous guarantee)")
    return eps


def check_epsilon_argument(method: str, private: bool, optional: bool, epsilon: float | None) -> float | None:
    """The one rule of a release's ε (every entry point's: the API, the transforms, the audit, the pipeline and
    the command line, which reads ``private`` and ``optional`` from the catalogue): a private method needs it
    unless it also runs without noise (``optional``), a non-private baseline refuses one; ε checked by
    :func:`check_epsilon`."""
    if not private and epsilon is not None:
        raise ValueError(f"{method} is a non-private baseline: it takes no epsilon")
    if private and epsilon is None and not optional:
        raise ValueError(f"{method} is private: give epsilon")
    return None if epsilon is None else check_epsilon(epsilon)


def check_epsilons(method: str, private: bool, optional: bool, epsilons: list[float | None]) -> list[float | None]:
    """The ε of each setting of ``method`` (``private``: it takes an ε; ``optional``: it also runs
    without one, ``None``): each checked by :func:`check_epsilon` and given once (one setting each).
    A non-private method takes none (``[None]`` is returned); an empty list stays empty (the caller
    picks the default)."""
    checked = [check_epsilon_argument(method, private, optional, e) for e in epsilons]
    if not private:
        return [None]
    repeated = sorted({e for e in checked if checked.count(e) > 1}, key=lambda e: (e is not None, e or 0.0))
    if repeated:  # each ε is one setting: its own randomness streams and its own identity in the store
        raise ValueError(
            f"epsilon {', '.join('none' if e is None else f'{e:g}' for e in repeated)} is given "
            "more than once: give each value once (--trials repeats a setting)"
        )
    return checked


def check_delta(delta: float, name: str = "delta") -> float:
    """δ must lie in the open interval (0, 1)."""
    d = _number(delta, name)
    if not (0.0 < d < 1.0):
        raise ValueError(f"{name} must lie in (0, 1), got {delta!r}")
    return d


def check_domain(domain: object, name: str = "domain") -> tuple[float, float]:
    """A declared feature domain ``(α, β)``: two finite numbers with ``α < β`` and ``β − α`` at most
    :data:`MAX_DOMAIN_WIDTH` (so no estimate overflows)."""
    try:
        pair: tuple[object, ...] = tuple(domain)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{name} must be a pair (lo, hi), got {domain!r}") from None
    if len(pair) != 2:
        raise ValueError(f"{name} must be a pair (lo, hi), got {domain!r}")
    lo, hi = _number(pair[0], name), _number(pair[1], name)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"{name} must be a finite interval [lo, hi] with lo < hi, got {domain}")
    if hi - lo > MAX_DOMAIN_WIDTH:
        raise ValueError(
            f"{name} [{lo:g}, {hi:g}] is wider than {MAX_DOMAIN_WIDTH:g}: the estimates would overflow; "
            "rescale the features"
        )
    return lo, hi


__all__ = [
    "MAX_DOMAIN_WIDTH",
    "MAX_EPSILON",
    "MIN_EPSILON",
    "check_delta",
    "check_domain",
    "check_epsilon",
    "check_epsilon_argument",
    "check_epsilons",
]
