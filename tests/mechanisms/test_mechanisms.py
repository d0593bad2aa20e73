import itertools
import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from privgraph.mechanisms import (
    AnalyticGaussian,
    Laplace,
    MultiBit,
    OneBit,
    RandomizedResponse,
    SecureRandom,
    analytic_gaussian_sigma,
    gaussian_delta,
    get_feature_mechanism,
    make_generator,
    optimal_m,
)
from privgraph.mechanisms.randomness import sample_subsets

ALL = ["multibit", "onebit", "laplace", "gaussian"]


def _assert_unbiased(mech, x_row, n, gen, z=5.0):
    x = x_row.repeat(n, 1)
    est = mech.estimate(mech.perturb(x, gen)).to(torch.float64)
    mean = est.mean(0)
    se = est.std(0) / math.sqrt(n)
    assert torch.all(se > 0)
    dev = ((mean - x_row.double()) / se).abs()
    assert float(dev.max()) < z, f"{mech}: max |z| = {float(dev.max()):.2f}"


@pytest.mark.parametrize("name", ALL)
def test_estimators_are_unbiased(name, gen):
    x_row = torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0, 0.3], dtype=torch.float64)
    mech = get_feature_mechanism(name, 1.5)
    _assert_unbiased(mech, x_row, 60_000, gen)


def test_multibit_unbiased_on_general_domain_and_large_m(gen):
    mech = MultiBit(20.0, domain=(-2.0, 3.0), m=40)  # m > 32: random-key path
    x_row = torch.linspace(-2.0, 3.0, 50, dtype=torch.float64)
    _assert_unbiased(mech, x_row, 20_000, gen)


def test_unbiasedness_test_detects_a_wrong_rectifier(gen):
    class Wrong(MultiBit):
        def estimate(self, reports):
            return super().estimate(reports) * 1.1

    with pytest.raises(AssertionError):
        _assert_unbiased(Wrong(1.0), torch.tensor([0.2, 0.8, 1.0], dtype=torch.float64), 60_000, gen)


def test_optimal_m_matches_proposition():
    assert optimal_m(0.1, 100) == 1
    assert optimal_m(4.36, 100) == 2
    assert optimal_m(21.8, 5) == 5
    assert optimal_m(8.0, 1433) == 3


def _vector_privacy_loss(mech, d, alpha, beta):
    """max over outputs y and corner inputs x, x' of log P(y|x) − log P(y|x')."""
    corners = [torch.tensor(c, dtype=torch.float64) for c in itertools.product([alpha, beta], repeat=d)]
    worst = 0.0
    for y in itertools.product([-1.0, 0.0, 1.0], repeat=d):
        y = torch.tensor(y)
        logs = [mech.log_prob(y, x) for x in corners]
        if all(math.isinf(v) for v in logs):
            continue
        assert not any(math.isinf(v) for v in logs), "support must not depend on the input"
        worst = max(worst, max(logs) - min(logs))
    return worst


@pytest.mark.parametrize("eps,d,m", [(1.0, 3, 1), (2.0, 3, 2), (3.0, 3, 3), (0.5, 2, None)])
def test_multibit_exact_privacy_loss_equals_epsilon(eps, d, m):
    mech = MultiBit(eps, domain=(-1.0, 2.0), m=m)
    loss = _vector_privacy_loss(mech, d, -1.0, 2.0)
    assert loss == pytest.approx(eps, abs=1e-9)


def test_onebit_exact_privacy_loss_equals_epsilon():
    mech = OneBit(1.2)
    assert _vector_privacy_loss(mech, 3, 0.0, 1.0) == pytest.approx(1.2, abs=1e-9)


@pytest.mark.parametrize("cls,kwargs", [(MultiBit, {}), (OneBit, {})])
def test_coordinate_privacy_loss_at_domain_ends(cls, kwargs):
    eps, d = 3.0, 4
    mech = cls(eps, **kwargs)
    m = mech.sample_size(d)
    lo = mech.coordinate_probabilities(torch.tensor([0.0]), d)[0]
    hi = mech.coordinate_probabilities(torch.tensor([1.0]), d)[0]
    support = lo > 0
    assert torch.equal(support, hi > 0), "the output support must not depend on the input"
    per_coordinate = float((lo[support].log() - hi[support].log()).abs().max())
    assert per_coordinate == pytest.approx(eps / m, abs=1e-12)
    # at most m coordinates are reported: the per-vector loss is exactly ε
    assert m * per_coordinate == pytest.approx(eps, abs=1e-12)


def test_privacy_loss_check_fails_for_miscalibrated_mechanism():
    class Twice(MultiBit):  # uses 2ε/m per coordinate: a factor-two error
        def one_probability(self, x, m):
            return MultiBit(2 * self.epsilon, (self.alpha, self.beta)).one_probability(x, m)

    assert _vector_privacy_loss(Twice(1.0, m=1), 2, 0.0, 1.0) == pytest.approx(2.0, abs=1e-9)


@pytest.mark.parametrize("cls", [MultiBit, OneBit])
def test_sampler_matches_its_output_probabilities(cls, gen):
    mech, d, n = cls(2.0), 5, 40_000
    for value in (0.0, 1.0, 0.25):
        x = torch.full((n, d), value, dtype=torch.float64)
        out = mech.perturb(x, gen)
        observed = torch.stack([(out == v).sum() for v in (-1.0, 0.0, 1.0)]).double().numpy()
        expected = mech.coordinate_probabilities(torch.tensor([value]), d)[0].numpy() * n * d
        keep = expected > 0
        assert observed[~keep].sum() == 0
        chi2 = (((observed - expected) ** 2)[keep] / expected[keep]).sum()
        assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4


def test_each_row_reports_exactly_m_features(gen):
    mech = MultiBit(9.0)
    out = mech.perturb(torch.rand(500, 20, generator=gen), gen)
    assert torch.all((out != 0).sum(1) == optimal_m(9.0, 20))


@pytest.mark.parametrize("m", [3, 40])
def test_sample_subsets_are_uniform_and_distinct(m, gen):
    d, n = 50, 20_000
    cols = sample_subsets(n, d, m, gen)
    assert cols.shape == (n, m)
    assert torch.all(torch.sort(cols, 1).values.diff(dim=1) > 0)
    counts = torch.bincount(cols.flatten(), minlength=d).double().numpy()
    expected = np.full(d, n * m / d)
    assert stats.chisquare(counts, expected).pvalue > 1e-4


def test_laplace_noise_scale(gen):
    eps, d, n = 2.0, 4, 100_000
    mech = Laplace(eps)
    noise = (mech.perturb(torch.full((n, d), 0.5, dtype=torch.float64), gen) - 0.5).flatten().numpy()
    b = d * 1.0 / eps
    assert stats.kstest(noise, stats.laplace(scale=b).cdf).pvalue > 1e-4
    assert stats.kstest(noise, stats.laplace(scale=b / 2).cdf).pvalue < 1e-6


def test_gaussian_calibration_known_value_and_exactness():
    sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert sigma == pytest.approx(3.7306, abs=1e-3)  # Balle & Wang (2018), Δ=1
    classical = math.sqrt(2 * math.log(1.25 / 1e-5)) / 1.0
    assert sigma < classical
    assert gaussian_delta(sigma, 1.0, 1.0) <= 1e-5
    assert gaussian_delta(sigma * 0.99, 1.0, 1.0) > 1e-5


def test_gaussian_delta_matches_privacy_loss_distribution():
    """δ(ε) = E[(1 − e^{ε−L})_+] with L ~ N(μ, 2μ), μ = Δ²/(2σ²)."""
    sigma, eps, sens = 2.0, 0.7, 1.3
    mu = sens**2 / (2 * sigma**2)
    f = lambda loss: max(0.0, 1 - math.exp(eps - loss)) * stats.norm.pdf(loss, mu, math.sqrt(2 * mu))  # noqa: E731
    numeric, _ = integrate.quad(f, eps, mu + 40 * math.sqrt(2 * mu))
    assert gaussian_delta(sigma, eps, sens) == pytest.approx(numeric, rel=1e-6)


def test_gaussian_noise_scale(gen):
    mech = AnalyticGaussian(1.0, delta=1e-6)
    d, n = 9, 20_000
    noise = (mech.perturb(torch.zeros((n, d), dtype=torch.float64), gen)).flatten().numpy()
    sigma = mech.sigma(d)
    assert sigma == pytest.approx(analytic_gaussian_sigma(1.0, 1e-6, 3.0))
    assert stats.kstest(noise, stats.norm(scale=sigma).cdf).pvalue > 1e-4
    assert mech.guarantee().delta == 1e-6


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, "x"])
@pytest.mark.parametrize("name", ALL)
def test_invalid_epsilon_rejected(name, bad):
    with pytest.raises(ValueError, match="epsilon"):
        get_feature_mechanism(name, bad)


@pytest.mark.parametrize("name", ALL)
def test_out_of_domain_rejected_or_clipped_and_reported(name, gen):
    x = torch.tensor([[0.2, 1.5], [-0.1, 0.3]])
    with pytest.raises(ValueError, match="outside the declared domain"):
        get_feature_mechanism(name, 1.0).perturb(x, gen)
    mech = get_feature_mechanism(name, 1.0, clip=True)
    mech.perturb(x, gen)
    assert mech.clipped_values == 2  # the curator's diagnostic ...
    notes = " ".join(mech.guarantee().notes)
    assert "clipped into it" in notes and "2 input values" not in notes  # ... never in the released report


def test_other_input_errors(gen):
    with pytest.raises(ValueError, match="2-D"):
        MultiBit(1.0).perturb(torch.rand(5), gen)
    with pytest.raises(ValueError, match="NaN"):
        MultiBit(1.0).perturb(torch.tensor([[float("nan")]]), gen)
    with pytest.raises(ValueError, match="domain"):
        MultiBit(1.0, domain=(1.0, 0.0))
    with pytest.raises(ValueError, match="exceeds"):
        MultiBit(1.0, m=5).perturb(torch.rand(2, 3), gen)
    with pytest.raises(ValueError, match="delta"):
        AnalyticGaussian(1.0, delta=0.0)
    with pytest.raises(TypeError, match="explicit"):
        MultiBit(1.0).perturb(torch.rand(2, 3), rng=None)
    with pytest.raises(ValueError, match="unknown mechanism"):
        get_feature_mechanism("nope", 1.0)


def test_seeded_generator_is_reproducible():
    x = torch.rand(50, 8, generator=torch.Generator().manual_seed(0))
    for name in ALL:
        a = get_feature_mechanism(name, 1.0).perturb(x, make_generator(7))
        b = get_feature_mechanism(name, 1.0).perturb(x, make_generator(7))
        c = get_feature_mechanism(name, 1.0).perturb(x, make_generator(8))
        assert torch.equal(a, b) and not torch.equal(a, c)


def test_secure_mode_draws_from_os_and_is_unbiased():
    rng = make_generator(secure=True)
    assert isinstance(rng, SecureRandom)
    with pytest.raises(ValueError):
        make_generator(1, secure=True)
    u = rng.uniform((100_000,))
    assert 0 < float(u.min()) and float(u.max()) < 1
    assert stats.kstest(u.numpy(), "uniform").pvalue > 1e-4
    ints = rng.integers(7, (70_000,))
    assert stats.chisquare(torch.bincount(ints, minlength=7).numpy()).pvalue > 1e-4
    _assert_unbiased(MultiBit(2.0), torch.tensor([0.1, 0.9], dtype=torch.float64), 40_000, rng)


def test_randomized_response_exact_loss_and_unbiased_histogram(gen):
    rr = RandomizedResponse(1.3, 4)
    T = rr.transition_matrix()
    assert torch.allclose(T.sum(1), torch.ones(4, dtype=torch.float64))
    loss = (T.log()[:, None, :] - T.log()[None, :, :]).abs().max()
    assert float(loss) == pytest.approx(1.3, abs=1e-12)
    y = torch.full((80_000,), 2)
    rep = rr.perturb(y, gen)
    freq = torch.bincount(rep, minlength=4).double() / y.numel()
    assert torch.allclose(freq, T[2], atol=0.01)
    est = rr.estimate_one_hot(rep).mean(0)
    assert torch.allclose(est, torch.eye(4, dtype=torch.float64)[2], atol=0.02)
    with pytest.raises(ValueError):
        RandomizedResponse(1.0, 1)
    with pytest.raises(ValueError):
        rr.perturb(torch.tensor([4]), gen)


@pytest.mark.parametrize(
    "mech",
    [MultiBit(1.0), MultiBit(7.0, domain=(-2.0, 3.0), clip=True), MultiBit(3.0, m=40), OneBit(2.0, clip=True)],
)
def test_multibit_privatize_equals_rectified_reports_value_for_value(mech, monkeypatch):
    """privatize builds the float32 estimate from the sparse reports (memory: no dense reports, no
    float64 copy of the input); it must equal estimate(perturb(x)) in float32 under the same seed."""
    import privgraph.mechanisms.base as base

    monkeypatch.setattr(base, "CHECK_BLOCK_VALUES", 50)  # the domain check in blocks of a few rows
    x = torch.rand(30, 45, generator=torch.Generator().manual_seed(1)) * 6.0 - 2.5
    if not mech.clip:
        x = x.clamp(mech.alpha, mech.beta)
    expected = mech.estimate(mech.perturb(x, torch.Generator().manual_seed(5))).to(torch.float32)
    clipped = mech.clipped_values
    out = mech.privatize(x, torch.Generator().manual_seed(5))
    assert out.dtype == torch.float32 and torch.equal(out, expected)
    assert mech.clipped_values == clipped == int(((x < mech.alpha) | (x > mech.beta)).sum())
    assert torch.equal(mech.validate(x), x.to(torch.float64).clamp(mech.alpha, mech.beta))
