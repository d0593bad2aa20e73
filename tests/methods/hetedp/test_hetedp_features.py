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


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=0.0), "epsilon_f"),
    (dict(delta=1.5), "delta"),
    (dict(clip_bound=0.0), "clipping bound"),
    (dict(noise_multiplier=0.5), "noise multiplier"),
    (dict(node_types=["subject"]), "no features"),
])
def test_bad_inputs_fail_clearly(kwargs, match):
    args = dict(epsilon=1.0, delta=1e-5, clip_bound=1.0, rng=make_generator(0)) | kwargs
    with pytest.raises(ValueError, match=match):
        privatize_features(hetero_sbm_graph(seed=0), **args)
