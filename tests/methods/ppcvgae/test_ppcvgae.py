"""PPCVGAE end to end: the penalty against an MLP adversary, the calibrated DP
release, the attacks, DP-GCN, the experiment runner and the command line."""

import json
import math

import pytest
import torch
from sklearn.linear_model import LogisticRegression
from typer.testing import CliRunner

from privgraph.api import load_release
from privgraph.attacks import attribute_inference, balanced_mask, known_attribute_features
from privgraph.cli import app, expand_multi_value_options
from privgraph.data import sensitive_sbm_graph
from privgraph.experiments import ExperimentSpec, run_experiment
from privgraph.experiments.tasks import AttributeInference
from privgraph.mechanisms import SecureRandom
from privgraph.mechanisms.gaussian import analytic_gaussian_sigma, classical_gaussian_sigma, gaussian_delta
from privgraph.methods import get_method
from privgraph.methods.ppcvgae.dpgcn import disentangle
from privgraph.methods.ppcvgae.embedding import (
    EmbeddingConfig,
    build_autoencoder,
    release_embedding,
    standardize,
    train_embedding,
)
from privgraph.methods.ppcvgae.privacy import binary_entropy, flip_candidate, gaussian_variance

METRICS = AttributeInference.metrics


def _trained(case, d, penalty, epochs=200, encoder_penalty=0.0, seed=0):
    config = EmbeddingConfig(epochs=epochs, penalty=penalty, encoder_penalty=encoder_penalty)
    model = build_autoencoder(case, d.x.shape[1], config, seed)
    candidate = flip_candidate(d.sens, d.private_mask)
    train_embedding(model, d, candidate, config, seed)
    return model, candidate


def test_penalty_lowers_an_mlp_adversarys_accuracy_on_a_planted_graph():
    """s is planted in X through a proxy; without Δν the conditional prior carries s into μ."""
    plain, penalised = [], []
    for seed in range(3):
        d = sensitive_sbm_graph(seed=seed)
        for weight, out in ((0.0, plain), (100.0, penalised)):
            model, candidate = _trained("b", d, weight, seed=seed)
            z = release_embedding(model, d, candidate, None).z
            out.append(attribute_inference("b", z, d.edge_index, d.sens, d.private_mask, seed).accuracy)
    majority = max(float(d.sens[d.private_mask].float().mean()), 1 - float(d.sens[d.private_mask].float().mean()))
    assert sum(plain) / 3 > majority + 0.15  # the unpenalised CVGAE leaks s
    assert sum(plain) / 3 - sum(penalised) / 3 > 0.08


def _encoder_means(model, d, candidate):
    x = standardize(d.x)
    with torch.no_grad():
        return model.encode(x, d.sens, d.edge_index)[0], model.encode(x, candidate, d.edge_index)[0]


def _assert_noise_variance(noise, variance):
    """χ² test on all n·M entries (5 standard deviations) and a mean-zero check."""
    noise = noise.flatten().double()
    k = noise.numel()
    chi2 = float((noise**2).sum() / variance)
    assert abs(chi2 - k) < 5 * math.sqrt(2 * k)
    assert abs(float(noise.mean())) < 5 * math.sqrt(variance / k)


def test_dp_release_noise_is_calibrated_on_the_encoder_mean():
    """The classical option (eq. 6, the paper's calibration — the default before the analytic one)."""
    d = sensitive_sbm_graph(seed=0)
    model, candidate = _trained("b", d, 10.0, epochs=30)
    mu_s, mu_c = _encoder_means(model, d, candidate)
    delta_mu = float(torch.linalg.norm(mu_s - mu_c))
    assert delta_mu > 0
    rel = release_embedding(model, d, candidate, (0.5, 1e-4), torch.Generator().manual_seed(0), calibration="classical")
    variance = gaussian_variance(delta_mu**2, 0.5, 1e-4)
    assert rel.details["calibration"] == "classical"
    assert rel.details["delta_mu"] == pytest.approx(delta_mu, rel=1e-5)
    assert rel.details["noise_variance"] == pytest.approx(variance, rel=1e-5)
    assert variance == pytest.approx(2 * math.log(1.25 / 1e-4) * delta_mu**2 / 0.25, rel=1e-6)
    # eq. 6 exactly, for the Δμ the release computed
    dm = rel.details["delta_mu"]
    assert rel.details["noise_variance"] == pytest.approx(2 * math.log(1.25 / 1e-4) * dm**2 / 0.25, rel=1e-12)
    assert rel.details["classical_noise_variance"] == pytest.approx(rel.details["noise_variance"], rel=1e-12)
    # the report states the true δ at this σ: far below the δ claimed (eq. 6 over-noises)
    true_delta = gaussian_delta(math.sqrt(rel.details["noise_variance"]), 0.5, dm)
    assert rel.details["exact_delta"] == pytest.approx(true_delta, rel=1e-9)
    assert true_delta < 1e-4 / 100
    assert any("classical" in n and "loose" in n and f"{true_delta:.3g}" in n for n in rel.guarantee.notes)
    assert "classical" in rel.guarantee.mechanism
    # the released noise has that variance (χ² test on all n·M entries) and mean zero
    _assert_noise_variance(rel.z - mu_s, variance)
    g = rel.guarantee
    assert (g.epsilon, g.delta) == (0.5, 1e-4)
    assert any("candidates" in n for n in g.notes)
    # the mutual-information bound of this release: KL between the two candidate laws
    assert rel.details["mi_bound_release"] == pytest.approx(delta_mu**2 / (2 * variance), rel=1e-6)
    assert rel.details["mi_bound_release"] == pytest.approx(0.25 / (4 * math.log(1.25e4)), rel=1e-6)
    bound = rel.details["detection_error_bound_release"]
    assert 0.4 < bound < 0.5
    assert binary_entropy(bound) == pytest.approx(math.log(2) - rel.details["mi_bound_release"], abs=1e-9)


def test_dp_release_defaults_to_the_analytic_gaussian():
    """σ = analytic_gaussian_sigma(ε, δ, Δμ): exact δ(ε) at σ is ≤ δ and within 1 % of it, σ below eq. 6's."""
    d = sensitive_sbm_graph(seed=0)
    model, candidate = _trained("b", d, 10.0, epochs=30)
    mu_s, _ = _encoder_means(model, d, candidate)
    eps, delta = 0.5, 1e-4
    rel = release_embedding(model, d, candidate, (eps, delta), torch.Generator().manual_seed(0))
    dm = rel.details["delta_mu"]
    assert dm > 0
    sigma = analytic_gaussian_sigma(eps, delta, dm)
    assert rel.details["calibration"] == "analytic"
    assert rel.details["noise_std"] == pytest.approx(sigma, rel=1e-12)
    assert rel.details["noise_variance"] == pytest.approx(sigma**2, rel=1e-12)
    _assert_noise_variance(rel.z - mu_s, sigma**2)
    exact = gaussian_delta(sigma, eps, dm)
    assert exact <= delta and exact == pytest.approx(delta, rel=0.01)
    assert rel.details["exact_delta"] == pytest.approx(exact, rel=1e-9)
    classical = classical_gaussian_sigma(eps, delta, dm)
    assert sigma < classical
    assert sigma / classical == pytest.approx(0.678, abs=0.005)  # ε = 0.5, δ = 1e-4: about 2/3 of eq. 6's σ
    assert rel.details["classical_noise_variance"] == pytest.approx(classical**2, rel=1e-12)
    assert rel.details["paper_noise_variance"] is not None  # reported, not used
    g = rel.guarantee
    assert (g.epsilon, g.delta) == (eps, delta)
    assert "analytic" in g.mechanism
    assert any("analytic Gaussian calibration" in n and f"{sigma**2:.4g}" in n for n in g.notes)
    assert rel.details["mi_bound_release"] == pytest.approx(dm**2 / (2 * sigma**2), rel=1e-9)


def test_dp_release_with_epsilon_at_least_one_needs_the_analytic_calibration():
    d = sensitive_sbm_graph(seed=0)
    model, candidate = _trained("a", d, 10.0, epochs=20)
    for eps in (1.0, 4.0):
        rel = release_embedding(model, d, candidate, (eps, 1e-4), torch.Generator().manual_seed(0))
        dm = rel.details["delta_mu"]
        assert rel.details["noise_std"] == pytest.approx(analytic_gaussian_sigma(eps, 1e-4, dm), rel=1e-12)
        assert rel.details["exact_delta"] <= 1e-4
        assert rel.details["classical_noise_variance"] is None and rel.details["paper_noise_variance"] is None
        assert rel.guarantee.epsilon == eps
        with pytest.raises(ValueError, match=r"epsilon in \(0, 1\)"):
            release_embedding(model, d, candidate, (eps, 1e-4), torch.Generator(), calibration="classical")
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="epsilon"):
            release_embedding(model, d, candidate, (bad, 1e-4), torch.Generator())
    with pytest.raises(ValueError, match="calibration"):
        release_embedding(model, d, candidate, (0.5, 1e-4), torch.Generator(), calibration="exact")


def test_dp_release_draws_from_the_given_rng_and_never_a_global_one():
    d = sensitive_sbm_graph(seed=0)
    model, candidate = _trained("b", d, 10.0, epochs=20)
    mu_s, _ = _encoder_means(model, d, candidate)
    first = release_embedding(model, d, candidate, (0.5, 1e-4), SecureRandom())
    second = release_embedding(model, d, candidate, (0.5, 1e-4), SecureRandom())
    assert not torch.equal(first.z, second.z)
    assert first.z.dtype == mu_s.dtype and first.z.shape == mu_s.shape
    _assert_noise_variance(first.z - mu_s, first.details["noise_variance"])
    seeded = [release_embedding(model, d, candidate, (0.5, 1e-4), torch.Generator().manual_seed(3)).z for _ in range(2)]
    assert torch.equal(seeded[0], seeded[1])
    with pytest.raises(ValueError, match="rng"):
        release_embedding(model, d, candidate, (0.5, 1e-4))
    with pytest.raises(TypeError, match="rng"):
        release_embedding(model, d, candidate, (0.5, 1e-4), 3)
    assert torch.equal(release_embedding(model, d, candidate, None).z, mu_s)  # no DP: no rng needed


def test_dp_release_adds_no_noise_when_the_encoder_mean_ignores_the_candidates():
    """Δμ = 0 (here: s' = s): the release is the same under every candidate, σ = 0 and δ(ε) = 0."""
    d = sensitive_sbm_graph(seed=0)
    model, _ = _trained("b", d, 10.0, epochs=5)
    mu_s, _ = _encoder_means(model, d, d.sens)
    for calibration in ("analytic", "classical"):
        rel = release_embedding(model, d, d.sens.clone(), (0.5, 1e-4), torch.Generator(), calibration=calibration)
        assert rel.details["delta_mu"] == 0.0
        assert rel.details["noise_variance"] == 0.0 and rel.details["exact_delta"] == 0.0
        assert torch.equal(rel.z, mu_s)
        assert any("no noise is added" in n for n in rel.guarantee.notes)


def test_the_two_candidates_give_the_same_release_law_up_to_the_calibrated_shift():
    """The privacy loss of the release at a point z is the Gaussian log-ratio L ~ N(η, 2η), η = Δμ²/(2σ²), under
    s (N(−η, 2η) under s'); the release is (ε, δ)-DP w.r.t. the candidates iff the hockey-stick divergence
    P_s[L > ε] − e^ε P_s'[L > ε] ≤ δ.  The analytic σ meets it with equality (up to the root finder's
    tolerance); the classical σ already bounds the plain tail P_s[L > ε] by δ."""
    d = sensitive_sbm_graph(seed=1)
    model, candidate = _trained("a", d, 10.0, epochs=30)
    eps, delta = 0.5, 1e-3

    def tail(mean, sd):  # P[N(mean, sd²) > ε]
        return 0.5 * math.erfc((eps - mean) / (sd * math.sqrt(2)))

    for calibration in ("analytic", "classical"):
        rel = release_embedding(
            model, d, candidate, (eps, delta), torch.Generator().manual_seed(1), calibration=calibration
        )
        eta = rel.details["delta_mu"] ** 2 / (2 * rel.details["noise_variance"])
        sd = math.sqrt(2 * eta)
        hockey_stick = tail(eta, sd) - math.exp(eps) * tail(-eta, sd)
        assert hockey_stick <= delta * (1 + 1e-9)  # erfc here vs log-space Φ in gaussian_delta: rounding only
        if calibration == "analytic":
            assert hockey_stick == pytest.approx(delta, rel=1e-6)
        else:
            assert tail(eta, sd) <= delta
            assert hockey_stick < delta / 10


def test_encoder_penalty_shrinks_the_sensitivity_and_the_noise():
    d = sensitive_sbm_graph(seed=0)
    noisy = []
    for weight in (0.0, 100.0):
        model, candidate = _trained("b", d, 10.0, epochs=80, encoder_penalty=weight)
        noisy.append(release_embedding(model, d, candidate, (0.5, 1e-4), torch.Generator()).details["delta_mu"])
    assert noisy[1] < 0.5 * noisy[0]


def test_known_attribute_features_never_use_the_nodes_own_value():
    d = sensitive_sbm_graph(seed=0)
    public = ~d.private_mask
    f = known_attribute_features(d.edge_index, d.sens, public, d.num_nodes)
    flipped = d.sens.clone()
    node = int(public.nonzero()[0])
    flipped[node] = 1 - flipped[node]
    g = known_attribute_features(d.edge_index, flipped, public, d.num_nodes)
    assert torch.equal(f[node], g[node])
    neighbours = d.edge_index[1][d.edge_index[0] == node]
    assert not torch.equal(f[neighbours], g[neighbours])  # ...but its neighbours see it
    deg = torch.bincount(d.edge_index[1], minlength=d.num_nodes).float().clamp_min(1)
    seen = torch.zeros(d.num_nodes).index_add_(0, d.edge_index[1], public[d.edge_index[0]].float())
    assert torch.allclose(f[:, 1], seen / deg)


def test_attack_reads_a_leaking_embedding_and_balancing_equalises_classes():
    d = sensitive_sbm_graph(seed=0)
    leaking = torch.nn.functional.one_hot(d.sens, 2).float() + 0.01 * torch.randn(d.num_nodes, 2)
    assert attribute_inference("b", leaking, d.edge_index, d.sens, d.private_mask, 0).accuracy > 0.97
    # the GCN mixes in the neighbours' values (s is only 90 % homophilous here), still far above chance
    assert attribute_inference("a", leaking, d.edge_index, d.sens, d.private_mask, 0).accuracy > 0.8
    noise = torch.randn(d.num_nodes, 4, generator=torch.Generator().manual_seed(0))
    score = attribute_inference("b", noise, d.edge_index, d.sens, d.private_mask, 0, balance=True)
    assert score.accuracy < 0.62  # balanced classes: chance is 0.5
    mask = balanced_mask(d.private_mask, d.sens, torch.Generator().manual_seed(0))
    assert int(d.sens[mask].sum()) == int((1 - d.sens[mask]).sum()) > 0
    with pytest.raises(ValueError, match="case"):
        attribute_inference("c", leaking, d.edge_index, d.sens, d.private_mask, 0)


def test_dpgcn_removes_the_sensitive_direction_but_not_all_linear_information():
    """Orthogonal *weights* do not decorrelate the projections of correlated
    features — the PPCVGAE paper's point against DP-GCN: a linear probe on Z_n
    does worse than on X, but not at chance."""
    d = sensitive_sbm_graph(seed=0)
    x = standardize(d.x)
    public = ~d.private_mask
    z, info = disentangle(x, d.sens, public, seed=0)
    assert info["max_orthogonality_residual"] < 0.05
    assert z.shape == (d.num_nodes, d.x.shape[1] - 2)

    def probe(features):
        clf = LogisticRegression(max_iter=2000).fit(features[public].numpy(), d.sens[public].numpy())
        return clf.score(features[d.private_mask].numpy(), d.sens[d.private_mask].numpy())

    majority = 1 - float(d.sens[d.private_mask].float().mean())
    assert majority + 0.05 < probe(z) < probe(x) - 0.02


def test_experiment_json_has_one_entry_per_metric_and_dp_rows():
    spec = ExperimentSpec(
        method="ppcvgae", epsilons=[None, 0.01, 0.5], trials=2, params={"case": "b", "epochs": 20}, diagnostics=True
    )
    result = run_experiment(spec)
    out = result.to_json()
    got = {(r["metric"], r["epsilon"]) for r in out["results"]}
    assert got == {(m, e) for m in METRICS for e in (None, 0.01, 0.5)}
    for r in out["results"]:
        assert 0.0 <= r["mean"] <= 1.0 and r["trials"] == 2
    dp = [r for r in out["results"] if r["epsilon"] == 0.01][0]["privacy"]["guarantees"][0]
    assert dp["epsilon"] == 0.01 and dp["delta"] == 1e-4 and dp["unit"] == "sensitive attribute"
    again = run_experiment(
        ExperimentSpec(
            method="ppcvgae", epsilons=[None, 0.01, 0.5], trials=2, params={"case": "b", "epochs": 20}, diagnostics=True
        )
    )
    # seeded: the same releases up to CPU float rounding (~1e-7, which the downstream classifiers,
    # trained on noise-dominated inputs, may amplify — so their scores are not compared)
    for a, b in zip(again.records, result.records):
        for key in ("delta_nu", "delta_mu", "noise_variance"):
            if key in b.config["release"]:
                assert a.config["release"][key] == pytest.approx(b.config["release"][key], rel=1e-3, abs=1e-6)


@pytest.mark.parametrize(
    "spec, match",
    [
        (dict(method="ppcvgae", epsilons=[0.9], params={"calibration": "classical"}), None),
        (dict(method="ppcvgae", epsilons=[1.5], params={"calibration": "classical"}), "epsilon in \\(0, 1\\)"),
        (dict(method="ppcvgae", epsilons=[0.0]), "epsilon"),
        (dict(method="ppcvgae", epsilons=[math.inf]), "epsilon"),
        (dict(method="ppcvgae", params={"calibration": "exact"}), "calibration"),
        (dict(method="ppcvgae", epsilons=[0.1], params={"delta": 1.0}), "delta"),
        (dict(method="vgae", epsilons=[0.1]), "non-private baseline: it takes no epsilon"),
        (dict(method="ppcvgae", params={"case": "c"}), "case"),
        (dict(method="vgae", case="c"), "case"),
        (dict(method="ppcvgae", case="a", params={"case": "b"}), "differ"),
        (dict(method="nope"), "unknown method"),
        (dict(method="ppcvgae", params={"bogus": 1}), "no parameter 'bogus'"),
        (dict(method="ppcvgae", hyperparameters={"epochs": 3}), "--set"),
        (dict(method="vgae", tune=True), "--tune"),  # ppcvgae takes --tune: its release parameters (tuning tests)
    ],
)
def test_bad_embedding_specs_fail_clearly(spec, match):
    if match is None:
        ExperimentSpec(**spec).validate()
        return
    with pytest.raises(ValueError, match=match):
        ExperimentSpec(**spec).validate()


def test_case_alone_sets_the_methods_case():
    """``--case b`` without ``--param case`` is the user's one choice: the method is built with it
    (it was refused because the method's default case=a "differed")."""
    spec = ExperimentSpec(method="ppcvgae", case="b")
    method, task = spec.build()
    assert method.params.case == "b" and task.case == "b"
    assert ExperimentSpec(method="ppcvgae", case="b", params={"case": "b"}).build()[0].params.case == "b"


def test_analytic_spec_accepts_epsilon_above_one():
    spec = ExperimentSpec(method="ppcvgae", epsilons=[0.5, 1, 8])
    spec.validate()
    assert spec.epsilons == [0.5, 1.0, 8.0] and get_method("ppcvgae").params.calibration == "analytic"


def test_experiment_passes_the_calibration_to_the_release():
    for calibration in ("analytic", "classical"):
        spec = ExperimentSpec(
            method="ppcvgae",
            epsilons=[0.5],
            trials=1,
            params={"case": "b", "calibration": calibration, "epochs": 5},
            diagnostics=True,
        )
        result = run_experiment(spec)
        release = [r for r in result.records if r.epsilon == 0.5][0].config["release"]
        assert release["calibration"] == calibration
        sigma = (analytic_gaussian_sigma if calibration == "analytic" else classical_gaussian_sigma)(
            0.5, 1e-4, release["delta_mu"]
        )
        assert release["noise_std"] == pytest.approx(sigma, rel=1e-12)


def test_a_graph_without_a_sensitive_attribute_is_refused():
    d = sensitive_sbm_graph(seed=0)
    del d.sens
    config = EmbeddingConfig(epochs=2)
    with pytest.raises(ValueError, match="no sensitive attribute"):
        train_embedding(build_autoencoder("a", d.x.shape[1], config), d, None, config, 0)


def test_cli_run_and_release(tmp_path):
    runner = CliRunner()
    args = [
        "run",
        "ppcvgae",
        "--param",
        "case=b",
        "--epsilon",
        "0.01",
        "--trials",
        "1",
        "--param",
        "epochs=10",
        "--db",
        str(tmp_path / "r.db"),
        "--format",
        "json",
    ]
    res = runner.invoke(app, expand_multi_value_options(args))
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {r["metric"] for r in out["results"]} == set(METRICS)
    # ε ≥ 1 is fine with the analytic calibration (the default); ε must still be > 0
    res = runner.invoke(app, ["run", "ppcvgae", "--epsilon", "0", "--db", str(tmp_path / "r.db")])
    assert res.exit_code == 2 and "epsilon" in res.output
    res = runner.invoke(app, ["release", "ppcvgae", "-o", str(tmp_path / "no.pt"), "--param", "epochs=10"])
    assert res.exit_code == 2 and "--allow-non-private" in res.output and not (tmp_path / "no.pt").exists()
    target = tmp_path / "emb.pt"
    res = runner.invoke(
        app, ["release", "ppcvgae", "--epsilon", "0.01", "-o", str(target), "--param", "epochs=10", "--diagnostics"]
    )
    assert res.exit_code == 0, res.output
    saved = load_release(target).data
    meta = json.loads((tmp_path / "emb.pt.json").read_text())
    assert saved["z"].shape[0] == saved["num_nodes"] and "sens" not in saved
    assert meta["privacy"]["guarantees"][0]["epsilon"] == 0.01 and meta["details"]["noise_variance"] > 0
