"""What one release spends: (ε, δ) per privacy unit with the mechanism event behind it, and the unit
hierarchy's additions (group privacy on the parts a unit covers, ε = ∞ on a parent a part says nothing of)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from privgraph.accounting.guarantee import (
    UNIT_PARTS,
    PrivacyGuarantee,
    PrivacyReport,
    _json_float,
    covered_units,
    group_spend,
)
from privgraph.accounting.ledger.errors import LedgerError

GAUSSIAN = "gaussian"


def gaussian_event(noise_multiplier: float, count: int = 1, sampling_rate: float = 1.0) -> dict[str, Any]:
    """The event of ``count`` Gaussian mechanisms of noise multiplier z = σ/Δ (L2 sensitivity Δ), each on a
    Poisson sample of rate q (1: the whole data): what :func:`~privgraph.accounting.ledger.composition.compose` composes
    by RDP.  Every number must
    follow from public parameters (ε, δ, the node count, batch sizes), never from the data."""
    z, k, q = float(noise_multiplier), int(count), float(sampling_rate)
    if not (z > 0 and math.isfinite(z)) or k < 1 or not 0 < q <= 1:
        raise ValueError(f"a Gaussian event needs z > 0, count >= 1 and q in (0, 1], got {z}, {k}, {q}")
    return {"kind": GAUSSIAN, "noise_multiplier": z, "count": k, "sampling_rate": q}


def _check_event(event: Any) -> dict[str, Any] | None:
    if event is None:
        return None
    if not isinstance(event, Mapping) or event.get("kind") != GAUSSIAN:
        raise LedgerError(f"unknown mechanism event {event!r} (known: {GAUSSIAN!r}, or none)")
    return gaussian_event(event["noise_multiplier"], event.get("count", 1), event.get("sampling_rate", 1.0))


@dataclass(frozen=True)
class Spend:
    """(ε, δ) spent on one privacy unit (ε = ∞: the unit is not protected), with the mechanism event that
    spent it when the method declares one (:func:`gaussian_event`; None: composed by its (ε, δ) alone)."""

    unit: str
    epsilon: float
    delta: float = 0.0
    event: dict[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if not self.epsilon >= 0:
            raise ValueError(f"a spend's epsilon must be >= 0 (or inf), got {self.epsilon!r}")
        if not 0.0 <= self.delta <= 1.0:
            raise ValueError(f"a spend's delta must lie in [0, 1], got {self.delta!r}")
        object.__setattr__(self, "event", _check_event(self.event))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"unit": self.unit, "epsilon": _json_float(self.epsilon), "delta": self.delta}
        if self.event is not None:
            d["event"] = dict(self.event)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Spend:
        return cls(d["unit"], _load(d["epsilon"]), float(d.get("delta", 0.0)), d.get("event"))


def spends_of(report: PrivacyReport | Iterable[PrivacyGuarantee]) -> list[Spend]:
    """What a release spent: its report's composed guarantee per unit."""
    report = report if isinstance(report, PrivacyReport) else PrivacyReport(list(report))
    return [Spend(unit, g.epsilon, g.delta) for unit, g in report.by_unit().items()]


def expand(spends: Iterable[Spend], named: Iterable[str] = ()) -> list[Spend]:
    """``spends`` with what the unit hierarchy adds, failing closed per unit: on every unit a finite spend's unit
    covers, its group-privacy spend (a Gaussian event on the whole data keeps its event with z/k: k neighbouring
    steps move the output by at most k sensitivities); on every budgeted unit in ``named`` the release neither spends
    nor covers, the basic composition of its parts when the unit is exactly its parts (:data:`UNIT_PARTS`) and
    the release spends each of them, else ε = ∞ (the release does not bound it: a part's release says nothing of
    the whole node, and what a release does not name it may hold in clear).  Units match exactly."""
    spends = list(spends)
    out: dict[str, list[Spend]] = {}
    for s in spends:
        out.setdefault(s.unit, []).append(s)
        # ε = ∞ on a unit says nothing of its parts (EdgeRR: every public edge in clear, ε on the private ones)
        for unit, k in covered_units(s.unit).items() if math.isfinite(s.epsilon) else ():
            eps, delta = group_spend(s.epsilon, s.delta, k)
            event = s.event
            if event is not None and k > 1:
                event = (
                    None if event["sampling_rate"] < 1 else {**event, "noise_multiplier": event["noise_multiplier"] / k}
                )
            out.setdefault(unit, []).append(Spend(unit, eps, delta, event))
    own = {s.unit: s for s in spends}
    for unit in sorted(set(named) - set(out)):
        parts = UNIT_PARTS.get(unit, ())
        if parts and all(u in own for u in parts):
            eps, delta = sum(own[u].epsilon for u in parts), min(1.0, sum(own[u].delta for u in parts))
            out[unit] = [Spend(unit, eps, delta)]
        else:
            out[unit] = [Spend(unit, math.inf)]
    return [s for ss in out.values() for s in ss]


def exceeds(spent: Spend, planned: Spend) -> bool:
    """Whether a release spent more on a unit than it declared before the noise (beyond rounding)."""
    return spent.epsilon > planned.epsilon * (1 + 1e-9) or spent.delta > planned.delta * (1 + 1e-9)


def _load(x: float | str | None) -> float:
    """A spend's ε as stored (∞ as ``"inf"`` or null)."""
    return math.inf if x is None or x == "inf" else float(x)


__all__ = ["GAUSSIAN", "Spend", "exceeds", "expand", "gaussian_event", "spends_of"]
