"""Restricted node-DP's unit "node (degree ≤ D)" (GAP-NDP degree_cap=enforced, node-dpsgd): a unit
privgraph knows, never taken for a node's — a budget naming the node counts it as ε = ∞ there."""

from __future__ import annotations

import math

import pytest

from privgraph.accounting import BudgetExceeded, Ledger, Spend, Unit
from privgraph.accounting.guarantee import covered_units, parent_units
from privgraph.accounting.ledger.spend import expand
from privgraph.methods import get_method


def test_the_restricted_unit_is_known_and_names_its_cap():
    unit = Unit.restricted_node(10)
    assert unit == "node (degree ≤ 10)" and Unit.is_known(unit) and Unit.restricted_degree(unit) == 10
    assert unit not in Unit.known() and not Unit.is_known("node (degree ≤ ten)")
    assert Unit.restricted_degree(Unit.NODE_WITH_EDGES) is None
    assert covered_units(unit) == {} and parent_units(unit) == {Unit.NODE_WITH_EDGES}


def test_a_node_budget_never_composes_a_restricted_spend_as_a_node():
    spend = Spend(Unit.restricted_node(10), 1.0, 1e-5)
    by_unit = {s.unit: s for s in expand([spend], named={Unit.NODE_WITH_EDGES})}
    assert by_unit[spend.unit].epsilon == 1.0 and math.isinf(by_unit[Unit.NODE_WITH_EDGES].epsilon)
    assert Unit.NODE_WITH_EDGES not in {s.unit for s in expand([spend])}  # not named: recorded on its own unit


def test_ledger_refuses_a_restricted_release_under_a_node_budget(tmp_path):
    method = get_method("gap-ndp", degree_cap="enforced", max_degree=10, num_train=100)
    planned = method.planned_spend(1.0)
    assert [s.unit for s in planned] == ["node (degree ≤ 10)"]
    assert [s.unit for s in get_method("gap-ndp", num_train=100).planned_spend(1.0)] == [Unit.NODE_WITH_EDGES]
    book = Ledger(tmp_path / "l.json", {Unit.NODE_WITH_EDGES: 5.0}, dataset="mine")
    with pytest.raises(BudgetExceeded):
        book.check(planned)
    book.check(get_method("gap-ndp", num_train=100).planned_spend(1.0))  # node-DP on every graph: within it
    Ledger(tmp_path / "m.json", {Unit.restricted_node(10): 5.0}, dataset="mine").check(planned)
