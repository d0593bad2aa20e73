"""One-dimensional calibration: the least value at which a monotone privacy condition holds.

Every calibration in privgraph asks the same question — the smallest noise σ whose δ(σ) or ε(σ) meets
a target, the smallest ε whose δ(ε) is within δ — of a condition that fails below a point and holds
above it.  Bisection answers it with the end of the bracket where the condition *holds*, so the value
returned never breaks the guarantee (a root finder's estimate may land on either side).  It is also
what keeps ``scipy.optimize`` (half a CPU-second to import) out of a run."""

from __future__ import annotations

import math
from collections.abc import Callable


def least_satisfying(
    holds: Callable[[float], bool], lo: float, hi: float, *, tol: float, relative: bool = False
) -> float:
    """The least x in (``lo``, ``hi``] with ``holds(x)``, to within ``tol`` (absolute, or relative to x with
    ``relative``), for ``holds`` monotone — False up to a point, True from it — with ``holds(hi)`` True and
    ``holds(lo)`` False (checked).  Bisection; the returned x satisfies ``holds``."""
    if not lo < hi:
        raise ValueError(f"need lo < hi, got [{lo}, {hi}]")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if holds(lo) or not holds(hi):
        raise ValueError(f"the bracket [{lo}, {hi}] does not hold the point where the condition starts to hold")
    while hi - lo > (tol * abs(hi) if relative else tol):
        mid = lo + (hi - lo) / 2
        if mid <= lo or mid >= hi:  # no float left between them
            break
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    return hi


def smallest_noise(epsilon_of: Callable[[float], float], epsilon: float, rel_tol: float = 1e-4) -> float:
    """The smallest σ (to ``rel_tol``, rounded up) with ``epsilon_of(σ) <= epsilon``, for ε decreasing in σ:
    the bracket [σ/2, σ] is doubled from σ = 1 until its top holds (refused past 1e8), halved while its bottom
    holds too (down to 1e-8), then bisected (:func:`least_satisfying`); the σ returned always meets the target."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")

    def fits(sigma: float) -> bool:
        return epsilon_of(sigma) <= epsilon

    hi = 1.0
    while not fits(hi):
        hi *= 2
        if hi > 1e8:
            raise RuntimeError(f"noise calibration failed: no σ ≤ 1e8 reaches ε = {epsilon}")
    lo = hi / 2
    while lo > 1e-8 and fits(lo):
        hi, lo = lo, lo / 2
    if fits(lo):  # σ ≤ 1e-8 already meets ε
        return lo
    return least_satisfying(fits, lo, hi, tol=rel_tol, relative=True)


__all__ = ["least_satisfying", "smallest_noise"]
