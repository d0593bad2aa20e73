"""HeteroRR: annotations, pHRG MCMC, EdgeRR and the edge-level baselines, FeatureRR release."""

import math
from collections import Counter

import numpy as np
import pytest
import torch
from scipy import stats
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from privgraph.data import mark_private_edges, private_nodes, sbm_graph, split_edges
from privgraph.mechanisms import MAX_EPSILON
from privgraph.methods import get_method
from privgraph.methods.heterorr import hrg, kernels, scores
from privgraph.methods.heterorr.edges import edge_rand, edge_rr, lap_graph
from privgraph.methods.heterorr.hrg import (
    Dendrogram,
    PHRGSampler,
    lemma4_sensitivity,
    noisy_probabilities,
    sample_private_edges,
)
from privgraph.methods.heterorr.scores import budget_shares, importance_scores, sensitivity_scores


def _graph(n=60, p=0.12, seed=0, ratio=0.3):
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < p, 1)
    ei = to_undirected(torch.from_numpy(np.stack(a.nonzero())).long(), num_nodes=n)
    data = Data(
        x=torch.rand(n, 5, generator=torch.Generator().manual_seed(seed)),
        edge_index=ei,
        y=torch.from_numpy(rng.integers(0, 3, n)),
        num_nodes=n,
    )
    data.train_mask = torch.ones(n, dtype=torch.bool)
    return mark_private_edges(data, ratio, seed=seed)


def _lca_counts(tree: Dendrogram, edge_index: torch.Tensor) -> np.ndarray:
    """e_r by walking parent pointers (independent of the kernels' interval test)."""
    e = np.zeros(2 * tree.num_nodes - 1, dtype=np.int64)
    for u, v in edge_index.T.tolist():
        if u >= v:
            continue
        up = set()
        w = u
        while w >= 0:
            up.add(w)
            w = tree.parent[w]
        w = v
        while w not in up:
            w = tree.parent[w]
        e[w] += 1
    return e


def _brute_loglik(tree: Dendrogram, e: np.ndarray, cnt: np.ndarray) -> float:
    total = 0.0
    for r in range(tree.num_nodes, 2 * tree.num_nodes - 1):
        n_pairs = cnt[tree.left[r]] * cnt[tree.right[r]]
        if 0 < e[r] < n_pairs:
            p = e[r] / n_pairs
            total += e[r] * math.log(p) + (n_pairs - e[r]) * math.log(1 - p)
    return total


def _check_tree(tree: Dendrogram):
    n = tree.num_nodes
    assert sorted(tree.order.tolist()) == list(range(n))
    assert (tree.pos[tree.order] == np.arange(n)).all()
    for r in range(n, 2 * n - 1):
        a, b = tree.left[r], tree.right[r]
        assert tree.parent[a] == r and tree.parent[b] == r
        assert tree.lo[r] == tree.lo[a] and tree.hi[a] == tree.lo[b] and tree.hi[b] == tree.hi[r]


# ----------------------------------------------------------------- annotations
def test_mark_private_edges_is_symmetric_seeded_and_validated():
    data = _graph(ratio=0.25)
    pub, pri = split_edges(data)
    undirected = data.edge_index.shape[1] // 2
    assert pri.shape[1] // 2 == round(0.25 * undirected)
    assert pub.shape[1] + pri.shape[1] == data.edge_index.shape[1]
    again = mark_private_edges(_graph(ratio=0.25), 0.25, seed=0)
    assert torch.equal(again.private_edge_mask, data.private_edge_mask)
    with pytest.raises(ValueError, match="ratio"):
        mark_private_edges(_graph(), 1.5)
    bad = _graph()
    bad.private_node_mask = torch.zeros(bad.num_nodes, dtype=torch.bool)
    with pytest.raises(ValueError, match="private-eligible"):
        split_edges(bad)
    bare = Data(edge_index=data.edge_index, num_nodes=data.num_nodes)
    with pytest.raises(ValueError, match="no private-edge annotation"):
        split_edges(bare)
    assert private_nodes(bare).all()


# ------------------------------------------------------------------- pHRG MCMC
def test_local_moves_keep_loglik_equal_to_full_recomputation():
    data = _graph(n=80, seed=3)
    pub, pri = split_edges(data)
    eligible = np.ones(80, dtype=np.int64)
    eligible[::7] = 0
    pri_mask = torch.from_numpy(eligible.astype(bool))
    keep = pri_mask[pri[0]] & pri_mask[pri[1]]
    pri = pri[:, keep]
    sampler = PHRGSampler(80, pub, pri, eligible, 0.7, torch.Generator().manual_seed(1))
    for _ in range(5):
        sampler.run(3000, chunk=1000)
        tree = sampler.tree
        _check_tree(tree)
        e_pub, e_pri = _lca_counts(tree, pub), _lca_counts(tree, pri)
        assert (e_pub[80:] == tree.e_pub[80:]).all() and (e_pri[80:] == tree.e_pri[80:]).all()
        has_pub = np.zeros(80, dtype=np.int64)
        has_pub[pub[0].numpy()] = 1
        cnt_pub = kernels.subtree_counts(tree.left, tree.right, tree.root, has_pub)
        cnt_pri = kernels.subtree_counts(tree.left, tree.right, tree.root, eligible)
        assert (cnt_pub == tree.cnt_pub).all() and (cnt_pri == tree.cnt_pri).all()
        full = (_brute_loglik(tree, e_pub, cnt_pub), _brute_loglik(tree, e_pri, cnt_pri))
        assert sampler.loglik[0] == pytest.approx(full[0], abs=1e-7)
        assert sampler.loglik[1] == pytest.approx(full[1], abs=1e-7)
    assert 0 < sampler.accepted < sampler.steps_done


def _topology(tree: Dendrogram) -> frozenset:
    n = tree.num_nodes
    return frozenset(frozenset(tree.order[tree.lo[r] : tree.hi[r]].tolist()) for r in range(n, 2 * n - 1))


def test_mcmc_stationary_distribution_is_the_exponential_mechanism():
    """4 leaves: 15 dendrograms.  The chain's visit frequencies must match
    π(D) ∝ exp(L_pub(D) + s·L_pri(D)) (chi-square)."""
    n, scale = 4, 0.8
    pub = to_undirected(torch.tensor([[0, 1, 2], [1, 2, 3]]))
    pri = to_undirected(torch.tensor([[0, 1], [2, 3]]))
    eligible = np.ones(n, dtype=np.int64)
    sampler = PHRGSampler(n, pub, pri, eligible, scale, torch.Generator().manual_seed(5))
    counts, logpi = Counter(), {}
    for _ in range(20000):
        sampler.run(7, chunk=7)  # thin the chain
        topo = _topology(sampler.tree)
        counts[topo] += 1
        if topo not in logpi:
            lp, lq = sampler.tree.log_likelihood()
            logpi[topo] = lp + scale * lq
    assert len(counts) == 15  # every dendrogram of 4 leaves is visited: (2·4 − 3)!! = 15
    keys = sorted(counts, key=lambda k: sorted(map(sorted, k)))
    w = np.exp(np.array([logpi[k] for k in keys]))
    expected = w / w.sum() * sum(counts.values())
    observed = np.array([counts[k] for k in keys])
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_lemma4_sensitivity_matches_brute_force():
    def h(e, n):
        return 0.0 if e in (0, n) else e * math.log(e / n) + (n - e) * math.log(1 - e / n)

    for v in (3, 4, 5, 9, 12):
        n_max = v * v // 4
        brute = max(abs(h(e, n) - h(e - 1, n)) for n in range(1, n_max + 1) for e in range(1, n + 1))
        assert lemma4_sensitivity(v) == pytest.approx(brute, rel=1e-12)
        if n_max > 2:  # eq. 15 as printed (no exponent N_max − 1) underestimates it
            assert math.log(n_max) + math.log(1 + 1 / (n_max - 1)) < brute
    with pytest.raises(ValueError):
        lemma4_sensitivity(1)


def test_noisy_probabilities_count_every_private_edge_once(monkeypatch):
    """With the Laplace noise switched off, Σ_r p̃_r·N̄_r over the released counts equals |E_pri|
    (aggregated, per-split and mixed)."""
    data = _graph(n=70, seed=4, ratio=0.5)
    pub, pri = split_edges(data)
    eligible = np.ones(70, dtype=np.int64)
    gen = torch.Generator().manual_seed(0)
    sampler = PHRGSampler(70, pub, pri, eligible, 0.1, gen)
    sampler.run(2000)
    with monkeypatch.context() as m:
        m.setattr(hrg, "laplace", lambda shape, scale, rng: torch.zeros(shape, dtype=torch.float64))
        aggregated = set()
        for threshold in (0.0, 1e-3, 1e9):
            probs, details = noisy_probabilities(sampler.tree, MAX_EPSILON, gen, threshold)
            expected = float((probs * sampler.tree.private_pairs()).sum())
            assert expected == pytest.approx(pri.shape[1] // 2, abs=1e-9)
            aggregated.add(details["aggregated_subtrees_nodes"])
        assert len(aggregated) == 3  # all, some and none of the subtrees aggregated
    _, everything = noisy_probabilities(sampler.tree, 1.0, gen, 0.0)
    assert everything["noisy_counts"] == 1  # τ = 0: one aggregated count at the root
    _, none = noisy_probabilities(sampler.tree, 1.0, gen, 1e9)
    assert none["noisy_counts"] == int((sampler.tree.private_pairs() > 0).sum())  # one count per split


def test_noisy_counts_have_laplace_scale_one_over_epsilon2():
    """Unaggregated counts: p̃_r·N̄_r − ē_r is Laplace(1/ε₂) (std √2/ε₂) where no clamping occurs."""
    data = _graph(n=70, seed=4, ratio=0.5)
    pub, pri = split_edges(data)
    sampler = PHRGSampler(70, pub, pri, np.ones(70, dtype=np.int64), 0.1, torch.Generator().manual_seed(0))
    tree = sampler.tree
    pairs = tree.private_pairs()
    e = tree.e_pri[tree.internal_nodes()]
    inner = np.flatnonzero((e >= 12) & (pairs - e >= 12))
    assert inner.size > 0
    eps2 = 1.5
    draws = np.stack(
        [noisy_probabilities(tree, eps2, torch.Generator().manual_seed(s), 1e9)[0][inner] for s in range(600)]
    )
    noise = (draws * pairs[inner] - e[inner]).ravel()
    assert abs(noise.mean()) < 5 * math.sqrt(2) / eps2 / math.sqrt(noise.size)
    assert noise.std() == pytest.approx(math.sqrt(2) / eps2, rel=0.1)


def test_sampling_from_the_dendrogram_covers_each_pair_once():
    data = _graph(n=40, seed=2)
    pub, pri = split_edges(data)
    eligible = np.ones(40, dtype=np.int64)
    eligible[:5] = 0
    sampler = PHRGSampler(40, pub, pri[:, (pri >= 5).all(0)], eligible, 0.1, torch.Generator().manual_seed(0))
    sampler.run(500)
    full = sample_private_edges(sampler.tree, np.ones(39), torch.Generator())
    pairs = {tuple(p) for p in full.T.tolist() if p[0] < p[1]}
    assert len(pairs) == 35 * 34 // 2 == full.shape[1] // 2
    assert all(min(p) >= 5 for p in pairs)


def test_bernoulli_positions_rate():
    sizes = np.array([1000, 0, 50000, 10], np.int64)
    probs = np.array([0.3, 0.5, 0.01, 1.0])
    group, index, _ = kernels.bernoulli_positions(sizes, probs, np.uint64(99), np.uint64(1), 0)
    counts = np.bincount(group, minlength=4)
    assert counts[1] == 0 and counts[3] == 10
    for g in (0, 2):
        assert abs(counts[g] - sizes[g] * probs[g]) < 5 * math.sqrt(sizes[g] * probs[g] * (1 - probs[g]))
        idx = index[group == g]
        assert len(np.unique(idx)) == idx.size and idx.max() < sizes[g]


# ---------------------------------------------------------------- edge releases
@pytest.mark.parametrize("release", [edge_rr, edge_rand, lap_graph])
def test_edge_releases_are_deterministic_by_seed_and_keep_public_edges(release):
    data = _graph(n=50, seed=6)
    pub, _ = split_edges(data)

    def run(seed):
        kwargs = {"steps": 2000} if release is edge_rr else {}  # the public dendrogram needs no convergence
        return release(data, 1.0, torch.Generator().manual_seed(seed), **kwargs)

    a, ga, da = run(3)
    b, _, _ = run(3)
    c, _, _ = run(4)
    assert torch.equal(a, b) and not torch.equal(a, c)
    released = {tuple(p) for p in a.T.tolist()}
    assert all(tuple(p) in released for p in pub.T.tolist())
    assert ga.epsilon == 1.0 and ga.unit == "private edge"
    assert {tuple(p) for p in a.T.tolist()} == {(v, u) for u, v in a.T.tolist()}  # undirected


def test_edge_rr_private_mcmc_guarantee_states_calibration_and_stationarity():
    data = _graph(n=50, seed=6)
    _, g, details = edge_rr(
        data, 2.0, torch.Generator().manual_seed(0), steps=1000, mcmc_share=0.25, structure="private-mcmc"
    )
    assert details["epsilon_mcmc"] == 0.5 and details["epsilon_probabilities"] == 1.5
    assert details["sensitivity"] == pytest.approx(lemma4_sensitivity(50))
    assert details["mcmc_scale"] == pytest.approx(0.5 / (2 * lemma4_sensitivity(50)))  # ε₁/(2Δ_e), not ε₁/Δ_e
    text = " ".join(g.notes)
    assert "ε₁/(2Δ_e)" in text and "stationary distribution" in text
    with pytest.raises(ValueError, match="epsilon"):
        edge_rr(data, 0.0, torch.Generator())
    with pytest.raises(ValueError, match="mcmc_share"):
        edge_rr(data, 1.0, torch.Generator(), mcmc_share=1.0)


def test_edge_rand_flip_rate():
    data = _graph(n=120, seed=7, ratio=1.0)
    eps = 1.5
    released, _, details = edge_rand(data, eps, torch.Generator().manual_seed(0))
    _, pri = split_edges(data)
    true = {tuple(p) for p in pri.T.tolist() if p[0] < p[1]}
    out = {tuple(p) for p in released.T.tolist() if p[0] < p[1]}
    universe = 120 * 119 // 2
    flips = len(true ^ out)
    p = 1 / (math.exp(eps) + 1)
    assert abs(flips - universe * p) < 5 * math.sqrt(universe * p * (1 - p))
    assert details["flipped"] == flips


def test_lap_graph_keeps_the_true_edges_at_large_epsilon_and_the_noisy_count():
    """At ε = MAX_EPSILON with ε₂ = 0.9ε every true edge outranks every non-edge: the released private
    edges are the top T̃ of them, nested with the true ones (T̃ = |E_pri| + Laplace(1/ε₁), ε₁ = 2)."""
    data = _graph(n=80, seed=8, ratio=0.4)
    _, pri = split_edges(data)
    released, _, details = lap_graph(data, MAX_EPSILON, torch.Generator().manual_seed(0), count_share=0.1)
    assert abs(details["noisy_count"] - pri.shape[1] // 2) <= 3
    assert details["released_private_edges"] == details["noisy_count"]
    out, true = ({tuple(p) for p in g.T.tolist()} for g in (released, data.edge_index))
    assert out <= true or true <= out
    _, _, small = lap_graph(data, 0.5, torch.Generator().manual_seed(1))
    assert small["released_private_edges"] == small["noisy_count"]


def test_lap_graph_top_count_matches_brute_force_distribution():
    """The band sampler's number of true edges kept has the brute-force law (KS test)."""
    data = _graph(n=30, seed=9, ratio=1.0)
    _, pri = split_edges(data)
    true = {tuple(p) for p in pri.T.tolist() if p[0] < p[1]}
    eps = 2.0
    fast, brute = [], []
    rng = np.random.default_rng(0)
    m = 30 * 29 // 2
    iu = np.triu_indices(30, 1)
    is_edge = np.array([(int(i), int(j)) in true for i, j in zip(*iu)])
    for s in range(300):
        out, _, d = lap_graph(data, eps, torch.Generator().manual_seed(s))
        fast.append(len({tuple(p) for p in out.T.tolist() if p[0] < p[1]} & true))
        t = int(min(max(round(len(true) + rng.laplace(0, 1 / (0.01 * eps))), 0), m))
        values = is_edge + rng.laplace(0, 1 / (0.99 * eps), m)
        brute.append(int(is_edge[np.argsort(-values)[:t]].sum()))
    assert stats.ks_2samp(fast, brute).pvalue > 1e-3


# -------------------------------------------------------------- FeatureRR scores
def test_budget_shares_eq7_and_bad_gamma():
    alpha = np.array([0.5, 0.3, 0.2])
    beta = np.array([0.1, 0.6, 0.3])
    theta = budget_shares(alpha, beta, 0.4)
    raw = 0.4 * alpha + 0.6 * (0.1 + (0.6 - beta))
    assert np.allclose(theta, raw / raw.sum())
    for g in (-0.1, 1.5):
        with pytest.raises(ValueError, match="gamma"):
            budget_shares(alpha, beta, g)
    x = torch.tensor([[1.0, 0.0, 0.5], [1.0, 1.0, 0.5]])
    beta_s, declared = sensitivity_scores(x, [0, 2])
    assert declared and np.allclose(beta_s, [2 / 3, 0.0, 1 / 3])
    uniform, declared = sensitivity_scores(x, None)
    assert not declared and np.allclose(uniform, 1 / 3)


def test_importance_scores_memo_is_the_fit_of_its_own_public_nodes():
    """α of eq. 6 is memoised on the public nodes' x and y: a repeated call (any seed) returns the fit's
    values, a copy; other labels are fitted anew."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(30, 4, generator=g), torch.randint(0, 3, (30,), generator=g)
    fresh = scores._importance(x.double().numpy(), y.numpy())
    first = importance_scores(x, y, seed=1)
    assert np.array_equal(first, fresh) and np.isclose(first.sum(), 1.0)
    first[:] = 0.0  # the caller's copy: the memo keeps its own
    assert np.array_equal(importance_scores(x, y, seed=2), fresh)
    other = 1 - y.clamp(max=1)
    assert np.array_equal(importance_scores(x, other), scores._importance(x.double().numpy(), other.numpy()))


def test_featurerr_and_heterorr_releases(gen):
    data = sbm_graph(seed=0)
    mark_private_edges(data, 0.2, seed=0)
    options = {"gamma": 0.5, "bins": 3, "mcmc_steps": 2000}  # 1·n moves: the public dendrogram needs no convergence
    rel = get_method("heterorr", **options).release(data, 1.0, torch.Generator().manual_seed(0))
    again = get_method("heterorr", **options).release(data, 1.0, torch.Generator().manual_seed(0))
    assert torch.equal(rel.x, again.x) and torch.equal(rel.edge_index, again.edge_index)
    units = {rel.guarantee.unit, rel.extra_guarantees[0].unit}
    assert units == {"node feature vector", "private edge"}
    assert rel.extra_guarantees[0].epsilon == rel.guarantee.epsilon == 1.0
    assert "public dendrogram" in rel.extra_guarantees[0].mechanism
    assert rel.details["features"]["bins"] == 3
    fr = get_method("featurerr").release(data, 2.0, gen)
    assert fr.guarantee.epsilon == 2.0 and any("uniform sensitivity" in n for n in fr.guarantee.notes)
    with pytest.raises(ValueError, match="bins"):
        get_method("featurerr", bins=1)
    with pytest.raises(ValueError, match="gamma"):
        get_method("featurerr", gamma=2.0)


def test_public_edges_only_releases_no_private_edge():
    """gcn-public's ε_e = 0: the released graph is exactly the public edges, whatever the private ones."""
    data = _graph(ratio=0.3)
    public, private = split_edges(data)
    rel = get_method("gcn-public").release(data, None, torch.Generator().manual_seed(0))
    assert rel.guarantee.epsilon == 0.0 and rel.guarantee.unit == "private edge"
    assert torch.equal(rel.edge_index, public)
    released = set(map(tuple, rel.edge_index.t().tolist()))
    assert not released & set(map(tuple, private.t().tolist()))
    flipped = data.clone()  # changing every private edge changes nothing in the release
    flipped.edge_index, flipped.private_edge_mask = public, torch.zeros(public.shape[1], dtype=torch.bool)
    assert torch.equal(get_method("gcn-public").release(flipped, None, torch.Generator()).edge_index, public)
    with pytest.raises(ValueError, match="private-edge annotation"):
        get_method("gcn-public").release(sbm_graph(num_nodes=60, seed=0), None, torch.Generator())


# ------------------------------------------- EdgeRR: noise floor and mixing diagnostics
def test_gelman_rubin_is_one_for_agreeing_chains_and_large_for_drifting_ones():
    rng = np.random.default_rng(0)
    same = rng.normal(size=(4, 500))
    assert hrg.gelman_rubin(same) == pytest.approx(1.0, abs=0.01)
    x = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])  # by hand: W = 2.5, B/k = 2, k = 3
    assert hrg.gelman_rubin(x) == pytest.approx(math.sqrt((2 / 3 * 2.5 + 2.0) / 2.5))
    climbing = np.stack([np.linspace(0, 10, 50) + c for c in (0.0, 20.0, 40.0)])  # far apart, still rising
    assert hrg.gelman_rubin(climbing) > 1.5
    with pytest.raises(ValueError):
        hrg.gelman_rubin(np.ones((1, 10)))


def test_noise_floor_zeroes_small_counts_at_the_laplace_tail_rate():
    """True counts 0 (no private edges): the mean released count of an unaggregated split is
    E[max(0, Lap(1/ε))·1{Lap ≥ κ/ε}] = ½e^(−κ)(κ + 1)/ε, 1/(2ε) for κ = 0 (Alg. 3 as printed)."""
    data = _graph(n=200, seed=1, ratio=0.0001)
    pub, _ = split_edges(data)
    none = torch.empty((2, 0), dtype=torch.long)
    sampler = PHRGSampler(200, pub, none, np.ones(200, dtype=np.int64), 0.1, torch.Generator().manual_seed(0))
    tree = sampler.tree
    pairs = tree.private_pairs()
    big = pairs >= 40  # the clamp at p̃ = 1 needs Lap(2) ≥ 40: probability ½e^(−20)
    eps = 0.5
    for kappa in (0.0, 1.0, 3.0):
        draws = np.concatenate(
            [
                (noisy_probabilities(tree, eps, torch.Generator().manual_seed(s), 1e9, kappa)[0] * pairs)[big]
                for s in range(400)
            ]
        )
        expected = 0.5 * math.exp(-kappa) * (kappa + 1) / eps
        assert abs(draws.mean() - expected) < 5 * draws.std() / math.sqrt(draws.size)
        assert draws.size > 5_000
        assert ((draws > 0) & (draws < kappa / eps - 1e-9)).sum() == 0  # nothing kept below the floor
    with pytest.raises(ValueError, match="noise_floor"):
        noisy_probabilities(tree, eps, torch.Generator(), 0.02, -1.0)


def test_noise_floor_keeps_counts_above_it(monkeypatch):
    """Noise off: a floor below the smallest non-zero count changes nothing, one above every count
    releases no private edge."""
    data = _graph(n=70, seed=4, ratio=0.5)
    pub, pri = split_edges(data)
    sampler = PHRGSampler(70, pub, pri, np.ones(70, dtype=np.int64), 0.1, torch.Generator().manual_seed(0))
    sampler.run(2000)
    gen = torch.Generator().manual_seed(0)
    monkeypatch.setattr(hrg, "laplace", lambda shape, scale, rng: torch.zeros(shape, dtype=torch.float64))
    plain, _ = noisy_probabilities(sampler.tree, 2.0, gen, 0.02)
    low, _ = noisy_probabilities(sampler.tree, 2.0, gen, 0.02, noise_floor=1.9)  # floor 0.95 < 1
    high, d = noisy_probabilities(sampler.tree, 2.0, gen, 0.02, noise_floor=2.0 * (pri.shape[1] + 1))
    assert np.array_equal(plain, low) and plain.sum() > 0
    assert not high.any() and d["floored_counts"] > 0


def test_extra_chains_are_diagnostics_only():
    """More chains: the same release for a seed (chain 0, drawn first), R̂ and per-chain traces added."""
    data = _graph(n=60, seed=6)
    mcmc = {"steps": 400_000, "structure": "private-mcmc"}
    one, g1, d1 = edge_rr(data, 1.0, torch.Generator().manual_seed(2), **mcmc)
    three, g3, d3 = edge_rr(data, 1.0, torch.Generator().manual_seed(2), chains=3, **mcmc)
    assert torch.equal(one, three) and g1.epsilon == g3.epsilon == 1.0
    assert "mcmc_rhat" not in d1 and d3["mcmc_chains"] == 3 and len(d3["mcmc_rise_second_half"]) == 3
    assert d3["mcmc_rhat"] >= 0.9 and math.isfinite(d3["mcmc_rhat"])
    assert "fixed in advance" in " ".join(g3.notes)
    with pytest.raises(ValueError, match="mcmc_chains"):
        edge_rr(data, 1.0, torch.Generator(), chains=0)
    m = get_method("edgerr", noise_floor=3.0, mcmc_chains=2)
    assert m.params.edge_rr_options()["noise_floor"] == 3.0
    with pytest.raises(ValueError):
        get_method("edgerr", noise_floor=-1.0)


def test_featurerr_released_code_accounting_is_not_the_default_and_states_its_total():
    """accounting='released-code' gives feature i d·θ_i·ε (the authors' code): the guarantee is the true
    total Σ ε_i (≈ d·ε), marked NOT ε-LDP; the default composes to ε."""
    data = sbm_graph(seed=0)
    d = data.x.shape[1]
    default = get_method("featurerr").release(data, 0.5, torch.Generator().manual_seed(0))
    assert default.guarantee.epsilon == 0.5 and default.details["accounting"] == "composed"
    loose = get_method("featurerr", accounting="released-code", bin_values="endpoints").release(
        data, 0.5, torch.Generator().manual_seed(0)
    )  # the same public nodes, so the same θ
    assert loose.details["accounting"] == "released-code" and loose.details["bin_values"] == "endpoints"
    assert loose.guarantee.epsilon == pytest.approx(d * 0.5, rel=1e-6)  # no share reaches the cap at ε = 0.5
    assert any(n.startswith("NOT 0.5-LDP") for n in loose.guarantee.notes)
    assert loose.details["budget_max"] == pytest.approx(d * default.details["budget_max"], rel=1e-6)
    with pytest.raises(ValueError, match="accounting"):
        get_method("featurerr", accounting="loose")
    with pytest.raises(ValueError, match="bin_values"):
        get_method("featurerr", bin_values="middle")


CONTROLLED = [
    ("featurerr", {}),
    ("featureldp", {"mechanism": "duchi"}),
    ("featureldp", {"mechanism": "piecewise"}),
    ("featureldp", {"mechanism": "three-output"}),
    ("featureldp", {"mechanism": "pm-sub"}),
]


@pytest.mark.parametrize("name,options", CONTROLLED)
def test_constant_input_control_ignores_x_and_keeps_the_mechanisms_noise(name, options):
    """control='constant-input': the release is the same for two inputs that differ outside the
    public nodes (it ignores x), equals the real release (same seed) on the nodes whose features are already
    all 0, and states 0-LDP as an experimental control; the default is the real release."""
    data = sbm_graph(seed=0)
    data.public_node_mask = torch.zeros(data.num_nodes, dtype=torch.bool)
    data.public_node_mask[::10] = True  # FeatureRR's θ comes from these, the same in every release below
    empty = torch.zeros(data.num_nodes, dtype=torch.bool)
    empty[1::3] = True
    data.x[empty] = 0.0
    other = data.clone()
    other.x[~data.public_node_mask] = 1.0 - other.x[~data.public_node_mask]

    def release(d, **extra):
        return get_method(name, **options, **extra).release(d, 1.0, torch.Generator().manual_seed(3))

    control, control_other = release(data, control="constant-input"), release(other, control="constant-input")
    real = release(data)
    assert torch.equal(control.x, control_other.x)
    assert torch.equal(control.x[empty], real.x[empty])  # the mechanism's own output on a signal-free row
    assert not torch.equal(control.x, real.x)
    assert control.guarantee.epsilon == 0.0 and real.guarantee.epsilon == 1.0
    assert any(n.startswith("EXPERIMENTAL CONTROL") for n in control.guarantee.notes)
    assert control.details["control"] == "constant-input" and real.details.get("control", "none") == "none"
    with pytest.raises(ValueError, match="control"):
        get_method(name, **options, control="shuffled")


def test_constant_input_control_release_shapes_dense_and_sampled():
    """The shapes the control compares: FeatureRR's debiased release is dense (every coordinate one of its
    feature's two values 3/4 ± 1/(4·tanh(ε_i/2)) ≈ 3/4 ± 1/(2ε_i)), the sampled mechanisms move k = 1
    coordinate per node off the domain's midpoint and leave the others at it."""
    data = sbm_graph(seed=0)
    n, d = data.x.shape
    fr = get_method("featurerr", control="constant-input").release(data, 1.0, torch.Generator().manual_seed(0))
    half = (fr.x - 0.75).abs()
    assert bool((half > 20).all())  # ε_i ≤ 0.012 here: every coordinate far from the data's [0, 1]
    assert bool(fr.x.unique(dim=0).shape[0] > 1) and all(fr.x[:, j].unique().numel() <= 2 for j in range(d))
    pw = get_method("featureldp", mechanism="piecewise", control="constant-input").release(
        data, 1.0, torch.Generator().manual_seed(0)
    )
    moved = (pw.x != 0.5).sum(dim=1)
    assert bool((moved == 1).all()) and n * d > 100 * n


@pytest.mark.parametrize("name,options", CONTROLLED[:3])
def test_standardize_control_is_the_column_zscore_of_the_same_release(name, options):
    """standardize=True: the same release (same seed), each column centred and scaled to unit
    variance by the server — post-processing, so the guarantee keeps its ε and says so."""
    data = sbm_graph(seed=0)
    plain = get_method(name, **options).release(data, 1.0, torch.Generator().manual_seed(5))
    scaled = get_method(name, **options, standardize=True).release(data, 1.0, torch.Generator().manual_seed(5))
    varying = plain.x.std(dim=0) > 0
    expected = (plain.x - plain.x.mean(dim=0)) / plain.x.std(dim=0, unbiased=False)
    assert torch.allclose(scaled.x[:, varying], expected[:, varying], atol=1e-4)
    assert torch.allclose(scaled.x[:, varying].std(dim=0, unbiased=False), torch.ones(int(varying.sum())), atol=1e-4)
    assert scaled.guarantee.epsilon == plain.guarantee.epsilon == 1.0
    assert any("standardize=True" in n for n in scaled.guarantee.notes) and scaled.details["standardize"]
    with pytest.raises(ValueError, match="standardize"):
        get_method(name, **options, standardize="yes")
