"""PPCVGAE's privacy quantities: candidates, Δν, eq. 6, Appendix A."""

import math

import pytest
import torch

from privgraph.mechanisms.gaussian import analytic_gaussian_sigma, classical_gaussian_sigma, gaussian_delta
from privgraph.methods.ppcvgae.privacy import (
    binary_entropy,
    check_candidate_epsilon,
    detection_error_bound,
    flip_candidate,
    gaussian_variance,
    paper_noise_variance,
    privacy_penalty,
    release_noise_std,
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


def test_classical_gaussian_sigma_is_eq6_and_loose():
    for eps, delta, sens in ((0.01, 1e-4, 2.5), (0.5, 1e-4, 1.0), (0.9, 1e-5, 0.3)):
        sigma = classical_gaussian_sigma(eps, delta, sens)
        assert sigma == pytest.approx(math.sqrt(2 * math.log(1.25 / delta)) * sens / eps, rel=1e-15)
        assert gaussian_variance(sens**2, eps, delta) == pytest.approx(sigma**2, rel=1e-12)
        # the δ actually achieved at that σ is far below the δ claimed; the analytic σ is smaller
        assert gaussian_delta(sigma, eps, sens) < delta / 100
        assert analytic_gaussian_sigma(eps, delta, sens) < 0.8 * sigma
    assert gaussian_delta(classical_gaussian_sigma(0.5, 1e-4, 1.0), 0.5, 1.0) == pytest.approx(2.18e-7, rel=0.01)
    assert classical_gaussian_sigma(0.5, 1e-4, 0.0) == 0.0
    for bad_eps in (0.0, 1.0, 2.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="epsilon"):
            classical_gaussian_sigma(bad_eps, 1e-4, 1.0)
    with pytest.raises(ValueError, match="delta"):
        classical_gaussian_sigma(0.5, 0.0, 1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        classical_gaussian_sigma(0.5, 1e-4, -1.0)


def test_candidate_epsilon_depends_on_the_calibration():
    assert check_candidate_epsilon(2.0) == 2.0  # analytic (default): any finite ε > 0
    assert check_candidate_epsilon(0.5, "classical") == 0.5
    for bad in (0.0, -0.5, math.inf, math.nan):
        with pytest.raises(ValueError, match="epsilon > 0"):
            check_candidate_epsilon(bad)
    for bad in (1.0, 2.0, 0.0):
        with pytest.raises(ValueError, match=r"epsilon in \(0, 1\)"):
            check_candidate_epsilon(bad, "classical")
    with pytest.raises(ValueError, match="calibration"):
        check_candidate_epsilon(0.5, "exact")


def test_release_noise_std_analytic_is_tight_and_classical_is_eq6():
    for eps, delta, sens in ((0.01, 1e-4, 2.5), (0.5, 1e-4, 1.0), (0.5, 1e-3, 7.0), (3.0, 1e-5, 0.2)):
        sigma = release_noise_std(sens, eps, delta)
        assert sigma == analytic_gaussian_sigma(eps, delta, sens)
        exact = gaussian_delta(sigma, eps, sens)
        assert exact <= delta and exact == pytest.approx(delta, rel=0.01)
        if eps < 1:
            classical = release_noise_std(sens, eps, delta, "classical")
            assert classical**2 == pytest.approx(2 * math.log(1.25 / delta) * sens**2 / eps**2, rel=1e-12)
            assert sigma < classical
    # at the test settings: analytic/classical σ ratio
    assert release_noise_std(1.0, 0.5, 1e-4) / release_noise_std(1.0, 0.5, 1e-4, "classical") == pytest.approx(
        0.678, abs=0.005
    )
    assert release_noise_std(1.0, 0.01, 1e-4) / release_noise_std(1.0, 0.01, 1e-4, "classical") == pytest.approx(
        0.397, abs=0.005
    )
    # Δμ = 0: no noise needed, under either calibration
    assert release_noise_std(0.0, 0.5, 1e-4) == release_noise_std(0.0, 0.5, 1e-4, "classical") == 0.0
    with pytest.raises(ValueError, match=r"epsilon in \(0, 1\)"):
        release_noise_std(1.0, 1.5, 1e-4, "classical")
    with pytest.raises(ValueError, match="sensitivity"):
        release_noise_std(-1.0, 0.5, 1e-4)
    with pytest.raises(ValueError, match="delta"):
        release_noise_std(1.0, 0.5, 1.0)


def test_detection_error_bound_from_mutual_information():
    assert detection_error_bound(0.0) == pytest.approx(0.5, abs=1e-6)  # no information: a coin flip
    assert detection_error_bound(math.log(2)) == pytest.approx(0.0, abs=1e-9)
    p = detection_error_bound(0.3)
    assert binary_entropy(p) == pytest.approx(math.log(2) - 0.3, abs=1e-9)
