"""PPCVGAE's tuning on validation: the held-out private nodes, the two-sided objective, one trained
model per candidate, independent noise per candidate, and the grid's search space for release parameters."""

import numpy as np
import pytest
import torch

from privgraph.attacks.attribute import attribute_inference, attribute_inference_on, holdout_private_nodes
from privgraph.data import sensitive_sbm_graph, split_sensitive
from privgraph.experiments import ExperimentSpec, run_experiment
from privgraph.experiments.pipeline import Experiment
from privgraph.mechanisms.gaussian import gaussian_delta
from privgraph.methods import get_method

SMALL = {"case": "b", "epochs": 15, "latent": 8, "kl_weight": 1.0}  # penalty: the one searched


def test_held_out_private_nodes_are_a_stratified_part_of_the_private_nodes():
    d = split_sensitive(sensitive_sbm_graph(seed=0), 0)
    val, test = holdout_private_nodes(d.private_mask, d.sens, 3)
    assert not bool((val & test).any()) and bool(((val | test) == d.private_mask).all())
    assert abs(int(val.sum()) - 0.2 * int(d.private_mask.sum())) <= 2
    for c in (0, 1):  # stratified: each class keeps its share
        share = float((d.sens[val] == c).float().mean()) - float((d.sens[d.private_mask] == c).float().mean())
        assert abs(share) < 0.03
    again, _ = holdout_private_nodes(d.private_mask, d.sens, 3)
    assert torch.equal(val, again)


def test_score_on_scores_the_same_attacker_on_a_subset():
    d = split_sensitive(sensitive_sbm_graph(seed=1), 1)
    z = torch.cat([d.sens.float()[:, None], torch.randn(d.num_nodes, 3)], dim=1)  # leaks s
    val, test = holdout_private_nodes(d.private_mask, d.sens, 0)
    full = attribute_inference("b", z, d.edge_index, d.sens, d.private_mask, 0)
    part = attribute_inference("b", z, d.edge_index, d.sens, d.private_mask, 0, score_on=test)
    assert part.truth.size == int(test.sum()) and full.truth.size == int(d.private_mask.sum())
    assert part.val_accuracy == full.val_accuracy  # the same attacker (its own validation on the public nodes)
    with pytest.raises(ValueError, match="subset of the private nodes"):
        attribute_inference("b", z, d.edge_index, d.sens, d.private_mask, 0, score_on=~d.private_mask)
    # one fitted attacker scored on both shares gives what two separate fits give (same seed, same model)
    on_test, on_val = attribute_inference_on("b", z, d.edge_index, d.sens, d.private_mask, 0, False, [test, val])
    alone = attribute_inference("b", z, d.edge_index, d.sens, d.private_mask, 0, score_on=val)
    assert on_test.accuracy == part.accuracy and np.array_equal(on_test.predicted, part.predicted)
    assert on_val.accuracy == alone.accuracy and np.array_equal(on_val.scores, alone.scores)


def test_tuned_setting_holds_out_private_nodes_and_maximises_the_two_sided_objective():
    spec = ExperimentSpec(
        method="ppcvgae",
        dataset="planted",
        epsilons=[None],
        trials=2,
        params=SMALL,
        tune=True,
        search_space={"penalty": [0.0, 100.0]},
    )
    result = run_experiment(spec)
    first = result.records[0]
    scores = [s["score"] for s in first.config["selection"]]
    assert len(scores) == 2 and first.config["release_options"]["penalty"] in (0.0, 100.0)
    chosen = first.config["selection"][scores.index(max(scores))]["values"]
    assert chosen == first.config["release_options"]  # the argmax of the objective
    for r in result.records:
        m = r.metrics
        # the objective is utility on validation − the attack's advantage on the held-out private nodes
        advantage = max(0.0, m["attack_heldout_accuracy"] - m["attack_heldout_majority"])
        assert m["validation_objective"] == pytest.approx(m["utility_val_accuracy"] - advantage)
        assert r.config["params"]["penalty"] == first.config["release_options"]["penalty"]
    assert first.metrics["validation_objective"] == pytest.approx(max(scores))  # trial 0 is the chosen release
    # the reported attack scores only the private nodes not held out (80 % of them)
    exp = Experiment(spec)
    d = exp.task.trial_data(exp.task.load(), 0)
    assert bool((d.attack_val_mask <= d.private_mask).all())
    assert bool(d.attack_val_mask.any()) and int(d.attack_val_mask.sum()) < int(d.private_mask.sum()) // 4 + 2


def test_each_candidate_trains_its_own_model_and_draws_its_own_noise():
    spec = ExperimentSpec(
        method="ppcvgae",
        dataset="planted",
        epsilons=[0.5],
        trials=1,
        params=SMALL,
        tune=True,
        search_space={"penalty": [0.0, 100.0]},
    )
    exp = Experiment(spec)
    data = exp.task.load()
    tdata = exp.task.trial_data(data, 0)
    a = exp.task.release(tdata, 0.5, 0, 0, exp.method.with_params(penalty=0.0), 0)
    b = exp.task.release(tdata, 0.5, 0, 0, exp.method.with_params(penalty=100.0), 1)
    assert len(exp.task._trained) == 2  # one training per candidate, not the first one reused
    assert a.details["delta_nu"] != b.details["delta_nu"]
    same = exp.task.release(tdata, 0.5, 0, 0, exp.method.with_params(penalty=0.0), 1)
    assert not torch.equal(a.payload.z, same.payload.z)  # same model, another candidate: its own noise
    note = run_experiment(spec).reports[0.5].guarantees[0].notes
    assert any("held out" in n and "not covered" in n and "2×ε" in n for n in note)


def test_search_space_of_release_parameters_is_checked():
    with pytest.raises(ValueError, match="does not search hyperparameters"):
        ExperimentSpec(
            method="ppcvgae", dataset="planted", params=SMALL, tune=True, search_space={"lr": [0.1]}
        ).validate()
    with pytest.raises(ValueError, match="fixed by the method's parameters"):
        ExperimentSpec(
            method="ppcvgae",
            dataset="planted",
            params={**SMALL, "penalty": 1.0},
            tune=True,
            search_space={"penalty": [0.0, 1.0]},
        ).validate()
    with pytest.raises(ValueError, match="tune is off"):
        ExperimentSpec(method="ppcvgae", dataset="planted", params=SMALL, search_space={"penalty": [1.0]}).validate()
    assert set(get_method("ppcvgae").release_search) == {"penalty", "latent", "epochs", "kl_weight"}


def test_untuned_settings_keep_scoring_every_private_node():
    spec = ExperimentSpec(method="ppcvgae", dataset="planted", epsilons=[None], trials=1, params=SMALL)
    exp = Experiment(spec)
    d = exp.task.trial_data(exp.task.load(), 0)
    assert "attack_val_mask" not in d
    record = run_experiment(spec).records[0]
    assert "validation_objective" not in record.metrics


def test_paper_calibration_uses_the_priors_delta_nu_and_states_no_guarantee():
    """calibration='paper' adds max(γ(Δν) − 1, 0) (§5.2) and is never DP: ε = ∞, the reason stated."""
    from privgraph.methods.ppcvgae.privacy import check_calibration, paper_noise_variance

    d = split_sensitive(sensitive_sbm_graph(seed=0), 0)
    method = get_method("ppcvgae", case="b", epochs=15, penalty=1.0, calibration="paper")
    trained = method.train(d, 0)
    rel = method.release_trained(trained, d, 0.5, torch.Generator().manual_seed(0))
    det = rel.details
    assert det["noise_variance"] == pytest.approx(paper_noise_variance(det["delta_nu"], 0.5, 1e-4))
    assert not rel.guarantee.is_private and rel.guarantee.epsilon == float("inf")
    assert any("NOT a DP mechanism" in n for n in rel.guarantee.notes)
    # the δ the paper's σ actually gives for the encoder mean's Δμ, reported
    assert det["exact_delta"] == pytest.approx(gaussian_delta(det["noise_std"], 0.5, det["delta_mu"]))
    # with Δν → 0 (a large penalty) the paper adds no noise while μ still moves: δ = 1, nothing hidden
    from privgraph.methods.ppcvgae.embedding import _paper_release

    mu = torch.zeros(4, 2)
    none = _paper_release(mu, 0.0, 1.0, 0.5, 1e-4, torch.Generator().manual_seed(0), "b", {}, [])
    assert none.details["noise_variance"] == 0.0 and none.details["exact_delta"] == 1.0
    assert torch.equal(none.z, mu) and not none.guarantee.is_private
    assert get_method("ppcvgae").params.calibration == "analytic"  # never the default
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        method.release_trained(trained, d, 2.0, torch.Generator().manual_seed(0))
    assert check_calibration("paper") == "paper"
