"""The bound's arithmetic and its coverage: ε_LB of an exactly ε-DP test exceeds ε at most 5 % of the time."""

import math

import numpy as np
import pytest
from scipy.stats import binom

from privgraph.audit.bounds import (
    Threshold,
    choose_threshold,
    clopper_pearson_upper,
    epsilon_from_rates,
    epsilon_lower_bound,
    evaluate_threshold,
    max_epsilon_lower_bound,
)


def test_clopper_pearson_upper_is_the_binomial_inversion():
    # no errors: (1 − p)^n = α  →  p = 1 − α^{1/n}
    assert clopper_pearson_upper(0, 50, 0.025) == pytest.approx(1 - 0.025 ** (1 / 50))
    # k errors: P[Bin(n, p_u) ≤ k] = α
    p = float(clopper_pearson_upper(7, 100, 0.025))
    assert binom.cdf(7, 100, p) == pytest.approx(0.025, rel=1e-6)
    assert clopper_pearson_upper(100, 100, 0.025) == 1.0


def test_epsilon_from_rates_both_directions_and_delta():
    assert epsilon_from_rates(0.1, 0.3, 0.0) == pytest.approx(max(math.log(0.7 / 0.1), math.log(0.9 / 0.3)))
    assert epsilon_from_rates(0.3, 0.1, 0.0) == pytest.approx(math.log(0.7 / 0.1))
    assert epsilon_from_rates(0.1, 0.3, 0.05) == pytest.approx(math.log(0.65 / 0.1))
    assert epsilon_from_rates(0.6, 0.6, 0.0) == 0.0  # worse than guessing: no bound


def test_perfect_separation_gives_the_ceiling():
    lb = float(epsilon_lower_bound(0, 500, 0, 500))
    assert lb == pytest.approx(max_epsilon_lower_bound(500))
    assert lb == pytest.approx(math.log((1 - (1 - 0.025 ** (1 / 500))) / (1 - 0.025 ** (1 / 500))))


def test_threshold_is_chosen_in_either_direction():
    low, high = np.zeros(50), np.ones(50)
    assert choose_threshold(low, high).says_one(np.array([1.0, 0.0])).tolist() == [True, False]
    flipped = choose_threshold(high, low)
    assert flipped.sign == -1 and flipped.says_one(np.array([1.0, 0.0])).tolist() == [False, True]
    outcome = evaluate_threshold(Threshold(0.5, 1), low, high)
    assert (outcome.false_positives, outcome.false_negatives) == (0, 0)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_coverage_of_an_exactly_epsilon_dp_bit(epsilon):
    """Randomized response on one bit is exactly ε-DP: over 400 audits of 2 × 200 samples each, ε_LB > ε
    must happen in at most 5 % (+ 3 binomial standard errors) of them."""
    rng = np.random.default_rng(1)
    p = 1 / (1 + math.exp(epsilon))
    over = 0
    reps = 400
    for _ in range(reps):
        s0 = (rng.random(200) < p).astype(float)  # D₀ reports 1 with the flip probability
        s1 = (rng.random(200) >= p).astype(float)
        t = choose_threshold(s0[:100], s1[:100])
        over += evaluate_threshold(t, s0[100:], s1[100:]).epsilon_lb > epsilon
    assert over / reps <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)


def test_bad_arguments():
    with pytest.raises(ValueError):
        epsilon_lower_bound(0, 10, 0, 10, confidence=1.0)
    with pytest.raises(ValueError):
        choose_threshold(np.array([]), np.array([1.0]))
