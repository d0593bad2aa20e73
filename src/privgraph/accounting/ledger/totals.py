"""A ledger's budget per unit and the totals held to it: the budget's units checked and read, every unit's
total over the releases (hierarchy included) by :func:`~privgraph.accounting.ledger.composition.compose`,
and the check that refuses a release before any noise when a total would exceed its budget."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from privgraph.accounting.budget import Budget
from privgraph.accounting.guarantee import Unit, _json_float, canonical_unit, relation_of, relation_unit
from privgraph.accounting.ledger.composition import BASIC
from privgraph.accounting.ledger.entries import Entry
from privgraph.accounting.ledger.errors import BudgetExceeded, LedgerError
from privgraph.accounting.ledger.filters import filter_fits, filter_total
from privgraph.accounting.ledger.fingerprint import data_relations
from privgraph.accounting.ledger.spend import Spend, expand

ANY_UNIT = "*"  # a budget key that applies to every unit the budget does not name


@dataclass(frozen=True)
class Remaining:
    """What a unit's budget leaves: ε, and δ (None when the budget limits ε only: no δ budget, not applicable)."""

    epsilon: float
    delta: float | None

    def __str__(self) -> str:
        return f"ε = {self.epsilon:g} left; " + ("no δ budget" if self.delta is None else f"δ = {self.delta:g} left")


@dataclass(frozen=True)
class Total:
    """A unit's spend over the ledger's releases (by :attr:`composition`, the rule
    :func:`~privgraph.accounting.ledger.composition.compose` used),
    its budget and what remains."""

    unit: str
    epsilon: float
    delta: float
    releases: int
    budget: Budget | None
    composition: str = BASIC

    @property
    def remaining(self) -> Remaining | None:
        """The budget left (never below 0; δ None for an ε-only budget), or None when the unit has no budget."""
        if self.budget is None:
            return None
        eps = max(0.0, self.budget.epsilon - self.epsilon) if math.isfinite(self.epsilon) else 0.0
        return Remaining(eps, None if self.budget.delta >= 1 else max(0.0, self.budget.delta - self.delta))

    def to_dict(self) -> dict[str, Any]:
        left = self.remaining
        return {
            "unit": self.unit,
            "epsilon": _json_float(self.epsilon),
            "delta": self.delta,
            "releases": self.releases,
            "budget": None if self.budget is None else _limit_dict(self.budget),
            "remaining": None if left is None else {"epsilon": left.epsilon, "delta": left.delta},
            "composition": self.composition,
        }


def _named(budget: Mapping[str, Budget], relations: Iterable[str] = ()) -> set[str]:
    """The units the budget limits: those it names, and with ``"*"`` every unit privgraph knows and each of the
    data's relation units (``relations``)."""
    named = {u for u in budget if u != ANY_UNIT}
    if ANY_UNIT in budget:
        named |= set(Unit.known()) | set(relations)
    return named


def _spent_by_unit(
    entries: list[Entry], budget: Mapping[str, Budget], relations: Iterable[str] = ()
) -> dict[str, list[tuple[int, Spend]]]:
    named = _named(budget, relations)
    spent: dict[str, list[tuple[int, Spend]]] = {u: [] for u in named}
    for i, entry in enumerate(entries):
        for s in expand(entry.counted, named):
            spent.setdefault(s.unit, []).append((i, s))
    return spent


def totals_of(
    entries: list[Entry],
    budget: dict[str, Budget],
    advanced_delta: float | None = None,
    relations: Iterable[str] = (),
) -> dict[str, Total]:
    """Per unit (its own releases and those the hierarchy adds), the total by
    :func:`~privgraph.accounting.ledger.composition.compose`."""
    out = {}
    for unit, pairs in _spent_by_unit(entries, budget, relations).items():
        limit = budget.get(unit, budget.get(ANY_UNIT))
        eps, delta, rule = filter_total([s for _, s in pairs], limit, advanced_delta)
        out[unit] = Total(unit, eps, delta, len({i for i, _ in pairs}), limit, rule)
    return out


def check_budget(
    entries: list[Entry],
    budget: dict[str, Budget],
    planned: list[Spend],
    advanced_delta: float | None = None,
    relations: Iterable[str] = (),
) -> None:
    """Refuse ``planned`` when a unit's total after it (hierarchy included, ∞ on a budgeted unit it does not
    bound: :func:`expand`) would exceed that unit's budget."""
    before = _spent_by_unit(entries, budget, relations)
    new: dict[str, list[Spend]] = {}
    for s in expand(planned, _named(budget, relations)):
        new.setdefault(s.unit, []).append(s)
    over = []
    for unit, adds in new.items():
        limit = budget.get(unit, budget.get(ANY_UNIT))
        if limit is None:
            continue
        old = [s for _, s in before.get(unit, [])]
        b_eps, b_delta, _ = filter_total(old, limit, advanced_delta)
        if not filter_fits(old + adds, limit, advanced_delta):
            eps, delta, rule = filter_total(old + adds, limit, advanced_delta)
            this = _compose_text(adds) if all(math.isfinite(s.epsilon) for s in adds) else "does not bound it (ε = ∞)"
            allowed = f"ε = {limit.epsilon:g}" + (f", δ = {limit.delta:g}" if limit.delta < 1 else "")
            over.append(
                f"{unit}: spent ({b_eps:g}, {b_delta:g}), this release {this}, total ({eps:g}, {delta:g}) by "
                f"{rule}, budget {allowed}"
            )
    if over:
        raise BudgetExceeded(
            "the release would exceed the ledger's budget (refused before any noise): " + "; ".join(over)
        )


def _relations(state: Mapping[str, Any], data: Any = None) -> list[tuple[str, ...]] | None:
    """The dataset's relations: ``data``'s, else those its first release recorded; None when neither tells (or
    a homogeneous graph: then ``[]`` when ``data`` is given)."""
    if data is not None:
        return data_relations(data) or []
    held = (state.get("fingerprint") or {}).get("relations")
    return None if held is None else [tuple(r) for r in held]


def relation_units(state: Mapping[str, Any], data: Any = None) -> list[str]:
    """The units ``"edge of (src, rel, dst)"`` of the dataset's relations (what ``"*"`` budgets besides
    :meth:`~privgraph.accounting.Unit.known`)."""
    return [relation_unit(r) for r in _relations(state, data) or []]


def check_units(
    state: Mapping[str, Any], planned: list[Spend], data: Any, path: Any, budget: Mapping[str, Budget] | None = None
) -> None:
    """Refuse (one :class:`LedgerError` line) a relation unit ``"edge of (src, rel, dst)"`` of the budget or of
    ``planned`` that is not one of the dataset's relations (``data``'s, else the recorded ones; unchecked until
    the first release tells them)."""
    relations = _relations(state, data)
    if relations is None:
        return
    held = budget if budget is not None else parse_budget(state.get("budget") or {})
    units = [u for u in held if relation_of(u) is not None] + [s.unit for s in planned if relation_of(s.unit)]
    wrong = sorted({u for u in units if relation_of(u) not in relations})
    if wrong:
        known = ", ".join(relation_unit(r) for r in relations) or "none: the graph is homogeneous"
        raise LedgerError(
            f"the ledger {path} names {', '.join(repr(u) for u in wrong)}, not a relation of its dataset "
            f"(its relations: {known})"
        )


def _compose_text(spends: list[Spend]) -> str:
    eps, delta = sum(s.epsilon for s in spends), min(1.0, sum(s.delta for s in spends))
    return f"({eps:g}, {delta:g})"


def parse_budget(budget: Mapping[str, Any]) -> dict[str, Budget]:
    """A budget's units checked (known units, or ``"*"``) and values read: ε, (ε, δ) or a Budget."""
    out = {}
    for unit, value in budget.items():
        unit = canonical_unit(unit) if isinstance(unit, str) else unit
        if unit != ANY_UNIT and not Unit.is_known(unit):
            known = ", ".join(repr(u) for u in Unit.known())
            raise LedgerError(
                f"unknown privacy unit {unit!r} in the budget; known units: {known}, "
                f"'{Unit.EDGE} of (src, rel, dst)', or '*' for every unit not named"
            )
        try:
            if isinstance(value, Budget):
                out[unit] = value
            elif isinstance(value, Mapping):
                out[unit] = Budget(float(value["epsilon"]), float(value.get("delta", 1.0)))
            elif isinstance(value, (tuple, list)):
                out[unit] = Budget(float(value[0]), float(value[1]))
            else:
                out[unit] = Budget(float(value), 1.0)  # ε only: δ not limited
        except (KeyError, IndexError, TypeError) as err:
            raise LedgerError(f"the budget of {unit!r} must be ε or (ε, δ), got {value!r} ({err})") from None
    return out


def _limit_dict(b: Budget) -> dict[str, float | None]:
    """A unit's budget as the totals show it: δ None where it limits ε only (no δ budget)."""
    return {"epsilon": b.epsilon, "delta": None if b.delta >= 1 else b.delta}


def budget_dict(b: Budget) -> dict[str, float]:
    return {"epsilon": b.epsilon, "delta": b.delta}


def budget_json(budget: Mapping[str, Budget]) -> dict[str, dict[str, float]]:
    return {unit: budget_dict(b) for unit, b in budget.items()}


def budget_text(budget: Mapping[str, Budget]) -> str:
    return ", ".join(
        f"{u}: ε = {b.epsilon:g}" + (f", δ = {b.delta:g}" if b.delta < 1 else "") for u, b in budget.items()
    )


__all__ = ["ANY_UNIT", "Remaining", "Total", "check_units", "relation_units"]
