"""A data owner's ledger: every release of one dataset, its spend per privacy unit, and a budget.

Each release is accounted alone (its :class:`~privgraph.accounting.PrivacyReport`); a :class:`Ledger`
adds them up.  It is one JSON file per dataset holding, for every release, the method, its
parameters, the (ε, δ) it spent per unit with the mechanism event that produced it, the time, the file
written and the guarantee's description — never a statistic of the data (a count printed is a release
too), except the graph's node count, which the ledger treats as public (its fingerprint).

Fails closed.  A budget names only units privgraph knows (:class:`~privgraph.accounting.Unit`; anything
else is refused with the list).  A ledger is bound to one dataset: its name, and a public fingerprint of
the graph recorded by the first release (the node count; with ``content_hash=True`` also a SHA-256 of the
graph's tensors, which the owner chooses to record: it lets anyone holding a candidate graph confirm that
it is exactly this one).  A release is refused, before any noise, when the ledger has no dataset name or
the graph's fingerprint differs.  A damaged file (not JSON, not a ledger, missing ``entries``) is one
:class:`LedgerError` line.

Units form a hierarchy (:data:`~privgraph.accounting.guarantee.UNIT_HIERARCHY`): a node-level release
(unit ``"node (features, label and edges)"``) also spends, by group privacy at distance 2, the edge,
feature-vector, adjacency-list, label and sensitive-attribute budgets; a release of a part counts as
ε = ∞ on a parent unit that the budget names explicitly (``"*"`` does not name it).

Composition, per unit (:func:`compose`), over three groups whose totals add up (basic composition across
the groups, sound for any mix):

* **Gaussian releases with public parameters** — each spend carries the event its method declared before
  the noise, ``{"kind": "gaussian", "noise_multiplier": z, "count": k, "sampling_rate": q}`` (z = noise
  std over L2 sensitivity, from ε, δ and public parameters only), totalled at δ_G = Σ δ_i of the group.
  On the whole data (q = 1) they compose exactly: Gaussians of multipliers z_i are one Gaussian of
  μ = √(Σ k_i/z_i²) (μ-GDP, Dong, Roth & Su 2022), whose ε(δ_G) is exact (Balle & Wang 2018;
  :func:`~privgraph.accounting.rdp.gaussian_epsilon`, what dp-accounting's PLD accountant approaches).
  With a Poisson-subsampled one, their Rényi-DP curves add up (Mironov 2017, Prop. 1; Mironov, Talwar &
  Zhang 2019) and convert to ε (Canonne, Kamath & Steinke 2020), the computation of dp-accounting's
  ``RdpAccountant`` (:mod:`privgraph.accounting.rdp`).  The total is the smaller of that and basic
  composition.
* **Pure ε-DP releases** (δ = 0): basic composition (Σ ε_i, 0), or — with the ledger's ``advanced_delta``
  δ′ — advanced composition when it is smaller: ε = Σ ε_i·tanh(ε_i/2) + √(2 ln(1/δ′) Σ ε_i²) at δ = δ′
  (Kairouz, Oh & Viswanath 2015, Thm. 3.5; the heterogeneous form of Dwork, Rothblum & Vadhan 2010).
* **Everything else** (an (ε, δ) release without an event, a Gaussian whose parameters are not public, a
  spend the report raised above its declaration): basic sequential composition (Dwork & Roth, Thm. 3.16):
  ε and δ add up, δ capped at 1.

The RDP and advanced totals are those of the sequence of releases the ledger records, with the parameters
each was declared with, fixed in advance; basic composition also holds when each ε was chosen after seeing
earlier outputs (the RDP and advanced bounds then need their privacy-filter forms: Rogers et al. 2016;
Feldman & Zrnic 2021).  Every total is reported with the rule that gave it (:attr:`Total.composition`).

Order of events (:meth:`Ledger.spend`).  Before any noise is drawn the method's declared spend
(``method.planned_spend(ε, label_epsilon, data=data)``, with its events) is checked against the budget and
recorded as ``pending`` in one locked transaction, with the dataset's fingerprint; a release that would
exceed the budget is refused (:class:`BudgetExceeded`).  After the release the entry becomes ``done``
with the spend its report states; a release that raised becomes ``failed`` and stays counted (noise may
have been drawn), and a process killed in between leaves ``pending``, which is counted too.

Storage.  Writers take an exclusive ``fcntl.flock`` on ``PATH.lock`` around read–modify–write
(two processes never lose each other's records), and write a temporary file in the same folder,
``fsync`` it and ``os.replace`` it over the ledger (a process killed mid-write leaves the old file
whole).  Linux and macOS.
"""

from __future__ import annotations

import fcntl
import hashlib
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
from privgraph.accounting.guarantee import (
    UNIT_HIERARCHY,
    PrivacyGuarantee,
    PrivacyReport,
    Unit,
    _json_float,
    covered_units,
    group_spend,
    parent_units,
)

FORMAT = "privgraph-ledger/1"
ANY_UNIT = "*"  # a budget key that applies to every unit the budget does not name
BASIC = "basic sequential composition (ε and δ add up; Dwork & Roth, Thm. 3.16)"
COMPOSITION = BASIC  # the rule where nothing tighter applies
RDP = "Rényi DP of the Gaussian releases (dp-accounting's RdpAccountant computation)"
GDP = "exact composition of the Gaussian releases on the whole data (μ-GDP, the analytic Gaussian's ε(δ))"
ADVANCED = "advanced composition of the pure ε-DP releases at δ′ (Kairouz, Oh & Viswanath 2015, Thm. 3.5)"
PENDING, DONE, FAILED = "pending", "done", "failed"
GAUSSIAN = "gaussian"


class BudgetExceeded(ValueError):
    """A release would spend more than the ledger's budget of a unit (raised before any noise)."""


class LedgerError(ValueError):
    """The ledger cannot be used: a damaged file, an unknown unit, another dataset or graph (one line)."""


def gaussian_event(noise_multiplier: float, count: int = 1, sampling_rate: float = 1.0) -> dict[str, Any]:
    """The event of ``count`` Gaussian mechanisms of noise multiplier z = σ/Δ (L2 sensitivity Δ), each on a
    Poisson sample of rate q (1: the whole data): what :func:`compose` composes by RDP.  Every number must
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
    """``spends`` with what the unit hierarchy adds: on every unit a spend's unit covers, its group-privacy
    spend (a Gaussian event on the whole data keeps its event with z/k: k neighbouring steps move the output
    by at most k sensitivities); on every parent unit in ``named`` that the release does not spend, the basic
    composition of its parts when the release spends every part at distance 1 (features and label make the
    per-node local unit), else ε = ∞ (a part's release says nothing about the whole)."""
    spends = list(spends)
    out: dict[str, list[Spend]] = {}
    for s in spends:
        out.setdefault(s.unit, []).append(s)
        for unit, k in covered_units(s.unit).items():
            eps, delta = group_spend(s.epsilon, s.delta, k)
            event = s.event
            if event is not None and k > 1:
                event = (
                    None if event["sampling_rate"] < 1 else {**event, "noise_multiplier": event["noise_multiplier"] / k}
                )
            out.setdefault(unit, []).append(Spend(unit, eps, delta, event))
    named = set(named)
    own = {s.unit: s for s in spends}
    for s in spends:
        for parent in parent_units(s.unit) & named:
            if parent in out:
                continue
            parts = UNIT_HIERARCHY.get(parent, {})
            if parts and all(k == 1 and unit in own for unit, k in parts.items()):
                eps, delta = sum(own[u].epsilon for u in parts), min(1.0, sum(own[u].delta for u in parts))
                out[parent] = [Spend(parent, eps, delta)]
            else:
                out[parent] = [Spend(parent, math.inf)]
    return [s for ss in out.values() for s in ss]


def advanced_epsilon(epsilons: Iterable[float], delta_prime: float) -> float:
    """ε of the adaptive composition of pure ε_i-DP mechanisms at δ′ (Kairouz, Oh & Viswanath 2015, Thm. 3.5):
    Σ ε_i·tanh(ε_i/2) + √(2 ln(1/δ′)·Σ ε_i²)."""
    eps = [float(e) for e in epsilons]
    if not 0 < delta_prime < 1:
        raise ValueError(f"advanced composition needs δ′ in (0, 1), got {delta_prime}")
    return sum(e * math.tanh(e / 2) for e in eps) + math.sqrt(2 * math.log(1 / delta_prime) * sum(e * e for e in eps))


def compose(spends: Iterable[Spend], advanced_delta: float | None = None) -> tuple[float, float, str]:
    """(ε, δ, rule) of one unit's spends (module docstring): the Gaussian releases by RDP, the pure ones by
    advanced composition at ``advanced_delta`` when smaller, the rest by basic composition; the groups add up."""
    spends = list(spends)
    if any(not math.isfinite(s.epsilon) for s in spends):
        return math.inf, min(1.0, sum(s.delta for s in spends)), "not protected (a release with ε = ∞)"
    kinds = [
        "gaussian" if s.event is not None and s.epsilon > 0 else "pure" if s.delta == 0 else "other" for s in spends
    ]
    gaussian = [s for s, k in zip(spends, kinds) if k == "gaussian"]
    pure = [s for s, k in zip(spends, kinds) if k == "pure" and s.epsilon > 0]
    other = [s for s, k in zip(spends, kinds) if k == "other"]
    eps = sum(s.epsilon for s in other)
    delta = sum(s.delta for s in other)
    rules = [f"basic over {len(other)}"] if other else []
    if gaussian:
        g_eps, g_delta, rule = _compose_gaussian(gaussian)
        rules.append(rule)
        eps, delta = eps + g_eps, delta + g_delta
    if pure:
        p_eps, p_delta = sum(s.epsilon for s in pure), 0.0
        rule = f"basic over {len(pure)} pure"
        if advanced_delta is not None and len(pure) > 1:
            adv = advanced_epsilon([s.epsilon for s in pure], advanced_delta)
            if adv < p_eps:
                p_eps, p_delta, rule = adv, advanced_delta, f"advanced at δ′ = {advanced_delta:g} over {len(pure)} pure"
        rules.append(rule)
        eps, delta = eps + p_eps, delta + p_delta
    return eps, min(1.0, delta), " + ".join(rules) if rules else "nothing spent"


def _compose_gaussian(spends: list[Spend]) -> tuple[float, float, str]:
    """(ε, δ_G, rule) of Gaussian releases at δ_G = Σ δ_i: on the whole data (q = 1), the exact composition
    (μ-GDP, μ = √(Σ k_i/z_i²): :func:`~privgraph.accounting.rdp.gaussian_epsilon`); with a subsampled one,
    RDP; basic composition when that is smaller."""
    from privgraph.accounting.rdp import composed_epsilon, gaussian_epsilon  # NumPy and SciPy, only here

    basic, g_delta = sum(s.epsilon for s in spends), min(1.0, sum(s.delta for s in spends))
    events: list[dict[str, Any]] = [s.event for s in spends if s.event is not None]
    n = len(spends)
    if not 0 < g_delta < 1:
        return basic, g_delta, f"basic over {n} Gaussian"
    if all(e["sampling_rate"] == 1 for e in events):
        mu = math.sqrt(sum(e["count"] / e["noise_multiplier"] ** 2 for e in events))
        tight, rule = gaussian_epsilon(mu, g_delta), f"exact Gaussian composition (μ-GDP) over {n} Gaussian"
    else:
        parts = tuple((e["noise_multiplier"], e["sampling_rate"], e["count"]) for e in events)
        tight, rule = composed_epsilon(parts, g_delta), f"RDP over {n} Gaussian"
    if tight < basic:
        return tight, g_delta, rule
    return basic, g_delta, f"basic over {n} Gaussian (no tighter)"


@dataclass(frozen=True)
class Total:
    """A unit's spend over the ledger's releases (by :attr:`composition`, the rule :func:`compose` used),
    its budget and what remains."""

    unit: str
    epsilon: float
    delta: float
    releases: int
    budget: Budget | None
    composition: str = BASIC

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
        name), each with the event the method declared for its unit unless the report's (ε, δ) exceeds the
        declaration; the planned spend while pending or after a failure (noise may have been drawn)."""
        if self.status != DONE or self.spent is None:
            return self.planned
        planned = {s.unit: s for s in self.planned}
        out = []
        for s in self.spent:
            p = planned.get(s.unit)
            event = p.event if p is not None and not _exceeds(s, p) else None
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


def content_digest(data: Any, fields: Iterable[str] | None = None, key: bytes | None = None) -> str:
    """A hash of the data's content: for every node and edge store (in order of its key), the values of its
    tensors (``fields`` only, when given) with their names and shapes, floating values as float64 and the
    others as int64, so a copy, a reordered or extra attribute, or another dtype of the same values hashes
    the same; one changed value does not.  Keyed (BLAKE2b) with ``key``, else SHA-256."""
    import torch

    h = hashlib.blake2b(key=key, digest_size=32) if key else hashlib.sha256()
    wanted = None if fields is None else set(fields)
    stores = getattr(data, "stores", [data])
    for store in sorted(stores, key=lambda s: repr(getattr(s, "_key", None))):
        h.update(repr(getattr(store, "_key", None)).encode())
        for name in sorted(store.keys()):
            value = store[name]
            if not torch.is_tensor(value) or (wanted is not None and name not in wanted):
                continue
            t = value.detach().cpu().reshape(-1)
            t = t.to(torch.float64) if t.is_floating_point() else t.to(torch.int64)
            h.update(repr((name, tuple(value.shape))).encode())
            h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()


# the fields whose values are the graph's content for a ledger's content hash (not the split, not annotations)
CONTENT_FIELDS = ("x", "edge_index", "y", "sens", "edge_attr", "edge_weight")


def fingerprint_of(data: Any, content_hash: bool = False) -> dict[str, Any]:
    """The public fingerprint a ledger binds to: the node count (treated as public), and with ``content_hash``
    the SHA-256 of the graph's content (:data:`CONTENT_FIELDS` by :func:`content_digest`: the owner's choice
    to record it)."""
    out: dict[str, Any] = {"num_nodes": int(data.num_nodes)}
    if content_hash:
        out["content_sha256"] = content_digest(data, CONTENT_FIELDS)
    return out


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
        self.file = None if file is None else str(file)
        self._budget = None if budget is None else _parse_budget(budget)
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
        return dict(self._budget or {}) if state is None else _parse_budget(state.get("budget") or {})

    @property
    def entries(self) -> list[Entry]:
        state = self._read()
        return [] if state is None else [Entry.from_dict(e) for e in state["entries"]]

    def totals(self) -> dict[str, Total]:
        """Every unit's total (each unit spent or budgeted; ``"*"`` is not a unit), by :func:`compose`."""
        state = self._state()
        return _totals(
            [Entry.from_dict(e) for e in state["entries"]],
            _parse_budget(state.get("budget") or {}),
            state.get("advanced_delta"),
        )

    def check(self, planned: Iterable[Spend]) -> None:
        """Raise :class:`BudgetExceeded` if ``planned`` on top of the ledger's spend exceeds a budget."""
        state = self._state()
        _check(
            [Entry.from_dict(e) for e in state["entries"]],
            _parse_budget(state.get("budget") or {}),
            list(planned),
            state.get("advanced_delta"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The ledger as JSON: the dataset and its fingerprint, the budget, every release and the totals per
        unit with the rule of each."""
        return {
            "format": FORMAT,
            "path": str(self.path),
            "dataset": self.dataset,
            "fingerprint": self.fingerprint,
            "budget": _budget_json(self.budget),
            "advanced_delta": self.advanced_delta,
            "composition": "per unit (totals' composition); " + BASIC + " where nothing tighter applies",
            "entries": [e.to_dict() for e in self.entries],
            "totals": [t.to_dict() for t in self.totals().values()],
        }

    # ---- writing

    def set_budget(self, budget: Mapping[str, float | tuple[float, float] | Budget]) -> None:
        """Replace the ledger's budget (a deliberate change; the constructor refuses a different one)."""
        self._budget = _parse_budget(budget)
        with self._transaction() as state:
            state["budget"] = _budget_json(self._budget)

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
        (recorded by the first release).  Returns the entry's id; :class:`BudgetExceeded` if it does not fit,
        :class:`LedgerError` for another graph or a ledger without a dataset name."""
        planned = list(planned)
        entry = Entry(uuid.uuid4().hex, method, PENDING, planned, time.time(), dict(params or {}), file=self.file)
        with self._transaction() as state:
            self._bind(state, data)
            if data is not None and state.get("fingerprint") is None:
                state["fingerprint"] = fingerprint_of(data, self._content_hash or bool(state.get("content_hash")))
            _check(
                [Entry.from_dict(e) for e in state["entries"]],
                _parse_budget(state["budget"]),
                planned,
                state.get("advanced_delta"),
            )
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
        receipt = _Receipt(self, self.reserve(planned, name, _jsonable(dict(params or {})), data))
        try:
            yield receipt
        except BaseException as err:
            if not receipt.finished:
                self.fail(receipt.id, f"{type(err).__name__}: the release did not finish (counted as planned)")
            raise

    # ---- internals

    def _state(self) -> dict[str, Any]:
        return self._read() or {
            "dataset": self._dataset,
            "budget": _budget_json(self._budget or {}),
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
        seen = fingerprint_of(data, "content_sha256" in held)
        if seen != held:
            what = "node count" if seen["num_nodes"] != held["num_nodes"] else "content hash"
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
        stored = _parse_budget(state.get("budget") or {})
        if budget and self._budget is not None and stored and stored != self._budget:
            raise LedgerError(
                f"the ledger {self.path} holds the budget {_budget_text(stored)}, not {_budget_text(self._budget)}: "
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
        """The file's state, or None when there is no file; a damaged one is one :class:`LedgerError` line."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as err:
            raise LedgerError(f"cannot read the ledger {self.path}: {err}") from None
        try:
            state = json.loads(text)
        except json.JSONDecodeError as err:
            raise LedgerError(f"{self.path} is not a privgraph ledger: not JSON ({err})") from None
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            found = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise LedgerError(f"{self.path} is not a privgraph ledger (format {found!r}, expected {FORMAT!r})")
        if not isinstance(state.get("entries"), list):
            raise LedgerError(f"the ledger {self.path} is damaged: it has no list of entries")
        if not isinstance(state.get("budget") or {}, dict):
            raise LedgerError(f"the ledger {self.path} is damaged: its budget is not a table of units")
        try:
            for raw in state["entries"]:
                Entry.from_dict(raw)
            _parse_budget(state.get("budget") or {})
        except LedgerError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise LedgerError(
                f"the ledger {self.path} is damaged: an entry or the budget is malformed ({err!r})"
            ) from None
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
                if state.get("advanced_delta") is None and self._advanced_delta is not None:
                    state["advanced_delta"] = self._advanced_delta
                if self._content_hash and state.get("fingerprint") is None:
                    state["content_hash"] = True  # the first release records the content hash too
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


def _named(budget: Mapping[str, Budget]) -> set[str]:
    return {u for u in budget if u != ANY_UNIT}


def _spent_by_unit(entries: list[Entry], budget: Mapping[str, Budget]) -> dict[str, list[tuple[int, Spend]]]:
    spent: dict[str, list[tuple[int, Spend]]] = {u: [] for u in _named(budget)}
    for i, entry in enumerate(entries):
        for s in expand(entry.counted, _named(budget)):
            spent.setdefault(s.unit, []).append((i, s))
    return spent


def _totals(entries: list[Entry], budget: dict[str, Budget], advanced_delta: float | None = None) -> dict[str, Total]:
    """Per unit (its own releases and those the hierarchy adds), the total by :func:`compose`."""
    out = {}
    for unit, pairs in _spent_by_unit(entries, budget).items():
        eps, delta, rule = compose([s for _, s in pairs], advanced_delta)
        out[unit] = Total(unit, eps, delta, len({i for i, _ in pairs}), budget.get(unit, budget.get(ANY_UNIT)), rule)
    return out


def _check(
    entries: list[Entry], budget: dict[str, Budget], planned: list[Spend], advanced_delta: float | None = None
) -> None:
    """Refuse ``planned`` when a unit's total after it (hierarchy included) would exceed that unit's budget."""
    before = _spent_by_unit(entries, budget)
    new: dict[str, list[Spend]] = {}
    for s in expand(planned, _named(budget)):
        new.setdefault(s.unit, []).append(s)
    over = []
    for unit, adds in new.items():
        limit = budget.get(unit, budget.get(ANY_UNIT))
        if limit is None:
            continue
        old = [s for _, s in before.get(unit, [])]
        b_eps, b_delta, _ = compose(old, advanced_delta) if old else (0.0, 0.0, "")
        eps, delta, rule = compose(old + adds, advanced_delta)
        tol = 1e-12 * max(1.0, limit.epsilon)  # ten releases at ε = 0.1 fit a budget of 1
        if eps > limit.epsilon + tol or (limit.delta < 1.0 and delta > limit.delta + 1e-15):
            this = _compose_text(adds)
            allowed = f"ε = {limit.epsilon:g}" + (f", δ = {limit.delta:g}" if limit.delta < 1 else "")
            over.append(
                f"{unit}: spent ({b_eps:g}, {b_delta:g}), this release {this}, total ({eps:g}, {delta:g}) by "
                f"{rule}, budget {allowed}"
            )
    if over:
        raise BudgetExceeded(
            "the release would exceed the ledger's budget (refused before any noise): " + "; ".join(over)
        )


def _compose_text(spends: list[Spend]) -> str:
    eps, delta = sum(s.epsilon for s in spends), min(1.0, sum(s.delta for s in spends))
    return f"({eps:g}, {delta:g})"


def _exceeds(spent: Spend, planned: Spend) -> bool:
    return spent.epsilon > planned.epsilon * (1 + 1e-9) or spent.delta > planned.delta * (1 + 1e-9)


def _parse_budget(budget: Mapping[str, Any]) -> dict[str, Budget]:
    """A budget's units checked (known units, or ``"*"``) and values read: ε, (ε, δ) or a Budget."""
    out = {}
    for unit, value in budget.items():
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


__all__ = [
    "ADVANCED",
    "ANY_UNIT",
    "BASIC",
    "COMPOSITION",
    "GDP",
    "RDP",
    "BudgetExceeded",
    "Entry",
    "Ledger",
    "LedgerError",
    "Spend",
    "Total",
    "advanced_epsilon",
    "compose",
    "content_digest",
    "expand",
    "fingerprint_of",
    "gaussian_event",
    "spends_of",
]
