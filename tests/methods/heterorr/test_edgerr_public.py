"""EdgeRR's default, ``structure="public"``: the dendrogram fitted on the public edges alone (no privacy
cost, no convergence needed) and the whole ε_e on Algorithm 3's counts, whose L1 sensitivity on that fixed
dendrogram is 1; the paper's private MCMC (``structure="private-mcmc"``) kept as an option, and privHRG's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from privgraph.audit.definitions import AuditInput, private_edge_unit
from privgraph.audit.runner import CONSISTENT, VIOLATION, audit_units, default_input
from privgraph.data import split_edges
from privgraph.methods import get_method
from privgraph.methods.heterorr import edges, hrg
from privgraph.methods.heterorr.edges import ChainNotConverged, edge_rr
from privgraph.methods.heterorr.hrg import released_counts
from privgraph.request import ReleaseRequest

EPS = 1.0


# the graph of these tests, the sbm fixture's base arguments (a test overrides some of them)
GRAPH = {"num_nodes": 50, "num_features": 2, "avg_degree": 6.0, "seed": 6, "private_edges": 0.3}


def _with_private_edge(data, u: int, v: int):
    other = data.clone()
    other.edge_index = torch.cat([data.edge_index, torch.tensor([[u, v], [v, u]])], dim=1)
    other.private_edge_mask = torch.cat([data.private_edge_mask, torch.ones(2, dtype=torch.bool)])
    return other


def _absent_pair(data) -> tuple[int, int]:
    present = {tuple(p) for p in data.edge_index.t().tolist()}
    return next((u, v) for u in range(data.num_nodes) for v in range(u + 1, data.num_nodes) if (u, v) not in present)


def _fitted_trees(monkeypatch, worlds, seed: int = 0, **options):
    """The dendrogram each release hands to Algorithm 3 (edge_rr's own path), one per world."""
    trees = []
    real = edges.noisy_probabilities

    def capture(tree, *args, **kwargs):
        trees.append(tree)
        return real(tree, *args, **kwargs)

    monkeypatch.setattr(edges, "noisy_probabilities", capture)
    releases = [edge_rr(w, EPS, torch.Generator().manual_seed(seed), steps=2000, **options) for w in worlds]
    return trees, releases


def _same_structure(a: hrg.Dendrogram, b: hrg.Dendrogram) -> bool:
    fields = ("left", "right", "parent", "order", "lo", "hi", "cnt_pub", "cnt_pri", "e_pub")
    return a.root == b.root and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in fields)


def test_the_public_fit_never_reads_the_private_edges(monkeypatch, sbm):
    """Same seed, private edges added, removed or replaced: the fitted dendrogram is identical."""
    data = sbm(GRAPH)
    pub, pri = split_edges(data)
    no_private = data.clone()
    no_private.edge_index, no_private.private_edge_mask = pub, torch.zeros(pub.shape[1], dtype=torch.bool)
    worlds = [data, _with_private_edge(data, *_absent_pair(data)), no_private]
    trees, _ = _fitted_trees(monkeypatch, worlds)
    assert all(_same_structure(trees[0], t) for t in trees[1:])
    assert trees[0].e_pri.sum() == pri.shape[1] // 2 and trees[2].e_pri.sum() == 0  # counted after the fit


def test_neighbouring_count_vectors_differ_in_one_coordinate_by_one(monkeypatch, sbm):
    data = sbm(GRAPH)
    u, v = _absent_pair(data)
    trees, _ = _fitted_trees(monkeypatch, [data, _with_private_edge(data, u, v)])
    for threshold in (0.0, 0.02, 1e9):  # one aggregated count, the default τ, one count per split
        (c0, n0, s0, a0), (c1, n1, s1, a1) = (released_counts(t, EPS, threshold) for t in trees)
        assert np.array_equal(s0, s1) and np.array_equal(n0, n1) and np.array_equal(a0, a1)  # which counts: public
        diff = (c1 - c0)[s0 == np.arange(s0.size)]
        assert np.abs(diff).sum() == 1.0 and np.count_nonzero(diff) == 1


def test_the_noisy_counts_are_laplace_one_over_epsilon_and_lose_exactly_epsilon(monkeypatch, sbm):
    """The whole ε_e on the counts: Laplace(1/ε_e) on a vector of L1 sensitivity 1, so the log density ratio
    of neighbouring outputs, ε_e·(|z − c′|₁ − |z − c|₁), is at most ε_e and reaches it."""
    data = sbm(GRAPH)
    scales = []
    real = hrg.laplace
    monkeypatch.setattr(hrg, "laplace", lambda shape, scale, rng: scales.append(scale) or real(shape, scale, rng))
    trees, releases = _fitted_trees(monkeypatch, [data, _with_private_edge(data, *_absent_pair(data))])
    assert scales == [1.0 / EPS, 1.0 / EPS]
    assert all(d["epsilon_probabilities"] == EPS and d["epsilon_mcmc"] == 0.0 for _, _, d in releases)
    c0, _, source, _ = released_counts(trees[0], EPS, 0.02)
    c1 = released_counts(trees[1], EPS, 0.02)[0]
    own = source == np.arange(source.size)
    k = int(np.flatnonzero(own & (c0 != c1))[0])
    z = np.linspace(min(c0[k], c1[k]) - 5, max(c0[k], c1[k]) + 5, 2001)  # the other coordinates cancel
    loss = EPS * (np.abs(z - c1[k]) - np.abs(z - c0[k]))
    assert loss.max() == pytest.approx(EPS, abs=1e-12) and np.abs(loss).max() <= EPS + 1e-12


def test_the_default_releases_where_the_private_mcmc_refuses(sbm):
    data = sbm(GRAPH)
    with pytest.raises(ChainNotConverged):  # 10·n moves: the paper's chain is refused
        edge_rr(data, EPS, torch.Generator().manual_seed(0), steps=500, structure="private-mcmc")
    method = get_method("edgerr", mcmc_steps=500)
    assert method.params.structure == "public"
    rel = method.release(data, EPS, torch.Generator().manual_seed(0))
    g = rel.guarantee
    assert (g.unit, g.epsilon, g.delta) == ("private edge", EPS, 0.0) and g.trust_model.startswith("central")
    assert "public dendrogram" in g.mechanism and any("public edges only" in n for n in g.notes)
    assert rel.details["structure"] == "public" and rel.details["released_private_edges"] >= 0
    released = {tuple(p) for p in rel.edge_index.t().tolist()}
    assert all(tuple(p) in released for p in split_edges(data)[0].t().tolist())  # public edges kept
    # convergence=waive belongs to the private MCMC: the public default still claims ε
    assert get_method("edgerr", convergence="waive").planned_spend(EPS)[0].epsilon == EPS
    assert get_method("edgerr", structure="private-mcmc", convergence="waive").planned_spend(EPS)[0].epsilon == math.inf
    with pytest.raises(ValueError, match="structure"):
        get_method("edgerr", structure="private")


def test_privhrg_keeps_the_private_mcmc_and_its_public_option_is_graph_independent(monkeypatch, sbm):
    data = sbm(GRAPH)
    assert get_method("privhrg").params.structure == "private-mcmc"
    with pytest.raises(ChainNotConverged):
        get_method("privhrg", mcmc_steps=200).release(data, EPS, torch.Generator().manual_seed(0))  # 4·n moves
    other = sbm(GRAPH, seed=7)  # another graph on as many nodes: the same random dendrogram for a seed
    trees, releases = _fitted_trees(monkeypatch, [data, other], structure="public", all_private=True)
    assert _same_structure(trees[0], trees[1]) and trees[0].e_pub.sum() == 0
    g = releases[0][1]
    assert g.epsilon == EPS and any("random dendrogram independent of the graph" in n for n in g.notes)


def test_the_sharp_audit_row_passes_the_default_and_catches_a_tenfold_smaller_noise(monkeypatch):
    """V̄ = {u, v}: (u, v) released with probability q = (1 − e^(−ε))/(2ε) absent, 1 − q present (0.77 at
    ε = 1); Laplace(1/(10ε)) makes it log(0.95/0.05) ≈ 2.9, far above the ε claimed."""
    method = get_method("edgerr", mcmc_steps=200)
    inp = AuditInput(default_input(method), ReleaseRequest.build(method, epsilon=EPS))

    def row():
        unit = private_edge_unit(method, inp, exact=True, isolate=True)
        return audit_units(method, [unit], 0, 300, 0, epsilon=EPS)[0]

    fair = row()
    q = (1 - math.exp(-EPS)) / (2 * EPS)
    assert fair.verdict == CONSISTENT and fair.epsilon == EPS and fair.epsilon_lb < math.log((1 - q) / q)
    real = edges.noisy_probabilities
    monkeypatch.setattr(edges, "noisy_probabilities", lambda tree, eps, *a, **k: real(tree, 10 * eps, *a, **k))
    wrong = row()
    assert wrong.verdict == VIOLATION and wrong.epsilon == EPS and wrong.epsilon_lb > EPS, wrong
