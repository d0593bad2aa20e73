"""The ledger is a privacy filter (each release chosen after seeing the last): on adaptive sequences its total
is never below dp-accounting's for the same sequence fixed in advance, and it refuses the release that would
take a unit over its budget, before any noise."""

from __future__ import annotations

import math
import random
import re

import dp_accounting
import pytest
from typer.testing import CliRunner

from privgraph.accounting import BudgetExceeded, Ledger, Spend, Unit, gaussian_event
from privgraph.accounting.ledger.filters import BASIC_FILTER, RENYI_FILTER, filter_fits, filter_total, renyi_epsilon
from privgraph.accounting.rdp import RDP_ORDERS, composed_epsilon
from privgraph.cli import app


def _dp_event(spend: Spend) -> dp_accounting.DpEvent:
    if spend.event is None:  # pure ε-DP: the Laplace mechanism of that ε
        return dp_accounting.LaplaceDpEvent(1.0 / spend.epsilon)
    e = spend.event
    one: dp_accounting.DpEvent = dp_accounting.GaussianDpEvent(e["noise_multiplier"])
    if e["sampling_rate"] < 1:
        one = dp_accounting.PoissonSampledDpEvent(e["sampling_rate"], one)
    return dp_accounting.SelfComposedDpEvent(one, e["count"])


def _rdp(spends: list[Spend], delta: float) -> float:
    accountant = dp_accounting.rdp.RdpAccountant(list(RDP_ORDERS))
    accountant.compose(dp_accounting.ComposedDpEvent([_dp_event(s) for s in spends]))
    return accountant.get_epsilon(delta)


def _analyst(rng: random.Random, last: float) -> Spend:
    """The next release, chosen after seeing the last output (``last``): its kind and noise depend on it."""
    pick = rng.random() + 0.3 * math.tanh(last)
    if pick < 0.35:
        return Spend(Unit.EDGE, 0.0, 1e-7, gaussian_event(rng.uniform(4.0, 8.0), count=rng.randint(1, 4)))
    if pick < 0.8:
        z, q, k = rng.uniform(1.0, 2.0), rng.choice([0.005, 0.01]), rng.randint(20, 100)
        return Spend(Unit.EDGE, 0.0, 1e-7, gaussian_event(z, count=k, sampling_rate=q))
    return Spend(Unit.EDGE, rng.uniform(0.05, 0.3))  # pure


@pytest.mark.parametrize("seed", [0, 2])
def test_adaptive_sequences_never_total_below_dp_accounting_and_stop_at_the_budget(tmp_path, seed):
    """The analyst's choices depend on simulated outputs; each accepted step's filter total is at least
    dp-accounting's RDP (the sequence fixed in advance, at the filter's δ), and the release that does not fit is
    refused, with nothing recorded."""
    budget = (3.0, 1e-5)
    book = Ledger(tmp_path / "f.json", {Unit.EDGE: budget}, dataset="mine")
    rng, accepted, last, rules = random.Random(seed), [], 0.0, set()
    accountant = dp_accounting.rdp.RdpAccountant(list(RDP_ORDERS))  # the fixed sequence, composed as it grows
    for _ in range(200):
        spend = _analyst(rng, last)
        if spend.event:  # its declared ε: the release's own (ε, δ) (the RDP accountant's, at its δ)
            e = spend.event
            eps = composed_epsilon(((e["noise_multiplier"], e["sampling_rate"], e["count"]),), spend.delta)
            spend = Spend(spend.unit, eps, spend.delta, spend.event)
        try:
            book.reserve([spend], "m")
        except BudgetExceeded as err:
            assert "edge" in str(err) and len(book.entries) == len(accepted)
            assert not filter_fits([*accepted, spend], book.budget[Unit.EDGE])
            eps_after, _, _ = filter_total([*accepted, spend], book.budget[Unit.EDGE])
            assert eps_after > budget[0] or spend.delta + sum(s.delta for s in accepted) > budget[1] / 2
            break
        accepted.append(spend)
        accountant.compose(_dp_event(spend))
        last = rng.gauss(0.0, 1.0)  # the release's output, which the next choice reads
        total = book.totals()[Unit.EDGE]
        assert total.epsilon <= budget[0] * (1 + 1e-12) and total.delta <= budget[1]
        # the Rényi certificate at δ_R = δ_g / 2 is never below dp-accounting's RDP of the fixed sequence at δ_R
        renyi = renyi_epsilon(accepted, budget[1] / 2)
        assert renyi >= accountant.get_epsilon(budget[1] / 2) - 1e-9
        basic = sum(s.epsilon for s in accepted)  # basic composition of the declared (ε, δ)
        assert total.epsilon == pytest.approx(min(renyi, basic), rel=1e-12)
        rule = RENYI_FILTER if renyi < basic else BASIC_FILTER
        rules.add(rule)
        assert total.composition.startswith(rule) and total.delta == (budget[1] / 2 if renyi < basic else total.delta)
    else:
        pytest.fail("the filter never refused: the budget was never reached")
    assert len(accepted) >= 5 and RENYI_FILTER in rules  # many releases, the Rényi filter in use


def test_pure_releases_fully_adaptive_advanced_composition_and_basic(tmp_path):
    """Pure releases: basic composition (exact, δ = 0) while it is smaller; the Rényi certificate (αε²/2 a
    release: fully adaptive advanced composition) lets many small ones through at the budget's δ."""
    book = Ledger(tmp_path / "p.json", {Unit.NODE_LABEL: (3.0, 1e-6)}, dataset="mine")
    book.reserve([Spend(Unit.NODE_LABEL, 1.0)] * 2, "rr")
    total = book.totals()[Unit.NODE_LABEL]
    assert (total.epsilon, total.delta) == (2.0, 0.0) and total.composition.startswith(BASIC_FILTER)
    small = [Spend(Unit.NODE_LABEL, 0.02)] * 400  # basic: 8 > 3; adaptive advanced: about 2.9
    eps, delta, rule = filter_total(small, book.budget[Unit.NODE_LABEL])
    assert eps < 3.0 < 8.0 and delta == 5e-7 and rule.startswith(RENYI_FILTER)
    assert eps >= _rdp(small, 5e-7)
    fresh = Ledger(tmp_path / "q.json", {Unit.NODE_LABEL: (3.0, 1e-6)}, dataset="mine")
    fresh.reserve(small, "rr")
    with pytest.raises(BudgetExceeded, match="node label"):
        fresh.reserve([Spend(Unit.NODE_LABEL, 1.0)], "rr")  # 2.27 + 1 > 3
    fresh.reserve([Spend(Unit.NODE_LABEL, 0.5)], "rr")  # 2.27 + 0.5 fits
    # an ε-only budget has no δ to convert at: basic composition alone (no δ′ given)
    eps_only = Ledger(tmp_path / "e.json", {Unit.NODE_LABEL: 3.0}, dataset="mine")
    with pytest.raises(BudgetExceeded, match=f"node label: .*{re.escape(BASIC_FILTER)} over 400"):
        eps_only.reserve(small, "rr")


def test_releases_without_a_curve_are_held_by_basic_composition(tmp_path):
    """(ε, δ) alone (GAP-NDP's node-level accounting, LapGraph, ...): basic composition, its δ within half
    the δ budget."""
    book = Ledger(tmp_path / "o.json", {Unit.NODE_WITH_EDGES: (2.0, 1e-5)}, dataset="mine")
    for _ in range(4):
        book.reserve([Spend(Unit.NODE_WITH_EDGES, 0.5, 1e-6)], "gap-ndp")
    total = book.totals()[Unit.NODE_WITH_EDGES]
    assert (total.epsilon, total.delta) == (2.0, pytest.approx(4e-6)) and total.composition.startswith(BASIC_FILTER)
    with pytest.raises(BudgetExceeded):
        book.reserve([Spend(Unit.NODE_WITH_EDGES, 1e-3, 1e-7)], "gap-ndp")
    deltas = Ledger(tmp_path / "d.json", {Unit.NODE_WITH_EDGES: (100.0, 1e-5)}, dataset="mine")
    deltas.reserve([Spend(Unit.NODE_WITH_EDGES, 0.1, 4e-6)], "gap-ndp")
    with pytest.raises(BudgetExceeded, match="node \\(features, label and edges\\)"):  # δ: 8e-6 > 5e-6
        deltas.reserve([Spend(Unit.NODE_WITH_EDGES, 0.1, 4e-6)], "gap-ndp")


def test_the_command_line_prints_each_units_filter_rule(tmp_path, monkeypatch):
    path = tmp_path / "book.json"
    book = Ledger(path, {Unit.EDGE: (8.0, 1e-5), Unit.NODE_LABEL: 2.0}, dataset="mine")
    # each Gaussian's own (2.49, 1e-7) declared: basic 7.5, the Rényi filter about 4.5
    book.reserve([Spend(Unit.EDGE, 2.5, 1e-7, gaussian_event(3.0, count=2))] * 3 + [Spend(Unit.NODE_LABEL, 0.5)], "m")
    from privgraph.cli import console

    monkeypatch.setattr(console.out_console, "_width", 300)  # wide, whatever an earlier test left set
    out = CliRunner().invoke(app, ["ledger", str(path)], env={"COLUMNS": "300"}).output
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 5}
    assert RENYI_FILTER in rows["edge"] and "at δ = 5e-06" in rows["edge"]
    assert BASIC_FILTER in rows["node label"]
    assert "filter" in out.splitlines()[-1] or "filter" in out
