"""The package's RDP accountant (vectorised) against dp-accounting's ``RdpAccountant`` on the same
orders: agreement to 1e-6 in ε, over rates, noise levels, step counts and δ, including a
setting where a fractional order's series does not converge (both leave it out)."""

import math

import pytest

from privgraph.accounting.rdp import noise_multiplier_for, rdp_epsilon

CASES = [
    (1.1, 0.01, 1000, 1e-5),
    (0.8, 0.05, 200, 1e-5),
    (4.0, 0.2, 50, 1e-5),
    (1.0, 0.133333, 8, 1e-5),
    (0.5, 0.5, 10, 1e-6),
    (2.0, 1.0, 20, 1e-5),
    (30.0, 0.004, 5000, 1e-5),
    (200.0, 0.3, 300, 1e-5),
    (0.3, 0.001, 100_000, 1e-3),
    (7.5, 0.07, 272, 1e-5),
    (1.0, 0.0, 10, 1e-5),
    (0.6, 0.9, 3, 0.1),
]


@pytest.mark.parametrize("sigma, rate, steps, delta", CASES)
def test_agrees_with_dp_accounting_to_1e_6(sigma, rate, steps, delta, dp_accounting_epsilon):
    ours, theirs = rdp_epsilon(sigma, rate, steps, delta), dp_accounting_epsilon(((sigma, rate, steps),), delta)
    assert math.isfinite(ours) == math.isfinite(theirs)
    assert abs(ours - theirs) <= 1e-6 * max(1.0, theirs), (ours, theirs)


def test_calibration_prints_nothing_and_is_tight(capfd, caplog):
    sigma = noise_multiplier_for(0.5, 1e-5, 4 / 60, 15)
    assert rdp_epsilon(sigma, 4 / 60, 15, 1e-5) <= 0.5 < rdp_epsilon(sigma * (1 - 2e-4), 4 / 60, 15, 1e-5)
    assert capfd.readouterr() == ("", "") and not caplog.records


def test_noise_free_and_sample_free_edges():
    assert rdp_epsilon(0.0, 0.1, 10, 1e-5) == math.inf
    assert rdp_epsilon(1.0, 0.0, 10, 1e-5) == 0.0
    with pytest.raises(ValueError, match="sampling rate"):
        rdp_epsilon(1.0, 1.5, 10, 1e-5)
