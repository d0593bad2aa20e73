"""The one calibration search (:func:`privgraph.accounting.search.least_satisfying`): the value it returns
always satisfies the condition, and is within the tolerance of the least one that does."""

from __future__ import annotations

import math

import pytest

from privgraph.accounting.search import least_satisfying
from privgraph.mechanisms.gaussian import analytic_gaussian_sigma, gaussian_delta


@pytest.mark.parametrize("threshold", [0.0, 1e-9, 0.3, math.pi, 1e6])
def test_returns_the_satisfying_end_within_tolerance(threshold):
    calls = []

    def holds(x: float) -> bool:
        calls.append(x)
        return x >= threshold

    x = least_satisfying(holds, threshold - 10.0, threshold + 10.0, tol=1e-9)
    assert x >= threshold  # never on the failing side
    assert x - threshold <= 1e-9
    assert len(calls) < 80  # bisection: log2(20 / 1e-9) ≈ 35 halvings


def test_relative_tolerance():
    x = least_satisfying(lambda s: s >= 123.456, 1.0, 1024.0, tol=1e-6, relative=True)
    assert 123.456 <= x <= 123.456 * (1 + 1e-6)


def test_a_bracket_without_the_change_is_refused():
    with pytest.raises(ValueError, match="bracket"):
        least_satisfying(lambda x: x >= 5, 6.0, 7.0, tol=1e-3)  # holds at lo already
    with pytest.raises(ValueError, match="bracket"):
        least_satisfying(lambda x: x >= 5, 1.0, 2.0, tol=1e-3)  # never holds
    with pytest.raises(ValueError, match="lo < hi"):
        least_satisfying(lambda x: True, 2.0, 1.0, tol=1e-3)


@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-5), (1.0, 1e-6), (8.0, 1e-9)])
def test_analytic_gaussian_sigma_is_the_least_meeting_delta(eps, delta):
    sigma = analytic_gaussian_sigma(eps, delta, 1.0)
    assert gaussian_delta(sigma, eps, 1.0) <= delta  # meets δ
    assert gaussian_delta(sigma * (1 - 1e-9), eps, 1.0) > delta * (1 - 1e-6)  # and barely: not loose
