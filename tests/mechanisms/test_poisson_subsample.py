"""poisson_subsample: each index kept independently with probability q (the law of ``uniform((n,)) < q``)."""

import numpy as np
import pytest
import torch
from scipy import stats

from privgraph.mechanisms import SecureRandom, make_generator
from privgraph.mechanisms.randomness import poisson_subsample


def _draws(n: int, q: float, reps: int, rng) -> np.ndarray:
    """[reps, n] inclusion indicators of ``reps`` independent samples."""
    hits = np.zeros((reps, n), dtype=bool)
    for r in range(reps):
        idx = poisson_subsample(n, q, rng)
        assert idx.dtype == torch.long and bool((idx[1:] > idx[:-1]).all())  # sorted, no repeat
        assert idx.numel() == 0 or (0 <= int(idx[0]) and int(idx[-1]) < n)
        hits[r, idx.numpy()] = True
    return hits


@pytest.mark.parametrize("n, q", [(40, 0.1), (25, 0.5), (7, 0.9)])
def test_rows_are_kept_independently_with_probability_q(n, q):
    reps = 20_000
    hits = _draws(n, q, reps, make_generator(0))
    # each row's frequency: Binomial(reps, q) / reps; a wrong marginal (e.g. the first or last row, a shifted
    # gap) is many standard errors off
    se = np.sqrt(q * (1 - q) / reps)
    assert np.abs(hits.mean(0) - q).max() < 4.5 * se
    # pairs of neighbouring rows are independent: P(both) = q² (a gap law other than Geometric breaks it)
    both = (hits[:, 1:] & hits[:, :-1]).mean(0)
    assert np.abs(both - q * q).max() < 4.5 * np.sqrt(q * q * (1 - q * q) / reps)
    # the batch size is Binomial(n, q): chi-square over the sizes with expected count ≥ 5 (tails pooled)
    sizes = hits.sum(1)
    pmf = stats.binom.pmf(np.arange(n + 1), n, q) * reps
    keep = pmf >= 5
    lo, hi = np.flatnonzero(keep)[[0, -1]]
    observed = np.bincount(sizes, minlength=n + 1).astype(float)
    obs = np.concatenate([[observed[: lo + 1].sum()], observed[lo + 1 : hi], [observed[hi:].sum()]])
    exp = np.concatenate([[pmf[: lo + 1].sum()], pmf[lo + 1 : hi], [pmf[hi:].sum()]])
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-3


def test_a_large_sparse_sample_has_binomial_size_and_uniform_positions():
    n, q, reps = 1_000_000, 2e-4, 400  # expected 200 per draw: drawn without n uniforms
    g = make_generator(1)
    sizes, positions = [], []
    for _ in range(reps):
        idx = poisson_subsample(n, q, g)
        sizes.append(idx.numel())
        positions.append(idx.numpy())
    assert stats.kstest(np.concatenate(positions) / n, "uniform").pvalue > 1e-3
    z = (np.mean(sizes) - n * q) / np.sqrt(n * q * (1 - q) / reps)
    assert abs(z) < 4.5
    assert np.var(sizes) == pytest.approx(n * q * (1 - q), rel=0.25)


def test_edge_cases_and_reproducibility():
    assert poisson_subsample(5, 1.0, make_generator(0)).tolist() == [0, 1, 2, 3, 4]
    assert poisson_subsample(0, 0.3, make_generator(0)).numel() == 0
    one = [poisson_subsample(1, 0.3, make_generator(s)).numel() for s in range(2000)]
    assert np.mean(one) == pytest.approx(0.3, abs=0.04)
    a = poisson_subsample(1000, 0.05, make_generator(7))
    assert torch.equal(a, poisson_subsample(1000, 0.05, make_generator(7)))
    assert not torch.equal(a, poisson_subsample(1000, 0.05, make_generator(8)))
    assert poisson_subsample(1000, 0.05, SecureRandom()).numel() < 1000
    for bad in (0.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="q must be > 0"):
            poisson_subsample(10, bad, make_generator(0))
