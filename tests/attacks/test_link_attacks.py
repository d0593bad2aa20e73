"""Link stealing and LinkTeller on a planted graph: above the MLP floor against a GCN, at chance
against a model whose graph carries nothing about the links, exact distances, private edges."""

import math

import numpy as np
import pytest
import torch
from scipy.spatial import distance

from privgraph.attacks import Target, get_attack, train_target
from privgraph.attacks.link import DISTANCES, LinkCandidates, pair_distances, pair_features
from privgraph.data import mark_private_edges, sbm_graph
from privgraph.methods import get_method


def auc_se(pos: int, neg: int, auc: float = 0.5) -> float:
    """Hanley–McNeil standard error of an AUC."""
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    return math.sqrt((auc * (1 - auc) + (pos - 1) * (q1 - auc ** 2) + (neg - 1) * (q2 - auc ** 2)) / (pos * neg))


@pytest.fixture(scope="module")
def graph():
    return sbm_graph(num_nodes=400, num_features=100, feature_signal=0.1, avg_degree=6, seed=0)


@pytest.fixture(scope="module")
def targets(graph):
    return {"gcn": train_target(get_method("gcn-raw"), graph, None, 0),
            "mlp": train_target(get_method("mlp"), graph, None, 0),
            "rr": train_target(get_method("rr"), graph, 0.1, 0)}  # RR at ε=0.1 keeps ~nothing of the links


def test_distances_match_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.random((40, 6)), rng.random((40, 6))
    d = pair_distances(a, b)
    for name in DISTANCES:
        expected = [getattr(distance, name)(x, y) for x, y in zip(a, b)]
        np.testing.assert_allclose(d[name], expected, rtol=1e-10, err_msg=name)
    assert pair_features(a, b).shape == (40, 4 * 6 + 8 + 4)


def test_link_stealing_beats_the_mlp_floor_and_falls_against_rr(targets):
    results = {name: get_attack("link-stealing").run(t, seed=0) for name, t in targets.items()}
    auc = {name: r.metrics["attack_auc"] for name, r in results.items()}
    assert auc["mlp"] > 0.55  # feature similarity alone links nodes: the floor is above 0.5
    assert auc["gcn"] > auc["mlp"] + 0.1  # what the graph adds
    pos = int(results["rr"].truth.sum())
    assert auc["rr"] < auc["mlp"] + 4 * auc_se(pos, pos)  # the RR graph adds nothing above the floor
    assert set(results["gcn"].metrics) >= {f"attack_auc_{d}" for d in DISTANCES} | {"attack_precision"}
    assert results["gcn"].truth.mean() == 0.5  # balanced candidates
    supervised = {name: get_attack("link-stealing-aux").run(t, seed=0).metrics["attack_auc"]
                  for name, t in targets.items() if name != "rr"}
    assert supervised["gcn"] > supervised["mlp"] + 0.05


def test_linkteller_finds_the_links_of_the_true_graph_and_not_of_rr(targets):
    gcn = get_attack("linkteller", nodes=200).run(targets["gcn"], seed=0)
    density = gcn.details["density"]
    assert gcn.metrics["attack_auc"] > 0.95
    assert gcn.metrics["attack_precision"] > 0.4 > 20 * density  # k̂ = k: 20× the density
    assert gcn.threat_model.answers.startswith("the input graph")
    rr = get_attack("linkteller", nodes=200).run(targets["rr"], seed=0)
    pos = int(rr.truth.sum())
    assert abs(rr.metrics["attack_auc"] - 0.5) < 4 * auc_se(pos, rr.truth.size - pos)
    assert rr.threat_model.answers.startswith("the graph the server holds: rr's release")


def test_only_private_edges_are_secret(graph):
    data = mark_private_edges(graph.clone(), 0.3, seed=1)
    target = train_target(get_method("gcn-raw"), data, None, 0)
    links = LinkCandidates(target)
    ei = data.edge_index[:, data.edge_index[0] < data.edge_index[1]]
    private = data.private_edge_mask[data.edge_index[0] < data.edge_index[1]]
    codes = (ei[0] * data.num_nodes + ei[1]).numpy()
    assert set(links.secret) == set(codes[private.numpy()]) and set(links.public) == set(codes[~private.numpy()])
    n = data.num_nodes
    for name in ("link-stealing", "link-stealing-aux"):
        result = get_attack(name).run(target, seed=0)
        assert result.details["secret_links"] == private.sum()
    teller = get_attack("linkteller", nodes=150).run(target, seed=0)
    assert teller.details["candidates"] < 150 * 149 // 2  # the public edges among the query nodes are dropped
    # the non-links never hit an edge, public or private
    neg = links.non_links(500, np.random.default_rng(0))
    assert not np.isin(neg, links.edges).any() and (neg // n < neg % n).all()


def test_reproducible_from_the_seed(targets):
    for name in ("link-stealing", "link-stealing-aux"):
        a, b = (get_attack(name).run(targets["gcn"], seed=3) for _ in range(2))
        np.testing.assert_array_equal(a.scores, b.scores)
    a, b = (get_attack("linkteller", nodes=60).run(targets["gcn"], seed=3) for _ in range(2))
    np.testing.assert_array_equal(a.scores, b.scores)


def test_bad_input(graph, targets):
    embedding = Target(method="x", truth=graph, embeddings=torch.randn(graph.num_nodes, 8))
    with pytest.raises(ValueError, match="never uses a graph"):
        get_attack("linkteller").run(targets["mlp"], seed=0)
    with pytest.raises(ValueError, match="inference API"):
        get_attack("linkteller").run(embedding, seed=0)
    with pytest.raises(ValueError, match="releases embeddings, not posteriors"):
        get_attack("link-stealing", representation="posteriors").run(embedding, seed=0)
    assert 0 <= get_attack("link-stealing").run(embedding, seed=0).metrics["attack_auc"] <= 1  # auto: embeddings
    with pytest.raises(ValueError, match="known_fraction"):
        get_attack("link-stealing-aux", known_fraction=1.0)
    with pytest.raises(ValueError, match="auxiliary set"):
        tiny = mark_private_edges(graph.clone(), 0.001, seed=0)
        get_attack("link-stealing-aux", known_fraction=0.9).run(Target("gcn-raw", tiny, model=targets["gcn"].model,
                                                                       x=tiny.x, graph=tiny.edge_index), seed=0)
    with pytest.raises(ValueError, match="at least 2"):
        get_attack("linkteller", nodes=1)
    with pytest.raises(ValueError, match="exceeds"):
        get_attack("linkteller", nodes=graph.num_nodes + 1).run(targets["gcn"], seed=0)
