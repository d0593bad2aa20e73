"""The :class:`Ledger` of one dataset's releases: bound to the dataset, each release reserved before its noise
and recorded after it, composed per unit and held to a budget.

Order of events (:meth:`Ledger.spend`).  Before any noise is drawn the method's declared spend
(``method.planned_spend(ε, label_epsilon, data=data)``, with its events) is checked against the budget and
recorded as ``pending`` in one locked transaction, with the dataset's fingerprint; a release that would
exceed the budget is refused (:class:`~privgraph.accounting.ledger.errors.BudgetExceeded`).  After the
release the entry becomes ``done`` with the spend its report states; a release that raised becomes ``failed``
and stays counted (noise may have been drawn), and a process killed in between leaves ``pending``, which is
counted too.
"""

from __future__ import annotations

import os
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privgraph.accounting.budget import Budget
from privgraph.accounting.guarantee import PrivacyGuarantee, PrivacyReport
from privgraph.accounting.ledger.entries import DONE, FAILED, PENDING, Entry, jsonable
from privgraph.accounting.ledger.errors import LedgerError
from privgraph.accounting.ledger.filters import FILTERS
from privgraph.accounting.ledger.fingerprint import fingerprint_of
from privgraph.accounting.ledger.spend import Spend, exceeds, spends_of
from privgraph.accounting.ledger.storage import FORMAT, locked_update, read_state
from privgraph.accounting.ledger.totals import (
    Total,
    budget_json,
    budget_text,
    check_budget,
    check_units,
    parse_budget,
    relation_units,
    totals_of,
)


class Ledger:
    """The releases of one dataset, composed per unit and held to a budget (module docstring).

    Args:
        path: the ledger's JSON file (created on the first write).
        budget: ε per unit, or (ε, δ) per unit (``{"adjacency list": 4.0}``, ``{"*": (4.0, 1e-5)}``:
            ``"*"`` for every unit not named); units privgraph does not know are refused.  A ledger that
            has a budget keeps it: a different one is refused (:meth:`set_budget` changes it on purpose).
            A unit without a budget is recorded, not limited; an ε-only budget does not limit δ.
        dataset: the dataset's name, recorded by the first write; a ledger of another dataset is refused,
            and a ledger without a name records no release.
        file: the file the releases recorded through this object are written to (:meth:`for_file`).
        content_hash: also record the SHA-256 of the first release's graph in the fingerprint (the node
            count is always recorded) and refuse a release on a graph whose content differs.
        advanced_delta: δ′ of advanced composition for the pure ε-DP releases of a unit (None: basic
            composition for them); stored in the file like the budget.
    """

    def __init__(
        self,
        path: str | Path,
        budget: Mapping[str, float | tuple[float, float] | Budget] | None = None,
        *,
        dataset: str | None = None,
        file: str | Path | None = None,
        content_hash: bool = False,
        advanced_delta: float | None = None,
    ):
        self.path = Path(path)
        self._cache: tuple[tuple[int, int, int], dict[str, Any] | None, list[Entry]] | None = None
        self.file = None if file is None else str(file)
        self._budget = None if budget is None else parse_budget(budget)
        self._dataset = dataset
        self._content_hash = bool(content_hash)
        if advanced_delta is not None and not 0 < float(advanced_delta) < 1:
            raise LedgerError(f"advanced_delta must lie in (0, 1), got {advanced_delta!r}")
        self._advanced_delta = None if advanced_delta is None else float(advanced_delta)
        state = self._read()
        if state is not None:
            self._adopt(state)

    def for_file(self, file: str | Path) -> Ledger:
        """This ledger, recording ``file`` as the file its releases are written to."""
        return Ledger(
            self.path,
            self._budget,
            dataset=self._dataset,
            file=file,
            content_hash=self._content_hash,
            advanced_delta=self._advanced_delta,
        )

    # ---- reading

    @property
    def dataset(self) -> str | None:
        state = self._read()
        return self._dataset if state is None else state.get("dataset")

    @property
    def fingerprint(self) -> dict[str, Any] | None:
        """The graph's public fingerprint recorded by the first release (:func:`fingerprint_of`), or None."""
        state = self._read()
        return None if state is None else state.get("fingerprint")

    @property
    def advanced_delta(self) -> float | None:
        state = self._read()
        return self._advanced_delta if state is None else state.get("advanced_delta")

    @property
    def budget(self) -> dict[str, Budget]:
        state = self._read()
        return dict(self._budget or {}) if state is None else parse_budget(state.get("budget") or {})

    @property
    def entries(self) -> list[Entry]:
        state = self._read()
        return [] if state is None else [Entry.from_dict(e) for e in state["entries"]]

    def totals(self) -> dict[str, Total]:
        """Every unit's total (each unit spent or budgeted; ``"*"`` budgets every unit), by
        :func:`~privgraph.accounting.ledger.composition.compose`."""
        state = self._state()
        return totals_of(
            [Entry.from_dict(e) for e in state["entries"]],
            parse_budget(state.get("budget") or {}),
            state.get("advanced_delta"),
            relation_units(state),
        )

    def check(self, planned: Iterable[Spend]) -> None:
        """Raise :class:`~privgraph.accounting.ledger.errors.BudgetExceeded` if ``planned`` on top of the ledger's spend
        exceeds a budget."""
        state = self._state()
        planned = list(planned)
        check_units(state, planned, None, self.path)
        check_budget(
            [Entry.from_dict(e) for e in state["entries"]],
            parse_budget(state.get("budget") or {}),
            planned,
            state.get("advanced_delta"),
            relation_units(state),
        )

    def to_dict(self) -> dict[str, Any]:
        """The ledger as JSON: the dataset and its fingerprint, the budget, every release and the totals per
        unit with the rule of each.  The file is read and parsed once (O(releases))."""
        held, entries = self._read_parsed()
        state = held or self._state()
        budget = parse_budget(state.get("budget") or {})
        totals = totals_of(entries, budget, state.get("advanced_delta"), relation_units(state))
        return {
            "format": FORMAT,
            "path": str(self.path),
            "dataset": state.get("dataset"),
            "fingerprint": state.get("fingerprint"),
            "budget": budget_json(budget),
            "advanced_delta": state.get("advanced_delta"),
            "composition": "per unit, a privacy filter (each release may be chosen after the last): " + FILTERS,
            "entries": state["entries"],  # as stored (each validated when read)
            "totals": [t.to_dict() for t in totals.values()],
        }

    def __repr__(self) -> str:
        """``Ledger('PATH', dataset=…, budget=…, releases=N)`` (a damaged file says so; nothing private)."""
        try:
            state = self._state()
        except LedgerError:
            return f"Ledger({str(self.path)!r}, damaged)"
        budget = budget_text(parse_budget(state.get("budget") or {})) or "none"
        return (
            f"Ledger({str(self.path)!r}, dataset={state.get('dataset')!r}, budget={{{budget}}}, "
            f"releases={len(state['entries'])})"
        )

    # ---- writing

    def set_budget(self, budget: Mapping[str, float | tuple[float, float] | Budget]) -> None:
        """Replace the ledger's budget (a deliberate change; the constructor refuses a different one)."""
        self._budget = parse_budget(budget)
        with self._transaction() as state:
            check_units(state, [], None, self.path, self._budget)
            state["budget"] = budget_json(self._budget)

    def bind(self, data: Any) -> None:
        """Check ``data`` against the dataset this ledger is bound to (before any noise): a ledger without a
        dataset name, or a graph whose fingerprint differs from the one recorded, is refused
        (:class:`LedgerError`).  The first release records the fingerprint (:meth:`reserve` with ``data``)."""
        self._bind(self._state(), data)

    def reserve(
        self,
        planned: Iterable[Spend],
        method: str,
        params: Mapping[str, Any] | None = None,
        data: Any = None,
    ) -> str:
        """Check ``planned`` against the budget and record it as ``pending``, in one locked step (before any
        noise is drawn); with ``data``, the graph is checked against the ledger's dataset fingerprint
        (recorded by the first release).  Returns the entry's id;
        :class:`~privgraph.accounting.ledger.errors.BudgetExceeded` if it does not fit,
        :class:`LedgerError` for another graph or a ledger without a dataset name."""
        planned = list(planned)
        entry = Entry(uuid.uuid4().hex, method, PENDING, planned, time.time(), dict(params or {}), file=self.file)
        with self._transaction() as state:
            self._bind(state, data)
            check_units(state, planned, data, self.path)
            if data is not None and state.get("fingerprint") is None:
                state["fingerprint"] = fingerprint_of(data, self._content_hash or bool(state.get("content_hash")))
            check_budget(
                [Entry.from_dict(e) for e in state["entries"]],
                parse_budget(state["budget"]),
                planned,
                state.get("advanced_delta"),
                relation_units(state, data),
            )
            state["entries"].append(entry.to_dict())
        return entry.id

    def complete(self, entry_id: str, report: PrivacyReport | Iterable[PrivacyGuarantee]) -> Entry:
        """Mark a reserved release ``done`` with the spend its report states (and its description)."""
        report = report if isinstance(report, PrivacyReport) else PrivacyReport(list(report))
        lines = [g.describe() for g in report.by_unit().values()]
        entry = self._finish(entry_id, DONE, spent=spends_of(report), description=lines)
        planned = {s.unit: s for s in entry.planned}
        over = [s.unit for s in entry.spent or [] if s.unit in planned and exceeds(s, planned[s.unit])]
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
    def spend(
        self, method: Any, epsilon: float | None, label_epsilon: float | None = None, data: Any = None
    ) -> Iterator[_Receipt]:
        """Reserve ``method``'s declared spend (``method.planned_spend(epsilon, label_epsilon, data=data)``) and
        bind ``data`` to the ledger before the block, mark it failed if the block raises; the block records
        the release's report with ``receipt.done(report)`` (without it the entry stays pending, counted at its
        planned spend)."""
        planned = method.planned_spend(epsilon, label_epsilon, data=data)
        params = {**method.params.to_dict(), "epsilon": epsilon}
        if label_epsilon is not None:
            params["label_epsilon"] = label_epsilon
        with self.recording(planned, method.name, params, data) as receipt:
            yield receipt

    @contextmanager
    def recording(
        self, planned: Iterable[Spend], name: str, params: Mapping[str, Any] | None = None, data: Any = None
    ) -> Iterator[_Receipt]:
        """:meth:`spend` for a spend declared by the caller (the bare transforms): reserved before the block,
        failed if it raises."""
        receipt = _Receipt(self, self.reserve(planned, name, jsonable(dict(params or {})), data))
        try:
            yield receipt
        except BaseException as err:
            if not receipt.finished:
                try:
                    self.fail(receipt.id, f"{type(err).__name__}: the release did not finish (counted as planned)")
                except LedgerError:  # the file cannot be written (a full disk): the entry stays pending, counted
                    pass
            raise

    # ---- internals

    def _state(self) -> dict[str, Any]:
        return self._read() or {
            "dataset": self._dataset,
            "budget": budget_json(self._budget or {}),
            "advanced_delta": self._advanced_delta,
            "entries": [],
        }

    def _bind(self, state: dict[str, Any], data: Any) -> None:
        name = state.get("dataset") or self._dataset
        if name is None:
            raise LedgerError(
                f"the ledger {self.path} has no dataset name: a ledger is bound to one dataset "
                "(Ledger(..., dataset=NAME); privgraph ledger FILE --dataset NAME)"
            )
        held = state.get("fingerprint")
        if data is None or held is None:
            return
        seen = {k: v for k, v in fingerprint_of(data, "content_sha256" in held).items() if k in held}
        if seen != held:
            what = (
                "node count"
                if seen["num_nodes"] != held["num_nodes"]
                else "relations"
                if seen.get("relations") != held.get("relations")
                else "content hash"
            )
            raise LedgerError(
                f"refused before any noise: the ledger {self.path} is bound to dataset {name!r} with "
                f"{held['num_nodes']} nodes"
                + (" and a recorded content hash" if "content_sha256" in held else "")
                + f"; this graph differs in its {what} (use one ledger per dataset)"
            )

    def _adopt(self, state: dict[str, Any], budget: bool = True) -> None:
        """Refuse a ledger of another dataset, or (``budget``) a budget or δ′ that differs from the one it holds."""
        held = state.get("dataset")
        if self._dataset is not None and held is not None and held != self._dataset:
            raise LedgerError(
                f"the ledger {self.path} is for dataset {held!r}, not {self._dataset!r}: use one ledger per dataset"
            )
        stored = parse_budget(state.get("budget") or {})
        if budget and self._budget is not None and stored and stored != self._budget:
            raise LedgerError(
                f"the ledger {self.path} holds the budget {budget_text(stored)}, not {budget_text(self._budget)}: "
                "change it with Ledger.set_budget (privgraph ledger FILE --budget)"
            )
        adv = state.get("advanced_delta")
        if budget and self._advanced_delta is not None and adv is not None and adv != self._advanced_delta:
            raise LedgerError(f"the ledger {self.path} holds advanced_delta = {adv:g}, not {self._advanced_delta:g}")

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
        """The file's state, read and validated once per version of the file (its inode, time and size)."""
        state, _ = self._read_parsed()
        return state

    def _read_parsed(self) -> tuple[dict[str, Any] | None, list[Entry]]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None, []
        except OSError as err:
            raise LedgerError(f"cannot read the ledger {self.path}: {err}") from None
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._cache is None or self._cache[0] != key:
            parsed: list[Entry] = []
            state = read_state(self.path, parsed)
            self._cache = (key, state, parsed)
        return self._cache[1], self._cache[2]

    @contextmanager
    def _transaction(self) -> Iterator[dict[str, Any]]:
        """Read, change and write the ledger under an exclusive lock; written atomically."""

        def fresh() -> dict[str, Any]:
            return {
                "format": FORMAT,
                "dataset": self._dataset,
                "budget": budget_json(self._budget or {}),
                "entries": [],
            }

        with locked_update(self.path, fresh) as state:
            self._adopt(state, budget=False)  # the file's budget rules (set_budget changes it)
            if state.get("dataset") is None and self._dataset is not None:
                state["dataset"] = self._dataset
            if not state.get("budget") and self._budget:
                state["budget"] = budget_json(self._budget)
            if state.get("advanced_delta") is None and self._advanced_delta is not None:
                state["advanced_delta"] = self._advanced_delta
            if self._content_hash and state.get("fingerprint") is None:
                state["content_hash"] = True  # the first release records the content hash too
            yield state


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


__all__ = ["Ledger"]
