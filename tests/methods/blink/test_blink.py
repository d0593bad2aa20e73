import math

import numpy as np
import pytest
import torch
from scipy import stats

from privgraph.mechanisms import MAX_EPSILON, make_generator
from privgraph.mechanisms.graph import flip_probability
from privgraph.mechanisms.prf import philox4x32, prf_uniform
from privgraph.methods.blink import (
    beta_mle,
    clip_degrees,
    evidence_rows,
    expected_degrees,
    hard_graph,
    hybrid_graph,
    kernels,
    link_ldp,
    pairs_above,
    posterior_from_bits,
    posterior_logit,
    posterior_norm,
)

# the graph of these tests, the sbm fixture's base arguments (a test overrides some of them)
BLINK_GRAPH = {"num_nodes": 300, "num_classes": 3, "num_features": 4, "avg_degree": 6.0, "homophily": 0.8, "seed": 0}


def test_philox_known_answers():
    # Random123 known-answer vectors for philox4x32-10
    assert [int(w) for w in philox4x32((0, 0, 0, 0), (0, 0))] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    pi = philox4x32((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0))
    assert [int(w) for w in pi] == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]
    u = prf_uniform(np.full(200_000, 12345, dtype=np.uint64), np.arange(200_000))
    assert stats.kstest(u, "uniform").pvalue > 1e-4


def test_randomized_response_flip_rate_and_independence(sbm):
    data = sbm(BLINK_GRAPH, num_nodes=400)
    eps, delta = 2.0, 0.2
    rep = link_ldp(data.edge_index, data.num_nodes, eps, delta, make_generator(0))
    p = 1 / (1 + math.exp((1 - delta) * eps))
    assert rep.p_flip == pytest.approx(p)
    n = data.num_nodes
    i, j = np.triu_indices(n, 1)
    true = np.zeros((n, n), dtype=bool)
    true[data.edge_index[0].numpy(), data.edge_index[1].numpy()] = True
    b_ij, b_ji = rep.bits(i, j), rep.bits(j, i)
    flips_ij, flips_ji = b_ij ^ true[i, j], b_ji ^ true[j, i]
    for flips, truth in ((flips_ij, true[i, j]), (flips_ji, true[j, i])):
        for mask in (truth, ~truth):  # same rate for edges and non-edges
            k, m = int(flips[mask].sum()), int(mask.sum())
            assert stats.binomtest(k, m, p).pvalue > 1e-4
    # the two reports of a pair are independent
    table = np.array(
        [
            [np.sum(~flips_ij & ~flips_ji), np.sum(~flips_ij & flips_ji)],
            [np.sum(flips_ij & ~flips_ji), np.sum(flips_ij & flips_ji)],
        ]
    )
    assert stats.chi2_contingency(table).pvalue > 1e-4
    # neighbouring bits of one report are independent
    row = np.concatenate([rep.flips(np.full(n - 1, r), np.arange(n - 1)) for r in range(50)]).astype(float)
    assert abs(np.corrcoef(row[:-1], row[1:])[0, 1]) < 5 / math.sqrt(row.size)
    # a report is a fixed release: evaluating again gives the same bits
    assert np.array_equal(rep.bits(i[:1000], j[:1000]), b_ij[:1000])
    assert not rep.bits(np.arange(n), np.arange(n)).any()


def test_laplace_degree_noise_scale(sbm):
    data = sbm(BLINK_GRAPH, num_nodes=2000, avg_degree=4.0)
    eps, delta = 1.0, 0.5
    rep = link_ldp(data.edge_index, data.num_nodes, eps, delta, make_generator(1))
    deg = torch.bincount(data.edge_index[0], minlength=data.num_nodes).double()
    noise = (rep.noisy_degrees - deg).numpy()
    assert stats.kstest(noise, stats.laplace(scale=1 / (delta * eps)).cdf).pvalue > 1e-4
    assert stats.kstest(noise, stats.laplace(scale=2 / (delta * eps)).cdf).pvalue < 1e-6
    g = rep.guarantee()
    assert g.epsilon == eps and g.unit == "adjacency list"


def test_input_validation(sbm):
    data = sbm(BLINK_GRAPH, num_nodes=50)
    with pytest.raises(ValueError, match="epsilon"):
        link_ldp(data.edge_index, 50, 0.0, 0.5, make_generator(0))
    with pytest.raises(ValueError, match="degree_share"):
        link_ldp(data.edge_index, 50, 1.0, 1.5, make_generator(0))
    with pytest.raises(ValueError, match="directed"):
        link_ldp(data.edge_index[:, :1], 50, 1.0, 0.5, make_generator(0))
    loops = torch.cat([data.edge_index, torch.tensor([[3], [3]])], 1)
    with pytest.raises(ValueError, match="1 self-loop "):
        link_ldp(loops, 50, 1.0, 0.5, make_generator(0))
    with pytest.raises(ValueError):
        beta_mle(np.array([0.0, 1.0, 1.0, 1.0]))


def test_mle_fixed_point_satisfies_its_equations():
    rng = np.random.default_rng(0)
    d = rng.uniform(1, 20, size=200)
    fit = beta_mle(d, tol=1e-10)
    assert fit.converged and fit.iterations > 1
    p = 1 / (1 + np.exp(-(fit.beta[:, None] + fit.beta[None, :])))
    np.fill_diagonal(p, 0)
    assert np.allclose(p.sum(1), d, rtol=1e-7)


def test_binned_expected_degrees_match_exact():
    rng = np.random.default_rng(1)
    beta = rng.normal(-4, 1.5, size=6000)
    exact = expected_degrees(beta, exact_limit=10_000)
    approx = expected_degrees(beta, exact_limit=100)
    assert np.max(np.abs(approx / exact - 1)) < 1e-5


def test_posterior_closed_form_matches_algorithm_3_for_every_state():
    prior = np.array([0.001, 0.2, 0.5, 0.9])
    beta_sum = np.log(prior / (1 - prior))
    eps_a = 1.7
    p = 1 / (1 + math.exp(eps_a))
    for b1, b2 in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        lit = posterior_from_bits(prior, np.full(4, b1), np.full(4, b2), p)
        closed = 1 / (1 + np.exp(-posterior_logit(beta_sum, np.full(4, b1 + b2), eps_a)))
        assert np.allclose(lit, closed, rtol=1e-12)


def test_compiled_prf_equals_numpy_prf():
    from privgraph.methods.blink.kernels import prf_uniform_compiled

    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**63, size=5000, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    counters = rng.integers(0, 2**40, size=5000)
    for stream in (0, 1, 7):
        assert np.array_equal(prf_uniform_compiled(keys, counters, stream), prf_uniform(keys, counters, stream))


def test_compiled_evidence_rows_equal_lazy_bits(sbm):
    data = sbm(BLINK_GRAPH, num_nodes=120, seed=1)
    rep = link_ldp(data.edge_index, data.num_nodes, 1.0, 0.2, make_generator(3))
    rows = np.array([0, 5, 119])
    j = np.arange(rep.num_nodes)
    want = np.stack([rep.evidence(np.full_like(j, r), j) * (j != r) for r in rows])
    assert np.array_equal(evidence_rows(rep, rows), want)


@pytest.mark.parametrize("tau,below", [(0.0, math.inf), (-3.0, math.inf), (-3.0, -1.0), (2.0, 5.0)])
def test_pairs_above_visits_the_band_and_returns_exactly_the_passing_pairs(tau, below, sbm):
    data = sbm(BLINK_GRAPH, num_nodes=150, seed=2)
    rep = link_ldp(data.edge_index, data.num_nodes, 2.0, 0.3, make_generator(4))
    beta = np.random.default_rng(1).normal(-1.0, 1.5, size=150)
    i, j, visited = pairs_above(rep, beta, tau, below)
    a, b = np.triu_indices(150, 1)
    logit = posterior_logit(beta[a] + beta[b], rep.evidence(a, b), rep.epsilon_adjacency)
    keep = (logit > tau) & (logit <= below)
    assert set(zip(i.tolist(), j.tolist())) == set(zip(a[keep].tolist(), b[keep].tolist()))
    assert len(i) == keep.sum()  # no duplicates
    assert visited == int((beta[a] + beta[b] > tau - 2 * rep.epsilon_adjacency).sum())


def _plain_band_loop(rep, beta, low, high, states=False):
    """The pair loop of ``kernels.collect_band`` written plainly: chunk c takes sorted rows c, c + 64, …,
    each row its partners in ascending β, every pair tested on its evidence state (from the reports' own
    bits, ``rep.evidence``: no kernel, no symmetry assumed); with ``states``, (i, j, state) triples."""
    n = rep.num_nodes
    order = np.argsort(beta, kind="stable")
    b = beta[order]
    start = np.searchsorted(b, float(np.min(low)) - b, side="right")
    out = []
    for c in range(64):
        for a in range(c, n, 64):
            x = np.arange(max(start[a], a + 1), n)
            i, j, s = np.full(x.size, order[a]), order[x], b[a] + b[x]
            t = rep.evidence(i, j)
            keep = (low[t] < s) & (s <= high[t])
            pair = (np.minimum(i, j)[keep].tolist(), np.maximum(i, j)[keep].tolist())
            out += list(zip(*pair, t[keep].tolist())) if states else list(zip(*pair))
    return out


@pytest.mark.parametrize("eps", [0.5, 2.0, 4.0, 8.0])
def test_band_kernel_output_equals_the_plain_pair_loop_in_order(eps, sbm):
    # the compiled kernel rejects pairs whose own bit is 0 where only state 2 can pass, drawing flips as
    # integer Philox bits and reading edges from sorted neighbour positions; this must change nothing:
    # same pairs, same order (Blink-Hard's column order), for first and later Hybrid rounds (finite high)
    from privgraph.methods.blink.server import state_bounds

    data = sbm(BLINK_GRAPH, num_nodes=160, seed=6, avg_degree=12.0)
    rep = link_ldp(data.edge_index, data.num_nodes, eps, 0.2, make_generator(7))
    beta = np.random.default_rng(2).normal(-2.0, 1.5, size=160)
    keys, indptr, indices, p_flip, stream = rep.kernel_args()
    for tau, below in [(0.0, math.inf), (-4.0, math.inf), (-4.0, -2.5), (-1.0, 3.0), (-6.0, -5.0)]:
        low = state_bounds(tau, rep.epsilon_adjacency)
        high = state_bounds(below, rep.epsilon_adjacency) if math.isfinite(below) else np.full(3, math.inf)
        i, j, _, _ = kernels.collect_band(beta, keys, indptr, indices, p_flip, stream, low, high)
        want = _plain_band_loop(rep, beta, low, high)
        assert len(want) > 0
        assert list(zip(i.tolist(), j.tolist())) == want


def _edge_case_reports(n, kind, eps, seed):
    """Reports on ``n`` nodes: no edges, a random undirected graph, or (``directed``) edges listed in one
    direction only (built past ``link_ldp``'s validation, to exercise the kernels' asymmetric path)."""
    from privgraph.mechanisms.graph import RandomizedResponseReports

    rng = np.random.default_rng(seed)
    if kind == "empty" or n < 2:
        src = dst = np.zeros(0, np.int64)
    else:
        a, b = np.triu_indices(n, 1)
        keep = rng.random(a.size) < 0.3
        a, b = a[keep], b[keep]
        src, dst = (a, b) if kind == "directed" else (np.concatenate([a, b]), np.concatenate([b, a]))
    if kind == "directed":
        return RandomizedResponseReports.from_edges(src, dst, n, eps, 0.2, make_generator(seed))
    return link_ldp(torch.from_numpy(np.stack([src, dst])), n, eps, 0.2, make_generator(seed))


def _edge_case_beta(n, kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "zero":  # all-zero degrees clip to 1: one constant β, every β-sum tied
        return np.full(n, -1.5)
    if kind == "ties":
        return np.round(rng.normal(-2.0, 1.5, size=n), 0)
    return rng.normal(-2.0, 1.5, size=n)


@pytest.mark.parametrize("n", [1, 2, 3, 70])
@pytest.mark.parametrize("graph_kind", ["empty", "random", "directed"])
@pytest.mark.parametrize("beta_kind", ["zero", "ties", "normal"])
def test_band_kernel_states_and_graphs_equal_the_plain_computation_on_edge_cases(n, graph_kind, beta_kind):
    # the kernel reads Ã_ji with j's key from the β-sorted copy and A_ji = A_ij when the edges are
    # symmetric, and returns each pair's evidence state (Hybrid's and Soft's weights come from it):
    # pairs, order and states must equal the plain loop's on the reports' own bits, on empty and
    # directed graphs, n = 1, 2, tied β; the graphs then equal the brute-force ones to the bit
    from privgraph.methods.blink.server import state_bounds, thresholded_graph

    seed = 100 * n + len(graph_kind) + len(beta_kind)
    for eps in (0.5, 4.0):
        rep = _edge_case_reports(n, graph_kind, eps, seed)
        beta = _edge_case_beta(n, beta_kind, seed)
        keys, indptr, indices, p_flip, stream = rep.kernel_args()
        assert rep.is_symmetric() == (graph_kind != "directed" or indices.size == 0)
        for tau, below in [(0.0, math.inf), (-4.0, math.inf), (-4.0, -2.5), (-1.0, 3.0), (-9.0, -5.0)]:
            low = state_bounds(tau, rep.epsilon_adjacency)
            high = state_bounds(below, rep.epsilon_adjacency) if math.isfinite(below) else np.full(3, math.inf)
            want = _plain_band_loop(rep, beta, low, high, states=True)
            for symmetric in {rep.is_symmetric(), False}:  # the shortcut and the lookup of A_ji
                i, j, t, _ = kernels.collect_band(beta, keys, indptr, indices, p_flip, stream, low, high, 0, symmetric)
                assert t.dtype == np.uint8
                assert list(zip(i.tolist(), j.tolist(), t.tolist())) == want
        a, b = np.triu_indices(n, 1)
        logit = posterior_logit(beta[a] + beta[b], rep.evidence(a, b), rep.epsilon_adjacency)
        # Hard: the passing pairs in the plain loop's order, both directions
        hard = hard_graph(rep, beta)
        pairs = np.array(_plain_band_loop(rep, beta, state_bounds(0.0, rep.epsilon_adjacency), np.full(3, math.inf)))
        first, second = pairs.reshape(-1, 2).T
        assert torch.equal(hard.edge_index, torch.from_numpy(np.stack([np.r_[first, second], np.r_[second, first]])))
        # Hybrid: the top ⌊‖P‖₁⌋/2 pairs by (−logit, i·n + j), weights σ(logit) as float32
        norm, _ = posterior_norm(rep, beta)
        k = int(math.floor(norm)) // 2
        hyb = hybrid_graph(rep, beta)
        top = np.lexsort((a * n + b, -logit))[:k]
        want_ei = np.stack([np.r_[a[top], b[top]], np.r_[b[top], a[top]]])
        assert torch.equal(hyb.edge_index, torch.from_numpy(want_ei).long())
        p = 0.5 * (1.0 + np.tanh(0.5 * logit[top]))
        assert torch.equal(hyb.edge_weight, torch.from_numpy(np.r_[p, p]).float())
        # truncated Soft: pairs with P > 0.05, weights from the kernel's states
        soft = thresholded_graph(rep, beta, 0.05)
        keep = {(x, y): w for x, y, w in zip(a.tolist(), b.tolist(), (0.5 * (1.0 + np.tanh(0.5 * logit))).tolist())}
        got = list(zip(soft.edge_index[0].tolist(), soft.edge_index[1].tolist(), soft.edge_weight.tolist()))
        half = got[: len(got) // 2]
        assert sorted((x, y) for x, y, _ in half) == sorted(pq for pq, w in keep.items() if w > 0.05)
        assert all(w == np.float32(keep[(x, y)]) for x, y, w in half)


def test_integer_flip_threshold_equals_the_float_comparison():
    from privgraph.mechanisms.prf import _INV53, uniform_below_bits

    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**62, size=20000).astype(np.uint64)
    counters = rng.integers(0, 2**31, size=20000)
    for p in (flip_probability(e) for e in (0.0, 0.3, 3.6, 7.2, 30.0)):
        threshold = uniform_below_bits(p)
        # the boundary itself: the last bit pattern below p and the first at or above it
        assert (np.float64(threshold - 1) + 0.5) * _INV53 < p <= (np.float64(threshold) + 0.5) * _INV53
        bits = kernels.prf_bits_compiled(keys, counters, 1)
        assert np.array_equal(bits < threshold, kernels.prf_uniform_compiled(keys, counters, 1) < p)


def _dense_posterior(rep, beta):
    n = rep.num_nodes
    i, j = np.triu_indices(n, 1)
    logit = posterior_logit(beta[i] + beta[j], rep.evidence(i, j), rep.epsilon_adjacency)
    return i, j, 1 / (1 + np.exp(-logit))


@pytest.mark.parametrize("eps", [1.0, 4.0, 8.0])
def test_hard_and_hybrid_equal_brute_force(eps, sbm):
    data = sbm(BLINK_GRAPH, num_nodes=250, seed=3)
    rep = link_ldp(data.edge_index, data.num_nodes, eps, 0.3, make_generator(5))
    beta = beta_mle(clip_degrees(rep.noisy_degrees, rep.num_nodes)).beta
    i, j, P = _dense_posterior(rep, beta)
    hard = hard_graph(rep, beta)
    want = {(a, b) for a, b, v in zip(i, j, P) if v > 0.5}
    got = {(a, b) for a, b in hard.edge_index.t().tolist() if a < b}
    assert got == want
    assert hard.edge_index.shape[1] == 2 * len(want)
    # Hybrid: top ⌊‖P‖₁⌋ entries = top ⌊‖P‖₁⌋/2 symmetric pairs
    norm, exact = posterior_norm(rep, beta)
    assert exact and norm == pytest.approx(2 * P.sum(), rel=1e-9)
    k = int(math.floor(2 * P.sum())) // 2
    order = np.lexsort((i * rep.num_nodes + j, -P))[:k]
    hyb = hybrid_graph(rep, beta)
    got = {(a, b): w for (a, b), w in zip(hyb.edge_index.t().tolist(), hyb.edge_weight.tolist()) if a < b}
    assert set(got) == set(zip(i[order].tolist(), j[order].tolist()))
    assert np.allclose([got[(a, b)] for a, b in zip(i[order], j[order])], P[order], rtol=1e-6)
    assert hyb.visited_pairs <= len(i)


def test_posterior_norm_estimate_close_to_exact(sbm):
    data = sbm(BLINK_GRAPH, num_nodes=1500, seed=4, avg_degree=8.0)
    rep = link_ldp(data.edge_index, data.num_nodes, 4.0, 0.2, make_generator(2))
    beta = beta_mle(clip_degrees(rep.noisy_degrees, rep.num_nodes)).beta
    exact, _ = posterior_norm(rep, beta)
    approx, is_exact = posterior_norm(rep, beta, exact_limit=10)
    assert not is_exact
    assert approx == pytest.approx(exact, rel=0.1)


def test_posterior_approaches_true_graph_as_epsilon_grows(sbm):
    """Theorem 4.7: P → A as ε → ∞."""
    data = sbm(BLINK_GRAPH, num_nodes=300, seed=6)
    n = data.num_nodes
    A = np.zeros((n, n))
    A[data.edge_index[0].numpy(), data.edge_index[1].numpy()] = 1
    errors = []
    for eps in (1.0, 4.0, 16.0, MAX_EPSILON):
        rep = link_ldp(data.edge_index, n, eps, 0.1, make_generator(7))
        beta = beta_mle(clip_degrees(rep.noisy_degrees, n)).beta
        i, j, P = _dense_posterior(rep, beta)
        errors.append(float(np.abs(P - A[i, j]).mean()))
    assert all(a > b for a, b in zip(errors, errors[1:]))
    assert errors[-1] < 1e-6


def test_hybrid_refuses_to_run_away(sbm):
    data = sbm(BLINK_GRAPH, num_nodes=250, seed=3)
    rep = link_ldp(data.edge_index, data.num_nodes, 1.0, 0.3, make_generator(5))
    beta = beta_mle(clip_degrees(rep.noisy_degrees, rep.num_nodes)).beta
    with pytest.raises(RuntimeError, match="max_visits"):
        hybrid_graph(rep, beta, max_visits=10)


def test_blink_method_in_runner_uses_the_private_graph():
    from privgraph.experiments import ExperimentSpec, run_experiment

    synth = dict(
        num_nodes=600,
        num_classes=3,
        num_features=30,
        avg_degree=8.0,
        homophily=0.9,
        feature_signal=0.05,
        base_rate=0.05,
    )
    fast = {"epochs": 80, "patience": 30}
    results = {}
    for method, variant, eps in (
        ("blink", "hard", [1.0, 16.0]),
        ("blink", "hybrid", [16.0]),
        ("blink", "soft", [16.0]),
        ("mlp", None, []),
    ):
        spec = ExperimentSpec(
            method=method,
            params={"variant": variant} if variant else {},
            dataset="sbm",
            epsilons=eps,
            trials=2,
            synthetic=synth,
            hyperparameters=fast,
            diagnostics=True,
        )
        res = run_experiment(spec)
        for row in res.summary():
            results[(row["mechanism"], row["epsilon"])] = row["mean"]
        if method == "blink":
            rec = res.records[0]
            assert rec.guarantee["by_unit"]["adjacency list"]["epsilon"] == rec.epsilon
            assert rec.config["release"]["mle_converged"]
    # with a nearly exact graph, the GNN beats the graph-free MLP on these weak features
    assert results[("blink-hard", 16.0)] > results[(None, None)] + 0.1
    assert results[("blink-hybrid", 16.0)] > results[(None, None)] + 0.1
    assert results[("blink-soft", 16.0)] > results[(None, None)] + 0.1
    assert results[("blink-hard", 16.0)] >= results[("blink-hard", 1.0)]


def test_tune_chooses_the_degree_share_from_the_grid_and_states_the_selection_cost():
    from privgraph.experiments import ExperimentSpec, run_experiment

    synth = dict(num_nodes=300, num_classes=3, num_features=10, avg_degree=6.0, homophily=0.9)
    spec = ExperimentSpec(
        method="blink",
        params={"variant": "hard"},
        dataset="sbm",
        epsilons=[2.0],
        trials=2,
        synthetic=synth,
        hyperparameters={"epochs": 30, "patience": 10},
        tune=True,
        tune_budget=1,
        diagnostics=True,
    )
    res = run_experiment(spec)
    chosen = {r.config["params"]["degree_share"] for r in res.records}
    assert len(chosen) == 1 and chosen <= {0.1, 0.3, 0.5, 0.7, 0.9}
    assert all(r.config["release"]["degree_share"] == r.config["params"]["degree_share"] for r in res.records)
    notes = " ".join(res.records[0].guarantee["guarantees"][0]["notes"])
    assert "5 candidate releases" in notes and "= 10" in notes
    assert res.to_json()["results"][0]["release_options"] == {
        "degree_share": res.records[0].config["params"]["degree_share"]
    }
    # the ε a user reads is the ε spent: 5 candidates at ε = 2 each
    assert res.records[0].guarantee["by_unit"]["adjacency list"]["epsilon"] == 10.0
    row = res.to_json()["results"][0]
    assert (row["epsilon_spent"], row["releases"], row["epsilon"]) == (10.0, 5, 2.0)
    from rich.console import Console

    from privgraph.cli import print_result

    console = Console(record=True, width=200)
    print_result(res, console)
    shown = console.export_text()
    assert "10 (5 × 2)" in shown and "ε = 2 × 5 releases: 10-LDP per adjacency list" in shown
    assert "no more than a factor" in shown and "(ε = 10)" in shown  # the plain sentence too
    # a δ given by the user is used as it is and costs no selection
    spec = ExperimentSpec(
        method="blink",
        params={"variant": "hard", "degree_share": 0.7},
        dataset="sbm",
        epsilons=[2.0],
        trials=1,
        synthetic=synth,
        hyperparameters={"epochs": 30, "patience": 10},
        tune=True,
        tune_budget=1,
        diagnostics=True,
    )
    rec = run_experiment(spec).records[0]
    assert rec.config["release"]["degree_share"] == 0.7 and rec.config["selection_releases"] == 0


def test_blink_variant_and_delta_validation():
    from privgraph.experiments import ExperimentSpec

    with pytest.raises(ValueError, match="variant"):
        ExperimentSpec(method="blink", params={"variant": "medium"}).validate()
    with pytest.raises(ValueError, match="degree_share"):
        ExperimentSpec(method="blink", params={"degree_share": 1.5}).validate()


def test_rr_and_symrr_graphs(sbm):
    from privgraph.methods import get_method

    data = sbm(BLINK_GRAPH, num_nodes=200, seed=8)
    n = data.num_nodes
    eps = 2.0
    p = 1 / (1 + math.exp(eps))
    true = set(map(tuple, data.edge_index.t().tolist()))
    rr = get_method("rr").release(data, eps, make_generator(3))
    edges = set(map(tuple, rr.edge_index.t().tolist()))
    kept = sum((j, i) in edges for (j, i) in true) / len(true)
    assert abs(kept - (1 - p)) < 0.05
    false_pos = len(edges - true) / (n * (n - 1) - len(true))
    assert stats.binomtest(len(edges - true), n * (n - 1) - len(true), p).pvalue > 1e-4 and false_pos > 0
    assert rr.guarantee.epsilon == eps and rr.guarantee.unit == "adjacency list"
    sym = get_method("symrr").release(data, eps, make_generator(3))
    sym_edges = set(map(tuple, sym.edge_index.t().tolist()))
    assert all((b, a) in sym_edges for a, b in sym_edges)
    # SymRR's pair {i<j} equals node i's RR report about j (same keys, same seed)
    assert {(a, b) for a, b in sym_edges if a < b} == {(i, j) for (j, i) in edges if i < j}


def test_soft_exact_posterior_matrix_and_truncation_bound(sbm):
    from privgraph.methods.blink.soft import PosteriorAdjacency, soft_graph

    data = sbm(BLINK_GRAPH, num_nodes=200, seed=8)
    rep = link_ldp(data.edge_index, data.num_nodes, 3.0, 0.2, make_generator(9))
    beta = beta_mle(clip_degrees(rep.noisy_degrees, rep.num_nodes)).beta
    n = rep.num_nodes
    i, j, P = _dense_posterior(rep, beta)
    dense = np.zeros((n, n))
    dense[i, j] = P
    dense += dense.T
    op = PosteriorAdjacency(rep, beta, block=64)
    assert np.allclose(op.to_dense().numpy(), dense, atol=1e-6)
    x = torch.rand(n, 3, dtype=torch.float64)
    assert np.allclose(op.matmul(x).numpy(), dense @ x.numpy(), atol=1e-5)
    exact = soft_graph(rep, beta)
    assert exact.adjacency is not None and exact.details["soft"] == "exact"
    # truncated path: P_τ keeps exactly the entries above τ, and the error of P_τ·X
    # is bounded row-wise by the dropped mass (times max |X|)
    tau = 0.02
    approx = soft_graph(rep, beta, exact_limit=10, min_probability=tau)
    ei, w = approx.graph.edge_index.numpy(), approx.graph.edge_weight.numpy()
    trunc = np.zeros((n, n))
    trunc[ei[0], ei[1]] = w
    assert np.allclose(trunc, np.where(dense > tau, dense, 0.0), atol=1e-6)
    dropped_rows = dense.sum(1) - trunc.sum(1)
    err = np.abs(dense @ x.numpy() - trunc @ x.numpy()).max(1)
    assert np.all(err <= dropped_rows * np.abs(x.numpy()).max() + 1e-6)
    assert approx.details["dropped_mass"] == pytest.approx(dropped_rows.sum(), rel=0.1)


def test_stored_trials_with_the_old_delta_key_are_re_keyed_on_read():
    """A store written before the rename (release_options {"delta": 0.3}) still resumes a tuned setting."""
    from privgraph.experiments.pipeline import TunedSetting
    from privgraph.experiments.store import TrialRecord

    config = {"release_options": {"delta": 0.3}, "selection": [{"values": {"delta": 0.3}, "score": 0.5}]}
    record = TrialRecord("r", "blink", "cora", "gcn", None, 1.0, None, 0, 0, config, {}, {}, 0.0)
    tuned = TunedSetting.from_record(record)
    assert tuned.release_options == {"degree_share": 0.3} and tuned.scores == [({"degree_share": 0.3}, 0.5)]
    from privgraph.methods import get_method

    assert get_method("blink").with_params(**tuned.release_options).params.degree_share == 0.3
