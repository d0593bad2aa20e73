"""HeteDP feature privacy: clipping bounds the sensitivity, the noise follows the calibration."""

import math

import pytest
import torch

from privgraph.data import hetero_sbm_graph
from privgraph.mechanisms import make_generator
from privgraph.mechanisms.gaussian import analytic_gaussian_sigma, gaussian_delta
from privgraph.methods.hetedp.features import clip_rows, privatize_features


def test_clipping_bounds_every_row_and_keeps_short_rows():
    x = torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    clipped, count = clip_rows(x, 1.0)
    assert count == 1
    assert torch.allclose(clipped[0], torch.tensor([0.6, 0.8])) and torch.equal(clipped[1:], x[1:])
    # the sensitivity claim: any two clipped vectors differ by at most 2·C_f
    a, _ = clip_rows(torch.randn(500, 16) * 10, 2.0)
    assert float(torch.cdist(a, a).max()) <= 4.0 + 1e-5


def test_noise_is_calibrated_to_twice_the_clip_bound_and_added_once():
    data = hetero_sbm_graph(seed=0)
    rel = privatize_features(data, 0.5, 1e-5, clip_bound=1.0, rng=make_generator(0))
    sigma = analytic_gaussian_sigma(0.5, 1e-5, 2.0)
    assert rel.details["noise_std"] == pytest.approx(sigma)
    assert gaussian_delta(sigma, 0.5, 2.0) <= 1e-5
    assert set(rel.x) == {"paper", "author"}  # the subject type has no features
    clean, _ = clip_rows(data["paper"].x, 1.0)
    noise = (rel.x["paper"] - clean).flatten().double()
    k = noise.numel()
    assert abs(float((noise**2).sum()) / sigma**2 - k) < 5 * math.sqrt(2 * k)  # χ² on the variance
    assert abs(float(noise.mean())) < 5 * sigma / math.sqrt(k)
    again = privatize_features(data, 0.5, 1e-5, clip_bound=1.0, rng=make_generator(0))
    assert torch.equal(again.x["paper"], rel.x["paper"])  # seeded
    g = rel.guarantee
    assert (g.epsilon, g.delta, g.unit) == (0.5, 1e-5, "node feature vector")
    # λ > 1 scales the noise up
    louder = privatize_features(data, 0.5, 1e-5, clip_bound=1.0, rng=make_generator(0), noise_multiplier=2.0)
    assert louder.details["noise_std"] == pytest.approx(2 * sigma)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(epsilon=0.0), "epsilon_f"),
        (dict(delta=1.5), "delta"),
        (dict(clip_bound=0.0), "clipping bound"),
        (dict(noise_multiplier=0.5), "noise multiplier"),
        (dict(node_types=["subject"]), "no features"),
    ],
)
def test_bad_inputs_fail_clearly(kwargs, match):
    args = dict(epsilon=1.0, delta=1e-5, clip_bound=1.0, rng=make_generator(0)) | kwargs
    with pytest.raises(ValueError, match=match):
        privatize_features(hetero_sbm_graph(seed=0), **args)


def test_the_papers_calibration_is_opt_in_and_says_it_is_not_dp():
    """calibration='paper': σ = 0.01·√(2 ln(1.25/δ))·2/ε on the raw features, ε = ∞ stated."""
    from privgraph.methods.hetedp.features import paper_noise_std

    data = hetero_sbm_graph(seed=0)
    default = privatize_features(data, 0.5, 1e-5, clip_bound=1.0, rng=make_generator(0))
    explicit = privatize_features(data, 0.5, 1e-5, clip_bound=1.0, rng=make_generator(0), calibration="clipped")
    assert torch.equal(default.x["paper"], explicit.x["paper"]) and default.guarantee.epsilon == 0.5
    paper = privatize_features(data, 0.5, 1e-5, clip_bound=1.0, rng=make_generator(0), calibration="paper")
    sigma = 0.01 * math.sqrt(2 * math.log(1.25 / 1e-5)) * 2.0 / 0.5
    assert paper.details["noise_std"] == pytest.approx(sigma) == paper_noise_std(0.5, 1e-5)
    assert sigma < analytic_gaussian_sigma(0.5, 1e-5, 2.0) / 50  # far below any calibrated σ
    noise = (paper.x["paper"] - data["paper"].x.float()).flatten().double()  # raw features: no clipping
    k = noise.numel()
    assert abs(float((noise**2).sum()) / sigma**2 - k) < 5 * math.sqrt(2 * k)
    g = paper.guarantee
    assert not g.is_private and math.isinf(g.epsilon)  # no guarantee is claimed
    text = " ".join((g.mechanism, *g.notes))
    assert "NOT DP" in g.mechanism and "NOT differentially private" in text
    assert "not clipped" in text and "λ = 0.01" in text and "(0.5, 1e-05)" in text
    assert paper.details["claimed_epsilon"] == 0.5
    # ε ≥ 1 is accepted (the paper applies the classical bound there too)
    assert privatize_features(data, 2.0, 1e-5, 1.0, make_generator(0), calibration="paper").details[
        "noise_std"
    ] == pytest.approx(sigma / 4)
    with pytest.raises(ValueError, match="calibration"):
        privatize_features(data, 0.5, 1e-5, 1.0, make_generator(0), calibration="papers")


def test_the_methods_default_to_the_dp_calibration():
    from privgraph.api import privatize

    data = hetero_sbm_graph(seed=0)
    for name in ("hetedp", "hetedp-features"):
        from privgraph.methods import get_method

        assert get_method(name).params.calibration == "clipped"
    rel = privatize(data, "hetedp-features", epsilon=1.0, seed=0)
    assert all(g.is_private for g in rel.report.guarantees)
    rel = privatize(data, "hetedp-features", epsilon=1.0, seed=0, calibration="paper")
    assert [g.is_private for g in rel.report.guarantees] == [False]
    assert "NOT DP" in rel.report.guarantees[0].mechanism
