"""Link stealing (He et al. 2021) and LinkTeller (Wu et al. 2022) on a planted graph whose features
are only weakly informative: well above the MLP floor against a GCN on the true graph, at chance
against a GCN on a randomized-response graph (ε = 0.1 keeps almost nothing of the links), exact
distances, private edges only as secrets, reproducible, clear errors."""

import math

import numpy as np
import pytest
import torch
from scipy.spatial import distance

from privgraph.attacks import Target, get_attack, train_target
from privgraph.attacks.link import (
    DISTANCES,
    LinkCandidates,
    LinkStealing,
    LinkStealingSupervised,
    LinkTeller,
    pair_distances,
    pair_features,
)
from privgraph.data import mark_private_edges
from privgraph.methods import get_method


def null_auc_se(pos: int, neg: int) -> float:
    """Standard error of the AUC (Mann–Whitney U / (pos·neg)) of scores unrelated to the labels."""
    return math.sqrt((pos + neg + 1) / (12 * pos * neg))


def dense_adjacency(data) -> torch.Tensor:
    a = torch.zeros(data.num_nodes, data.num_nodes)
    a[data.edge_index[0], data.edge_index[1]] = 1
    return a


@pytest.fixture(scope="module")
def graph(sbm):
    # 4 blocks, homophily 0.8: a GCN reaches ~98 % accuracy, an MLP on the features ~57 %
    return sbm(num_nodes=400, num_features=100, feature_signal=0.1, avg_degree=6, seed=0)


@pytest.fixture(scope="module")
def targets(graph):
    return {
        "gcn": train_target(get_method("gcn-raw"), graph, None, 0),
        "mlp": train_target(get_method("mlp"), graph, None, 0),
        "rr": train_target(get_method("rr"), graph, 0.1, 0),
    }


@pytest.fixture(scope="module")
def private_target(graph):
    data = mark_private_edges(graph.clone(), 0.3, seed=1)
    return train_target(get_method("gcn-raw"), data, None, 0)


def test_rr_release_at_small_epsilon_is_near_random(graph):
    """The premise of the chance tests: RR at ε = 0.1 flips each adjacency bit with probability
    p = 1/(1 + e^0.1) ≈ 0.475: a true edge survives with probability 0.525, a non-edge appears with
    probability 0.475, and every node gets ~190 random neighbours for its ~6 true ones."""
    from privgraph.mechanisms import derive_seed, make_generator

    release = get_method("rr").release(graph, 0.1, make_generator(derive_seed(0, 1)))
    released = set(map(tuple, release.edge_index.t().tolist()))
    true = set(map(tuple, graph.edge_index.t().tolist()))
    n, p = graph.num_nodes, 1 / (1 + math.exp(0.1))
    kept = len(true & released) / len(true)
    added = len(released - true) / (n * (n - 1) - len(true))
    assert abs(kept - (1 - p)) < 4 * math.sqrt(p * (1 - p) / len(true))
    assert abs(added - p) < 0.01


def test_distances_match_scipy():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.random((30, 6)), rng.normal(size=(10, 6))])
    b = np.concatenate([rng.random((30, 6)), rng.normal(size=(10, 6))])
    a[0, :3] = b[0, :3] = 0.0  # Canberra's 0/0 terms count 0, as in SciPy
    d = pair_distances(a, b)
    assert set(d) == set(DISTANCES)
    for name in DISTANCES:
        expected = [getattr(distance, name)(x, y) for x, y in zip(a, b)]
        np.testing.assert_allclose(d[name], expected, rtol=1e-10, atol=1e-12, err_msg=name)
    # 4 operations × 6 classes, 8 distances, 4 operations on the two entropies
    assert pair_features(a[:30], b[:30]).shape == (30, 4 * 6 + 8 + 4)


def test_link_stealing_beats_the_mlp_floor_and_falls_to_it_against_rr(targets):
    results = {name: get_attack("link-stealing").run(t, seed=0) for name, t in targets.items()}
    auc = {name: r.metrics["attack_auc"] for name, r in results.items()}
    pos = int(results["gcn"].truth.sum())
    se = null_auc_se(pos, pos)
    assert auc["mlp"] > 0.5 + 4 * se  # feature similarity alone links nodes: the floor is above chance
    assert auc["gcn"] > auc["mlp"] + 0.1  # what the graph adds
    # RR at ε = 0.1 gives each node ~190 random neighbours for its ~6 true ones: its graph carries
    # almost nothing of the links (and washes out the features): not above the floor, at chance
    assert auc["rr"] < auc["mlp"] + 3 * math.sqrt(2) * se
    assert abs(auc["rr"] - 0.5) < 4 * se
    gcn = results["gcn"]
    assert set(gcn.metrics) >= {f"attack_auc_{d}" for d in DISTANCES} | {"attack_precision", "attack_recall"}
    assert gcn.metrics["attack_auc"] == gcn.metrics["attack_auc_correlation"]  # the headline distance
    assert gcn.truth.mean() == 0.5 and gcn.predicted.sum() == gcn.details["k"] == gcn.truth.size // 2
    assert gcn.details["secret_links"] == pos and gcn.details["public_edges"] == 0  # every link, balanced
    assert gcn.threat_model.answers.startswith("the input graph")
    other = get_attack("link-stealing", distance="cosine").run(targets["gcn"], seed=0)
    assert other.metrics["attack_auc"] == gcn.metrics["attack_auc_cosine"]


def test_supervised_link_stealing_beats_the_floor(targets):
    results = {name: get_attack("link-stealing-aux").run(t, seed=0) for name, t in targets.items()}
    auc = {name: r.metrics["attack_auc"] for name, r in results.items()}
    pos = int(results["gcn"].truth.sum())
    assert auc["gcn"] > auc["mlp"] + 0.1
    assert auc["rr"] < auc["mlp"] + 3 * math.sqrt(2) * null_auc_se(pos, pos)
    gcn = results["gcn"]
    assert gcn.truth.mean() == 0.5
    assert gcn.details["known_pairs"] + gcn.details["candidates"] == 2 * gcn.details["secret_links"]
    np.testing.assert_array_equal(gcn.predicted, gcn.scores >= 0.5)  # the classifier's decision
    # the known pairs (training) and the evaluated ones are disjoint
    links = LinkCandidates(targets["gcn"])
    (known, _), (evaluated, truth) = LinkStealingSupervised().split_pairs(links, seed=0)
    assert not np.isin(known, evaluated).any()
    np.testing.assert_array_equal(truth, gcn.truth)


def test_linkteller_finds_the_true_links_and_not_those_of_rr(graph, targets):
    gcn = get_attack("linkteller", nodes=200).run(targets["gcn"], seed=0)
    assert gcn.details["query_nodes"] == 200 and gcn.details["candidates"] == 200 * 199 // 2
    assert gcn.metrics["attack_auc"] > 0.95
    k = int(gcn.truth.sum())
    assert gcn.details["k_hat"] == k and gcn.predicted.sum() == k
    # precision at k̂ = k: over 30× the density; every false positive is a two-hop pair (inside a
    # 2-layer GCN's receptive field): influence analysis cannot tell those from links
    assert gcn.metrics["attack_precision"] > max(0.5, 30 * gcn.details["density"])
    links = LinkCandidates(targets["gcn"])
    codes, _ = LinkTeller(nodes=200).pairs(targets["gcn"], seed=0)
    u, v = links.split(codes[(gcn.predicted == 1) & (gcn.truth == 0)])
    a = dense_adjacency(graph)
    assert ((a @ a)[u, v] > 0).all()
    assert gcn.threat_model.answers.startswith("the input graph")

    rr = get_attack("linkteller", nodes=200).run(targets["rr"], seed=0)
    pos = int(rr.truth.sum())
    assert abs(rr.metrics["attack_auc"] - 0.5) < 4 * null_auc_se(pos, rr.truth.size - pos)
    assert rr.threat_model.answers.startswith("the graph the server holds: rr's release")
    smaller = get_attack("linkteller", nodes=200, density_factor=0.5).run(targets["gcn"], seed=0)
    assert smaller.details["k_hat"] == round(k / 2)
    np.testing.assert_array_equal(smaller.scores, gcn.scores)


def test_linkteller_influence_is_exactly_zero_beyond_two_hops(graph, targets):
    nodes = torch.arange(0, graph.num_nodes, 5)
    influence = LinkTeller(nodes=nodes.numel()).influence(targets["gcn"], nodes)
    a = dense_adjacency(graph)
    reach = (torch.eye(graph.num_nodes) + a).matrix_power(2)[nodes][:, nodes].numpy() > 0
    linked = a[nodes][:, nodes].numpy() > 0
    assert (~reach).sum() > 0 and linked.sum() > 0
    assert (influence[~reach] == 0).all()  # outside the receptive field: the very same output
    assert (influence[linked] > 0).all()  # every link moves the neighbour's output


def test_linkteller_zero_feature_row_is_perturbed_additively(graph, targets):
    x = targets["gcn"].x.clone()
    x[0] = 0.0
    target = Target("gcn-raw", graph, model=targets["gcn"].model, x=x, graph=graph.edge_index)
    neighbour = int(graph.edge_index[1][graph.edge_index[0] == 0][0])
    influence = LinkTeller(nodes=2).influence(target, torch.tensor([0, neighbour]))
    assert influence[0, 1] > 0  # scaling a zero row would change nothing: Δ is added instead


def test_linkteller_propagates_every_query_through_kprop(graph):
    """LPGNN's KProp caches its propagation keyed on the features' memory address: LinkTeller writes
    each query into one buffer, so every query must be propagated afresh — its influence equals that
    of a fresh copy of the features per query, with the cache cleared before each (the cached
    answer was the first query's for all of them)."""
    from privgraph.methods import Hyperparameters

    target = train_target(get_method("lpgnn"), graph, 8.0, 0, hp=Hyperparameters(epochs=5))
    assert target.model.kprop is not None
    nodes = torch.arange(0, 40, 2)
    attack = LinkTeller(nodes=nodes.numel())
    x, delta = target.x, attack.params.delta

    def answer(q):
        target.model.kprop._cache = None
        out = target.log_posteriors(q)[nodes].double()
        return out - out.mean(dim=1, keepdim=True)

    base = answer(x)
    expected = np.empty((nodes.numel(), nodes.numel()))
    for i, u in enumerate(nodes.tolist()):
        q = x.clone()
        q[u] = x[u] * (1 + delta) if bool(x[u].any()) else x[u] + delta
        expected[i] = ((answer(q) - base).norm(dim=1) / delta).numpy()
    influence = attack.influence(target, nodes)
    assert len({row.tobytes() for row in influence}) == nodes.numel()  # not one query's answer repeated
    np.testing.assert_array_equal(influence, expected)
    assert target.model.kprop.cached  # the target's own model keeps its cache (a copy answers)


def test_only_private_edges_are_secret(private_target):
    data = private_target.truth
    n = data.num_nodes
    upper = data.edge_index[0] < data.edge_index[1]
    codes = (data.edge_index[0] * n + data.edge_index[1])[upper].numpy()
    private = data.private_edge_mask[upper].numpy()
    secret, public = set(codes[private]), set(codes[~private])
    assert secret and public
    attacks = {
        "link-stealing": LinkStealing(),
        "link-stealing-aux": LinkStealingSupervised(),
        "linkteller": LinkTeller(nodes=150),
    }
    for name, attack in attacks.items():
        pairs, truth = attack.pairs(private_target, seed=0)
        assert not set(pairs) & public, name  # public edges are known: never candidates
        assert set(pairs[truth == 1]) <= secret and not set(pairs[truth == 0]) & secret, name
        assert (pairs // n < pairs % n).all(), name
        result = attack.run(private_target, seed=0)
        np.testing.assert_array_equal(result.truth, truth)
        assert result.details["public_edges"] == len(public)
    stealing, _ = LinkStealing().pairs(private_target, seed=0)
    assert set(stealing) >= secret  # every private link is a candidate (max_pairs allows)
    (known, known_truth), _ = LinkStealingSupervised().split_pairs(LinkCandidates(private_target), seed=0)
    assert set(known[known_truth == 1]) <= secret and not set(known) & public  # the partial graph too
    teller, _ = LinkTeller(nodes=150).pairs(private_target, seed=0)
    assert teller.size < 150 * 149 // 2  # the public edges among the query nodes are dropped


def test_reproducible_from_the_seed(targets):
    for name, params in (("link-stealing", {}), ("link-stealing-aux", {}), ("linkteller", {"nodes": 60})):
        a, b, c = (get_attack(name, **params).run(targets["gcn"], seed=s) for s in (3, 3, 4))
        np.testing.assert_array_equal(a.scores, b.scores)
        np.testing.assert_array_equal(a.truth, b.truth)
        assert a.metrics == b.metrics
        assert not np.array_equal(a.scores, c.scores), name


def test_bad_input(graph, targets):
    noise = torch.randn(graph.num_nodes, 8, generator=torch.Generator().manual_seed(0))
    embedding = Target(method="x", truth=graph, embeddings=noise)
    with pytest.raises(ValueError, match="never uses a graph"):
        get_attack("linkteller").run(targets["mlp"], seed=0)
    with pytest.raises(ValueError, match="inference API"):
        get_attack("linkteller").run(embedding, seed=0)
    with pytest.raises(ValueError, match="releases embeddings, not posteriors"):
        get_attack("link-stealing", representation="posteriors").run(embedding, seed=0)
    stolen = get_attack("link-stealing").run(embedding, seed=0)  # auto: the embeddings are compared
    pos = int(stolen.truth.sum())
    assert abs(stolen.metrics["attack_auc"] - 0.5) < 4 * null_auc_se(pos, pos)  # random embeddings: nothing
    for fraction in (1.0, 1.5, 0.0):
        with pytest.raises(ValueError, match="known_fraction"):
            get_attack("link-stealing-aux", known_fraction=fraction)
    with pytest.raises(ValueError, match="auxiliary set"):  # 1241 links: 0.999 leaves one to evaluate
        get_attack("link-stealing-aux", known_fraction=0.999).run(targets["gcn"], seed=0)
    few = mark_private_edges(graph.clone(), 0.005, seed=0)  # 6 private links: 3 known, 3 evaluated
    with pytest.raises(ValueError, match="auxiliary set"):
        get_attack("link-stealing-aux").run(
            Target("gcn-raw", few, model=targets["gcn"].model, x=few.x, graph=few.edge_index), seed=0
        )
    with pytest.raises(ValueError, match="nodes must be >= 2, got 1"):
        get_attack("linkteller", nodes=1)
    with pytest.raises(ValueError, match="delta"):
        get_attack("linkteller", delta=0.0)
    with pytest.raises(ValueError, match="distance"):
        get_attack("link-stealing", distance="hamming")
    # more query nodes than the graph has: every node is queried
    assert LinkTeller(nodes=10_000).query_nodes(graph.num_nodes, seed=0).size == graph.num_nodes
