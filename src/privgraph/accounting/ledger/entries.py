"""One release in the ledger (:class:`Entry`): planned before the noise, spent after it, and its status."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from privgraph.accounting.guarantee import _json_float
from privgraph.accounting.ledger.spend import Spend, exceeds

PENDING, DONE, FAILED = "pending", "done", "failed"


@dataclass
class Entry:
    """One release in the ledger: ``planned`` is checked before the noise, ``spent`` is the report's."""

    id: str
    method: str
    status: str
    planned: list[Spend]
    started: float
    params: dict[str, Any] = field(default_factory=dict)
    spent: list[Spend] | None = None
    finished: float | None = None
    file: str | None = None
    description: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def counted(self) -> list[Spend]:
        """What the totals count: the report's spend once done (with any planned unit the report does not
        name), each with the event the method declared for its unit unless the report's (ε, δ) exceeds the
        declaration; the planned spend while pending or after a failure (noise may have been drawn)."""
        if self.status != DONE or self.spent is None:
            return self.planned
        planned = {s.unit: s for s in self.planned}
        out = []
        for s in self.spent:
            p = planned.get(s.unit)
            event = p.event if p is not None and not exceeds(s, p) else None
            out.append(Spend(s.unit, s.epsilon, s.delta, event))
        reported = {s.unit for s in self.spent}
        return out + [s for s in self.planned if s.unit not in reported]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "method": self.method,
            "status": self.status,
            "params": self.params,
            "planned": [s.to_dict() for s in self.planned],
            "spent": None if self.spent is None else [s.to_dict() for s in self.spent],
            "started": _iso(self.started),
            "finished": None if self.finished is None else _iso(self.finished),
            "file": self.file,
            "description": self.description,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Entry:
        return cls(
            d["id"],
            d["method"],
            d["status"],
            [Spend.from_dict(s) for s in d["planned"]],
            _parse_time(d["started"]),
            dict(d.get("params") or {}),
            None if d.get("spent") is None else [Spend.from_dict(s) for s in d["spent"]],
            None if d.get("finished") is None else _parse_time(d["finished"]),
            d.get("file"),
            list(d.get("description") or []),
            d.get("error"),
        )


def jsonable(obj: Any) -> Any:
    """A release's parameters as JSON: keys as text, tuples as lists, ∞ as text, any other object as text."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, float):
        return _json_float(obj)
    return obj if isinstance(obj, (str, int, bool)) or obj is None else str(obj)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat()


def _parse_time(s: str) -> float:
    return datetime.fromisoformat(s).timestamp()


__all__ = ["DONE", "FAILED", "PENDING", "Entry"]
