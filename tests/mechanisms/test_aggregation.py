"""GAP's aggregation perturbation as a mechanism (privgraph.mechanisms.aggregation): the calibration and the
guarantee it states agree (the K hops' exact ε at δ is the ε asked for), the noise scale σΔ, the hop count."""

import math

import pytest
import torch

from privgraph.accounting import Unit
from privgraph.mechanisms import analytic_gaussian_sigma, gaussian_delta, make_generator
from privgraph.mechanisms.aggregation import AggregationPerturbation, composed_gaussian_epsilon


@pytest.mark.parametrize(("epsilon", "delta", "hops"), [(1.0, 1e-5, 2), (4.0, 1e-7, 3), (0.5, 1e-3, 1)])
def test_the_guarantee_states_the_epsilon_it_was_calibrated_for(epsilon, delta, hops):
    mech = AggregationPerturbation.calibrated(epsilon, delta, hops, math.sqrt(2))
    assert mech.noise_multiplier == analytic_gaussian_sigma(epsilon, delta, math.sqrt(hops))
    assert mech.noise_std == mech.noise_multiplier * math.sqrt(2)
    g = mech.guarantee(delta)
    assert g.unit == Unit.EDGE and g.delta == delta
    assert g.epsilon == pytest.approx(epsilon, rel=1e-6) and g.epsilon <= epsilon * (1 + 1e-9)
    # a smaller σ would not do: the exact δ at ε of 1 % less noise is above δ
    assert gaussian_delta(0.99 * mech.noise_multiplier, epsilon, math.sqrt(hops)) > delta


def test_no_noise_no_guarantee_and_no_hops_nothing_spent():
    assert composed_gaussian_epsilon(0.0, 1e-5, 2) == math.inf
    assert AggregationPerturbation(2, 0.0, 1.0).guarantee(1e-5).epsilon == math.inf
    assert composed_gaussian_epsilon(3.0, 1e-5, 0) == 0.0
    assert AggregationPerturbation.calibrated(1.0, 1e-5, 0, 1.0).noise_multiplier == 0.0


def test_aggregate_runs_k_hops_of_the_stated_noise_and_reports_them():
    """Noise-free hops are the normalised neighbour sums; with noise the residual of the sum has the std σΔ."""
    n, d = 400, 8
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(0))
    edge_index = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])  # a directed cycle: one in-neighbour
    calls = []
    tables, sums = AggregationPerturbation(3, 0.0, 1.0).aggregate(
        x, edge_index, None, lambda *c: calls.append(c), "hops"
    )
    assert calls == [("hops", 1, 3), ("hops", 2, 3), ("hops", 3, 3)] and len(tables) == 4 and len(sums) == 3
    assert torch.allclose(tables[1], torch.roll(tables[0], 1, 0), atol=1e-6)
    _, noisy = AggregationPerturbation(1, 2.0, 1.5).aggregate(x, edge_index, make_generator(0))
    residual = noisy[0] - torch.roll(tables[0], 1, 0)
    assert float(residual.std()) == pytest.approx(3.0, rel=0.05)
