"""The declared rules of the methods' parameters, checked in the same words by ``Params`` and by the command line
before torch is imported (from the catalogue's copy).  This module imports nothing heavy.

A parameter declares (:func:`privgraph.methods.base.param`) its ``choices`` (a fixed set of values) and its
``bound`` (a range, written as text: ``">= 0"``, ``"> 0"``, ``"in (0, 1)"``, ``"in [0, 1)"``…); a ``Params``
class declares its ``rules``: the functions of this module (registered by :func:`rule`) that check several
parameters together, each called with the parameters named by its arguments.  :func:`check_params` applies
all three; :meth:`~privgraph.methods.base.MethodParams.validate` calls it on the built values and
:mod:`privgraph.cli.checks` on the catalogue's (``choices``, ``bounds``, ``rules``: :mod:`privgraph.catalogue`)
with the ``--param`` values over the defaults.  What a class's own ``validate`` checks beyond these is checked
only when the method's module is imported (after torch).
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from privgraph.accounting.validation import check_epsilon
from privgraph.input_rules import check_choice

_BOUND = re.compile(
    r"^(?:(?P<op>>=|>|<=|<) *(?P<x>[-+0-9.e]+)"
    r"|in *(?P<lo_b>[\[(]) *(?P<lo>[-+0-9.e]+) *, *(?P<hi>[-+0-9.e]+|inf) *(?P<hi_b>[\])]))$"
)


def _parse_bound(bound: str) -> tuple[float, float, bool, bool]:
    """``bound`` as (low, high, low included, high included); ``ValueError`` on a form not listed above."""
    m = _BOUND.match(bound.strip())
    if m is None:
        raise ValueError(f"a parameter's bound is written '>= 0', '> 0', 'in (0, 1)' or 'in [0, 1)', got {bound!r}")
    if m["op"] is not None:
        x = float(m["x"])
        return {
            ">=": (x, math.inf, True, False),
            ">": (x, math.inf, False, False),
            "<=": (-math.inf, x, False, True),
            "<": (-math.inf, x, False, False),
        }[m["op"]]
    return float(m["lo"]), float(m["hi"]), m["lo_b"] == "[", m["hi_b"] == "]"


def check_bound(name: str, value: Any, bound: str) -> None:
    """``value`` (a number; None: an optional parameter left out) within ``bound``: ``ValueError`` otherwise."""
    if value is None:
        return
    low, high, low_in, high_in = _parse_bound(bound)
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    inside = number and (value >= low if low_in else value > low) and (value <= high if high_in else value < high)
    if not inside:  # NaN is inside no bound
        text = bound.strip()
        raise ValueError(f"{name} must {'lie ' if text.startswith('in') else 'be '}{text}, got {value!r}")


RULES: dict[str, Callable[..., None]] = {}  # the cross-parameter rules, by name (the catalogue's ``rules``)


def rule(fn: Callable[..., None]) -> Callable[..., None]:
    """Register ``fn`` (its arguments: parameter names; raises ``ValueError`` with one line) as a rule."""
    RULES[fn.__name__] = fn
    return fn


def apply_rule(name: str, values: Mapping[str, Any]) -> None:
    """The rule ``name`` on ``values`` (every parameter, the defaults included; an argument the method has no
    parameter for keeps the rule's default)."""
    fn = RULES[name]
    fn(**{arg: values[arg] for arg in inspect.signature(fn).parameters if arg in values})


def check_params(
    values: Mapping[str, Any],
    choices: Mapping[str, Any],
    bounds: Mapping[str, str],
    rules: list[str] | tuple[str, ...] = (),
) -> None:
    """Every parameter of ``values`` against its ``choices`` and ``bounds`` (in the order of ``values``),
    then the ``rules``: ``ValueError`` with the first violation's line."""
    for name, value in values.items():
        if name in choices:
            check_choice(name, value, choices[name])
        if name in bounds:
            check_bound(name, value, bounds[name])
    for name in rules:
        apply_rule(name, values)


# ----------------------------------------------------------------------------------- the rules


@rule
def delta_of_gaussian(mechanism: str, delta: float | None) -> None:
    """LPGNN's ``delta`` is the Gaussian mechanism's δ: the other feature mechanisms have none."""
    if delta is not None and mechanism != "gaussian":
        raise ValueError(f"delta is the Gaussian mechanism's δ; the {mechanism} mechanism has none")


@rule
def split_epsilons(epsilon_f: float | None, epsilon_e: float | None) -> None:
    """HeteroRR's own budgets ε_f and ε_e, where given: each an ε (:func:`~privgraph.accounting.check_epsilon`)."""
    for name, value in (("epsilon_f", epsilon_f), ("epsilon_e", epsilon_e)):
        if value is not None:
            check_epsilon(value, name)


@rule
def no_batch_norm(batch_norm: bool) -> None:
    """GAP-NDP trains by DP-SGD (per-example gradients): no batch normalisation."""
    if batch_norm:
        raise ValueError("batch normalisation mixes the examples of a batch: not under DP-SGD")


@rule
def whole_num_train(num_train: int | None) -> None:
    """``num_train``: a public number of training nodes (GAP-NDP, node-dpsgd)."""
    if num_train is not None and (isinstance(num_train, bool) or not isinstance(num_train, int) or num_train < 1):
        raise ValueError(
            f"num_train must be a whole number >= 1 (a public number of training nodes), got {num_train!r}"
        )


@rule
def over_bound_enforced(degree_cap: str, over_bound: str) -> None:
    """GAP-NDP: ``over_bound`` applies to the enforced cap only (the soft cap refuses nothing)."""
    if degree_cap != "enforced" and over_bound != "refuse":
        raise ValueError("over_bound applies with degree_cap=enforced only (degree_cap=soft refuses no graph)")


@rule
def no_hops(hops: int) -> None:
    """mlp-ndp: features only (K = 0)."""
    if hops != 0:
        raise ValueError(f"mlp-ndp reads no edge: hops must be 0, got {hops} (gap-ndp aggregates)")


@rule
def test_delta_below(delta: float | None, test_delta: float | None) -> None:
    """GAP-NDP: the PTR test's δ_t below the whole δ (0 < δ_t < min(½, δ))."""
    if delta is not None and test_delta is not None and not test_delta < delta:
        raise ValueError(f"test_delta must be below delta (δ_t < δ), got {test_delta} >= {delta}")


HETEDP_FEATURE_SHARE = 0.5  # HeteDP's default ε_f/ε (its Params field's default, read by feature_share_unused)


@rule
def feature_share_unused(features: str, feature_share: float) -> None:
    """HeteDP with ``features='none'`` spends all of ε on DP-SGD: a ``feature_share`` other than its default
    would be ignored, so it is refused."""
    if features == "none" and feature_share != HETEDP_FEATURE_SHARE:
        raise ValueError(
            "features='none' spends all of ε on DP-SGD (ε_s = ε): feature_share does not apply, leave it out"
        )


@rule
def feature_options(calibration: str, feature_dim: int | None, features: str = "noisy") -> None:
    """HeteDP's feature-release options that exclude each other: a projection (``feature_dim``) only with the
    clipped calibration, and neither with ``features="none"`` (no feature is read)."""
    if features == "none" and (feature_dim is not None or calibration != "clipped"):
        raise ValueError("features='none' reads no feature: feature_dim and calibration do not apply")
    if feature_dim is not None and calibration == "paper":
        raise ValueError(
            "feature_dim (a projection before clipping) applies to the clipped, DP calibration, not "
            "to calibration='paper'"
        )


@rule
def authors_inputs_mode(nc_inputs: str, topology: str, features: str) -> None:
    """HeteDP's ``nc_inputs='authors-han…'`` reads the whole graph and the features: message-passing mode
    with noisy features only."""
    if nc_inputs != "release" and (topology != "message-passing" or features != "noisy"):
        raise ValueError(
            "nc_inputs='authors-han…' computes the inputs from the whole graph, the protected "
            "relation included (its metapaths), and from the features: it applies with "
            "topology='message-passing' (the authors' mode, whose ε already holds the graph fixed) "
            "and features='noisy' only"
        )
