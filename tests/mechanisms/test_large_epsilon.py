"""A huge ε is refused with one clear ValueError naming :data:`MAX_EPSILON`, never an
``OverflowError``; ε = MAX_EPSILON runs every mechanism with finite outputs, the right
limits (flip probabilities ≈ e^{−ε}, reports equal to the truth) and the guarantee ε."""

import math

import pytest
import torch
from typer.testing import CliRunner

from privgraph.cli import app, expand_multi_value_options
from privgraph.data import split_edges
from privgraph.mechanisms import (
    FEATURE_MECHANISMS,
    MAX_EPSILON,
    RandomizedResponse,
    check_epsilon,
    get_feature_mechanism,
    make_generator,
)
from privgraph.mechanisms.base import worst_case_log_ratio
from privgraph.mechanisms.feature_rr import FeatureRR
from privgraph.mechanisms.numeric import Duchi1D, HybridMechanism, Piecewise, ThreeOutput
from privgraph.methods import METHODS, Task, get_method, report_labels
from privgraph.methods.blink import flip_probability, link_ldp
from privgraph.methods.heterorr.edges import edge_rand, lap_graph

HUGE = 1e9
REFUSED = f"exceeds the maximum epsilon {MAX_EPSILON:g}"


# the graph of these tests, the sbm fixture's base arguments (a test overrides some of them)
GRAPH = {
    "num_nodes": 120,
    "num_classes": 3,
    "num_features": 5,
    "avg_degree": 6.0,
    "homophily": 0.8,
    "seed": 0,
    "private_edges": 0.3,
}


def _edges(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return {tuple(p) for p in edge_index.T.tolist()}


def test_check_epsilon_accepts_the_maximum_and_names_it_above():
    assert check_epsilon(MAX_EPSILON) == MAX_EPSILON
    for bad in (math.nextafter(MAX_EPSILON, math.inf), 710.0, HUGE, 1e308):
        with pytest.raises(ValueError, match=REFUSED) as err:
            check_epsilon(bad, "label_epsilon")
        assert str(err.value).startswith(f"label_epsilon = {bad:g} ")
    # every closed form is far from overflow at the maximum
    assert math.isfinite(math.exp(MAX_EPSILON) ** 7)


def _feature(name: str, epsilon: float, d: int):
    if name == "featurerr":
        return FeatureRR(epsilon, torch.full((d,), 1.0 / d), bins=3)
    return get_feature_mechanism(name, epsilon)


@pytest.mark.parametrize("name", [*FEATURE_MECHANISMS, "featurerr"])
def test_feature_mechanisms_at_the_maximum_and_above(name):
    x = torch.rand(40, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    mech = _feature(name, MAX_EPSILON, 5)
    reports = mech.perturb(x, make_generator(1))
    estimate = mech.estimate(reports)
    assert torch.isfinite(reports).all() and torch.isfinite(estimate).all()
    assert mech.guarantee().epsilon == MAX_EPSILON
    with pytest.raises(ValueError, match=REFUSED):
        _feature(name, HUGE, 5)


@pytest.mark.parametrize("name", ["multibit", "onebit", "duchi"])
def test_binary_feature_reports_equal_the_truth_at_the_maximum(name):
    """One feature at the domain's ends: the wrong bit has probability ≈ e^{−ε}, the rectifier scale → 1."""
    x = (torch.arange(200) % 2).to(torch.float64)[:, None]
    mech = get_feature_mechanism(name, MAX_EPSILON)
    assert torch.allclose(mech.estimate(mech.perturb(x, make_generator(2))), x, rtol=0.0, atol=1e-6)


def test_scalar_closed_forms_at_the_maximum():
    eps, x = MAX_EPSILON, torch.linspace(-1.0, 1.0, 21, dtype=torch.float64)
    duchi = Duchi1D()
    assert duchi.magnitude(eps) == pytest.approx(1.0, abs=1e-8)
    assert float(duchi.plus_probability(torch.tensor(1.0), eps)) == pytest.approx(1.0, abs=1e-8)
    for pm in (Piecewise(0.5), Piecewise(1.0 / 3.0)):
        c, w, p0 = pm.parameters(eps)
        assert all(math.isfinite(v) and v > 0 for v in (c, w, p0)) and c >= 1.0
        lo, hi = pm.window(x, eps)
        inside, outside = pm.density((lo + hi) / 2, x, eps), pm.density(torch.full_like(x, -c), x.abs() + 0.5, eps)
        assert float((inside / p0).min()) == pytest.approx(math.exp(eps), rel=1e-6)  # density() is float32
        assert torch.allclose(outside, torch.full_like(outside, p0))
        assert torch.isfinite(pm.variance(x, eps)).all() and bool((pm.variance(x, eps) >= 0).all())
    hybrid = HybridMechanism()
    assert hybrid.pm_probability(eps) == pytest.approx(1.0 - math.exp(-eps / 2.0), rel=1e-15)
    assert torch.isfinite(hybrid.variance(x, eps)).all()
    three = ThreeOutput()
    p = three.probabilities(x, eps)
    assert torch.allclose(p.sum(-1), torch.ones_like(x)) and bool((p >= 0).all())
    assert float(worst_case_log_ratio(p)) <= eps * (1 + 1e-9)
    assert math.isfinite(three.magnitude(eps)) and torch.isfinite(three.variance(x, eps)).all()


def test_randomized_response_and_label_reports_at_the_maximum_and_above(sbm):
    rr = RandomizedResponse(MAX_EPSILON, 4)
    q = 1.0 / (math.exp(MAX_EPSILON) + 3)
    assert rr.other_probability == pytest.approx(q, rel=1e-12) and rr.keep_probability == pytest.approx(1 - 3 * q)
    assert float(worst_case_log_ratio(rr.transition_matrix())) == pytest.approx(MAX_EPSILON, rel=1e-9)
    assert torch.allclose(rr.estimate_one_hot(torch.arange(4)), torch.eye(4, dtype=torch.float64), atol=1e-8)
    data = sbm(GRAPH)
    labels = report_labels(data, MAX_EPSILON, make_generator(0))
    labelled = data.train_mask | data.val_mask
    assert torch.equal(labels.reported[labelled], data.y[labelled])
    assert labels.guarantee().epsilon == MAX_EPSILON
    with pytest.raises(ValueError, match=REFUSED):
        RandomizedResponse(HUGE, 4)
    with pytest.raises(ValueError, match=REFUSED):
        report_labels(data, HUGE, make_generator(0))


def test_blink_link_ldp_at_the_maximum_and_above(sbm):
    assert flip_probability(0.0) == 0.5
    assert flip_probability(MAX_EPSILON) == pytest.approx(1.0 / (1.0 + math.exp(MAX_EPSILON)), rel=1e-15)
    assert flip_probability(HUGE) == 0.0  # the formula itself no longer overflows
    data = sbm(GRAPH)
    n = data.num_nodes
    rep = link_ldp(data.edge_index, n, MAX_EPSILON, 0.1, make_generator(0))
    assert rep.p_flip == pytest.approx(math.exp(-0.9 * MAX_EPSILON), rel=1e-6)
    truth = torch.zeros((n, n), dtype=torch.bool)
    truth[data.edge_index[0], data.edge_index[1]] = True
    assert all((rep.row(i) == truth[i].numpy()).all() for i in range(n))
    assert torch.isfinite(rep.noisy_degrees).all() and rep.guarantee().epsilon == MAX_EPSILON
    with pytest.raises(ValueError, match=REFUSED):
        link_ldp(data.edge_index, n, HUGE, 0.1, make_generator(0))


def test_edgerand_and_lapgraph_at_the_maximum_and_above(sbm):
    data = sbm(GRAPH)
    released, guarantee, details = edge_rand(data, MAX_EPSILON, make_generator(0))
    assert details["flipped"] == 0 and _edges(released) == _edges(data.edge_index)
    assert guarantee.epsilon == MAX_EPSILON
    released, guarantee, details = lap_graph(data, MAX_EPSILON, make_generator(0), count_share=0.1)
    _, private = split_edges(data)
    assert abs(details["noisy_count"] - private.shape[1] // 2) <= 5 and guarantee.epsilon == MAX_EPSILON
    assert details["released_private_edges"] == details["noisy_count"]
    for release in (edge_rand, lap_graph):
        with pytest.raises(ValueError, match=REFUSED):
            release(data, HUGE, make_generator(0))


@pytest.mark.parametrize(
    "name",
    [
        name
        for name, cls in METHODS.items()
        if cls.private and cls.task == Task.NODE_CLASSIFICATION and not cls.heterogeneous
    ],
)
def test_every_private_method_releases_at_the_maximum_and_refuses_above(name, sbm):
    data = sbm(GRAPH)
    options = {}  # EdgeRR's default moves (500 do not pass its convergence check, and it would refuse)
    if name in ("gap-ndp", "node-dpsgd"):  # node level: within the degree bound, the public training count
        options = {"max_degree": data.num_nodes, "num_train": int(data.train_mask.sum())}
    if name == "mlp-ndp":  # features only: the public training count
        options = {"num_train": int(data.train_mask.sum())}
    release = get_method(name, **options).release(data, MAX_EPSILON, make_generator(0))
    released = [release.x] if release.x is not None else list(release.model_state.values())  # node-dpsgd: a model
    assert all(torch.isfinite(t).all() for t in released) and release.guarantee.epsilon == MAX_EPSILON
    with pytest.raises(ValueError, match=REFUSED):
        get_method(name, **options).release(data, HUGE, make_generator(0))


@pytest.mark.parametrize(
    "args",
    [
        ["lpgnn", "--epsilon", "1e9"],
        ["lpgnn", "--epsilon", "1", "--label-epsilon", "1e9"],
        ["blink", "--epsilon", "1e9"],
        ["edgerand", "--private-ratio", "0.1", "--epsilon", "1e9"],
    ],
)
def test_cli_refuses_a_huge_epsilon_with_one_error_line(tmp_path, args):
    argv = expand_multi_value_options(
        ["run", *args, "--dataset", "sbm", "--trials", "1", "--db", str(tmp_path / "r.db")]
    )
    res = CliRunner().invoke(app, argv)
    assert res.exit_code != 0 and isinstance(res.exception, SystemExit), res.exception
    text = " ".join(res.output.split())
    assert text.startswith("error:") and text.count("error:") == 1 and REFUSED in text and "1e+09" in text
    assert "Traceback" not in res.output and "OverflowError" not in res.output
