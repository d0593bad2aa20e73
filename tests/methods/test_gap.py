"""GAP (Sajadmanesh et al. 2023): the composed accountant against dp-accounting, the aggregation's
noise scale and sensitivities (EDP: one edge moves one hop sum by ≤ 1; NDP: the degree bound and
one node moving ≤ D rows by ≤ 1), reproducibility, ε = ∞ equal to gap-inf, the guarantees, and
accuracy on a planted graph above a features-only MLP (fails when the aggregation is broken)."""

import math

import pytest
import torch
import torch.nn.functional as F
from scipy import stats

import privgraph as pg
from privgraph.accounting import Unit
from privgraph.accounting.rdp import composed_epsilon, composed_noise_multiplier
from privgraph.mechanisms import analytic_gaussian_sigma, make_generator
from privgraph.mechanisms.aggregation import bound_out_degree, neighbour_sum, noisy_neighbour_sum
from privgraph.methods import get_method
from privgraph.methods.base import Hyperparameters
from privgraph.nn.gap import csr_transpose

FAST = {"encoder_epochs": 30, "epochs": 40}
PARTS = [
    ((1.1, 0.05, 200), (1.1, 1.0, 2), (1.1, 0.05, 100)),
    ((3.0, 0.256, 390), (3.0, 1.0, 3), (3.0, 0.256, 390)),
    ((0.8, 0.01, 1000),),
    ((5.0, 1.0, 4),),
    ((2.0, 0.1, 0), (2.0, 1.0, 1)),
]


@pytest.fixture(scope="module")
def graph(sbm):
    # 4 blocks, homophily 0.8, weak features: an MLP ~0.51, gap-inf ~0.95 (the authors' default epochs)
    return sbm(num_nodes=300, num_features=60, feature_signal=0.1, avg_degree=10, seed=0)


def max_degree(data) -> int:
    return int(torch.bincount(data.edge_index[0], minlength=data.num_nodes).max())


def ndp_params(data, **params):
    """GAP-NDP's default (soft cap, D = 400: the PTR test passes on these small graphs), N the data's
    training-node count (public here)."""
    return {"num_train": int(data.train_mask.sum()), "batch_size": 32, **params}


def enforced_params(data, **params):
    """The restricted mode (degree_cap=enforced) with D the graph's largest degree (the tests' stand-in for a
    cap the owner enforces)."""
    return ndp_params(data, degree_cap="enforced", max_degree=max_degree(data), **params)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_composed_epsilon_matches_dp_accounting(parts, delta, dp_accounting_epsilon):
    assert composed_epsilon(parts, delta) == pytest.approx(dp_accounting_epsilon(parts, delta), abs=1e-6)


def test_composed_noise_multiplier_is_the_smallest_that_fits(dp_accounting_epsilon):
    parts = ((0.256, 390), (1.0, 2), (0.256, 390))
    sigma = composed_noise_multiplier(2.0, 1e-4, parts)
    assert composed_epsilon(tuple((sigma, q, t) for q, t in parts), 1e-4) <= 2.0
    assert composed_epsilon(tuple((sigma * 0.999, q, t) for q, t in parts), 1e-4) > 2.0
    assert dp_accounting_epsilon(tuple((sigma, q, t) for q, t in parts), 1e-4) <= 2.0 + 1e-6


def test_one_hop_noise_has_the_calibrated_scale():
    """Noise of a hop on a known input: the residual's entries are N(0, std²) (χ² test of the scale,
    a normality test, and mean zero)."""
    x = F.normalize(torch.randn(500, 16, generator=torch.Generator().manual_seed(3)), dim=-1)
    edge_index = torch.randint(0, 500, (2, 3000), generator=torch.Generator().manual_seed(4))
    std = 2.5
    residual = noisy_neighbour_sum(x, edge_index, std, make_generator(0)) - neighbour_sum(x, edge_index)
    z = residual.flatten().double() / std
    chi2 = float((z**2).sum())
    assert stats.chi2.sf(chi2, z.numel()) > 1e-3 and stats.chi2.cdf(chi2, z.numel()) > 1e-3
    assert stats.normaltest(z.numpy()).pvalue > 1e-3
    assert abs(float(z.mean())) < 5 / math.sqrt(z.numel())
    # the same rng state gives the same noise; no noise without a scale
    again = noisy_neighbour_sum(x, edge_index, std, make_generator(0)) - neighbour_sum(x, edge_index)
    assert torch.equal(residual, again)
    assert torch.equal(noisy_neighbour_sum(x, edge_index, 0.0, None), neighbour_sum(x, edge_index))


def test_edge_sensitivity_is_root_two(graph):
    """Edge level: adding one undirected link u – v moves rows u and v of a hop's (noiseless) sum, each by a
    unit vector (‖·‖_F = √2, the release's Δ); one directed entry alone moves one row by 1 (the authors' Δ)."""
    x = F.normalize(torch.randn(graph.num_nodes, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    base = neighbour_sum(x, graph.edge_index)
    present = set(map(tuple, graph.edge_index.t().tolist()))
    for u, v in [(0, 5), (17, 250), (299, 1)]:
        assert (u, v) not in present
        plus = torch.cat([graph.edge_index, torch.tensor([[u, v], [v, u]])], 1)
        diff = neighbour_sum(x, plus) - base
        assert set((diff.norm(dim=1) > 1e-6).nonzero().flatten().tolist()) == {u, v}
        assert float(diff.norm()) == pytest.approx(math.sqrt(2), abs=1e-5)
        one = neighbour_sum(x, torch.cat([graph.edge_index, torch.tensor([[u], [v]])], 1)) - base
        assert float(one.norm()) == pytest.approx(1.0, abs=1e-5)
    assert get_method("gap-edp").sensitivity() == math.sqrt(2)


def test_degree_bound_and_node_sensitivity(graph):
    """Node level: after bounding, every node has ≤ D out-edges (all kept when it has fewer), the edges
    are a subset of the input's; removing a node's edges from the bounded graph moves at most D rows of
    a hop's sum, each by ≤ 1 (‖·‖_F ≤ √D)."""
    D = 3
    bounded = bound_out_degree(graph.edge_index, graph.num_nodes, D, make_generator(1))
    out = torch.bincount(bounded[0], minlength=graph.num_nodes)
    full = torch.bincount(graph.edge_index[0], minlength=graph.num_nodes)
    assert int(out.max()) <= D and torch.equal(out, full.clamp(max=D))
    given = set(map(tuple, graph.edge_index.t().tolist()))
    assert set(map(tuple, bounded.t().tolist())) <= given
    assert not torch.equal(bounded, bound_out_degree(graph.edge_index, graph.num_nodes, D, make_generator(2)))
    x = F.normalize(torch.randn(graph.num_nodes, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    base = neighbour_sum(x, bounded)
    for v in (0, 7, int(full.argmax())):
        keep = (bounded[0] != v) & (bounded[1] != v)
        diff = neighbour_sum(x, bounded[:, keep]) - base
        diff[v] = 0  # the removed node's own row is not in the neighbouring release
        rows = diff.norm(dim=1)
        assert int((rows > 1e-6).sum()) <= D and float(rows.max()) <= 1 + 1e-5
        assert float(diff.norm()) <= math.sqrt(D) + 1e-5


def test_edge_level_default_delta_reads_no_edge(graph):
    """Under edge-level DP |E| is private: the default δ (printed in every report) must not change between
    neighbouring graphs, even where the authors' rule, 10^-(digits of |E|), would (999,999 -> 1,000,000)."""
    from privgraph.methods.gap import auto_delta

    method = get_method("gap-edp")
    keep = graph.edge_index[0] < graph.edge_index[1]
    one_link_less = graph.clone()
    pairs = graph.edge_index[:, keep][:, 1:]
    one_link_less.edge_index = torch.cat([pairs, pairs.flip(0)], dim=1)
    assert one_link_less.num_edges == graph.num_edges - 2
    assert method.delta(graph) == method.delta(one_link_less) < 1 / graph.num_edges
    assert auto_delta(1_000_000) != auto_delta(999_999)  # the authors' rule at a power of ten


def test_guarantees_and_calibration(graph):
    edp = pg.privatize(graph, "gap-edp", epsilon=2.0, seed=0, **FAST)
    g = edp.report.guarantees[0]
    assert g.unit == Unit.EDGE and g.epsilon == 2.0
    n = graph.num_nodes
    assert g.delta == 10.0 ** -len(str(n * (n - 1)))  # from the public node count, < 1/|E| on any graph
    assert g.delta < 1 / graph.num_edges
    sigma = analytic_gaussian_sigma(2.0, g.delta, math.sqrt(2))  # K = 2 hops: one Gaussian of sensitivity √K
    assert edp.details["noise_multiplier"] == pytest.approx(sigma)
    assert edp.details["noise_std"] == pytest.approx(sigma * math.sqrt(2))  # Δ = √2 per hop
    assert edp.fields["edge_index"].startswith("withheld") and "y" in edp.data
    ndp = pg.privatize(graph, "gap-ndp", epsilon=4.0, seed=0, **ndp_params(graph), **FAST)
    g = ndp.report.guarantees[0]
    assert g.unit == Unit.NODE_WITH_EDGES and g.epsilon == 4.0
    n_train = int(graph.train_mask.sum())
    assert g.delta == 10.0 ** -len(str(n_train))  # the whole δ: δ_t + e^{ε_t}·δ_A
    # the test takes ε_t = 0.1ε, δ_t = δ/2; the composition (ε_A, δ_A) = (ε − ε_t, (δ − δ_t)e^{−ε_t}), σ_h = 2σ
    eps_a, delta_a = 4.0 - 0.4, (g.delta / 2) * math.exp(-0.4)
    sigma, q = ndp.details["noise_multiplier"], 32 / n_train
    parts = ((sigma, q, 30 * n_train // 32), (2 * sigma, 1.0, 2), (sigma, q, 40 * n_train // 32))
    assert ndp.details["steps"] == [t for _, _, t in parts]
    assert (
        composed_epsilon(parts, delta_a)
        <= eps_a
        < composed_epsilon(tuple((s * 0.99, q, t) for s, q, t in parts), delta_a)
    )
    assert ndp.details["noise_std"] == pytest.approx(2 * sigma * 1.5 * math.sqrt(400))  # σ_h·Λ·√D
    # the release is the modules' weights and the PTR bit; the hop tables (a row per node, x⁰ a function of the
    # node's own features) are not: node-level DP covers the trained weights, not per-node outputs
    assert {k.split(".")[0] for k in ndp.model_state} == {"encoder", "classifier", "noise_std", "ptr_passed"}
    assert bool(ndp.model_state["ptr_passed"]) and ndp.details["ptr_passed"] is True
    assert float(ndp.model_state["noise_std"]) == pytest.approx(ndp.details["noise_std"])
    notes = " ".join(g.notes)
    assert "node-DP on every input graph" in notes and "PTR test passed" in notes
    assert "within_bound" not in ndp.details  # nothing about the degrees beyond the test's bit
    assert "x" not in ndp.data and ndp.fields["x"].startswith("withheld")


def test_seeded_reproducibility_and_infinite_epsilon(graph):
    a = pg.privatize(graph, "gap-edp", epsilon=1.0, seed=5, **FAST)
    b = pg.privatize(graph, "gap-edp", epsilon=1.0, seed=5, **FAST)
    c = pg.privatize(graph, "gap-edp", epsilon=1.0, seed=6, **FAST)
    assert torch.equal(a.data.x, b.data.x) and not torch.equal(a.data.x, c.data.x)
    assert pg.fit(a, seed=1).test_accuracy == pg.fit(b, seed=1).test_accuracy
    inf = pg.privatize(graph, "gap-inf", seed=5, **FAST)
    free = pg.privatize(graph, "gap-edp", epsilon=None, seed=5, **FAST)
    assert torch.equal(inf.data.x, free.data.x)
    assert math.isinf(free.report.guarantees[0].epsilon)
    # the hop tables are row-normalised: the release holds K+1 unit vectors per node
    tables = a.data.x.reshape(graph.num_nodes, 3, -1)
    assert torch.allclose(tables.norm(dim=-1), torch.ones(graph.num_nodes, 3), atol=1e-5)


def test_sparse_features_take_the_sparse_first_layer_with_the_dense_result(graph, monkeypatch):
    """Bag-of-words features (a few non-zeros a row) are read as a sparse CSR matrix by the edge-level encoder
    (not by GAP-NDP's DP-SGD, which clips dense rows): the first layer's output and weight gradient equal
    the dense product's to float rounding, and the COO product's bit for bit (the CSR weight gradient is read
    from the cached CSR transpose).  (Whole trainings are not compared with the dense ones: Adam normalises
    every gradient entry, so rounding-level differences in tiny entries become steps of size lr.)"""
    from privgraph.methods import gap

    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(graph.num_nodes, 200, generator=gen) < 0.02).float()
    x[3] = 0.0  # an empty row
    csr = gap.sparse_input(x)
    assert csr.layout == torch.sparse_csr and gap.sparse_input(torch.randn(5, 4)).layout == torch.strided
    assert torch.equal(csr.to_dense(), x) and torch.equal(csr_transpose(csr).to_dense(), x.t())
    layer = gap.SparseInputLinear(200, 16)
    dense_out = layer(x)
    (dense_grad,) = torch.autograd.grad(dense_out.square().sum(), layer.weight)
    coo_out = layer(x.to_sparse())
    (coo_grad,) = torch.autograd.grad(coo_out.square().sum(), layer.weight)
    for _ in range(2):  # the second call reads the cached transpose
        sparse_out = layer(csr)
        (sparse_grad,) = torch.autograd.grad(sparse_out.square().sum(), layer.weight)
        torch.testing.assert_close(sparse_out, coo_out, rtol=1e-5, atol=1e-6)  # CPU kernels' order (AVX-512)
        torch.testing.assert_close(sparse_grad, coo_grad, rtol=1e-5, atol=1e-6)
    assert torch.allclose(dense_out, sparse_out, atol=1e-5) and torch.allclose(dense_grad, sparse_grad, atol=1e-4)
    with torch.no_grad():
        torch.testing.assert_close(layer(csr), coo_out, rtol=1e-5, atol=1e-6)

    seen = {}
    for cls in (gap.GAPEdge, gap.GAPNode):
        original = cls.train_encoder

        def spy(self, encoder, x, *args, original=original, **kwargs):
            seen[self.name] = x.layout != torch.strided
            return original(self, encoder, x, *args, **kwargs)

        monkeypatch.setattr(cls, "train_encoder", spy)
    sparse_graph = graph.clone()
    sparse_graph.x = x
    few = {"encoder_epochs": 2, "epochs": 2}
    edp = pg.privatize(sparse_graph, "gap-edp", epsilon=1.0, seed=0, **few)
    pg.privatize(sparse_graph, "gap-ndp", epsilon=4.0, seed=0, **ndp_params(graph), **few)
    assert seen == {"gap-edp": True, "gap-ndp": False}
    tables = edp.data.x.reshape(graph.num_nodes, 3, -1)
    assert not tables.is_sparse and torch.allclose(tables.norm(dim=-1), torch.ones(graph.num_nodes, 3), atol=1e-5)


def test_ndp_fit_evaluates_the_released_classifier(graph, tmp_path):
    rel = pg.privatize(graph, "gap-ndp", epsilon=None, seed=0, **ndp_params(graph), **FAST)
    assert "y" not in rel.data and rel.fields["y"].startswith("withheld")  # the labels are in the node-level unit
    with pytest.raises(ValueError, match="truth=data"):
        pg.fit(rel)
    first, again = pg.fit(rel, seed=0, truth=graph), pg.fit(rel, seed=0, truth=graph)
    saved = tmp_path / "ndp"
    rel.save(saved)  # a recipient's copy answers the same: the model is self-contained
    assert pg.fit(pg.PrivateRelease.load(saved), seed=0, truth=graph).test_accuracy == first.test_accuracy
    assert first.test_accuracy == again.test_accuracy  # the seed fixes the inference's bounding and noise
    model = first.model  # nothing trained in fit: the released weights answer
    for name, value in model.classifier.state_dict().items():
        assert torch.equal(value, rel.model_state[f"classifier.{name}"])
    for name, value in model.encoder.state_dict().items():
        assert torch.equal(value, rel.model_state[f"encoder.{name}"])
    assert first.test_accuracy > 0.5  # noiseless DP-SGD pipeline learns


def test_aggregation_beats_features_only(graph):
    """On the planted graph (weak features, homophilous blocks) the hop tables carry the label signal:
    GAP at ε = ∞ and at a large ε beats a features-only MLP; with K = 0 (no aggregation) it does not."""
    mlp = pg.fit(pg.privatize(graph, "mlp", seed=0), seed=0).test_accuracy
    inf = pg.fit(pg.privatize(graph, "gap-inf", seed=0), seed=0).test_accuracy
    edp = pg.fit(pg.privatize(graph, "gap-edp", epsilon=16.0, seed=0), seed=0).test_accuracy
    flat = pg.fit(pg.privatize(graph, "gap-inf", seed=0, hops=0), seed=0).test_accuracy
    assert inf > mlp + 0.25 and edp > mlp + 0.25
    assert flat < mlp + 0.1


def test_parameters_are_validated():
    with pytest.raises(ValueError, match="batch normalisation"):
        get_method("gap-ndp", batch_norm=True)
    with pytest.raises(ValueError, match="max_degree"):
        get_method("gap-ndp", max_degree=0)
    with pytest.raises(ValueError, match="degree_cap=enforced only"):
        get_method("gap-ndp", over_bound="sample")
    with pytest.raises(ValueError, match="test_delta must be below delta"):
        get_method("gap-ndp", delta=1e-5, test_delta=1e-5)
    with pytest.raises(ValueError, match="ptr_lambda"):
        get_method("gap-ndp", ptr_lambda=1.0)
    with pytest.raises(ValueError, match="delta"):
        get_method("gap-edp", delta=2.0)


# ------------------------------------------ the enforced cap: restricted node-DP, opt-in


def test_a_graph_above_the_bound_is_refused_before_anything_is_drawn(graph, monkeypatch):
    """The default refuses a graph with a degree above D: before the encoder trains or any noise is drawn,
    with one error that names no degree of the graph."""
    from privgraph.mechanisms import aggregation
    from privgraph.methods.gap import node
    from privgraph.methods.node_domain import DegreeAboveBound

    def never(*args, **kwargs):
        raise AssertionError("trained or drew noise before refusing")

    monkeypatch.setattr(node, "train_rows_dpsgd", never)
    monkeypatch.setattr(aggregation, "perturbed_aggregation", never)
    D = max_degree(graph)
    for eps in (4.0, None):
        with pytest.raises(DegreeAboveBound, match="over_bound=sample") as refused:
            params = {**enforced_params(graph), "max_degree": D - 1}
            pg.privatize(graph, "gap-ndp", epsilon=eps, seed=0, **params, **FAST)
        assert str(D) not in str(refused.value).replace(f"max_degree={D - 1}", "")


def test_sampling_above_the_bound_claims_nothing_and_is_the_default_within_it(graph):
    """over_bound=sample: above the bound the authors' sampling, released with ε = ∞ (and declared so before
    it runs); within the bound the same weights as the default, bit for bit (nothing sampled), and still ε = ∞
    stated: a claim made only within the bound would tell from the report whether the graph is."""
    few = {"encoder_epochs": 3, "epochs": 3}
    params = {**enforced_params(graph, over_bound="sample"), "max_degree": 5}
    above = pg.privatize(graph, "gap-ndp", epsilon=4.0, seed=0, **params, **few)
    g = above.report.guarantees[0]
    assert math.isinf(g.epsilon) and "NO node-level guarantee" in " ".join(g.notes)
    assert above.details["within_bound"] is False
    enforced = {"degree_cap": "enforced"}
    assert math.isinf(get_method("gap-ndp", over_bound="sample", **enforced).planned_spend(4.0)[0].epsilon)
    assert get_method("gap-ndp", **enforced).planned_spend(4.0)[0].epsilon == 4.0
    default = pg.privatize(graph, "gap-ndp", epsilon=4.0, seed=0, **enforced_params(graph), **few)
    sampled = pg.privatize(graph, "gap-ndp", epsilon=4.0, seed=0, **enforced_params(graph, over_bound="sample"), **few)
    assert default.model_state.keys() == sampled.model_state.keys()
    assert all(torch.equal(default.model_state[k], sampled.model_state[k]) for k in default.model_state)
    assert default.report.guarantees[0].epsilon == 4.0 and math.isinf(sampled.report.guarantees[0].epsilon)
    assert sampled.report.guarantees[0].notes == g.notes  # the same report within the bound as above it


def test_the_freed_slot_cascade_moves_a_sum_by_more_than_root_d():
    """Why the sampling is not node-level DP above the bound: remove a hub whose spokes all have D + 1 edges.
    Without the hub every spoke keeps its D leaves; with it each spoke keeps D of D + 1, dropping a leaf's edge
    2 times in 3 (D = 2): about 100 of the 150 spokes' leaves lose their spoke's x — one hop's sum moves by far
    more than √D, for any draw of the sampling."""
    from privgraph.audit.graphs import hub_above_bound

    D, spokes = 2, 150
    data = hub_above_bound(D, spokes)
    without = data.edge_index[:, (data.edge_index[0] != 0) & (data.edge_index[1] != 0)]
    x = F.normalize(torch.randn(data.num_nodes, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    reference = neighbour_sum(x, bound_out_degree(without, data.num_nodes, D, make_generator(0)))
    assert torch.equal(reference, neighbour_sum(x, without))  # without the hub: within the bound, all kept
    for seed in range(3):
        diff = neighbour_sum(x, bound_out_degree(data.edge_index, data.num_nodes, D, make_generator(seed))) - reference
        diff[0] = 0  # the hub's own row is not compared
        assert float(diff.norm()) > 4 * math.sqrt(D)
    with pytest.raises(ValueError, match="over_bound=sample"):  # the enforced cap refuses the graph with the hub
        method = get_method("gap-ndp", degree_cap="enforced", max_degree=D, num_train=data.num_nodes)
        method.release(data, 1.0, make_generator(0))


def test_num_train_is_public_and_sets_sigma_and_delta(graph):
    """σ, δ and the report are functions of the public num_train, not of the data's count: equal on graphs
    with 20 and 19 training nodes; a private release without num_train is refused before anything is drawn."""
    from privgraph.methods.node_domain import NeedsNumTrain

    small = graph.clone()
    train = torch.zeros(graph.num_nodes, dtype=torch.bool)
    train[:20] = True
    small.train_mask = train
    fewer = small.clone()
    fewer.train_mask = train.clone()
    fewer.train_mask[19] = False
    few = {"encoder_epochs": 2, "epochs": 2, "batch_size": 8}
    params = {**ndp_params(graph), **few, "num_train": 20}
    a = pg.privatize(small, "gap-ndp", epsilon=1.0, seed=0, **params)
    b = pg.privatize(fewer, "gap-ndp", epsilon=1.0, seed=0, **params)
    assert a.details["noise_multiplier"] == b.details["noise_multiplier"]
    assert a.details["steps"] == b.details["steps"]
    assert a.report.guarantees[0] == b.report.guarantees[0]
    assert a.report.guarantees[0].delta == 0.01  # the authors' rule on num_train = 20
    c = pg.privatize(fewer, "gap-ndp", epsilon=1.0, seed=0, **{**params, "num_train": 19})
    assert c.details["noise_multiplier"] != a.details["noise_multiplier"]  # the public N does set σ
    with pytest.raises(NeedsNumTrain, match="num_train"):
        pg.privatize(small, "gap-ndp", epsilon=1.0, seed=0, **{**params, "num_train": None})
    with pytest.raises(ValueError, match="num_train"):
        get_method("gap-ndp", num_train=0)


# ---------------------------------------------------------------- progress


def stages_of(calls: list[tuple[str, int, int]]) -> dict[str, list[tuple[int, int]]]:
    """The hook's calls by task, in the order the tasks first appear."""
    out: dict[str, list[tuple[int, int]]] = {}
    for task, done, total in calls:
        out.setdefault(task, []).append((done, total))
    return out


@pytest.mark.parametrize("name", ["gap-edp", "gap-ndp"])
def test_a_release_reports_each_stage_with_monotone_counts(graph, name):
    """A GAP release calls the progress hook per stage, one stage after the other: the encoder's epochs (edge
    level) or DP-SGD steps (node level), the hops k/K, then (node level) the classifier's DP-SGD steps; each
    stage's count never decreases, its total is the stage's length and its last call is complete.  The hook
    changes nothing released."""
    from privgraph.train.dpsgd import epoch_steps

    calls: list[tuple[str, int, int]] = []
    params = {"encoder_epochs": 3, "epochs": 2, **(ndp_params(graph) if name == "gap-ndp" else {})}
    rel = pg.privatize(graph, name, epsilon=4.0, seed=0, progress=lambda *c: calls.append(c), **params)
    plain = pg.privatize(graph, name, epsilon=4.0, seed=0, **params)
    stages = stages_of([c for c in calls if c[0].startswith(name + " ")])
    if name == "gap-edp":
        assert torch.equal(rel.data.x, plain.data.x)
        expected = {f"{name} encoder epochs": 3, f"{name} aggregation hops": 2}
    else:
        assert rel.model_state.keys() == plain.model_state.keys()
        assert all(torch.equal(v, plain.model_state[k]) for k, v in rel.model_state.items())
        n, batch = params["num_train"], params["batch_size"]
        expected = {
            f"{name} encoder DP-SGD steps": epoch_steps(3, n, batch)[1],
            f"{name} aggregation hops": 2,
            f"{name} classifier DP-SGD steps": epoch_steps(2, n, batch)[1],
        }
    assert list(stages) == list(expected)  # in this order, nothing else
    for task, total in expected.items():
        counts = [done for done, _ in stages[task]]
        assert {t for _, t in stages[task]} == {total}, task
        assert counts == sorted(counts) and counts[-1] == total and counts[0] <= 1, (task, counts)
    first = {task: calls.index(next(c for c in calls if c[0] == task)) for task in expected}
    last = {task: max(i for i, c in enumerate(calls) if c[0] == task) for task in expected}
    order = list(expected)
    assert all(last[a] < first[b] for a, b in zip(order, order[1:], strict=False))  # one stage after the other


def test_unit_rows_is_normalize_with_the_same_gradient():
    """GAP's modules normalise rows by ``unit_rows``: F.normalize's forward bit for bit, and its gradient
    (rows clamped to ε included), also per example under vmap (GAP-NDP's DP-SGD)."""
    from torch.func import grad, vmap

    from privgraph.nn.gap import unit_rows

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(50, 16, dtype=torch.float64, generator=gen)
    x[3], x[5] = 0.0, 1e-14  # a zero row, a row below ε
    x.requires_grad_()
    assert torch.equal(unit_rows(x), F.normalize(x, dim=-1))
    g = torch.randn(50, 16, dtype=torch.float64, generator=gen)
    (expected,) = torch.autograd.grad(F.normalize(x, dim=-1), x, g)
    (got,) = torch.autograd.grad(unit_rows(x), x, g)
    assert torch.allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert torch.autograd.gradcheck(unit_rows, (x[6:].detach().clone().requires_grad_(),))
    w = torch.randn(16, 8, dtype=torch.float64, generator=gen)

    def loss(weight, row):
        return unit_rows((row @ weight).unsqueeze(0))[0, :3].sum()

    per_example = vmap(grad(loss), in_dims=(None, 0))(w, x.detach()[:8])
    assert torch.allclose(per_example, torch.stack([grad(loss)(w, x.detach()[i]) for i in range(8)]))


def test_gap_edp_batch_size_takes_a_step_per_batch(graph, monkeypatch):
    """``batch_size`` (the authors' option): the encoder and the classifier take ⌈N_train / B⌉ Adam steps an
    epoch instead of one; the same seed gives the same release and fit."""
    steps = []
    step = torch.optim.Adam.step

    def counting(self, *args, **kwargs):
        steps.append(1)
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", counting)
    n_train, batch = int(graph.train_mask.sum()), 32
    per_epoch = math.ceil(n_train / batch)
    accs = []
    for _ in range(2):
        method = get_method("gap-edp", batch_size=batch, encoder_epochs=3, epochs=4)
        release = method.release(graph, 1.0, make_generator(5))
        steps.clear()
        accs.append(method.fit(release, graph, method.default_model, Hyperparameters(), seed=5).test_accuracy)
        assert len(steps) == 4 * per_epoch  # the classifier's steps
    assert accs[0] == accs[1]
    steps.clear()
    get_method("gap-edp", encoder_epochs=3, epochs=4).release(graph, 1.0, make_generator(5))
    assert len(steps) == 3  # full batch: one step an epoch
    steps.clear()
    get_method("gap-edp", batch_size=batch, encoder_epochs=3, epochs=4).release(graph, 1.0, make_generator(5))
    assert len(steps) == 3 * per_epoch
