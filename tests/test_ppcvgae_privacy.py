"""PPCVGAE's privacy quantities: candidates, Δν, eq. 6, Appendix A."""

import math

import pytest
import torch

from privgraph.methods.ppcvgae.privacy import (
    binary_entropy,
    detection_error_bound,
    flip_candidate,
    gaussian_variance,
    paper_noise_variance,
    privacy_penalty,
)


def test_flip_candidate_changes_private_nodes_only():
    s = torch.tensor([0, 1, 1, 0, 1])
    private = torch.tensor([True, False, True, False, False])
    assert flip_candidate(s, private).tolist() == [1, 1, 0, 0, 1]
    with pytest.raises(ValueError, match="no sensitive attribute"):
        flip_candidate(torch.tensor([]), torch.tensor([], dtype=torch.bool))
    with pytest.raises(ValueError, match="binary"):
        flip_candidate(torch.tensor([0, 2]), torch.tensor([True, True]))


def test_penalty_is_zero_when_the_prior_ignores_s_and_positive_otherwise():
    s = torch.tensor([0, 1, 1, 0, 1, 0])
    private = torch.tensor([True, True, False, True, False, True])
    candidate = flip_candidate(s, private)
    ignores = torch.nn.Sequential(torch.nn.Linear(1, 4))
    with torch.no_grad():
        ignores[0].weight.zero_()
    assert float(privacy_penalty(lambda v: ignores(v[:, None]), s, [candidate]).detach()) == 0.0
    uses = torch.nn.Linear(1, 3)
    with torch.no_grad():
        uses.weight.copy_(torch.tensor([[1.0], [2.0], [0.0]]))
    penalty = privacy_penalty(lambda v: uses(v[:, None]), s, [candidate])
    assert float(penalty.detach()) == pytest.approx(4 * (1 + 4))  # 4 flipped nodes, ‖w‖² = 5
    penalty.backward()
    assert uses.weight.grad is not None and float(uses.weight.grad.abs().sum()) > 0


def test_noise_variance_follows_eq6():
    eps, delta = 0.01, 1e-4
    assert gaussian_variance(2.5, eps, delta) == pytest.approx(2 * math.log(1.25 / delta) * 2.5 / eps**2)
    assert paper_noise_variance(2.5, eps, delta) == pytest.approx(gaussian_variance(2.5, eps, delta) - 1)
    assert paper_noise_variance(1e-12, eps, delta) == 0.0  # the prior's unit variance suffices
    for bad_eps in (0.0, 1.0, 2.0, -1.0):
        with pytest.raises(ValueError, match="epsilon"):
            gaussian_variance(1.0, bad_eps, delta)
    for bad_delta in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="delta"):
            gaussian_variance(1.0, eps, bad_delta)


def test_detection_error_bound_from_mutual_information():
    assert detection_error_bound(0.0) == pytest.approx(0.5, abs=1e-6)  # no information: a coin flip
    assert detection_error_bound(math.log(2)) == pytest.approx(0.0, abs=1e-9)
    p = detection_error_bound(0.3)
    assert binary_entropy(p) == pytest.approx(math.log(2) - 0.3, abs=1e-9)
