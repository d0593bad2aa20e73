"""The link-LDP baselines of the Blink paper: L-DpGCN, DPRR, LDPGen, Solitude."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from privgraph.mechanisms import MAX_EPSILON, make_generator
from privgraph.methods import get_method
from privgraph.methods.base import Hyperparameters
from privgraph.methods.blink.baselines import LaplaceAdjacencyReports

# the graph of these tests, the sbm fixture's base arguments (a test overrides some of them)
BLINK_GRAPH = {"num_nodes": 200, "num_classes": 3, "num_features": 4, "avg_degree": 6.0, "homophily": 0.8, "seed": 0}


def release(name, data, eps, seed=0, **options):
    return get_method(name, **options).release(data, eps, make_generator(seed))


@pytest.mark.parametrize("scale_factor,should_pass", [(1.0, True), (2.0, False)])
def test_laplace_reports_have_scale_one_over_epsilon(scale_factor, should_pass, sbm):
    data = sbm(BLINK_GRAPH, num_nodes=300, seed=1)
    eps = 2.0
    rep = LaplaceAdjacencyReports.collect(data.edge_index, data.num_nodes, eps, make_generator(4))
    rows, values = rep.rows(0, 300)
    A = np.zeros((300, 300), dtype=bool)
    A[data.edge_index[0].numpy(), data.edge_index[1].numpy()] = True
    noise = np.where(A, values - 1.0, values)[~np.eye(300, dtype=bool)]
    p = stats.kstest(noise, stats.laplace(scale=scale_factor / eps).cdf).pvalue
    assert (p > 1e-3) == should_pass
    # the reports are fixed: evaluating them twice gives the same values
    assert np.array_equal(rep.rows(10, 20)[1], values[10:20])
    assert rep.guarantee().epsilon == eps


def test_ldpgcn_keeps_the_estimated_number_of_top_pairs_of_the_summed_reports(sbm):
    data = sbm(BLINK_GRAPH, num_nodes=250, seed=2)
    true = {(i, j) for i, j in data.edge_index.t().tolist() if i < j}
    hi = release("ldpgcn", data, MAX_EPSILON)  # noise scale 1/ε = 0.05: the top pairs are the true links
    src, dst = hi.edge_index
    assert torch.equal(torch.sort(src * 250 + dst).values, torch.sort(dst * 250 + src).values)  # undirected
    kept = {(i, j) for i, j in hi.edge_index.t().tolist() if i < j}
    m = hi.details["estimated_links"]  # round(Σ Ã_ij / 2) pairs
    assert len(kept) == m and (kept <= true or true <= kept)
    assert abs(m - len(true)) < 5 / MAX_EPSILON * math.sqrt(250 * 249)
    lo = release("ldpgcn", data, 1.0, seed=3)
    m = lo.details["estimated_links"]
    # Σ Ã_ij = 2|E| + a sum of n(n−1) Laplace(1) variables (std √(2n(n−1))), halved
    assert abs(m - len(true)) < 5 * math.sqrt(2 * 250 * 249) / 2
    assert lo.edge_index.shape[1] == 2 * m
    assert lo.guarantee.unit == "adjacency list" and lo.guarantee.epsilon == 1.0


def test_ldpgcn_pair_sums_add_both_endpoints_reports(sbm):
    """The server's Ã + Ãᵀ (the Blink authors' L-DpGCN) is the sum of i's and j's own reports."""
    data = sbm(BLINK_GRAPH, num_nodes=120, seed=4)
    rep = LaplaceAdjacencyReports.collect(data.edge_index, 120, 1.0, make_generator(0))
    _, full = rep.rows(0, 120)
    rows, sums = rep.pair_sums(30, 50)
    off = ~np.eye(120, dtype=bool)[30:50]
    assert np.allclose(sums[off], (full[30:50] + full[:, 30:50].T)[off])
    assert np.isneginf(sums[~off]).all()


def test_dprr_keeps_as_many_reports_as_the_noisy_degree_in_expectation(sbm):
    data = sbm(BLINK_GRAPH, num_nodes=400, seed=5, avg_degree=10.0)
    n = data.num_nodes
    rel = release("dprr", data, 2.0, seed=6, degree_share=0.5)
    kept = np.bincount(rel.edge_index[1].numpy(), minlength=n)  # messages j → i: row i kept
    true_deg = np.bincount(data.edge_index[0].numpy(), minlength=n)
    # E[kept_i] = d̃_i whose expectation is d_i (clip at 0 aside): the mean difference is ~0
    diff = kept - true_deg
    assert abs(diff.mean()) < 4 * diff.std() / math.sqrt(n)
    assert rel.edge_index.shape[1] < rel.details["reported_ones"]
    assert rel.guarantee.epsilon == 2.0
    with pytest.raises(ValueError, match="degree_share"):
        release("dprr", data, 2.0, degree_share=1.0)


def test_ldpgen_synthesises_a_graph_of_about_the_right_size(sbm):
    data = sbm(BLINK_GRAPH, num_nodes=600, seed=7, avg_degree=10.0)
    rel = release("ldpgen", data, 8.0, seed=1)
    ei = rel.edge_index
    assert ei.shape[1] > 0 and not (ei[0] == ei[1]).any()
    pairs = set(map(tuple, ei.t().tolist()))
    assert all((b, a) in pairs for a, b in pairs)  # undirected
    m_true = data.edge_index.shape[1]
    assert 0.6 * m_true < ei.shape[1] < 1.3 * m_true  # Chung–Lu keeps the noisy degree mass
    assert rel.details["clusters"] >= 2 and rel.guarantee.epsilon == 8.0


def test_solitude_learns_weights_in_the_unit_interval_and_sparsifies(sbm):
    from privgraph.experiments import ExperimentSpec, run_experiment

    synth = dict(num_nodes=300, num_classes=3, num_features=10, avg_degree=6.0, homophily=0.9)
    spec = ExperimentSpec(
        method="solitude",
        dataset="sbm",
        epsilons=[1.0],
        trials=1,
        synthetic=synth,
        hyperparameters={"epochs": 40, "patience": 40},
    )
    exp_result = run_experiment(spec)
    assert exp_result.records[0].guarantee["by_unit"]["adjacency list"]["epsilon"] == 1.0
    # the model itself: weights stay in [0, 1] and the ℓ1 penalty pulls them down
    data = sbm(BLINK_GRAPH, num_nodes=300, seed=2)
    method = get_method("solitude", lambda1=0.0, lambda2=1.0)
    rel = method.release(data, 1.0, make_generator(0))
    model = method.build_model("gcn", data.x.shape[1], 3, Hyperparameters(), rel)
    from privgraph.data import stratified_split
    from privgraph.train import train_node_classifier

    d = stratified_split(data, seed=0)
    torch.manual_seed(0)
    train_node_classifier(
        model, rel.x, rel.edge_index, d.y, d.y, d.train_mask, d.val_mask, d.test_mask, epochs=30, patience=None
    )
    w = model.adjacency.detach()
    assert float(w.min()) >= 0.0 and float(w.max()) < 1.0  # the ℓ1 penalty has pulled every weight below Ã = 1
    with pytest.raises(ValueError, match="GAT"):
        method.build_model("gat", 4, 3, Hyperparameters(), rel)


@pytest.mark.parametrize("scale_factor,should_pass", [(1.0, True), (2.0, False)])
def test_ldpgen_degree_vector_noise_scale(scale_factor, should_pass, monkeypatch, sbm):
    from privgraph.methods.blink import ldpgen

    data = sbm(BLINK_GRAPH, num_nodes=400, seed=3)
    groups = np.arange(400) % 4
    counts = ldpgen.noisy_degree_vectors(data.edge_index, groups, 4, 1e9, make_generator(0))  # ~no noise
    noisy = ldpgen.noisy_degree_vectors(data.edge_index, groups, 4, 0.5, make_generator(1))
    p = stats.kstest((noisy - np.round(counts)).ravel(), stats.laplace(scale=scale_factor / 0.5).cdf).pvalue
    assert (p > 1e-3) == should_pass
    # LDPGen spends ε/2 per round: each round's reports use ε/2
    seen = []
    real = ldpgen.noisy_degree_vectors
    monkeypatch.setattr(ldpgen, "noisy_degree_vectors", lambda *a: seen.append(a[3]) or real(*a))
    release("ldpgen", sbm(BLINK_GRAPH, num_nodes=300, seed=4), 3.0)
    assert seen == [1.5, 1.5]
