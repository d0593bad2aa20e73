"""The registry of audit definitions: a method's function ``(method, AuditInput) → [Neighbours]``, chosen by
:func:`definition` (an override by name, :data:`AUDITS`; else by ``audit_kind`` or ``unit``, :data:`KINDS`),
and the helpers every definition shares (the release through :func:`privgraph.api.release_with`, the
whole-release row, a paper's nominal claim)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from torch_geometric.data import Data, HeteroData

from privgraph.accounting import PrivacyGuarantee
from privgraph.audit.neighbours import Neighbours, whole_release
from privgraph.mechanisms import RandomSource
from privgraph.methods import Method

Definition = Callable[[Method, "AuditInput"], list[Neighbours]]
AUDITS: dict[str, Definition] = {}  # overrides by method name (a special method)
KINDS: dict[str, Definition] = {}  # by Method.audit_kind, or by Method.unit (a Unit)


def _register(table: dict[str, Definition], keys: tuple[str, ...], what: str) -> Callable[[Definition], Definition]:
    def wrap(fn: Definition) -> Definition:
        for key in keys:
            if key in table:
                raise TypeError(f"{what} {key!r} has two audit definitions")
            table[key] = fn
        return fn

    return wrap


def audits(*names: str) -> Callable[[Definition], Definition]:
    """Register ``fn`` as the audit definition of the methods ``names`` (an override of their unit's)."""
    return _register(AUDITS, names, "method")


def audits_kind(*kinds: str) -> Callable[[Definition], Definition]:
    """Register ``fn`` as the audit definition of every method whose ``audit_kind`` (or, without one,
    whose ``unit``) is one of ``kinds``."""
    return _register(KINDS, kinds, "audit kind")


@dataclass
class AuditInput:
    """The graph the neighbouring inputs are built on, and how the method is released."""

    data: Data | HeteroData
    epsilon: float | None
    label_epsilon: float | None = None
    seed: int = 0


def release(method: Method, inp: AuditInput, data: Any, rng: RandomSource, **extra: Any) -> Any:
    from privgraph.api import release_with

    return release_with(method, data, inp.epsilon, rng=rng, **extra)


def homogeneous(method: Method, data: Any) -> Data:
    if not isinstance(data, Data):
        raise TypeError(f"{method.name} is audited on a torch_geometric.data.Data, got {type(data).__name__}")
    return data


def whole_release_row(
    own: Neighbours,
    test: str,
    observe: Callable[[Any], np.ndarray] | None = None,
    label: str | None = None,
    **changes: Any,
) -> Neighbours:
    """A second row on ``own``'s releases (the same ``run``: the same inputs, the same releases) that observes
    the whole release (default :func:`~privgraph.audit.neighbours.whole_release` of ``rel.data``), scored by a
    logistic regression fitted on the selection half; ``changes`` replace other fields (unit, claim, …)."""
    return replace(
        own,
        label=label or own.label.replace(own.unit, f"{own.unit}, whole release", 1),
        test=test,
        observe=observe or (lambda rel: whole_release(rel.data)),
        score=None,
        notes=list(changes.pop("notes", own.notes)),
        **changes,
    )


WHOLE_RELEASE_TEST = (
    "logistic regression on the whole release (each node's row sums of every released field, its degrees)"
)


def nominal_claim(claimed: PrivacyGuarantee) -> Callable[[Any], PrivacyGuarantee]:
    """A row's claim fixed to ``claimed`` — the (ε, δ) a paper claims for an opt-in mode whose own
    release states a larger ε (or none) — instead of the release's stated guarantee."""
    return lambda rel: claimed


def definition(method: str | Method | type[Method]) -> Definition:
    """The audit definition of ``method`` (a registered name, a method or its class): the override of its
    name, else that of its ``audit_kind``, else that of its ``unit`` (a clear error when it has none)."""
    if isinstance(method, str):
        from privgraph.methods import METHODS

        if method not in METHODS:
            raise ValueError(f"method {method!r} has no audit definition (privgraph.audit.definitions)")
        method = METHODS[method]
    cls = method if isinstance(method, type) else type(method)
    if cls.name in AUDITS:
        return AUDITS[cls.name]
    if cls.audit_kind is not None:
        if cls.audit_kind not in KINDS:
            raise ValueError(f"method {cls.name!r}: no audit definition of kind {cls.audit_kind!r}")
        return KINDS[cls.audit_kind]
    if not cls.heterogeneous and cls.unit in KINDS:
        return KINDS[cls.unit]
    raise ValueError(f"method {cls.name!r} has no audit definition (privgraph.audit.definitions)")
