"""Numbers that cannot become non-finite: ε, δ and domains refused where a mechanism would
underflow or overflow, ``bool`` is not a number, non-finite features refused before any noise, and a
released tensor checked finite before it is returned."""

from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.data import Data

import privgraph as pg
from privgraph.accounting.validation import (
    MAX_DOMAIN_WIDTH,
    MIN_EPSILON,
    check_delta,
    check_domain,
    check_epsilon,
)
from privgraph.api import check_finite_release
from privgraph.mechanisms import MultiBit, randomness
from privgraph.mechanisms.randomness import make_generator


@pytest.mark.parametrize("epsilon", [1e-300, 5e-324, MIN_EPSILON / 2])
def test_an_epsilon_below_the_floor_is_refused(epsilon):
    with pytest.raises(ValueError, match="below the minimum epsilon"):
        check_epsilon(epsilon)


def test_the_floor_itself_gives_finite_estimates_at_the_widest_domain():
    """At ε = MIN_EPSILON over the widest accepted domain and many features, the multi-bit estimate is finite
    (the reason for both bounds): a failure here means the floor is too low."""
    lo, hi = -MAX_DOMAIN_WIDTH / 2, MAX_DOMAIN_WIDTH / 2
    mechanism = MultiBit(MIN_EPSILON, domain=(lo, hi))
    x = torch.rand(50, 2000, dtype=torch.float64) * (hi - lo) + lo
    out = mechanism.privatize(x, make_generator(0))
    assert bool(torch.isfinite(out).all())


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_is_not_a_number(value):
    with pytest.raises(ValueError, match="must be a number"):
        check_epsilon(value)
    with pytest.raises(ValueError, match="must be a number"):
        check_delta(value)
    with pytest.raises(ValueError, match="must be a number"):
        check_domain((value, 2.0))


@pytest.mark.parametrize(
    "domain", [(-1e308, 1e308), (0.0, math.inf), (math.nan, 1.0), (1.0, 1.0), (2.0, 1.0), (0.0, 2 * MAX_DOMAIN_WIDTH)]
)
def test_a_domain_that_would_overflow_or_is_empty_is_refused(domain):
    with pytest.raises(ValueError, match="domain"):
        check_domain(domain)
    with pytest.raises(ValueError, match="domain"):
        MultiBit(1.0, domain=domain)


def _graph(x: torch.Tensor) -> Data:
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    return Data(x=x, edge_index=edge_index, y=torch.tensor([0, 1, 0, 1]), num_nodes=4)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_features_are_refused_before_any_noise(bad, monkeypatch):
    x = torch.rand(4, 3)
    x[2, 1] = bad
    data = _graph(x)
    data.feature_domain = (0.0, 1.0)

    def no_noise(rng):  # every draw checks its source first: none may happen
        raise AssertionError("noise was drawn")

    monkeypatch.setattr(randomness, "_check", no_noise)
    for method in ("gap-edp", "lpgnn"):
        with pytest.raises(ValueError, match="non-finite"):
            pg.privatize(data, method, epsilon=1.0, seed=0)


def test_a_graph_without_nodes_is_refused_in_one_line():
    data = Data(x=torch.zeros(0, 3), edge_index=torch.zeros(2, 0, dtype=torch.long), y=torch.zeros(0).long())
    with pytest.raises(ValueError, match="no nodes"):
        pg.privatize(data, "gap-edp", epsilon=1.0, seed=0)


def test_a_non_finite_release_is_never_returned():
    data = _graph(torch.rand(4, 3))
    data.feature_domain = (0.0, 1.0)
    rel = pg.privatize(data, "lpgnn", epsilon=1.0, seed=0)
    check_finite_release(rel)  # a finite release passes
    rel.data.x[0, 0] = math.inf
    with pytest.raises(ValueError, match="non-finite values in 'x'"):
        check_finite_release(rel)
