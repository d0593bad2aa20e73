"""The ledger fails closed and composes as tightly as the mechanisms allow: known units only,
the unit hierarchy, a ledger bound to one dataset and its public fingerprint, damaged files as one line (exit 2
from the command line), and totals by RDP / advanced / basic composition checked against dp-accounting."""

from __future__ import annotations

import json
import math
import re

import dp_accounting
import pytest
import torch
from torch_geometric.data import Data
from typer.testing import CliRunner

import privgraph as pg
from privgraph.accounting import BudgetExceeded, Ledger, LedgerError, Spend, Unit, gaussian_event
from privgraph.accounting.guarantee import UNIT_HIERARCHY, covered_units, group_spend
from privgraph.accounting.ledger import advanced_epsilon, compose
from privgraph.accounting.ledger.filters import BASIC_FILTER, RENYI_FILTER
from privgraph.accounting.rdp import RDP_ORDERS
from privgraph.methods import get_method


def small_graph(n: int = 40) -> Data:
    g = torch.Generator().manual_seed(0)
    edges = torch.randint(0, n, (2, 120), generator=g)
    edges = edges[:, edges[0] != edges[1]]
    masks = torch.zeros(3, n, dtype=torch.bool)
    masks[torch.randint(0, 3, (n,), generator=g), torch.arange(n)] = True
    return Data(
        x=torch.rand(n, 5, generator=g),
        edge_index=torch.cat([edges, edges.flip(0)], 1),
        y=torch.randint(0, 3, (n,), generator=g),
        train_mask=masks[0],
        val_mask=masks[1],
        test_mask=masks[2],
        feature_domain=(0.0, 1.0),  # declared: LPGNN refuses a graph without one
    )


def test_a_budget_names_only_known_units(tmp_path):
    with pytest.raises(
        LedgerError, match="unknown privacy unit 'node features' in the budget; known units: 'node feature vector'"
    ):
        Ledger(tmp_path / "a.json", {"node features": 0.5}, dataset="mine")
    book = Ledger(tmp_path / "b.json", {Unit.NODE_FEATURES: 0.5}, dataset="mine")
    with pytest.raises(LedgerError, match="unknown privacy unit 'adjacency'"):
        book.set_budget({"adjacency": 1.0})
    # every unit privgraph names, an edge of one relation and "*" are accepted
    Ledger(tmp_path / "c.json", {**{u: 1.0 for u in Unit.known()}, "edge of ('a', 'r', 'b')": 1.0, "*": 2.0})
    # the misspelled budget of the issue no longer lets three LPGNN releases through: it is refused outright
    runner = CliRunner()
    from privgraph.cli import app

    res = runner.invoke(app, ["ledger", str(tmp_path / "d.json"), "--dataset", "x", "--budget", "node features=0.5"])
    assert res.exit_code == 2 and "unknown privacy unit 'node features'" in res.output
    assert len(res.output.strip().splitlines()) <= 3 and "Traceback" not in res.output


def test_the_hierarchy_is_one_table_and_node_level_spends_its_parts():
    assert covered_units(Unit.NODE_WITH_EDGES) == {
        Unit.NODE: 2,
        Unit.NODE_FEATURES: 2,
        Unit.NODE_LABEL: 2,
        Unit.ADJACENCY_LIST: 2,
        Unit.EDGE: 2,
        Unit.PRIVATE_EDGE: 2,
        Unit.SENSITIVE_ATTRIBUTE: 2,
    }
    assert covered_units(Unit.NODE) == {Unit.NODE_FEATURES: 1, Unit.NODE_LABEL: 1} == UNIT_HIERARCHY[Unit.NODE]
    assert covered_units(Unit.EDGE) == {Unit.PRIVATE_EDGE: 1} and covered_units(Unit.NODE_FEATURES) == {}
    # group privacy at distance 2: (2ε, (1 + e^ε)δ)
    assert group_spend(0.5, 1e-5, 2) == (1.0, pytest.approx(1e-5 * (1 + math.exp(0.5))))


def _try(ledger: Ledger, name: str, eps: float, data: Data, **params) -> bool:
    """Whether the ledger accepts ``name``'s declared spend at ``eps`` (reserved, no release run)."""
    try:
        with ledger.spend(get_method(name, **params), eps, data=data):
            pass  # the release is not run: the entry stays pending, counted at its planned spend
    except BudgetExceeded:
        return False
    return True


def test_the_audits_star_budget_refuses_every_release_that_is_not_node_dp(tmp_path, monkeypatch):
    from privgraph.methods import LPGNN

    data = small_graph()
    book = Ledger(tmp_path / "star.json", {"*": 5.0}, dataset="mine")
    rng = torch.Generator().manual_seed(1)
    state = rng.get_state().clone()

    def no_noise(*args, **kwargs):
        raise AssertionError("noise drawn for a refused release")

    monkeypatch.setattr(LPGNN, "release", no_noise)  # through the API: refused before the method runs
    with pytest.raises(BudgetExceeded, match="node \\(features, label and edges\\): .*does not bound it"):
        pg.privatize(data, "lpgnn", epsilon=1.0, rng=rng, ledger=book)
    assert torch.equal(rng.get_state(), state) and book.entries == []
    monkeypatch.undo()
    # "*" budgets every unit, the node-level one too: an edge-, feature- or link-level release is not node-DP at
    # any finite ε (ε = ∞ on the node unit), so each is refused before any noise
    for name, params in (("gap-edp", {"delta": 1e-6}), ("lpgnn", {}), ("blink", {})):
        assert not _try(book, name, 1.0, data, **params), name
    assert _try(book, "gap-ndp", 1.0, data, delta=1e-6)
    assert [e.method for e in book.entries] == ["gap-ndp"]
    totals = book.totals()
    assert totals[Unit.NODE_WITH_EDGES].epsilon == 1.0 and totals[Unit.NODE_WITH_EDGES].releases == 1
    assert totals[Unit.EDGE].epsilon == 2.0 and totals[Unit.NODE_FEATURES].epsilon == 2.0  # group privacy, k = 2
    # node level first: at ε = 0.5 it spends 2 × 0.5 on each part (group privacy), so what follows is refused
    node_first = Ledger(tmp_path / "node.json", {"*": (1.0, 1e-3)}, dataset="mine")
    assert _try(node_first, "gap-ndp", 0.5, data, delta=1e-6)
    assert not _try(node_first, "gap-ndp", 0.5, data, delta=1e-6)
    totals = node_first.totals()
    assert totals[Unit.NODE_WITH_EDGES].epsilon == 0.5
    assert totals[Unit.EDGE].epsilon == 1.0 and totals[Unit.NODE_FEATURES].epsilon == 1.0
    assert totals[Unit.EDGE].delta == pytest.approx(1e-6 * (1 + math.exp(0.5)))
    # a release of a part says nothing about the whole node: ∞ on a node-level budget
    named = Ledger(tmp_path / "named.json", {Unit.NODE_WITH_EDGES: 4.0}, dataset="mine")
    assert not _try(named, "lpgnn", 1.0, data)
    assert named.totals()[Unit.NODE_WITH_EDGES].releases == 0


# per unit: a release on the unit itself, or on one that covers it, bounds it; any other release does not
BOUNDING = {u: [u, *(p for p in UNIT_HIERARCHY if u in covered_units(p))] for u in Unit.known()}


@pytest.mark.parametrize("unit", Unit.known())
def test_every_unit_fails_closed_both_ways(tmp_path, unit):
    for i, bounding in enumerate(BOUNDING[unit]):
        book = Ledger(tmp_path / f"ok{i}.json", {unit: 10.0}, dataset="mine")
        book.reserve([Spend(bounding, 1.0)], "m")  # accepted
        assert math.isfinite(book.totals()[unit].epsilon)
    if unit == Unit.NODE:  # exactly its parts: features and label spent together bound it
        book = Ledger(tmp_path / "parts.json", {unit: 10.0}, dataset="mine")
        book.reserve([Spend(Unit.NODE_FEATURES, 1.0), Spend(Unit.NODE_LABEL, 0.5)], "m")
        assert book.totals()[unit].epsilon == 1.5
    for other in set(Unit.known()) - set(BOUNDING[unit]):
        book = Ledger(tmp_path / "no.json", {unit: 10.0}, dataset="mine")
        with pytest.raises(BudgetExceeded, match=f"{re.escape(unit)}: .*does not bound it"):
            book.reserve([Spend(other, 1.0)], "m")
        assert book.entries == []


def test_a_ledger_is_bound_to_one_dataset_and_graph_before_any_noise(tmp_path, monkeypatch):
    from privgraph.methods import LPGNN

    data, rng = small_graph(), torch.Generator().manual_seed(3)
    with pytest.raises(LedgerError, match="no dataset name"):  # a ledger without a name records nothing
        pg.privatize(data, "lpgnn", epsilon=1.0, rng=rng, ledger=Ledger(tmp_path / "anon.json"))
    book = Ledger(tmp_path / "book.json", {Unit.NODE_FEATURES: 4.0}, dataset="mine", content_hash=True)
    pg.privatize(data, "lpgnn", epsilon=1.0, rng=rng, ledger=book)
    fp = json.loads((tmp_path / "book.json").read_text())["fingerprint"]
    assert fp["num_nodes"] == 40 and len(fp["content_sha256"]) == 64 and set(fp) == {"num_nodes", "content_sha256"}

    def no_noise(*args, **kwargs):
        raise AssertionError("noise drawn for a refused release")

    monkeypatch.setattr(LPGNN, "release", no_noise)
    state = rng.get_state().clone()
    bigger = small_graph(41)
    with pytest.raises(LedgerError, match="40 nodes.*differs in its node count"):
        pg.privatize(bigger, "lpgnn", epsilon=1.0, rng=rng, ledger=book)
    changed = data.clone()
    changed.x[0, 0] *= 0.999999
    with pytest.raises(LedgerError, match="differs in its content hash"):
        pg.privatize(changed, "lpgnn", epsilon=1.0, rng=rng, ledger=book)
    assert torch.equal(rng.get_state(), state) and len(book.entries) == 1
    monkeypatch.undo()
    # the same content in another object (an extra attribute) is the same graph
    same = data.clone()
    same.note = torch.tensor([1])
    pg.privatize(same, "lpgnn", epsilon=1.0, rng=rng, ledger=book)
    # without the content hash only the node count binds (the default: nothing but a public count is stored)
    counted = Ledger(tmp_path / "count.json", dataset="mine")
    pg.privatize(data, "lpgnn", epsilon=1.0, seed=0, ledger=counted)
    pg.privatize(changed, "lpgnn", epsilon=1.0, seed=1, ledger=counted)
    assert counted.fingerprint == {"num_nodes": 40}


@pytest.mark.parametrize(
    "text, needle",
    [
        ("{not json", "not JSON"),
        ('{"format": "privgraph-ledger/1", "dataset": "x", "budget": {}}', "no list of entries"),
        ('{"format": "something-else", "entries": []}', "is not a privgraph ledger"),
        ("[1, 2]", "is not a privgraph ledger"),
        ('{"format": "privgraph-ledger/1", "budget": {}, "entries": [{"id": 1}]}', "malformed"),
        ('{"format": "privgraph-ledger/1", "budget": {"node features": 1}, "entries": []}', "unknown privacy unit"),
    ],
)
def test_a_damaged_ledger_file_is_one_line_and_exit_2(tmp_path, text, needle):
    from privgraph.cli import app

    path = tmp_path / "book.json"
    path.write_text(text)
    with pytest.raises(LedgerError, match=needle):
        Ledger(path)
    runner = CliRunner()
    for args in (
        ["ledger", str(path)],
        ["release", "lpgnn", "--dataset", "sbm", "--epsilon", "1", "--ledger", str(path), "-o", str(tmp_path / "r.pt")],
    ):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, res.output
        assert needle in res.output and "Traceback" not in res.output
        assert not isinstance(res.exception, Exception) or isinstance(res.exception, SystemExit)
    assert not (tmp_path / "r.pt").exists()


def _event(parts: list[tuple[float, int]], rate: float = 1.0) -> dp_accounting.DpEvent:
    def one(z: float) -> dp_accounting.DpEvent:
        g = dp_accounting.GaussianDpEvent(z)
        return g if rate == 1 else dp_accounting.PoissonSampledDpEvent(rate, g)

    return dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(one(z), k) for z, k in parts])


def _dp_accounting_rdp(parts: list[tuple[float, int]], delta: float, rate: float = 1.0) -> float:
    accountant = dp_accounting.rdp.RdpAccountant(list(RDP_ORDERS))
    accountant.compose(_event(parts, rate))
    return accountant.get_epsilon(delta)


def _dp_accounting_pld(parts: list[tuple[float, int]], delta: float) -> float:
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-5)
    accountant.compose(_event(parts))
    return accountant.get_epsilon(delta)


def test_gaussian_releases_compose_by_the_renyi_filter_never_below_dp_accounting(tmp_path):
    data = small_graph()
    book = Ledger(tmp_path / "g.json", {Unit.NODE_FEATURES: (20.0, 1e-3)}, dataset="mine")
    lpgnn = get_method("lpgnn", mechanism="gaussian", delta=1e-5)
    for _ in range(8):
        with book.spend(lpgnn, 1.0, data=data):
            pass
    hetedp = get_method("hetedp-features", delta=1e-5)  # another Gaussian on the same unit, at ε = 0.5
    with book.spend(hetedp, 0.5, data=data):
        pass
    planned = [e.planned[0] for e in book.entries]
    assert all(s.event["kind"] == "gaussian" for s in planned)
    total = book.totals()[Unit.NODE_FEATURES]
    parts = [(s.event["noise_multiplier"], s.event["count"]) for s in planned]
    # the filter (adaptive ε): the Rényi certificate at δ_R = δ_g / 2, never below dp-accounting's accountants
    # for the same sequence fixed in advance (RDP at the same δ; PLD, the exact composition, below it)
    assert total.delta == 5e-4 and total.composition.startswith(RENYI_FILTER)
    assert _dp_accounting_pld(parts, 5e-4) < _dp_accounting_rdp(parts, 5e-4) <= total.epsilon < 8.5
    # the fixed sequence's exact composition (μ-GDP) stays available, and agrees with the PLD accountant
    eps, delta, rule = compose(planned)
    assert eps == pytest.approx(_dp_accounting_pld(parts, 9e-5), rel=1e-5) and delta == pytest.approx(9e-5)
    assert rule == "exact Gaussian composition (μ-GDP) over 9 Gaussian"
    # the event is declared before the noise and kept on the report's spend
    assert json.loads((tmp_path / "g.json").read_text())["entries"][0]["planned"][0]["event"]["count"] == 1


def test_gap_edp_declares_its_k_aggregations_and_one_release_is_never_looser_than_basic(tmp_path):
    spend = get_method("gap-edp", hops=3, delta=1e-6).planned_spend(2.0)[0]
    assert spend.event["count"] == 3 and spend.delta == 1e-6
    eps, delta, rule = compose([spend])
    assert (eps, delta) == (2.0, 1e-6) and rule.startswith("basic over 1 Gaussian")  # RDP is looser for one
    eps, delta, rule = compose([spend] * 6)
    assert eps == pytest.approx(_dp_accounting_pld([(spend.event["noise_multiplier"], 18)], 6e-6), rel=1e-5)
    assert eps < 12 and rule == "exact Gaussian composition (μ-GDP) over 6 Gaussian"


def test_subsampled_gaussian_releases_compose_by_rdp_as_dp_accounting():
    """A Gaussian on a Poisson sample (a public rate) composes by RDP: dp-accounting's RdpAccountant."""
    sampled = gaussian_event(1.1, count=300, sampling_rate=0.02)
    whole = gaussian_event(4.0, count=2)
    spends = [Spend(Unit.EDGE, 3.0, 1e-5, sampled), Spend(Unit.EDGE, 1.0, 1e-5, whole)]
    eps, delta, rule = compose(spends)
    accountant = dp_accounting.rdp.RdpAccountant(list(RDP_ORDERS))
    accountant.compose(_event([(1.1, 300)], 0.02))
    accountant.compose(_event([(4.0, 2)]))
    assert delta == 2e-5 and rule == "RDP over 2 Gaussian"
    assert eps == pytest.approx(accountant.get_epsilon(2e-5), rel=1e-6) and eps < 4.0
    # without δ or the data, the auto δ is not known before the release: no event, basic composition
    assert get_method("gap-edp").planned_spend(2.0)[0].event is None


def test_pure_releases_compose_by_advanced_composition_at_the_ledgers_delta(tmp_path):
    spends = [Spend(Unit.ADJACENCY_LIST, 0.1)] * 100
    assert compose(spends) == (pytest.approx(10.0), 0.0, "basic over 100 pure")
    eps, delta, rule = compose(spends, advanced_delta=1e-6)
    formula = 100 * 0.1 * math.tanh(0.05) + math.sqrt(2 * math.log(1e6) * 100 * 0.01)
    assert eps == pytest.approx(formula) == pytest.approx(advanced_epsilon([0.1] * 100, 1e-6))
    assert delta == 1e-6 and rule == "advanced at δ′ = 1e-06 over 100 pure" and eps < 6
    # few large releases: basic is smaller, and kept (δ stays 0)
    assert compose([Spend(Unit.ADJACENCY_LIST, 2.0)] * 3, advanced_delta=1e-6) == (6.0, 0.0, "basic over 3 pure")
    # the ledger's filter: under an ε-only budget, the Rényi certificate at its δ′ (the fully adaptive form of
    # advanced composition, min(ε, αε²/2) per release), looser than the fixed sequence's but far below basic
    book = Ledger(tmp_path / "p.json", {Unit.ADJACENCY_LIST: 7.0}, dataset="mine", advanced_delta=1e-6)
    book.reserve([Spend(Unit.ADJACENCY_LIST, 0.1)] * 100, "rr")  # 100 releases' worth, checked as one step
    total = book.totals()[Unit.ADJACENCY_LIST]
    assert formula < total.epsilon < 7 and total.delta == 1e-6 and total.composition.startswith(RENYI_FILTER)
    assert Ledger(tmp_path / "p.json").advanced_delta == 1e-6


def test_gaussian_and_pure_releases_add_up_by_group():
    z = gaussian_event(3.0, count=2)
    gauss = [Spend(Unit.EDGE, 1.0, 1e-5, z) for _ in range(5)]
    pure = [Spend(Unit.EDGE, 0.5), Spend(Unit.EDGE, 0.25)]
    other = [Spend(Unit.EDGE, 0.3, 1e-6)]
    eps, delta, rule = compose(gauss + pure + other)
    exact = _dp_accounting_pld([(3.0, 10)], 5e-5)
    assert eps == pytest.approx(0.3 + exact + 0.75, rel=1e-5) and exact < 5.0
    assert delta == pytest.approx(5e-5 + 1e-6)
    assert rule == "basic over 1 + exact Gaussian composition (μ-GDP) over 5 Gaussian + basic over 2 pure"
    assert compose(gauss + [Spend(Unit.EDGE, math.inf)])[0] == math.inf


def test_blinks_degree_share_is_not_a_delta_for_the_ledger(tmp_path):
    data = small_graph()
    book = Ledger(tmp_path / "b.json", {Unit.ADJACENCY_LIST: (8.0, 1e-5)}, dataset="mine")
    with pytest.raises(ValueError, match="`delta` is now `degree_share`"):
        pg.privatize(data, "blink", epsilon=4, delta=0.3, seed=0, ledger=book)
    assert book.entries == []
    rel = pg.privatize(data, "blink", epsilon=4, degree_share=0.3, seed=0, ledger=book)
    assert rel.report.by_unit()[Unit.ADJACENCY_LIST].delta == 0.0
    assert book.totals()[Unit.ADJACENCY_LIST].epsilon == 4.0 and book.totals()[Unit.ADJACENCY_LIST].delta == 0.0


def test_a_named_per_node_budget_counts_features_and_label_together(tmp_path):
    """The local per-node unit is its features and its label: a release of both spends their sum on it, a
    release of the features alone (the labels published) is not protected for it."""
    data = small_graph()
    book = Ledger(tmp_path / "node.json", {Unit.NODE: 2.0}, dataset="mine")
    with book.spend(get_method("lpgnn"), 1.0, 0.5, data=data):
        pass
    assert book.totals()[Unit.NODE].epsilon == 1.5
    assert not _try(book, "lpgnn", 0.25, data)  # ∞ on the named per-node unit
    assert book.totals()[Unit.NODE].releases == 1


def test_the_command_line_records_a_content_hash_when_asked(tmp_path, monkeypatch):
    from privgraph.cli import app

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    made = runner.invoke(app, ["ledger", "book.json", "--dataset", "sbm", "--content-hash", "--format", "json"])
    assert made.exit_code == 0, made.output
    ok = runner.invoke(
        app, ["release", "lpgnn", "--dataset", "sbm", "--epsilon", "1", "--ledger", "book.json", "-o", "a.pt"]
    )
    assert ok.exit_code == 0, ok.output
    state = json.loads(runner.invoke(app, ["ledger", "book.json", "--format", "json"]).stdout)
    assert set(state["fingerprint"]) == {"num_nodes", "content_sha256"}
    assert state["totals"][0]["composition"] == f"{BASIC_FILTER} over 1"


def test_hetedps_dp_sgd_declares_its_subsampled_gaussian_from_public_numbers():
    """HeteDP's edges: DP-SGD's σ, q = B/N and T planned from the public edge_count, declared before training;
    two such releases compose by RDP, as dp-accounting's RdpAccountant with Poisson sampling."""
    params = dict(edge_type=("paper", "written_by", "author"), edge_count=200, batch_size=64, epochs=2)
    edge, features = get_method("hetedp", **params).planned_spend(2.0)
    assert features.event["sampling_rate"] == 1 and edge.unit.startswith(Unit.EDGE)
    event = edge.event
    assert (event["sampling_rate"], event["count"]) == (64 / 200, round(2 / (64 / 200)))
    eps, delta, rule = compose([edge, edge])
    expected = _dp_accounting_rdp([(event["noise_multiplier"], event["count"] * 2)], 2 * edge.delta, 64 / 200)
    assert rule == "RDP over 2 Gaussian" and eps == pytest.approx(expected, rel=1e-6) and eps < 2 * edge.epsilon
    # no edge-level claim (the paper's message passing): no event, ε = ∞
    mp = get_method("hetedp", **params, topology="message-passing").planned_spend(2.0)[0]
    assert mp.epsilon == math.inf and mp.event is None
