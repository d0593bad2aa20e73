"""HeteroRR's feature mechanisms: FeatureRR and the numeric LDP baselines."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import integrate

from privgraph.mechanisms import FEATURE_MECHANISMS, get_feature_mechanism
from privgraph.mechanisms.base import worst_case_log_ratio
from privgraph.mechanisms.feature_rr import FeatureRR, calibrate_lambda, released_code_loss, transition_matrix
from privgraph.mechanisms.numeric import (
    Duchi1D,
    DuchiFeatures,
    HybridMechanism,
    Piecewise,
    ThreeOutput,
    sampled_dimensions,
)

NEW = ["duchi", "piecewise", "hybrid", "three-output", "pm-sub"]


# ------------------------------------------------------------------ FeatureRR
@pytest.mark.parametrize("k", [2, 3, 7, 16])
def test_featurerr_exact_privacy_loss_from_transition_matrix(k):
    shares = torch.tensor([0.5, 0.3, 0.15, 0.05])
    mech = FeatureRR(2.0, shares, bins=k)
    loss = worst_case_log_ratio(transition_matrix(mech.lam, k))
    assert torch.allclose(loss, mech.budgets, rtol=1e-9, atol=1e-12)  # exactly ε_i, not less, not more
    halved_sigma = worst_case_log_ratio(transition_matrix(2 * mech.lam, k))  # σ/2 ⇔ 2λ
    assert (halved_sigma > mech.budgets * 1.5).all()
    # the computed calibration coincides with Theorem 3's σ_i = (k−1)/(kε_i)
    assert torch.allclose(mech.sigma, (k - 1) / (k * mech.budgets), rtol=1e-8)


def test_featurerr_transition_matches_eq8_and_zero_budget_is_uniform():
    lam = torch.tensor([0.3])
    p = transition_matrix(lam, 5)[0]
    t, u = 1, 4
    expected = math.exp(-0.3 * 3) / sum(math.exp(-0.3 * abs(v - t)) for v in range(5))
    assert float(p[t, u]) == pytest.approx(expected)
    assert float(calibrate_lambda(torch.tensor([0.0]), 4)[0]) == 0.0
    assert torch.allclose(transition_matrix(torch.tensor([0.0]), 4), torch.full((1, 4, 4), 0.25, dtype=torch.float64))


def test_featurerr_empirical_transition_and_discretization(gen):
    k = 4
    mech = FeatureRR(3.0, torch.tensor([1.0]), bins=k)
    assert mech.discretize(torch.tensor([[0.0], [0.25], [0.26], [0.74], [1.0]])).flatten().tolist() == [0, 0, 1, 2, 3]
    x = torch.full((40000, 1), 0.6)  # bin t = 3 (index 2)
    out = mech.perturb(x, gen)
    freq = torch.stack([(out == (u + 1) / k).double().mean() for u in range(k)])
    expected = transition_matrix(mech.lam, k)[0, 2]
    assert torch.allclose(freq, expected, atol=0.01)


def test_featurerr_bad_inputs():
    with pytest.raises(ValueError, match="epsilon"):
        FeatureRR(0.0, torch.tensor([1.0]))
    with pytest.raises(ValueError, match="bins"):
        FeatureRR(1.0, torch.tensor([1.0]), bins=1)
    with pytest.raises(ValueError, match="sum to 1"):
        FeatureRR(1.0, torch.tensor([0.2, 0.2]))
    with pytest.raises(ValueError, match="outside the declared domain"):
        FeatureRR(1.0, torch.tensor([1.0])).perturb(torch.tensor([[1.5]]), torch.Generator())


# ----------------------------------------------------------- discrete baselines
@pytest.mark.parametrize("eps", [0.2, 0.69, 1.0, 2.0, 5.0])
def test_three_output_exact_privacy_loss_and_unbiased(eps):
    mech = ThreeOutput()
    x = torch.linspace(-1, 1, 101, dtype=torch.float64)
    p = mech.probabilities(x, eps)
    assert torch.allclose(p.sum(-1), torch.ones_like(x))
    assert (p >= 0).all()
    assert float(worst_case_log_ratio(p)) == pytest.approx(eps, rel=1e-9)
    c = mech.magnitude(eps)
    assert torch.allclose(c * (p[:, 2] - p[:, 0]), x, atol=1e-12)  # E[M(x)] = x exactly
    # calibration at the wrong ε (as if the noise were halved) breaks the bound
    assert float(worst_case_log_ratio(mech.probabilities(x, 2 * eps))) > 1.5 * eps


def test_three_output_beats_duchi_at_large_epsilon_and_equals_it_at_small():
    x = torch.linspace(-1, 1, 201, dtype=torch.float64)
    small = ThreeOutput().probabilities(x, 0.3)
    assert torch.allclose(small[:, 1], torch.zeros_like(x))  # no zero output below ln 2: Duchi
    assert float(ThreeOutput().variance(x, 3.0).max()) < float(Duchi1D().variance(x, 3.0).max())


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_duchi_1d_exact_privacy_loss(eps):
    x = torch.tensor([-1.0, 1.0], dtype=torch.float64)
    plus = Duchi1D().plus_probability(x, eps)
    p = torch.stack([1 - plus, plus], dim=-1)
    assert float(worst_case_log_ratio(p)) == pytest.approx(eps)


@pytest.mark.parametrize("d", [1, 3, 4])
def test_duchi_multidimensional_exact_privacy_loss(d):
    """Enumerate every output t ∈ {±B}^d for corner inputs (P(t|x) is multilinear in x)."""
    eps = 1.3
    dd = d + 1 if d % 2 == 0 else d
    e = math.exp(eps)
    signs = list(itertools.product([-1, 1], repeat=dd))
    rows = []
    for corner in itertools.product([-1.0, 1.0], repeat=d):
        xv = list(corner) + [0.0] * (dd - d)
        probs = {}
        for t in signs:
            total = 0.0
            for v in signs:
                pv = math.prod((1 + xi * vi) / 2 for xi, vi in zip(xv, v))
                pt = (e / (e + 1) if np.dot(t, v) > 0 else 1 / (e + 1)) / 2 ** (dd - 1)
                total += pv * pt
            probs[t[:d]] = probs.get(t[:d], 0.0) + total  # the pad coordinate is dropped
        rows.append([probs[key] for key in sorted(probs)])
    p = torch.tensor(rows, dtype=torch.float64)
    assert torch.allclose(p.sum(-1), torch.ones(len(rows), dtype=torch.float64))
    assert float(worst_case_log_ratio(p)) <= eps + 1e-12


def test_duchi_multidimensional_unbiased(gen):
    mech = DuchiFeatures(2.0)
    row = torch.tensor([0.1, 0.9, 0.5, 0.0, 1.0, 0.3])
    est = mech.estimate(mech.perturb(row.repeat(60000, 1), gen))
    se = est.std(0) / math.sqrt(est.shape[0])
    assert ((est.mean(0) - row).abs() < 5 * se).all()
    assert float(est.abs().max()) == pytest.approx(
        max(abs(0.5 + 0.5 * mech.bound(2.0, 7)), abs(0.5 - 0.5 * mech.bound(2.0, 7)))
    )


# --------------------------------------------------------- continuous baselines
@pytest.mark.parametrize("mech", [Piecewise(0.5), Piecewise(1 / 3)])
@pytest.mark.parametrize("eps", [0.4, 1.0, 3.0])
def test_piecewise_density_ratio_mass_and_closed_forms(mech, eps):
    c, w, p0 = mech.parameters(eps)
    e, t = math.exp(eps), math.exp(mech.t_power * eps)
    assert c == pytest.approx((e + t) * (t + 1) / (t * (e - 1)))
    if mech.t_power == 0.5:
        assert c == pytest.approx((math.exp(eps / 2) + 1) / (math.exp(eps / 2) - 1))
    ys = torch.linspace(-c, c, 4001, dtype=torch.float64)
    dens = torch.stack([mech.density(ys, torch.tensor(x, dtype=torch.float64), eps) for x in (-1.0, -0.3, 0.5, 1.0)])
    ratio = (dens.max(0).values / dens.min(0).values).max()
    assert float(ratio) == pytest.approx(e)
    for x in (-1.0, 0.2, 1.0):
        xt = torch.tensor(x, dtype=torch.float64)
        lo, hi = (float(v) for v in mech.window(xt, eps))
        assert -c - 1e-9 <= lo and hi <= c + 1e-9
        mass = integrate.quad(
            lambda y: float(mech.density(torch.tensor(y), xt, eps)),  # noqa: B023
            -c,
            c,
            points=[lo, hi],
            limit=200,
        )[0]
        mean = integrate.quad(
            lambda y: y * float(mech.density(torch.tensor(y), xt, eps)),  # noqa: B023
            -c,
            c,
            points=[lo, hi],
            limit=200,
        )[0]
        assert mass == pytest.approx(1.0, abs=1e-5)
        assert mean == pytest.approx(x, abs=1e-5)


@pytest.mark.parametrize("mech", [Duchi1D(), Piecewise(0.5), Piecewise(1 / 3), HybridMechanism(), ThreeOutput()])
def test_scalar_mechanisms_unbiased_with_stated_variance(mech, gen):
    for eps in (0.5, 2.0):
        for x0 in (-0.8, 0.0, 0.6):
            x = torch.full((100000,), x0, dtype=torch.float64)
            y = mech.sample(x, eps, gen)
            var = float(mech.variance(torch.tensor(x0, dtype=torch.float64), eps))
            assert abs(float(y.mean()) - x0) < 5 * math.sqrt(var / y.numel())
            assert float(y.var()) == pytest.approx(var, rel=0.05)


@pytest.mark.parametrize("name", NEW)
def test_feature_baselines_unbiased_per_vector(name, gen):
    mech = get_feature_mechanism(name, 6.0, domain=(0.0, 2.0))
    row = torch.tensor([0.0, 0.4, 1.0, 1.7, 2.0])
    est = mech.estimate(mech.perturb(row.repeat(60000, 1), gen))
    se = est.std(0) / math.sqrt(est.shape[0])
    assert ((est.mean(0) - row).abs() < 5 * se).all(), name
    g = mech.guarantee()
    assert g.epsilon == 6.0 and g.delta == 0.0


def test_sampled_dimensions_rule_and_registry():
    assert sampled_dimensions(1.0, 100) == 1 and sampled_dimensions(10.0, 100) == 4 and sampled_dimensions(10.0, 3) == 3
    assert set(NEW) <= set(FEATURE_MECHANISMS)


@pytest.mark.parametrize("name", NEW)
def test_feature_baselines_bad_inputs(name):
    with pytest.raises(ValueError, match="epsilon"):
        get_feature_mechanism(name, -1.0)
    with pytest.raises(ValueError, match="outside the declared domain"):
        get_feature_mechanism(name, 1.0).perturb(torch.tensor([[0.5, 1.2]]), torch.Generator())


def test_featurerr_debiased_estimate_is_unbiased_for_the_binned_value(gen):
    k = 4
    mech = FeatureRR(3.0, torch.tensor([0.6, 0.4, 0.0]), bins=k, debias=True)
    x = torch.tensor([[0.1, 0.9, 0.5]]).repeat(100000, 1)
    est = mech.estimate(mech.perturb(x, gen))
    binned = torch.tensor([0.25, 1.0])  # t/k of 0.1 and 0.9
    se = est[:, :2].std(0) / math.sqrt(est.shape[0])
    assert ((est[:, :2].mean(0) - binned).abs() < 5 * se).all()
    assert torch.allclose(est[:, 2], torch.full_like(est[:, 2], 0.625))  # ε_i = 0: the constant mean value
    f = mech.unbiased_values()
    p = transition_matrix(mech.lam, k)
    assert torch.allclose((p[:2] @ f[:2, :, None]).squeeze(-1), torch.arange(1, k + 1).double().div(k).expand(2, -1))


def test_featurerr_endpoint_bin_values_are_exact_for_binary_features(gen):
    """bin_values='endpoints' labels bin t by (t − 1)/(k − 1): binary features keep 0 and 1 (the paper's t/k
    turns 0 into 1/k); the debiased estimate is unbiased for them; the privacy loss does not change."""
    x = torch.tensor([[0.0, 1.0]]).repeat(100000, 1)
    upper = FeatureRR(20.0, torch.tensor([0.5, 0.5]), bins=2)
    ends = FeatureRR(20.0, torch.tensor([0.5, 0.5]), bins=2, values="endpoints")
    assert torch.equal(ends.lam, upper.lam)
    assert ends.bin_values().tolist() == [0.0, 1.0] and upper.bin_values().tolist() == [0.5, 1.0]
    raw = FeatureRR(20.0, torch.tensor([0.5, 0.5]), bins=2, values="endpoints")
    reports = raw.perturb(x[:5], gen)
    assert torch.equal(raw.estimate(reports), x[:5].double())  # ε_i = 10: no flip in 10 values (P ≈ 4.5e-5 each)
    noisy = FeatureRR(1.0, torch.tensor([0.5, 0.5]), bins=2, values="endpoints", debias=True)
    est = noisy.estimate(noisy.perturb(x, gen))
    se = est.std(0) / math.sqrt(est.shape[0])
    assert ((est.mean(0) - x[0]).abs() < 5 * se).all()
    with pytest.raises(ValueError, match="values"):
        FeatureRR(1.0, torch.tensor([1.0]), values="middle")


def test_released_code_loss_matches_the_bitwise_formula_and_exceeds_epsilon():
    """The authors' code keeps bit j of feature i with probability sigmoid(d·ε·θ_i·(l − j)/l − μ)."""
    # d = 2, one bit, ε = 1, uniform θ: logit = 2·0.5·1 − (2·2 + 1)/(4·2) = 0.375 per feature
    assert released_code_loss(2, 1, 1.0) == pytest.approx(0.75)
    d, bits, eps = 50, 9, 1.0
    theta = torch.rand(d, generator=torch.Generator().manual_seed(0))
    theta = theta / theta.sum()
    mu = eps * ((bits + 1) * d + 1) / (4 * d * bits)
    brute = sum(abs(d * eps * float(theta[i]) * (bits - j) / bits - mu) for i in range(d) for j in range(bits))
    assert released_code_loss(d, bits, eps, theta) == pytest.approx(brute)
    assert released_code_loss(50, 9, 1.0) > 100 * eps  # PPI's r = 50, l = 9: not ε-LDP
    with pytest.raises(ValueError, match="entries"):
        released_code_loss(3, 1, 1.0, torch.ones(2) / 2)


def test_featurerr_budget_scale_reproduces_the_released_code_scale_and_says_it_is_not_ldp():
    d = 4
    mech = FeatureRR(1.0, torch.full((d,), 1.0 / d), bins=2, budget_scale=d)
    assert torch.allclose(mech.budgets, torch.ones(d, dtype=torch.float64))  # each feature gets ε, not ε/d
    assert torch.allclose(worst_case_log_ratio(transition_matrix(mech.lam, 2)), mech.budgets)
    g = mech.guarantee()
    assert g.epsilon == pytest.approx(d * 1.0) and any(n.startswith("NOT 1-LDP") for n in g.notes)
    capped = FeatureRR(8.0, torch.tensor([0.9, 0.1]), bins=2, budget_scale=100)
    assert float(capped.budgets.max()) == 20.0 and float(capped.guarantee().epsilon) == pytest.approx(40.0)
    assert FeatureRR(1.0, torch.full((d,), 1.0 / d)).guarantee().epsilon == 1.0
    with pytest.raises(ValueError, match="budget_scale"):
        FeatureRR(1.0, torch.full((d,), 1.0 / d), budget_scale=0.5)
