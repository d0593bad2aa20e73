"""Graph validation: duplicated or one-directional edges must not reach a sensitivity.

Each test goes through a public function; on a graph with a duplicated edge the
mechanisms used to count the edge twice (a degree, a dendrogram count, a DP-SGD
example), doubling the sensitivity their ε assumes.
"""

import numpy as np
import pytest
import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.utils import to_undirected

from privgraph.data import check_graph, hetero_sbm_graph, mark_private_edges, split_edges, validate_graph
from privgraph.data.hetero import merge_duplicate_edges
from privgraph.data.validation import SIMPLE_CLEANED_NOTE
from privgraph.mechanisms import make_generator
from privgraph.methods import get_method
from privgraph.methods.blink import link_ldp
from privgraph.methods.blink.baselines import LaplaceAdjacencyReports
from privgraph.methods.heterorr.edges import edge_rand, edge_rr, lap_graph
from privgraph.methods.heterorr.hrg import PHRGSampler
from privgraph.train.dpsgd import DPSGDConfig
from privgraph.train.link_prediction import LinkInputs, train_link_model_dp


def _graph(n=30, p=0.2, seed=0, ratio=0.5) -> Data:
    """A small simple undirected graph with half of its edges private."""
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < p, 1)
    ei = to_undirected(torch.from_numpy(np.stack(a.nonzero())).long(), num_nodes=n)
    data = Data(x=torch.rand(n, 3), edge_index=ei, num_nodes=n)
    return mark_private_edges(data, ratio, seed=seed)


def _with_duplicate(data: Data, private: bool) -> tuple[Data, int]:
    """``data`` with both directions of one (private or public) edge listed twice; returns its column."""
    col = int(torch.nonzero(data.private_edge_mask == private)[0, 0])
    u, v = data.edge_index[:, col].tolist()
    rev = int(torch.nonzero((data.edge_index[0] == v) & (data.edge_index[1] == u))[0, 0])
    out = data.clone()
    out.edge_index = torch.cat([data.edge_index, data.edge_index[:, [col, rev]]], dim=1)
    out.private_edge_mask = torch.cat([data.private_edge_mask, data.private_edge_mask[[col, rev]]])
    return out, col


def _private_pairs(data: Data) -> int:
    return int(split_edges(data)[1].shape[1] // 2)


# ------------------------------------------------------------------ the validator
def test_validate_graph_coalesces_duplicates_with_a_note_and_keeps_the_input():
    data, _ = _with_duplicate(_graph(), private=True)
    data.edge_weight = torch.arange(data.edge_index.shape[1], dtype=torch.float)
    before = (data.edge_index.clone(), data.private_edge_mask.clone(), data.edge_weight.clone())
    clean, notes = validate_graph(data, undirected=True)
    assert notes == [f"2 duplicate edges merged (edge_index: {before[0].shape[1]} → {before[0].shape[1] - 2} columns)"]
    original = _graph()
    assert torch.equal(clean.edge_index, original.edge_index)  # first copies kept, in order
    assert torch.equal(clean.private_edge_mask, original.private_edge_mask)
    assert torch.equal(clean.edge_weight, before[2][: original.edge_index.shape[1]])
    assert clean is not data
    assert torch.equal(data.edge_index, before[0]) and torch.equal(data.private_edge_mask, before[1])
    assert torch.equal(data.edge_weight, before[2])
    same, notes = validate_graph(original, undirected=True)
    assert notes == [] and torch.equal(same.edge_index, original.edge_index)


def test_validate_graph_refuses_what_it_cannot_clean():
    data = _graph()
    directed = Data(edge_index=data.edge_index[:, data.edge_index[0] < data.edge_index[1]], num_nodes=30)
    with pytest.raises(ValueError, match=r"directed: \d+ edges are listed in one direction only"):
        validate_graph(directed, undirected=True)
    assert validate_graph(directed, undirected=False)[1] == []
    loops = Data(edge_index=torch.cat([data.edge_index, torch.tensor([[4], [4]])], 1), num_nodes=30)
    with pytest.raises(ValueError, match=r"has 1 self-loop \(.*remove_self_loops"):
        validate_graph(loops, undirected=True)
    assert validate_graph(loops, undirected=True, self_loops=True)[1] == []
    mixed = data.clone()
    mixed.private_edge_mask = mixed.private_edge_mask.clone()
    mixed.private_edge_mask[int(torch.nonzero(mixed.private_edge_mask)[0, 0])] = False
    with pytest.raises(ValueError, match="private_edge_mask is not symmetric: 1 undirected edge is private"):
        validate_graph(mixed, undirected=True)
    disagree, col = _with_duplicate(data, private=True)
    disagree.private_edge_mask[-2:] = False  # the copies of the private edge are flagged public
    with pytest.raises(ValueError, match="copies disagree on private_edge_mask"):
        validate_graph(disagree, undirected=True)
    with pytest.raises(ValueError, match=r"2 duplicate columns: 2 edges are listed more than once"):
        validate_graph(_with_duplicate(data, private=False)[0], undirected=True, duplicates="refuse")


def test_check_graph_input_errors():
    ei = torch.tensor([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"shape \[2, E\]"):
        check_graph(ei.T.reshape(1, 4), 2, undirected=True)
    with pytest.raises(ValueError, match="integer node ids"):
        check_graph(ei.float(), 2, undirected=True)
    with pytest.raises(ValueError, match=r"2 edges with node ids outside \[0, 1\)"):
        check_graph(ei, 1, undirected=True)
    with pytest.raises(ValueError, match="one entry per column"):
        check_graph(ei, 2, undirected=True, private_edge_mask=torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="duplicates must be one of"):
        check_graph(ei, 2, undirected=True, duplicates="drop")
    with pytest.raises(ValueError, match="bipartite"):
        check_graph(ei, (2, 3), undirected=True)
    assert check_graph(torch.empty(2, 0), 0, undirected=True).edge_index.dtype == torch.long
    bipartite = check_graph(torch.tensor([[0, 1], [2, 2]]), (2, 3), undirected=False)
    assert bipartite.kept is None and bipartite.notes == []


# ------------------------------------------------------------------------- Blink
def test_link_ldp_refuses_a_duplicated_edge_and_counts_the_coalesced_degree_once():
    data = _graph()
    dup, col = _with_duplicate(data, private=False)
    with pytest.raises(ValueError, match="duplicate columns"):
        link_ldp(dup.edge_index, 30, 2.0, 0.5, make_generator(0))
    clean, _ = validate_graph(dup, undirected=True)
    reports = link_ldp(clean.edge_index, 30, 2.0, 0.5, make_generator(0))
    reference = link_ldp(data.edge_index, 30, 2.0, 0.5, make_generator(0))
    assert torch.equal(reports.noisy_degrees, reference.noisy_degrees)  # the endpoints' degrees moved by 1, not 2


def test_blink_baselines_refuse_duplicated_edges():
    dup, _ = _with_duplicate(_graph(), private=False)
    with pytest.raises(ValueError, match="duplicate columns"):
        LaplaceAdjacencyReports.collect(dup.edge_index, 30, 1.0, make_generator(0))
    dup.y = torch.zeros(30, dtype=torch.long)
    for name in ("ldpgen", "rr", "solitude"):
        with pytest.raises(ValueError, match="duplicate columns"):
            get_method(name).release(dup, 1.0, make_generator(0))


# ------------------------------------------------------------- EdgeRR and friends
def test_edge_rr_refuses_a_duplicated_private_edge_and_counts_it_once_after_validation():
    data = _graph()
    dup, _ = _with_duplicate(data, private=True)
    for release in (edge_rr, edge_rand, lap_graph):
        with pytest.raises(ValueError, match="duplicate columns"):
            release(dup, 1.0, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="duplicate columns"):
        edge_rr(dup, 1.0, torch.Generator().manual_seed(0), all_private=True)
    clean, notes = validate_graph(dup, undirected=True)
    assert notes
    _, _, details = edge_rr(clean, 1.0, torch.Generator().manual_seed(0), steps=200, convergence="waive")
    assert details["private_edges"] == _private_pairs(data)
    public, private = split_edges(clean)
    sampler = PHRGSampler(30, public, private, np.ones(30, dtype=np.int64), 0.5, torch.Generator().manual_seed(0))
    assert int(sampler.tree.e_pri.sum()) == _private_pairs(data)  # the duplicated pair counts once


def test_edge_rr_refuses_a_private_edge_given_in_one_direction_only():
    data = _graph()
    ei, mask = data.edge_index, data.private_edge_mask
    one_way = mask & (ei[0] < ei[1])  # drop the (u, v), u < v, column of every private edge
    data.edge_index, data.private_edge_mask = ei[:, ~one_way], mask[~one_way]
    with pytest.raises(ValueError, match=r"listed in one direction only, \d+ of them private"):
        edge_rr(data, 1.0, torch.Generator().manual_seed(0), steps=100)
    with pytest.raises(ValueError, match="one direction only"):
        validate_graph(data, undirected=True)


def test_phrg_refuses_one_directional_private_edges_and_its_counts_stay_consistent():
    data = _graph(n=40, p=0.25, seed=3)
    public, private = split_edges(data)
    with pytest.raises(ValueError, match="private edges is directed"):
        PHRGSampler(
            40,
            public,
            private[:, private[0] > private[1]],
            np.ones(40, dtype=np.int64),
            1.0,
            torch.Generator().manual_seed(0),
        )
    with pytest.raises(ValueError, match="both public and private"):
        PHRGSampler(40, data.edge_index, private, np.ones(40, dtype=np.int64), 1.0, torch.Generator())
    sampler = PHRGSampler(40, public, private, np.ones(40, dtype=np.int64), 1.0, torch.Generator().manual_seed(0))
    for _ in range(4):
        sampler.run(2000, chunk=500)
        tree = sampler.tree
        assert tree.e_pri.min() >= 0 and tree.e_pub.min() >= 0
        assert int(tree.e_pri.sum()) == private.shape[1] // 2  # each pair has one lowest common ancestor
        assert int(tree.e_pub.sum()) == public.shape[1] // 2


# ------------------------------------------------------------------ HeteDP DP-SGD
def test_train_link_model_dp_refuses_a_duplicated_example():
    d = hetero_sbm_graph(seed=1)
    et = ("paper", "to", "author")
    edges = d[et].edge_index
    inputs = LinkInputs({"paper": d["paper"].x, "author": d["author"].x})
    config = DPSGDConfig(batch_size=16, epochs=1, edge_count=100)
    with pytest.raises(ValueError, match=r"paper__to__author examples \(edges\) has 1 duplicate column: 1 edge is"):
        train_link_model_dp(inputs, torch.cat([edges, edges[:, :1]], 1), et, 0.5, 1e-5, config, 0)
    with pytest.raises(ValueError, match="outside"):
        train_link_model_dp(inputs, edges + torch.tensor([[0], [10_000]]), et, 0.5, 1e-5, config, 0)


def test_merge_duplicate_edges_keeps_one_column_per_pair_with_its_attributes():
    data = HeteroData()
    data["user"].num_nodes, data["item"].num_nodes = 3, 2
    data["user", "rates", "item"].edge_index = torch.tensor([[0, 1, 0, 2], [1, 0, 1, 1]])
    data["user", "rates", "item"].edge_attr = torch.tensor([[5.0], [3.0], [4.0], [1.0]])
    data["item", "rev_rates", "user"].edge_index = torch.tensor([[1, 0, 1, 1], [0, 1, 0, 2]])
    out = merge_duplicate_edges(data)
    assert out.merged_duplicate_edges == 2
    assert out["user", "rates", "item"].edge_index.tolist() == [[0, 1, 2], [1, 0, 1]]
    assert out["user", "rates", "item"].edge_attr.flatten().tolist() == [5.0, 3.0, 1.0]
    assert out["item", "rev_rates", "user"].edge_index.tolist() == [[1, 0, 1], [0, 1, 2]]
    assert merge_duplicate_edges(hetero_sbm_graph(seed=0)).merged_duplicate_edges == 0


def test_runner_boundary_merges_duplicates_with_a_note_and_refuses_directed_graphs_for_link_methods(monkeypatch):
    """The experiment runner (and `privgraph release`) validate the input graph once, at the boundary."""
    import privgraph.data.synthetic as data_module  # the registered sbm's generator
    from privgraph.data import sbm_graph
    from privgraph.experiments import Experiment, ExperimentSpec

    small = dict(num_nodes=120, num_features=8, avg_degree=4.0)
    graph = sbm_graph(seed=0, **small)
    doubled = graph.clone()
    doubled.edge_index = torch.cat([graph.edge_index, graph.edge_index[:, :3]], dim=1)
    monkeypatch.setattr(data_module, "sbm_graph", lambda **kw: doubled.clone())
    spec = ExperimentSpec(method="blink", epsilons=[1.0], trials=1, hyperparameters={"epochs": 5})
    res = Experiment(spec).run()
    notes = res.records[0].guarantee["guarantees"][0]["notes"]
    assert any("duplicate edges merged" in n for n in notes)
    directed = graph.clone()
    directed.edge_index = graph.edge_index[:, graph.edge_index[0] < graph.edge_index[1]]
    monkeypatch.setattr(data_module, "sbm_graph", lambda **kw: directed.clone())
    with pytest.raises(ValueError, match="one direction only"):
        Experiment(spec).run()
    lpgnn = ExperimentSpec(method="lpgnn", epsilons=[1.0], trials=1, hyperparameters={"epochs": 5})
    assert Experiment(lpgnn).run().records  # feature-level methods take directed graphs


def test_a_release_report_states_the_merge_without_the_inputs_counts():
    """The number of duplicate columns (and of edges) is a statistic of the private graph; the
    report says what was done, the counts stay in the curator's diagnostics."""
    import re

    import privgraph as pg
    from privgraph.data import sbm_graph

    graph = sbm_graph(seed=0, num_nodes=120, num_features=8, avg_degree=4.0)
    doubled = graph.clone()
    doubled.edge_index = torch.cat([graph.edge_index, graph.edge_index[:, :3]], dim=1)
    rel = pg.privatize(doubled, "blink", epsilon=1.0, seed=0)
    notes = [n for n in rel.report.lines() if "merged" in n]
    # The same words whether or not the input had a duplicate (the note's presence was the bit)
    assert (
        notes
        == ["note: " + SIMPLE_CLEANED_NOTE]
        == [n for n in pg.privatize(graph, "blink", epsilon=1.0, seed=0).report.lines() if "merged" in n]
    )
    assert not any(re.search(r"\d", line) for line in rel.metadata()["report"] if "merged" in line)
    assert any("3 duplicate edges merged" in n for n in rel.details["input_graph"])  # the curator's copy
