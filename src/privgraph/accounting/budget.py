"""A privacy budget, split between mechanisms by declared shares and composed.

One place for what the methods did by hand: ε₁ = share·ε and ε₂ = (1 − share)·ε
(Blink's degree share `degree_share`, EdgeRR's MCMC share, LapGraph's count share, HeteDP's
feature share), the check that a share lies in its interval, and k releases of one
budget by basic composition (a selection on validation: k·ε, k·δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def check_share(share: float, name: str, *, closed: bool = False) -> float:
    """A budget share: in (0, 1), or in [0, 1] when ``closed`` (a mechanism may get none of ε)."""
    try:
        value = float(share)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {share!r}") from None
    inside = 0.0 <= value <= 1.0 if closed else 0.0 < value < 1.0
    if not inside:
        raise ValueError(f"{name} must lie in {'[0, 1]' if closed else '(0, 1)'}, got {share!r}")
    return value


@dataclass(frozen=True)
class Budget:
    """(ε, δ) for one unit: ``split`` between two mechanisms that each see the unit, ``times`` for
    k releases of it.  ε = 0 is a share that spends nothing (Blink without a degree report)."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        if not (self.epsilon >= 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"a budget's epsilon must be finite and >= 0, got {self.epsilon!r}")
        if not 0.0 <= self.delta <= 1.0:
            raise ValueError(f"a budget's delta must lie in [0, 1], got {self.delta!r}")

    def split(self, share: float, name: str, *, closed: bool = False) -> tuple[Budget, Budget]:
        """(share·ε, (1 − share)·ε), each with this δ (the two parts are stated per mechanism; their
        basic composition is this budget's ε); ``share`` is checked by :func:`check_share`."""
        share = check_share(share, name, closed=closed)
        return Budget(share * self.epsilon, self.delta), Budget((1.0 - share) * self.epsilon, self.delta)

    def times(self, k: int) -> Budget:
        """``k`` releases under this budget, each with its own randomness: (k·ε, min(1, k·δ))."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"the number of releases must be a whole number >= 1, got {k!r}")
        return Budget(k * self.epsilon, min(1.0, k * self.delta))


__all__ = ["Budget", "check_share"]
