"""A data owner's ledger: every release of one dataset, its spend per privacy unit, and a budget.

Each release is accounted alone (its :class:`~privgraph.accounting.PrivacyReport`); a :class:`Ledger`
adds them up.  It is one JSON file per dataset holding, for every release, the method, its
parameters, the (ε, δ) it spent per unit, the time, the file written and the guarantee's
description — never a statistic of the data (a count printed is a release too).

Composition.  Releases of one unit compose by basic sequential composition (Dwork & Roth,
Thm. 3.16): ε and δ add up, δ capped at 1.  It holds for any mix of mechanisms and of trust models
(an ε-LDP release of a unit is also ε-DP for it).  Tighter RDP composition of Gaussian or DP-SGD
releases would need each release's noise multiplier *and sampling rate*, and the rate is a batch
size over the private graph's size: a statistic of the data, which the ledger does not store.

Order of events (:meth:`Ledger.spend`).  Before any noise is drawn the method's declared spend
(``method.planned_spend(ε, label_epsilon)``) is checked against the budget and recorded as
``pending`` in one locked transaction; a release that would exceed the budget is refused
(:class:`BudgetExceeded`).  After the release the entry becomes ``done`` with the spend its report
states; a release that raised becomes ``failed`` and stays counted (noise may have been drawn), and
a process killed in between leaves ``pending``, which is counted too.

Storage.  Writers take an exclusive ``fcntl.flock`` on ``PATH.lock`` around read–modify–write
(two processes never lose each other's records), and write a temporary file in the same folder,
``fsync`` it and ``os.replace`` it over the ledger (a process killed mid-write leaves the old file
whole).  Linux and macOS.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from privgraph.accounting.budget import Budget
from privgraph.accounting.guarantee import PrivacyGuarantee, PrivacyReport, _json_float

FORMAT = "privgraph-ledger/1"
ANY_UNIT = "*"  # a budget key that applies to every unit the budget does not name
COMPOSITION = "basic sequential composition (ε and δ add up; Dwork & Roth, Thm. 3.16)"
PENDING, DONE, FAILED = "pending", "done", "failed"


class BudgetExceeded(ValueError):
    """A release would spend more than the ledger's budget of a unit (raised before any noise)."""


@dataclass(frozen=True)
class Spend:
    """(ε, δ) spent on one privacy unit (ε = ∞: the unit is not protected)."""

    unit: str
    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        if not self.epsilon >= 0:
            raise ValueError(f"a spend's epsilon must be >= 0 (or inf), got {self.epsilon!r}")
        if not 0.0 <= self.delta <= 1.0:
            raise ValueError(f"a spend's delta must lie in [0, 1], got {self.delta!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "epsilon": _json_float(self.epsilon), "delta": self.delta}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Spend:
        return cls(d["unit"], _load(d["epsilon"]), float(d.get("delta", 0.0)))


def spends_of(report: PrivacyReport | Iterable[PrivacyGuarantee]) -> list[Spend]:
    """What a release spent: its report's composed guarantee per unit."""
    report = report if isinstance(report, PrivacyReport) else PrivacyReport(list(report))
    return [Spend(unit, g.epsilon, g.delta) for unit, g in report.by_unit().items()]


@dataclass(frozen=True)
class Total:
    """A unit's spend over the ledger's releases (:data:`COMPOSITION`), its budget and what remains."""

    unit: str
    epsilon: float
    delta: float
    releases: int
    budget: Budget | None
    composition: str = COMPOSITION

    @property
    def remaining(self) -> Budget | None:
        """The budget left (never below 0), or None when the unit has no budget."""
        if self.budget is None:
            return None
        eps = max(0.0, self.budget.epsilon - self.epsilon) if math.isfinite(self.epsilon) else 0.0
        return Budget(eps, max(0.0, self.budget.delta - self.delta))

    def to_dict(self) -> dict[str, Any]:
        left = self.remaining
        return {
            "unit": self.unit,
            "epsilon": _json_float(self.epsilon),
            "delta": self.delta,
            "releases": self.releases,
            "budget": None if self.budget is None else _budget_dict(self.budget),
            "remaining": None if left is None else _budget_dict(left),
            "composition": self.composition,
        }


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
        name); the planned spend while pending or after a failure (noise may have been drawn)."""
        if self.status != DONE or self.spent is None:
            return self.planned
        reported = {s.unit for s in self.spent}
        return self.spent + [s for s in self.planned if s.unit not in reported]

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


class Ledger:
    """The releases of one dataset, composed per unit and held to a budget (module docstring).

    Args:
        path: the ledger's JSON file (created on the first write).
        budget: ε per unit, or (ε, δ) per unit (``{"adjacency list": 4.0}``, ``{"*": (4.0, 1e-5)}``:
            ``"*"`` for every unit not named).  A ledger that has a budget keeps it: a different one is
            refused (:meth:`set_budget` changes it on purpose).  A unit without a budget is recorded,
            not limited; an ε-only budget does not limit δ.
        dataset: the dataset's name, recorded by the first write; a ledger of another dataset is refused.
        file: the file the releases recorded through this object are written to (:meth:`for_file`).
    """

    def __init__(
        self,
        path: str | Path,
        budget: Mapping[str, float | tuple[float, float] | Budget] | None = None,
        *,
        dataset: str | None = None,
        file: str | Path | None = None,
    ):
        self.path = Path(path)
        self.file = None if file is None else str(file)
        self._budget = None if budget is None else _parse_budget(budget)
        self._dataset = dataset
        state = self._read()
        if state is not None:
            self._adopt(state)

    def for_file(self, file: str | Path) -> Ledger:
        """This ledger, recording ``file`` as the file its releases are written to."""
        return Ledger(self.path, self._budget, dataset=self._dataset, file=file)

    # ---- reading

    @property
    def dataset(self) -> str | None:
        state = self._read()
        return self._dataset if state is None else state.get("dataset")

    @property
    def budget(self) -> dict[str, Budget]:
        state = self._read()
        return dict(self._budget or {}) if state is None else _parse_budget(state.get("budget") or {})

    @property
    def entries(self) -> list[Entry]:
        state = self._read()
        return [] if state is None else [Entry.from_dict(e) for e in state["entries"]]

    def totals(self) -> dict[str, Total]:
        """Every unit's total (each unit spent or budgeted; ``"*"`` is not a unit)."""
        state = self._read() or {"budget": _budget_json(self._budget or {}), "entries": []}
        return _totals([Entry.from_dict(e) for e in state["entries"]], _parse_budget(state.get("budget") or {}))

    def check(self, planned: Iterable[Spend]) -> None:
        """Raise :class:`BudgetExceeded` if ``planned`` on top of the ledger's spend exceeds a budget."""
        state = self._read() or {"budget": _budget_json(self._budget or {}), "entries": []}
        _check([Entry.from_dict(e) for e in state["entries"]], _parse_budget(state.get("budget") or {}), list(planned))

    def to_dict(self) -> dict[str, Any]:
        """The ledger as JSON: the dataset, the budget, every release and the totals per unit."""
        return {
            "format": FORMAT,
            "path": str(self.path),
            "dataset": self.dataset,
            "budget": _budget_json(self.budget),
            "composition": COMPOSITION,
            "entries": [e.to_dict() for e in self.entries],
            "totals": [t.to_dict() for t in self.totals().values()],
        }

    # ---- writing

    def set_budget(self, budget: Mapping[str, float | tuple[float, float] | Budget]) -> None:
        """Replace the ledger's budget (a deliberate change; the constructor refuses a different one)."""
        self._budget = _parse_budget(budget)
        with self._transaction() as state:
            state["budget"] = _budget_json(self._budget)

    def reserve(self, planned: Iterable[Spend], method: str, params: Mapping[str, Any] | None = None) -> str:
        """Check ``planned`` against the budget and record it as ``pending``, in one locked step
        (before any noise is drawn).  Returns the entry's id; :class:`BudgetExceeded` if it does not fit."""
        planned = list(planned)
        entry = Entry(uuid.uuid4().hex, method, PENDING, planned, time.time(), dict(params or {}), file=self.file)
        with self._transaction() as state:
            _check([Entry.from_dict(e) for e in state["entries"]], _parse_budget(state["budget"]), planned)
            state["entries"].append(entry.to_dict())
        return entry.id

    def complete(self, entry_id: str, report: PrivacyReport | Iterable[PrivacyGuarantee]) -> Entry:
        """Mark a reserved release ``done`` with the spend its report states (and its description)."""
        report = report if isinstance(report, PrivacyReport) else PrivacyReport(list(report))
        lines = [g.describe() for g in report.by_unit().values()]
        entry = self._finish(entry_id, DONE, spent=spends_of(report), description=lines)
        planned = {s.unit: s for s in entry.planned}
        over = [s.unit for s in entry.spent or [] if s.unit in planned and _exceeds(s, planned[s.unit])]
        if over:  # the method's declaration was too low: the report's spend is what the totals count
            warnings.warn(
                f"{entry.method} spent more than it declared before the noise on {', '.join(over)}: "
                "the ledger counts the report's spend",
                stacklevel=2,
            )
        return entry

    def fail(self, entry_id: str, error: str) -> Entry:
        """Mark a reserved release ``failed``: it stays counted at its planned spend."""
        return self._finish(entry_id, FAILED, error=error)

    @contextmanager
    def spend(self, method: Any, epsilon: float | None, label_epsilon: float | None = None) -> Iterator[_Receipt]:
        """Reserve ``method``'s declared spend (``method.planned_spend(epsilon, label_epsilon)``) before
        the block, mark it failed if the block raises; the block records the release's report with
        ``receipt.done(report)`` (without it the entry stays pending, counted at its planned spend)."""
        planned = method.planned_spend(epsilon, label_epsilon)
        params = {**method.params.to_dict(), "epsilon": epsilon}
        if label_epsilon is not None:
            params["label_epsilon"] = label_epsilon
        receipt = _Receipt(self, self.reserve(planned, method.name, _jsonable(params)))
        try:
            yield receipt
        except BaseException as err:
            if not receipt.finished:
                self.fail(receipt.id, f"{type(err).__name__}: the release did not finish (counted as planned)")
            raise

    # ---- internals

    def _adopt(self, state: dict[str, Any], budget: bool = True) -> None:
        """Refuse a ledger of another dataset, or (``budget``) a budget that differs from the one it holds."""
        held = state.get("dataset")
        if self._dataset is not None and held is not None and held != self._dataset:
            raise ValueError(
                f"the ledger {self.path} is for dataset {held!r}, not {self._dataset!r}: use one ledger per dataset"
            )
        stored = _parse_budget(state.get("budget") or {})
        if budget and self._budget is not None and stored and stored != self._budget:
            raise ValueError(
                f"the ledger {self.path} holds the budget {_budget_text(stored)}, not {_budget_text(self._budget)}: "
                "change it with Ledger.set_budget (privgraph ledger FILE --budget)"
            )

    def _finish(self, entry_id: str, status: str, **changes: Any) -> Entry:
        with self._transaction() as state:
            for i, raw in enumerate(state["entries"]):
                if raw["id"] == entry_id:
                    entry = Entry.from_dict(raw)
                    entry.status, entry.finished = status, time.time()
                    for name, value in changes.items():
                        setattr(entry, name, value)
                    state["entries"][i] = entry.to_dict()
                    return entry
        raise KeyError(f"no entry {entry_id!r} in the ledger {self.path}")

    def _read(self) -> dict[str, Any] | None:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        state = json.loads(text)
        if state.get("format") != FORMAT:
            raise ValueError(f"{self.path} is not a privgraph ledger (format {state.get('format')!r})")
        return state

    @contextmanager
    def _transaction(self) -> Iterator[dict[str, Any]]:
        """Read, change and write the ledger under an exclusive lock; written atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = self._read()
                if state is None:
                    state = {"format": FORMAT, "dataset": self._dataset, "budget": {}, "entries": []}
                    state["budget"] = _budget_json(self._budget or {})
                self._adopt(state, budget=False)  # the file's budget rules (set_budget changes it)
                if state.get("dataset") is None and self._dataset is not None:
                    state["dataset"] = self._dataset
                if not state.get("budget") and self._budget:
                    state["budget"] = _budget_json(self._budget)
                yield state
                _write_atomic(self.path, json.dumps(state, indent=1))
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass
class _Receipt:
    """A reservation made by :meth:`Ledger.spend`: ``done(report)`` records the release."""

    ledger: Ledger
    id: str
    finished: bool = False
    entry: Entry | None = None

    def done(self, report: PrivacyReport | Iterable[PrivacyGuarantee]) -> Entry:
        self.entry = self.ledger.complete(self.id, report)
        self.finished = True
        return self.entry


def _totals(entries: list[Entry], budget: dict[str, Budget]) -> dict[str, Total]:
    """Per unit: Σ ε and min(1, Σ δ) over every counted entry (:data:`COMPOSITION`)."""
    spent: dict[str, list[Spend]] = {u: [] for u in budget if u != ANY_UNIT}
    for entry in entries:
        for s in entry.counted:
            spent.setdefault(s.unit, []).append(s)
    return {
        unit: Total(
            unit,
            sum(s.epsilon for s in ss),
            min(1.0, sum(s.delta for s in ss)),
            len(ss),
            budget.get(unit, budget.get(ANY_UNIT)),
        )
        for unit, ss in spent.items()
    }


def _check(entries: list[Entry], budget: dict[str, Budget], planned: list[Spend]) -> None:
    """Refuse ``planned`` when a unit's total after it would exceed that unit's budget."""
    totals = _totals(entries, budget)
    over = []
    for s in planned:
        limit = budget.get(s.unit, budget.get(ANY_UNIT))
        if limit is None:
            continue
        before = totals.get(s.unit)
        eps = s.epsilon + (before.epsilon if before else 0.0)
        delta = s.delta + (before.delta if before else 0.0)
        tol = 1e-12 * max(1.0, limit.epsilon)  # ten releases at ε = 0.1 fit a budget of 1
        if eps > limit.epsilon + tol or (limit.delta < 1.0 and delta > limit.delta + 1e-15):
            spent = f"({before.epsilon:g}, {before.delta:g})" if before else "(0, 0)"
            allowed = f"ε = {limit.epsilon:g}" + (f", δ = {limit.delta:g}" if limit.delta < 1 else "")
            over.append(f"{s.unit}: spent {spent}, this release ({s.epsilon:g}, {s.delta:g}), budget {allowed}")
    if over:
        raise BudgetExceeded(
            "the release would exceed the ledger's budget (refused before any noise): " + "; ".join(over)
        )


def _exceeds(spent: Spend, planned: Spend) -> bool:
    return spent.epsilon > planned.epsilon * (1 + 1e-9) or spent.delta > planned.delta * (1 + 1e-9)


def _parse_budget(budget: Mapping[str, Any]) -> dict[str, Budget]:
    out = {}
    for unit, value in budget.items():
        if isinstance(value, Budget):
            out[unit] = value
        elif isinstance(value, Mapping):
            out[unit] = Budget(float(value["epsilon"]), float(value.get("delta", 1.0)))
        elif isinstance(value, (tuple, list)):
            out[unit] = Budget(float(value[0]), float(value[1]))
        else:
            out[unit] = Budget(float(value), 1.0)  # ε only: δ not limited
    return out


def _budget_dict(b: Budget) -> dict[str, float]:
    return {"epsilon": b.epsilon, "delta": b.delta}


def _budget_json(budget: Mapping[str, Budget]) -> dict[str, dict[str, float]]:
    return {unit: _budget_dict(b) for unit, b in budget.items()}


def _budget_text(budget: Mapping[str, Budget]) -> str:
    return ", ".join(
        f"{u}: ε = {b.epsilon:g}" + (f", δ = {b.delta:g}" if b.delta < 1 else "") for u, b in budget.items()
    )


def _write_atomic(path: Path, text: str) -> None:
    """Write a temporary file beside ``path``, fsync it and replace ``path`` with it (then fsync the folder)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float):
        return _json_float(obj)
    return obj if isinstance(obj, (str, int, bool)) or obj is None else str(obj)


def _load(x: float | str | None) -> float:
    return math.inf if x is None or x == "inf" else float(x)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat()


def _parse_time(s: str) -> float:
    return datetime.fromisoformat(s).timestamp()


__all__ = ["ANY_UNIT", "COMPOSITION", "BudgetExceeded", "Entry", "Ledger", "Spend", "Total", "spends_of"]
