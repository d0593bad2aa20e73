"""GAP-NDP's soft cap through the release: the fail branch reads no edge,
the hop noise std is σ_h·Λ·√D on every row and self-loops are never aggregated, unconditional cleaning
with a constant report, nothing of the graph's size or degrees in the report or details."""

import math

import pytest
import torch

import privgraph as pg
from privgraph.mechanisms import make_generator
from privgraph.methods import get_method
from privgraph.methods.gap import node

FEW = {"encoder_epochs": 2, "epochs": 2, "batch_size": 16, "hidden": 8}
DETAILS = {  # every key a soft-cap release's details may hold: public parameters, σ's, the seed and the bit
    "noise_multiplier", "hop_noise_multiplier", "noise_std", "delta", "seed", "ptr_passed", "steps", "num_train",
    "degree_cap",
}  # fmt: skip


@pytest.fixture(scope="module")
def graph(sbm):
    return sbm(num_nodes=60, num_features=6, seed=3)


def _state_equal(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_trap_9_the_fail_branch_reads_no_edge(graph, monkeypatch):
    n = int(graph.train_mask.sum())
    garbage = graph.clone()
    garbage.edge_index = torch.randint(0, graph.num_nodes, (2, 500), generator=torch.Generator().manual_seed(9))
    passed = [pg.privatize(g, "gap-ndp", epsilon=4.0, seed=0, num_train=n, **FEW) for g in (graph, garbage)]
    assert all(r.details["ptr_passed"] for r in passed)
    assert not _state_equal(passed[0].model_state, passed[1].model_state)  # the hops read the edges
    monkeypatch.setattr(node, "ptr_test", lambda *args: False)
    failed = [pg.privatize(g, "gap-ndp", epsilon=4.0, seed=0, num_train=n, **FEW) for g in (graph, garbage)]
    assert not failed[0].details["ptr_passed"] and not bool(failed[0].model_state["ptr_passed"])
    assert _state_equal(failed[0].model_state, failed[1].model_state)
    assert failed[0].report.to_dict() == failed[1].report.to_dict()
    assert "PTR test failed" in " ".join(failed[0].report.guarantees[0].notes)


def test_trap_4_hop_noise_std_on_every_row_and_no_self_loop(graph):
    method = get_method("gap-ndp", num_train=20, hops=1, max_degree=16, test_share=0.5)
    sigma, _ = method.calibrate(graph, 8.0)
    expected = 2 * sigma * 1.5 * math.sqrt(16)  # σ_h·Λ·√D, σ_h = hop_noise_ratio·σ
    assert method.aggregation(sigma).noise_std == pytest.approx(expected)
    empty = graph.clone()
    empty.edge_index = torch.empty(2, 0, dtype=torch.long)
    rel = method.release_aggregation(torch.zeros(graph.num_nodes, 4000), empty, 8.0, make_generator(1))
    assert rel.passed  # an edgeless graph: k* large
    per_row = rel.sums[0].std(dim=1)
    assert float(per_row.min()) > 0.95 * expected and float(per_row.max()) < 1.05 * expected
    loops = graph.clone()
    loops.edge_index = torch.cat([graph.edge_index, torch.arange(graph.num_nodes).repeat(2, 1)], 1)
    x0 = torch.nn.functional.normalize(torch.randn(graph.num_nodes, 4, generator=torch.Generator().manual_seed(2)))
    a = method.release_aggregation(x0, graph, 8.0, make_generator(3))
    b = method.release_aggregation(x0, loops, 8.0, make_generator(3))
    assert all(torch.equal(s, t) for s, t in zip(a.tables, b.tables, strict=True))


def test_trap_2_defects_are_cleaned_unconditionally_with_the_same_report(graph):
    n = int(graph.train_mask.sum())
    messy = graph.clone()
    one_way = graph.edge_index[:, graph.edge_index[0] < graph.edge_index[1]]  # every link one way only
    messy.edge_index = torch.cat([one_way, one_way[:, :5], torch.tensor([[0, 1], [0, 1]])], 1)  # + dups, loops
    clean = pg.privatize(graph, "gap-ndp", epsilon=4.0, seed=0, num_train=n, **FEW)
    dirty = pg.privatize(messy, "gap-ndp", epsilon=4.0, seed=0, num_train=n, **FEW)  # no refusal
    assert clean.report.to_dict() == dirty.report.to_dict() and clean.details == dirty.details
    assert _state_equal(clean.model_state, dirty.model_state)
    assert "input graph cleaned unconditionally" in " ".join(clean.report.guarantees[0].notes)


def test_traps_1_and_11_nothing_of_the_graph_in_the_report_or_details(graph):
    """G and G plus an isolated non-training node: the same report and details (the weights differ only by the
    noise stream's layout); the details hold public values only."""
    n = int(graph.train_mask.sum())
    bigger = graph.clone()
    bigger.num_nodes = graph.num_nodes + 1
    bigger.x = torch.cat([graph.x, graph.x[:1]])
    bigger.y = torch.cat([graph.y, graph.y[:1]])
    for mask in ("train_mask", "val_mask", "test_mask"):
        bigger[mask] = torch.cat([graph[mask], torch.tensor([mask == "test_mask"])])
    a = pg.privatize(graph, "gap-ndp", epsilon=4.0, seed=0, num_train=n, **FEW)
    b = pg.privatize(bigger, "gap-ndp", epsilon=4.0, seed=0, num_train=n, **FEW)
    assert a.report.to_dict() == b.report.to_dict() and a.details == b.details
    assert set(a.details) <= DETAILS


def test_a_trial_records_the_released_pass_bit_as_a_metric():
    """The PTR test's bit is part of the release (paid by its own ε_t): a trial's ``ptr_passed`` metric (its mean
    over trials is the pass rate a grid table shows) is the bit the release carries, 0 or 1."""
    from privgraph.experiments import ExperimentSpec
    from privgraph.experiments.pipeline import run_experiment

    spec = ExperimentSpec(
        "gap-ndp", "sbm", [4.0], {"epochs": 2, "encoder_epochs": 2, "max_degree": 4}, trials=1,
        synthetic={"num_nodes": 120, "num_features": 8},
    )  # fmt: skip
    (record,) = run_experiment(spec).records
    assert record.metrics["ptr_passed"] in (0.0, 1.0)
    baseline = ExperimentSpec("gap-edp", "sbm", [4.0], {}, trials=1, synthetic={"num_nodes": 120, "num_features": 8})
    assert "ptr_passed" not in run_experiment(baseline).records[0].metrics  # no test, no bit
