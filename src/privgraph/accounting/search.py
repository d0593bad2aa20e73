"""One-dimensional calibration: the least value at which a monotone privacy condition holds.

Every calibration in privgraph asks the same question — the smallest noise σ whose δ(σ) or ε(σ) meets
a target, the smallest ε whose δ(ε) is within δ — of a condition that fails below a point and holds
above it.  Bisection answers it with the end of the bracket where the condition *holds*, so the value
returned never breaks the guarantee (a root finder's estimate may land on either side).  It is also
what keeps ``scipy.optimize`` (half a CPU-second to import) out of a run."""

from __future__ import annotations

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


__all__ = ["least_satisfying"]
