"""HeteDP's honest ways up: the topology-only release (ε_f = 0, the private features
are not read) and a public random projection of the features before clipping."""

import math

import pytest
import torch

from privgraph.api import privatize
from privgraph.data import hetero_sbm_graph
from privgraph.mechanisms import make_generator
from privgraph.mechanisms.gaussian import analytic_gaussian_sigma
from privgraph.mechanisms.randomness import normal
from privgraph.methods.hetedp.features import (
    clip_rows,
    prepare_rows,
    privatize_features,
    project_rows,
    projection_matrix,
    type_projection_seed,
)
from privgraph.methods.hetedp.method import HeteDPParams, score_links

EDGE = ("paper", "to", "author")
SMALL = dict(edge_type=EDGE, epochs=1, batch_size=256, edge_count=888)  # the graph's count, public here


# ---------------------------------------------------------------- topology only (features = "none")


def _other_features(data, seed=1):
    other = data.clone()
    g = torch.Generator().manual_seed(seed)
    for t in ("paper", "author"):
        other[t].x = torch.randn(other[t].x.shape, generator=g) * 10
    return other


def test_topology_only_releases_no_function_of_x():
    data = hetero_sbm_graph(seed=0)
    other = _other_features(data)
    a = privatize(data, "hetedp", epsilon=1.0, seed=0, features="none", **SMALL)
    b = privatize(other, "hetedp", epsilon=1.0, seed=0, features="none", **SMALL)
    # the released inputs and the trained weights are the same whatever x is (same seed)
    for t in a.data.node_types:
        if "x" in a.data[t]:
            assert torch.equal(a.data[t].x, b.data[t].x)
    assert a.model_state.keys() == b.model_state.keys()
    assert all(torch.equal(a.model_state[k], b.model_state[k]) for k in a.model_state)
    # the released inputs of featured types are the public random ones, not x (nor its shape)
    assert a.data["paper"].x.shape == (data["paper"].num_nodes, 64)
    assert not torch.equal(a.data["paper"].x[:, :32], data["paper"].x.float())
    assert a.fields["paper.x"].startswith("withheld") and "not read" in a.fields["paper.x"]
    # while the noisy-feature release does depend on x: the test above would catch a leak
    c = privatize(data, "hetedp", epsilon=1.0, seed=0, **SMALL)
    d = privatize(other, "hetedp", epsilon=1.0, seed=0, **SMALL)
    assert not torch.equal(c.data["paper"].x, d.data["paper"].x)
    # the released model scores pairs from the release alone
    assert score_links(a, torch.tensor([[0, 1], [0, 2]])).shape == (2,)


def test_topology_only_spends_all_of_epsilon_on_the_edge_unit():
    data = hetero_sbm_graph(seed=0)
    rel = privatize(data, "hetedp", epsilon=1.0, seed=0, features="none", **SMALL)
    guarantees = rel.report.guarantees
    assert [g.unit for g in guarantees] == [f"edge of {EDGE}"]  # no feature unit: nothing from x is read
    assert "features" not in rel.details  # no feature release
    eps_s = rel.details["dpsgd"]["epsilon_s"]
    assert guarantees[0].epsilon == eps_s and 0.99 < eps_s <= 1.0 + 1e-9  # ε_s = ε (accountant's tightness)
    assert any("features='none'" in n for n in guarantees[0].notes)
    noisy = privatize(data, "hetedp", epsilon=1.0, seed=0, **SMALL)
    units = {g.unit: g.epsilon for g in noisy.report.guarantees}
    assert units["node feature vector"] == pytest.approx(0.5)
    assert units[f"edge of {EDGE}"] <= 0.5 + 1e-9
    # the same DP-SGD at ε_s = ε has a smaller noise multiplier than at ε_s = ε/2
    assert rel.details["dpsgd"]["noise_multiplier"] < noisy.details["dpsgd"]["noise_multiplier"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(features="some"), "features must be one of"),
        (dict(features="none", feature_share=0.3), "feature_share does not apply"),
        (dict(features="none", feature_dim=8), "feature_dim and calibration do not apply"),
        (dict(features="none", calibration="paper"), "feature_dim and calibration do not apply"),
        (dict(feature_dim=0), "feature_dim"),
        (dict(feature_dim=2.5), "feature_dim"),
        (dict(feature_dim=8, calibration="paper"), "clipped, DP calibration"),
        (dict(projection_seed="x"), "projection_seed"),
    ],
)
def test_bad_options_fail_clearly(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HeteDPParams.build("hetedp", {"edge_type": EDGE, **kwargs})


def test_the_runner_does_not_search_a_split_without_features():
    from privgraph.experiments import ExperimentSpec, run_experiment

    params = {"features": "none", "batch_size": 256, "epochs": 1}
    with pytest.raises(ValueError, match="does not take --tune"):  # no ε_f/ε candidates: nothing to choose
        run_experiment(ExperimentSpec(method="hetedp", task="lp", epsilons=[2.0], trials=1, tune=True, params=params))
    res = run_experiment(ExperimentSpec(method="hetedp", task="lp", epsilons=[2.0], trials=1, params=params))
    row = res.to_json()["results"][0]
    assert not res.records[0].config.get("selection")
    assert [g["unit"] for g in row["privacy"]["guarantees"]] == [f"edge of {EDGE}"]
    with pytest.raises(ValueError, match="link-prediction option"):
        run_experiment(
            ExperimentSpec(method="hetedp", task="nc", epsilons=[1.0], trials=1, params={"features": "none"})
        )


# ---------------------------------------------------------------- public projection (feature_dim)


def test_projection_has_orthonormal_rows_and_never_lengthens_a_row():
    p = projection_matrix(200, 16, seed=3)
    assert p.shape == (16, 200)
    assert torch.allclose(p @ p.T, torch.eye(16), atol=1e-5)
    x = torch.randn(1000, 200) * torch.rand(1000, 1) * 10
    assert bool((torch.linalg.vector_norm(x @ p.T, dim=1) <= torch.linalg.vector_norm(x, dim=1) + 1e-4).all())
    # then clipping bounds every released signal row by C_f: sensitivity 2·C_f, as without the projection
    a, _ = clip_rows(project_rows(x, 16, 3), 1.0)
    assert float(torch.cdist(a, a).max()) <= 2.0 + 1e-5
    with pytest.raises(ValueError, match="k <= d"):
        projection_matrix(8, 16, seed=0)


def test_projection_is_public_deterministic_and_data_independent():
    assert torch.equal(projection_matrix(50, 8, 7), projection_matrix(50, 8, 7))
    assert not torch.equal(projection_matrix(50, 8, 7), projection_matrix(50, 8, 8))
    data = hetero_sbm_graph(seed=0)
    other = _other_features(data)
    # the same projection whatever the data and whatever the noise stream: project the release's clean part
    for rng_seed in (0, 1):
        rel = privatize_features(data, 1.0, 1e-5, 1.0, make_generator(rng_seed), feature_dim=8, projection_seed=5)
        proj = rel.details["projection"]
        assert proj["seed"] == 5 and proj["dim"] == 8
        assert proj["type_seeds"]["paper"] == type_projection_seed(5, "paper")
    p = projection_matrix(32, 8, type_projection_seed(5, "paper"))
    a = privatize_features(data, 1.0, 1e-5, 1.0, make_generator(0), feature_dim=8, projection_seed=5)
    b = privatize_features(other, 1.0, 1e-5, 1.0, make_generator(0), feature_dim=8, projection_seed=5)
    for rel, d in ((a, data), (b, other)):
        clean, _ = clip_rows(d["paper"].x.float() @ p.T, 1.0)
        noise = rel.x["paper"] - clean
        assert noise.shape == (d["paper"].num_nodes, 8)
    # same rng: the noise draws are equal for both datasets (the projection drew nothing from the stream)
    na = a.x["paper"] - clip_rows(data["paper"].x.float() @ p.T, 1.0)[0]
    nb = b.x["paper"] - clip_rows(other["paper"].x.float() @ p.T, 1.0)[0]
    assert torch.allclose(na, nb, atol=1e-4)
    # and the stream advanced by exactly the noise draws: nothing else was drawn from it
    rng, ref = make_generator(0), make_generator(0)
    privatize_features(data, 1.0, 1e-5, 1.0, rng, feature_dim=8, projection_seed=5)
    for t in a.x:
        normal((data[t].num_nodes, 8), 1.0, ref)
    assert torch.equal(rng.get_state(), ref.get_state())


def test_projection_keeps_sigma_and_states_itself():
    data = hetero_sbm_graph(seed=0)
    plain = privatize_features(data, 0.5, 1e-5, 1.0, make_generator(0))
    rel = privatize_features(data, 0.5, 1e-5, 1.0, make_generator(0), feature_dim=8, projection_seed=2)
    sigma = analytic_gaussian_sigma(0.5, 1e-5, 2.0)
    assert rel.details["noise_std"] == plain.details["noise_std"] == pytest.approx(sigma)
    assert rel.details["sensitivity"] == plain.details["sensitivity"] == 2.0
    assert rel.guarantee.epsilon == 0.5 and rel.guarantee.unit == "node feature vector"
    assert all(x.shape[1] == 8 for x in rel.x.values())
    p = projection_matrix(32, 8, type_projection_seed(2, "paper"))
    noise = (rel.x["paper"] - clip_rows(data["paper"].x.float() @ p.T, 1.0)[0]).flatten().double()
    k = noise.numel()
    assert abs(float((noise**2).sum()) / sigma**2 - k) < 5 * math.sqrt(2 * k)  # χ²: σ per coordinate
    text = " ".join(rel.guarantee.notes)
    assert "k = 8" in text and "public seed 2" in text and "orthonormal" in text
    # the node-classification method takes the same option through the same function
    nc = privatize(data, "hetedp-features", epsilon=0.5, seed=0, feature_dim=8, projection_seed=2)
    assert nc.details["projection"]["dim"] == 8 and nc.data["paper"].x.shape[1] == 8
    # a type with d <= k is released as without the projection (and the release says so)
    wide = privatize_features(data, 0.5, 1e-5, 1.0, make_generator(0), feature_dim=32)
    assert wide.details["projection"]["projected"] == [] and torch.equal(wide.x["paper"], plain.x["paper"])
    assert "released unprojected" in wide.guarantee.notes[0]


def test_the_link_release_reads_the_projected_features():
    data = hetero_sbm_graph(seed=0)
    rel = privatize(data, "hetedp", epsilon=1.0, seed=0, feature_dim=8, **SMALL)
    assert rel.data["paper"].x.shape[1] == 8 and rel.details["features"]["projection"]["dim"] == 8
    assert {g.unit for g in rel.report.guarantees} == {"node feature vector", f"edge of {EDGE}"}
    assert score_links(rel, torch.tensor([[0, 1], [0, 2]])).shape == (2,)


def test_without_noise_the_projected_rows_are_the_releases_signal():
    data = hetero_sbm_graph(seed=0)
    rel = privatize(data, "hetedp", epsilon=None, seed=0, feature_dim=8, projection_seed=3, **SMALL)
    rows, _, projected = prepare_rows(data["paper"].x, "paper", 1.0, 8, 3)
    assert projected and torch.equal(rel.data["paper"].x, rows)
    noisy = privatize_features(data, 1.0, 1e-5, 1.0, make_generator(0), feature_dim=8, projection_seed=3)
    assert abs(float((noisy.x["paper"] - rows).std()) - noisy.details["noise_std"]) < 0.1 * noisy.details["noise_std"]
    assert not rel.report.guarantees[0].is_private
