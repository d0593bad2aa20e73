"""`PrivacyGuarantee`: what a mechanism protects, against whom, and how much.

Every mechanism and method returns one.  A :class:`PrivacyReport` collects the
guarantees of one run and composes those that protect the same unit by basic
sequential composition (ε and δ add up; Dwork & Roth, Thm. 3.16).  Guarantees
of *different* units (e.g. a node's features and its label) are reported side
by side, and additionally combined into a per-node total when both are local
guarantees held by the same node.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from privgraph.accounting.budget import Budget

RESTRICTED_NODE_PREFIX = "node (degree ≤ "  # restricted node-DP's unit: "node (degree ≤ D)" (Unit.restricted_node)


class Unit:
    """Names of privacy units (the neighbouring relation of the design notes)."""

    NODE_FEATURES = "node feature vector"
    NODE_LABEL = "node label"
    ADJACENCY_LIST = "adjacency list"
    PRIVATE_EDGE = "private edge"
    EDGE = "edge"  # of one relation of a heterogeneous graph: "edge of (src, rel, dst)"
    SENSITIVE_ATTRIBUTE = "sensitive attribute"
    NODE = "node (features and label)"
    # node-level DP (GAP-NDP, node-level DP-SGD): a node with its features, its label and all its
    # edges is added or removed; EDGE above is also edge-level DP's unit on a homogeneous graph
    NODE_WITH_EDGES = "node (features, label and edges)"

    @classmethod
    def known(cls) -> tuple[str, ...]:
        """Every unit privgraph names (an edge of one relation is ``"edge of (src, rel, dst)"``)."""
        return tuple(v for k, v in vars(cls).items() if k.isupper() and isinstance(v, str))

    @classmethod
    def is_known(cls, unit: str) -> bool:
        """Exactly a unit of :meth:`known`, or a well-formed ``"edge of (src, rel, dst)"`` (:func:`relation_of`)."""
        return unit in cls.known() or relation_of(unit) is not None or cls.restricted_degree(unit) is not None

    @staticmethod
    def restricted_node(max_degree: int) -> str:
        """Restricted node-DP's unit: a node added or removed between graphs whose degrees are all ≤ D (GAP-NDP's
        ``degree_cap=enforced``) — not node-DP on arbitrary graphs, so its own unit, never composed as a node's."""
        return f"{RESTRICTED_NODE_PREFIX}{int(max_degree)})"

    @staticmethod
    def restricted_degree(unit: str) -> int | None:
        """D of a restricted node unit ``"node (degree ≤ D)"``; None for any other unit."""
        if unit.startswith(RESTRICTED_NODE_PREFIX) and unit.endswith(")"):
            d = unit[len(RESTRICTED_NODE_PREFIX) : -1]
            if d.isdigit():
                return int(d)
        return None


_RELATION = re.compile(r"^edge of \(\s*(.+?)\s*,\s*(.+?)\s*,\s*(.+?)\s*\)$")


def relation_unit(edge_type: tuple[str, ...] | list[str]) -> str:
    """The unit of one edge of relation ``edge_type``: ``"edge of ('src', 'rel', 'dst')"`` (the methods' form)."""
    return f"{Unit.EDGE} of {tuple(str(t) for t in edge_type)}"


def relation_of(unit: str) -> tuple[str, str, str] | None:
    """The relation ``(src, rel, dst)`` a unit ``"edge of (src, rel, dst)"`` names (quoted or not), else None."""
    m = _RELATION.match(unit) if isinstance(unit, str) else None
    if m is None:
        return None
    names = tuple(t.strip().strip("'\"").strip() for t in m.groups())
    if not all(names) or any(c in n for n in names for c in "(),'\""):
        return None
    return names  # type: ignore[return-value]


def canonical_unit(unit: str) -> str:
    """``unit`` in the form the methods' reports name it (a relation unit as :func:`relation_unit`)."""
    rel = relation_of(unit)
    return unit if rel is None else relation_unit(rel)


# The units' hierarchy, in one table: a release protecting the unit on the left spends, on each unit on the
# right, what group privacy gives at the stated distance k (the number of neighbouring steps of the left
# unit's relation that change one right-hand unit): k·ε and δ·(1 + e^ε + … + e^{(k−1)ε}) (Dwork & Roth,
# Lemma 2.2 and its (ε, δ) form).  Node-level DP (GAP-NDP, node-dpsgd) adds or removes a node with all its
# data: changing one edge, one feature vector, one label, one adjacency bit or one sensitive value of a node
# is a removal and an addition, k = 2.  The per-node local unit (features and label, substituted) changes
# its features or its label in one step, k = 1.  Edge-level DP covers every edge, the private ones too.
# The other direction is not free: a release of a part (an edge, a feature vector) states nothing about
# the whole node (its other parts may be released in clear), so a ledger counts it as ε = ∞ on a parent
# unit its budget names explicitly (Ledger docstring).
UNIT_HIERARCHY: dict[str, dict[str, int]] = {
    Unit.NODE_WITH_EDGES: {
        Unit.NODE: 2,
        Unit.NODE_FEATURES: 2,
        Unit.NODE_LABEL: 2,
        Unit.ADJACENCY_LIST: 2,
        Unit.EDGE: 2,
        Unit.PRIVATE_EDGE: 2,
        Unit.SENSITIVE_ATTRIBUTE: 2,
    },
    Unit.NODE: {Unit.NODE_FEATURES: 1, Unit.NODE_LABEL: 1},
    Unit.EDGE: {Unit.PRIVATE_EDGE: 1},
}


# The units that are exactly the union of their parts at distance 1 (a release spending every part spends their
# basic composition on the unit): the per-node local unit is one node's features and its label.  No other unit
# is: the private edges are not every edge (EdgeRR writes the public ones in clear).
UNIT_PARTS: dict[str, tuple[str, ...]] = {Unit.NODE: (Unit.NODE_FEATURES, Unit.NODE_LABEL)}


def covered_units(unit: str) -> dict[str, int]:
    """The units a release of ``unit`` also spends on, with their group distance (:data:`UNIT_HIERARCHY`,
    followed transitively, the largest distance product kept)."""
    return dict(_covered(unit))


@functools.lru_cache(maxsize=256)
def _covered(unit: str) -> tuple[tuple[str, int], ...]:
    out: dict[str, int] = {}
    todo = [(unit, 1)]
    while todo:
        parent, k = todo.pop()
        for child, step in UNIT_HIERARCHY.get(parent, {}).items():
            if out.get(child, 0) < k * step:
                out[child] = k * step
                todo.append((child, k * step))
    return tuple(out.items())


def parent_units(unit: str) -> set[str]:
    """The units whose releases spend ``unit`` (:func:`covered_units` read the other way); a restricted node unit
    ``node (degree ≤ D)`` has the node as its parent: restricted node-DP says nothing of node-DP on arbitrary
    graphs, so a budget that names the node counts it as ε = ∞ there (never composed as a node's)."""
    if Unit.restricted_degree(unit) is not None:
        return {Unit.NODE_WITH_EDGES}
    return {parent for parent in UNIT_HIERARCHY if unit in covered_units(parent)}


def group_spend(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(ε, δ)-DP for one step gives (kε, δ·Σ_{j<k} e^{jε}) for k steps (group privacy)."""
    if k == 1 or not math.isfinite(epsilon):
        return k * epsilon, delta
    factor = sum(math.exp(j * epsilon) for j in range(k)) if k * epsilon < 700 else math.inf
    return k * epsilon, min(1.0, delta * factor) if delta > 0 else 0.0


class TrustModel:
    LOCAL = "local (untrusted server)"
    CENTRAL = "central (trusted curator)"
    NONE = "none (non-private)"


@dataclass(frozen=True)
class PrivacyGuarantee:
    """An (ε, δ) guarantee for one privacy unit under one trust model.

    ``epsilon == inf`` means no protection (non-private); ``epsilon == 0``
    means the output carries no information about the unit at all.
    """

    unit: str
    trust_model: str
    epsilon: float
    delta: float = 0.0
    mechanism: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not (self.epsilon >= 0):  # also rejects NaN
            raise ValueError(f"epsilon must be >= 0 (or inf), got {self.epsilon}")
        if not (0.0 <= self.delta <= 1.0):
            raise ValueError(f"delta must lie in [0, 1], got {self.delta}")
        object.__setattr__(self, "notes", tuple(self.notes))

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)

    def with_note(self, note: str) -> PrivacyGuarantee:
        return PrivacyGuarantee(
            self.unit, self.trust_model, self.epsilon, self.delta, self.mechanism, self.notes + (note,)
        )

    def repeated(self, times: int, note: str) -> PrivacyGuarantee:
        """``times`` releases of the same unit under this guarantee, each with its own randomness:
        (times·ε, times·δ) by basic composition (a selection among candidate releases), with ``note``."""
        spent = Budget(self.epsilon, self.delta).times(times)
        return PrivacyGuarantee(
            self.unit,
            self.trust_model,
            spent.epsilon,
            spent.delta,
            self.mechanism,
            self.notes + (note,),
        )

    def describe(self) -> str:
        if not self.is_private:
            return f"no protection of the {self.unit} ({self.mechanism or 'non-private'})"
        budget = f"{self.epsilon:g}" if self.delta == 0 else f"({self.epsilon:g}, {self.delta:g})"
        kind = "LDP" if self.trust_model == TrustModel.LOCAL else "DP"
        return f"{budget}-{kind} per {self.unit} [{self.mechanism}; {self.trust_model}]"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["epsilon"] = _json_float(self.epsilon)
        d["notes"] = list(self.notes)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PrivacyGuarantee:
        eps = d["epsilon"]
        return cls(
            unit=d["unit"],
            trust_model=d["trust_model"],
            epsilon=math.inf if eps is None or eps == "inf" else float(eps),
            delta=float(d.get("delta", 0.0)),
            mechanism=d.get("mechanism", ""),
            notes=tuple(d.get("notes", ())),
        )


def _json_float(x: float) -> float | str:
    return "inf" if math.isinf(x) else x


def unprotected(unit: str, mechanism: str, *notes: str, trust_model: str = TrustModel.NONE) -> PrivacyGuarantee:
    """The guarantee of a release that does not protect ``unit`` (ε = ∞)."""
    return PrivacyGuarantee(unit, trust_model, math.inf, 0.0, mechanism, notes)


NON_PRIVATE = unprotected(Unit.NODE_FEATURES, "raw features")


def compose(guarantees: Iterable[PrivacyGuarantee], unit: str | None = None) -> PrivacyGuarantee:
    """Basic sequential composition: ε and δ add up.

    All guarantees must share a trust model; ``unit`` names the composed unit
    (default: the common unit, which must then be unique).
    """
    gs = list(guarantees)
    if not gs:
        raise ValueError("nothing to compose")
    trust = {g.trust_model for g in gs}
    if len(trust) > 1:
        raise ValueError(f"cannot compose guarantees of different trust models: {sorted(trust)}")
    units = {g.unit for g in gs}
    if unit is None:
        if len(units) > 1:
            raise ValueError(f"guarantees protect different units {sorted(units)}; name the composed unit")
        unit = gs[0].unit
    eps = sum(g.epsilon for g in gs)
    delta = min(1.0, sum(g.delta for g in gs))
    mechanisms = " + ".join(g.mechanism for g in gs)
    notes = tuple(n for g in gs for n in g.notes) + ("basic sequential composition",)
    return PrivacyGuarantee(unit, trust.pop(), eps, delta, mechanisms, notes)


@dataclass
class PrivacyReport:
    """The guarantees of one run, and their composition per unit.

    ``per_node`` is the total a single node pays when several local
    guarantees (features, label) are all spent on data held by that node.
    """

    guarantees: list[PrivacyGuarantee] = field(default_factory=list)

    def add(self, g: PrivacyGuarantee) -> PrivacyReport:
        self.guarantees.append(g)
        return self

    def by_unit(self) -> dict[str, PrivacyGuarantee]:
        units: dict[str, list[PrivacyGuarantee]] = {}
        for g in self.guarantees:
            units.setdefault(g.unit, []).append(g)
        return {u: (gs[0] if len(gs) == 1 else compose(gs)) for u, gs in units.items()}

    @property
    def per_node(self) -> PrivacyGuarantee | None:
        local = [g for g in self.by_unit().values() if g.trust_model == TrustModel.LOCAL]
        node_units = {Unit.NODE_FEATURES, Unit.NODE_LABEL}
        local = [g for g in local if g.unit in node_units]
        if len(local) < 2:
            return None
        return compose(local, unit=Unit.NODE)

    def plain_summary(self) -> str:
        """One plain sentence for a data owner: what an attacker who sees the release can and
        cannot learn.  ε-DP bounds how much seeing the release can move any belief about one
        unit: the odds between two values of it change by at most e^ε (with δ: except with
        probability about δ)."""
        units = self.by_unit()
        protected = [g for g in units.values() if g.is_private]
        exposed = [g.unit for g in units.values() if not g.is_private]
        parts = []
        for g in protected:
            if g.epsilon == 0:
                parts.append(f"nothing about any {g.unit}")
                continue
            odds = math.exp(g.epsilon) if g.epsilon < 700 else math.inf  # e^ε overflows a float above ≈ 709.8
            factor = f"{odds:.3g}" if odds < 1e4 else f"{odds:.1e}" if math.isfinite(odds) else f"e^{g.epsilon:.4g}"
            weak = " (a weak bound)" if g.epsilon > 5 else ""
            slip = f", except with probability about {g.delta:g}" if g.delta > 0 else ""
            parts.append(
                f"about any one {g.unit}, no more than a factor {factor} change in the odds of any guess "
                f"(ε = {g.epsilon:g}){weak}{slip}"
            )
        sentence = ""
        if parts:
            sentence = (
                "Whatever else they know, an attacker who sees this release can learn " + "; and ".join(parts) + "."
            )
        if exposed:
            sentence += (" " if sentence else "") + (
                f"It does not protect the {', the '.join(exposed)}: an attacker "
                f"may learn {'it' if len(exposed) == 1 else 'them'}."
            )
        return sentence or "This release states no guarantee."

    def __str__(self) -> str:
        """``print(report)``: :meth:`lines`, one a line (each unit's guarantee, the per-node total, the notes)."""
        return "\n".join(self.lines())

    def lines(self) -> list[str]:
        out = [g.describe() for g in self.by_unit().values()]
        if self.per_node is not None:
            out.append("total per node: " + self.per_node.describe())
        notes = [n for g in self.guarantees for n in g.notes]
        out += [f"note: {n}" for n in dict.fromkeys(notes)]
        return out

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "guarantees": [g.to_dict() for g in self.guarantees],
            "by_unit": {u: g.to_dict() for u, g in self.by_unit().items()},
        }
        if self.per_node is not None:
            d["per_node"] = self.per_node.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PrivacyReport:
        return cls([PrivacyGuarantee.from_dict(g) for g in d.get("guarantees", [])])
