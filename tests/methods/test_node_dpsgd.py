"""Node-level DP-SGD (Daigavane et al. 2021): the degree bound, the K+1 loss terms a node touches, exact
per-node clipping, the noise scale, reproducibility, the release and its guarantee, utility without noise."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from scipy import stats
from torch_geometric.data import Data

import privgraph as pg
from privgraph.accounting import Unit
from privgraph.accounting.node_level import node_level_epsilon
from privgraph.mechanisms import make_generator
from privgraph.methods import get_method
from privgraph.methods.base import Hyperparameters, Release
from privgraph.methods.node_dpsgd import (
    NodeDPSGDNet,
    NodeDPSGDParams,
    aggregate,
    bound_degree,
    clipped_sum,
    noise_std,
    noisy_gradient,
    per_node_losses,
)
from privgraph.request import Shared


def random_graph(n: int = 60, edges: int = 500, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, edges), generator=g)
    ei = ei[:, ei[0] != ei[1]]
    return torch.unique(ei, dim=1)


def degrees(edge_index: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.bincount(edge_index[0], minlength=n), torch.bincount(edge_index[1], minlength=n)


@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_degree_bound_respected_and_edges_kept_from_the_input(k):
    ei = random_graph()
    out = bound_degree(ei, k, make_generator(k))
    deg_out, deg_in = degrees(out, 60)
    assert int(deg_out.max()) <= k and int(deg_in.max()) <= k
    original = {tuple(e) for e in ei.t().tolist()}
    assert {tuple(e) for e in out.t().tolist()} <= original
    if k > 0:  # maximal-ish: a node with in-degree ≥ K in the input keeps some in-edges
        assert out.shape[1] > 0


def test_in_edges_sampled_uniformly():
    """A target with d = 12 in-edges from distinct sources (each of out-degree 1): each kept with
    probability K/d, every K-subset equally likely in count (χ² test over 1,500 draws)."""
    d, k, draws = 12, 4, 1500
    ei = torch.stack([torch.arange(1, d + 1), torch.zeros(d, dtype=torch.long)])
    counts = np.zeros(d)
    rng = make_generator(7)
    for _ in range(draws):
        kept = bound_degree(ei, k, rng)
        assert kept.shape[1] == k
        counts[kept[0].numpy() - 1] += 1
    assert stats.chisquare(counts, np.full(d, draws * k / d)).pvalue > 1e-3


def per_node_gradients(net: NodeDPSGDNet, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Every node's loss gradient, one autograd call per node (the reference for the vectorised code)."""
    rows = []
    for v in range(z.shape[0]):
        loss = per_node_losses(net, z[v : v + 1], y[v : v + 1]).sum()
        grads = torch.autograd.grad(loss, list(net.parameters()))
        rows.append(torch.cat([g.flatten() for g in grads]))
    return torch.stack(rows)


def clip_rows(g: torch.Tensor, c: float) -> torch.Tensor:
    return g * torch.clamp(c / g.norm(dim=1, keepdim=True).clamp_min(1e-12), max=1.0)


@pytest.mark.parametrize("conv,aggregation", [("sage", "mean"), ("gcn", "sum")])
def test_removing_a_node_changes_at_most_k_plus_one_terms(conv, aggregation):
    """Zero-out a node v in Ĝ (its features 0, its edges gone): only v's own clipped gradient and those of its
    ≤ K out-neighbours in Ĝ change, each by at most 2C; every other node's is bit-identical."""
    n, k, c = 60, 3, 0.5
    torch.manual_seed(0)
    x, y = torch.randn(n, 5), torch.randint(0, 3, (n,))
    graph = bound_degree(random_graph(n), k, make_generator(1))
    net = NodeDPSGDNet(5, 8, 3, 1, conv, aggregation).double()
    deg_out, _ = degrees(graph, n)
    v = int(deg_out.argmax())
    assert int(deg_out[v]) == k  # the test exercises a node at the bound
    x0 = x.clone()
    x0[v] = 0
    without = graph[:, (graph[0] != v) & (graph[1] != v)]
    g1 = clip_rows(per_node_gradients(net, aggregate(x.double(), graph, conv, aggregation), y), c)
    g0 = clip_rows(per_node_gradients(net, aggregate(x0.double(), without, conv, aggregation), y), c)
    changed = set(torch.nonzero((g1 != g0).any(dim=1)).flatten().tolist())
    allowed = {v, *graph[1, graph[0] == v].tolist()}
    assert v in changed and changed <= allowed and len(allowed) <= k + 1
    assert float((g1 - g0).norm(dim=1).max()) <= 2 * c + 1e-12


def test_per_node_clipping_is_exact():
    """The ghost-clipped sum equals clipping a per-node autograd loop's gradients and summing."""
    torch.manual_seed(3)
    n, c = 40, 0.3
    x, y = torch.randn(n, 6, dtype=torch.float64), torch.randint(0, 4, (n,))
    net = NodeDPSGDNet(6, 10, 4, 2).double()
    z = aggregate(x, random_graph(n, 200), "sage", "mean")
    summed, norms = clipped_sum(net, z, y, c)
    reference = per_node_gradients(net, z, y)
    np.testing.assert_allclose(norms.numpy(), reference.norm(dim=1).numpy(), rtol=1e-10)
    assert float((norms > c).float().mean()) > 0.5  # clipping binds for most nodes
    flat = torch.cat([summed[name].flatten() for name, _ in net.named_parameters()])
    np.testing.assert_allclose(flat.numpy(), clip_rows(reference, c).sum(0).numpy(), rtol=1e-9, atol=1e-12)


def test_noise_scale_chi_square():
    """The step's noise, (m·gradient − clipped sum)/(σ·2(K+1)C), is N(0, 1) per coordinate: its sum of squares
    over the d coordinates of several steps is χ²; the same test rejects a 5% smaller std."""
    torch.manual_seed(0)
    n, k, c, sigma = 50, 4, 0.7, 1.3
    x, y = torch.randn(n, 20), torch.randint(0, 3, (n,))
    net = NodeDPSGDNet(20, 32, 3)
    z = aggregate(x, random_graph(n, 300), "sage", "mean")
    p = NodeDPSGDParams(max_degree=k, clip=c)
    batch = torch.arange(0, n, 2)
    exact, _ = clipped_sum(net, z[batch], y[batch], c)
    rng = make_generator(11)
    residuals = []
    for _ in range(5):
        noisy = noisy_gradient(net, z, y, batch, p, sigma, rng)
        residuals += [(len(batch) * noisy[name] - exact[name]).flatten().double() for name in exact]
    r = torch.cat(residuals)
    std = noise_std(sigma, k, c)
    assert std == pytest.approx(sigma * 2 * (k + 1) * c)
    d = r.numel()
    stat = float((r / std).square().sum())
    assert stats.chi2.sf(stat, d) > 1e-4 and stats.chi2.cdf(stat, d) > 1e-4
    assert stats.chi2.sf(float((r / (0.95 * std)).square().sum()), d) < 1e-6


# the graph of these tests, the sbm fixture's base arguments (a test overrides some of them)
SMALL_GRAPH = {
    "num_nodes": 400,
    "num_classes": 3,
    "num_features": 30,
    "avg_degree": 6,
    "feature_signal": 0.3,
    "seed": 0,
}


def within(data: Data, **params) -> dict:
    """node-dpsgd's parameters within the bounded-degree domain of ``data``: K its largest out-degree (the
    tests' stand-in for a public cap), N its training-node count (public: the split is a public field)."""
    k = int(torch.bincount(data.edge_index[0], minlength=data.num_nodes).max())
    return {"max_degree": k, "num_train": int(data.train_mask.sum()), **params}


def noiseless(data, method, rng):
    """The method's own release hook without noise (ε = None): what no request allows (node-dpsgd needs ε), to
    test the training without the noise."""
    request = SimpleNamespace(epsilon=None, label_epsilon=None, progress=None, shared=Shared())
    return method.privatize(data, request, rng)


def test_release_reproducible_and_guarantee(sbm):
    data = sbm(SMALL_GRAPH)
    k = within(data)["max_degree"]
    method = get_method("node-dpsgd", epochs=2, batch_size=32, **within(data))
    a = pg.privatize(data, method, epsilon=4.0, rng=make_generator(5))
    b = pg.privatize(data, method, epsilon=4.0, rng=make_generator(5))
    c = pg.privatize(data, method, epsilon=4.0, rng=make_generator(6))
    assert all(torch.equal(a.model_state[k], b.model_state[k]) for k in a.model_state)
    assert not all(torch.equal(a.model_state[k], c.model_state[k]) for k in a.model_state)
    g = a.report.guarantees[0]
    assert g.unit == Unit.restricted_node(k) == f"node (degree ≤ {k})" and g.epsilon == 4.0 and g.delta == 1e-5
    assert "restricted node-DP" in g.mechanism and "not node-DP on arbitrary graphs" in " ".join(g.notes)
    n_train = int(data.train_mask.sum())
    accountant = node_level_epsilon(a.details["noise_multiplier"], n_train, 32, k, 2 * n_train // 32, 1e-5)
    assert a.details["accountant_epsilon"] == pytest.approx(accountant)
    assert a.details["steps"] == 2 * n_train // 32
    assert 3.99 < accountant <= 4.0  # σ is the smallest that meets the target
    for name in ("x", "y", "edge_index"):  # the unit's fields are never copied
        assert name not in a.data and a.fields[name].startswith("withheld")
    assert any("not covered" in note for note in g.notes)
    with pytest.raises(ValueError, match="truth=data"):  # no y in the release: the user's labels evaluate it
        pg.fit(a)
    fitted = [pg.fit(a, seed=s, truth=data).test_accuracy for s in (0, 3)]
    assert fitted[0] == fitted[1]  # the released weights evaluated, nothing trained
    spend = method.planned_spend(4.0)
    assert spend[0].unit == Unit.restricted_node(k) and spend[0].epsilon == 4.0 and spend[0].delta == 1e-5
    for gap_or_not in (method, get_method("gap-ndp")):  # the labels are in the unit: no label LDP on top
        with pytest.raises(ValueError, match="label LDP does not apply"):
            pg.privatize(data, gap_or_not, epsilon=4.0, rng=make_generator(5), label_epsilon=1.0)


def test_learns_without_noise_and_is_worse_with_much_noise(sbm):
    data = sbm(SMALL_GRAPH, seed=1)
    method = get_method("node-dpsgd", epochs=30, batch_size=32, lr=0.02, **within(data))
    accuracy = {}
    for eps in (None, 0.1):
        rel = (
            noiseless(data, method, make_generator(0))
            if eps is None
            else pg.privatize(data, method, epsilon=eps, rng=make_generator(0))
        )
        accuracy[eps] = method.fit(Release.from_private(rel), data, "node-dpsgd", Hyperparameters(), 0).test_accuracy
        if eps is None:
            assert math.isinf(rel.report.guarantees[0].epsilon)
    assert accuracy[None] > 0.8  # 3 classes: chance is 1/3
    assert accuracy[0.1] < accuracy[None] - 0.1


# ---------------------------------------------------------------- audit


def test_step_audit_consistent_and_catches_a_degree_blind_copy():
    """The white-box audit of the node-level step: consistent at the accountant's σ; a copy whose noise takes
    the sensitivity as C (ignoring the K+1 terms a node reaches) is caught."""
    from privgraph.audit import audit_node_dpsgd_step
    from privgraph.audit.node_dpsgd import reached_terms

    assert reached_terms(3, 0) == 4  # the degree bound leaves the canary K out-edges of its 3K + 1
    row = audit_node_dpsgd_step(1.0, max_degree=3, samples=6000)
    assert row.verdict == "consistent" and row.epsilon_lb <= 1.0
    blind = audit_node_dpsgd_step(1.0, max_degree=3, samples=6000, noise_std_of=lambda s, k, c: s * c)
    assert blind.verdict == "VIOLATION" and blind.epsilon_lb > 1.0


def test_black_box_audit_runs_through_the_registered_definition():
    from privgraph.audit import audit_method, definition
    from privgraph.audit.node_dpsgd import _node_dpsgd

    assert definition("node-dpsgd") is _node_dpsgd
    report = audit_method(None, "node-dpsgd", epsilon=2.0, samples=16, epochs=1)
    (row,) = report.rows
    assert row.unit == Unit.restricted_node(get_method("node-dpsgd").params.max_degree)
    assert row.epsilon == 2.0 and row.verdict == "consistent"
    assert any("refused by this release" in note for note in row.notes)  # the adversarial hub pair


# ---------------------------------------------------------------- attack


def test_membership_inference_runs_and_reports(sbm):
    from privgraph.attacks import get_attack, train_target

    data = sbm(SMALL_GRAPH, seed=2)
    method = get_method("node-dpsgd", epochs=30, batch_size=32, lr=0.02, **within(data))
    auc = {}
    for eps in (None, 0.5):
        target = train_target(method, data, eps, 0)
        result = get_attack("membership-confidence").run(target, 0)
        auc[eps] = result.metrics["attack_auc"]
        assert 0.0 <= auc[eps] <= 1.0 and len(result.scores) == len(result.truth)
    assert auc[0.5] < 0.6  # little to learn about members at small ε


# ---------------------------------------------------------------- the bounded-degree domain


def test_a_graph_above_the_bound_is_refused_and_sampling_claims_nothing(sbm):
    """Default: a graph with an out-degree above K is refused before any training; over_bound=sample: the
    paper's sampling, released with ε = ∞ (declared so before it runs); within K the two are the same release."""
    from privgraph.methods import node_dpsgd
    from privgraph.methods.node_domain import DegreeAboveBound

    data = sbm(SMALL_GRAPH)
    params = within(data, epochs=1, batch_size=32)
    k = params["max_degree"]
    with pytest.raises(DegreeAboveBound, match="over_bound=sample"):
        pg.privatize(
            data, get_method("node-dpsgd", **{**params, "max_degree": k - 1}), epsilon=4.0, rng=make_generator(0)
        )
    above = get_method("node-dpsgd", **{**params, "max_degree": 3, "over_bound": "sample"})
    rel = pg.privatize(data, above, epsilon=4.0, rng=make_generator(0))
    g = rel.report.guarantees[0]
    assert math.isinf(g.epsilon) and "NO node-level guarantee" in " ".join(g.notes)
    assert rel.details["within_bound"] is False and math.isinf(above.planned_spend(4.0)[0].epsilon)
    a = pg.privatize(data, get_method("node-dpsgd", **params), epsilon=4.0, rng=make_generator(0))
    b = pg.privatize(data, get_method("node-dpsgd", **params, over_bound="sample"), epsilon=4.0, rng=make_generator(0))
    assert all(torch.equal(a.model_state[n], b.model_state[n]) for n in a.model_state)
    assert a.report.guarantees[0].epsilon == 4.0  # sample states ∞ on every graph: no data-dependent claim
    assert math.isinf(b.report.guarantees[0].epsilon) and b.report.guarantees[0].notes == g.notes
    assert node_dpsgd.NodeDPSGDParams().num_train is None  # no default count: given, or refused with ε


def test_the_freed_slot_cascade_moves_more_than_k_plus_one_terms():
    """The paper's Ĝ on the adversarial pair: a hub whose spokes all have K + 1 edges.  Without the hub Ĝ is the
    input; with it each spoke keeps K of its K + 1 out-edges, so the leaves whose spoke drops their edge change
    their aggregate: far more than K + 1 loss terms differ (Δ = 2(K+1)C does not hold)."""
    from privgraph.audit.graphs import hub_above_bound

    k, spokes = 1, 60
    data = hub_above_bound(k, spokes)
    without = data.edge_index[:, (data.edge_index[0] != 0) & (data.edge_index[1] != 0)]
    x = torch.randn(data.num_nodes, 4, generator=torch.Generator().manual_seed(0)).double()
    x0 = x.clone()
    x0[0] = 0
    reference = aggregate(x0, bound_degree(without, k, make_generator(0)), "sage", "mean")
    for seed in range(3):
        z = aggregate(x, bound_degree(data.edge_index, k, make_generator(seed)), "sage", "mean")
        changed = int((z != reference).any(dim=1).sum())
        assert changed > 5 * (k + 1)
    with pytest.raises(ValueError, match="over_bound=sample"):
        pg.privatize(
            data, get_method("node-dpsgd", max_degree=k, num_train=data.num_nodes), epsilon=1.0, rng=make_generator(0)
        )


def test_num_train_is_public_required_and_must_match(sbm):
    """σ is planned for the public num_train (required with ε, refused before training without it); the batches
    are drawn without replacement from the data's training nodes, so a data count other than num_train is
    refused (the count is the same on zero-out neighbours: the refusal says nothing about a node)."""
    from privgraph.methods.node_domain import NeedsNumTrain

    data = sbm(SMALL_GRAPH)
    params = within(data, epochs=1, batch_size=32)
    with pytest.raises(NeedsNumTrain, match="num_train"):
        pg.privatize(
            data, get_method("node-dpsgd", **{**params, "num_train": None}), epsilon=4.0, rng=make_generator(0)
        )
    with pytest.raises(ValueError, match="training nodes"):
        pg.privatize(data, get_method("node-dpsgd", **{**params, "num_train": params["num_train"] + 1}), epsilon=4.0)
    free = noiseless(data, get_method("node-dpsgd", **{**params, "num_train": None}), make_generator(0))
    assert math.isinf(free.report.guarantees[0].epsilon)  # a noiseless run claims nothing: the data's count
