"""The node-level DP-SGD accountant (Daigavane et al. 2021, Theorem 1): against a direct scipy computation,
monotone in every parameter, and at K = 0 against dp-accounting's sampling without replacement."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import hypergeom

from privgraph.accounting.node_level import (
    ORDERS,
    node_level_epsilon,
    node_level_noise_multiplier,
    node_level_rdp,
)
from privgraph.accounting.rdp import rdp_to_epsilon


def direct_epsilon(sigma: float, n: int, m: int, k: int, steps: int, delta: float) -> float:
    """Theorem 1 as the GAP authors compute it: E_ρ by scipy's hypergeom.expect, with the noise std σ·2(K+1)C
    (C = 1), orders where the expectation does not overflow."""
    clip = 1.0
    std = sigma * 2 * (k + 1) * clip
    orders, rdp = [], []
    for a in ORDERS:
        with np.errstate(over="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = hypergeom(n, k + 1, m).expect(lambda r, a=a: np.exp(a * (a - 1) * 2 * r**2 * clip**2 / std**2))
        if np.isfinite(e):
            orders.append(a)
            rdp.append(math.log(e) / (a - 1))
    return rdp_to_epsilon(np.array(orders), steps * np.array(rdp), delta)


@pytest.mark.parametrize(
    "sigma,n,m,k,steps",
    [(1.0, 1000, 64, 5, 100), (2.0, 5000, 256, 10, 400), (0.7, 300, 30, 0, 50), (3.0, 2000, 2000, 3, 10)],
)
def test_agrees_with_scipy_expectation(sigma, n, m, k, steps):
    ours = node_level_epsilon(sigma, n, m, k, steps, 1e-5)
    assert ours == pytest.approx(direct_epsilon(sigma, n, m, k, steps, 1e-5), abs=1e-6)


def test_k_zero_closed_form():
    """K = 0: ρ ∈ {0, 1} with P(ρ = 1) = q = m/N, RDP = log(1 − q + q·e^{α(α−1)/(2σ²)})/(α − 1)."""
    sigma, n, m = 1.3, 800, 40
    q = m / n
    with np.errstate(over="ignore"):
        expected = np.log1p(q * np.expm1(ORDERS * (ORDERS - 1) / (2 * sigma**2))) / (ORDERS - 1)
    finite = np.isfinite(expected)  # the closed form overflows at large orders, the log-sum-exp does not
    assert finite.sum() > 20
    np.testing.assert_allclose(node_level_rdp(sigma, n, m, 0)[finite], expected[finite], rtol=1e-9)


def test_monotone():
    base = dict(noise_multiplier=1.5, num_nodes=2000, batch_size=128, max_degree=5, steps=300, delta=1e-5)
    eps = node_level_epsilon(**base)
    more = [
        dict(base, noise_multiplier=1.2),  # less noise
        dict(base, batch_size=256),  # a larger batch
        dict(base, max_degree=8, noise_multiplier=1.5 * 6 / 9),  # more terms per node, the same noise std
        dict(base, steps=600),  # more steps
        dict(base, num_nodes=1000),  # a smaller population (less amplification)
        dict(base, delta=1e-7),
    ]
    for kwargs in more:
        assert node_level_epsilon(**kwargs) > eps, kwargs
    assert node_level_epsilon(**dict(base, noise_multiplier=2.0)) < eps


def test_calibration_meets_target_tightly():
    args = (1e-5, 3000, 200, 10, 600)
    sigma = node_level_noise_multiplier(4.0, *args)
    assert node_level_epsilon(sigma, 3000, 200, 10, 600, 1e-5) <= 4.0
    assert node_level_epsilon(sigma * (1 - 1e-3), 3000, 200, 10, 600, 1e-5) > 4.0


def _dp_accounting_wor(sigma: float, n: int, m: int, steps: int, delta: float) -> float:
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant(list(ORDERS), dp_accounting.NeighboringRelation.REPLACE_ONE)
    event = dp_accounting.SampledWithoutReplacementDpEvent(n, m, dp_accounting.GaussianDpEvent(sigma))
    accountant.compose(event, steps)
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize("sigma", [0.8, 1.5, 4.0])
def test_k_zero_full_batch_is_the_gaussian_of_dp_accounting(sigma):
    """K = 0, m = N: ρ = 1 always, one replace-one clipped term (sensitivity 2C = Δ): the Gaussian mechanism,
    which dp-accounting's sampling without replacement reduces to at q = 1."""
    assert node_level_epsilon(sigma, 500, 500, 0, 30, 1e-5) == pytest.approx(
        _dp_accounting_wor(sigma, 500, 500, 30, 1e-5), abs=1e-6
    )


@pytest.mark.parametrize("sigma", [0.8, 1.5, 4.0])
def test_k_zero_subsampled_is_looser_than_wang_balle_kasiviswanathan(sigma):
    """K = 0, m < N: Theorem 1's joint-convexity bound is linear in q = m/N, Wang, Balle & Kasiviswanathan
    (2019)'s (dp-accounting's SampledWithoutReplacementDpEvent) is O(q²) at small orders: the paper's
    accountant is valid but looser, so it does not reduce to it."""
    ours = node_level_epsilon(sigma, 1000, 50, 0, 200, 1e-5)
    theirs = _dp_accounting_wor(sigma, 1000, 50, 200, 1e-5)
    assert ours > theirs
