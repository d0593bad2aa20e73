"""Attacks through the experiment pipeline, the CLI and the Python API."""

import json

import pytest
from typer.testing import CliRunner

import privgraph as pg
from privgraph.attacks import ATTACKS
from privgraph.cli import app
from privgraph.data import sensitive_sbm_graph
from privgraph.experiments import ExperimentSpec, ResultsStore, run_experiment

runner = CliRunner()
FAST = {"epochs": 40, "patience": 20}


def test_attack_joins_the_trial_and_leaves_the_target_unchanged():
    plain = run_experiment(ExperimentSpec(method="gcn-raw", dataset="planted", trials=2, hyperparameters=FAST))
    attacked = run_experiment(
        ExperimentSpec(method="gcn-raw", dataset="planted", trials=2, hyperparameters=FAST, attack="attribute")
    )
    # the target is trained exactly as `run` trains it: same utility, trial by trial
    assert [r.metrics["accuracy"] for r in attacked.records] == [r.metrics["accuracy"] for r in plain.records]
    for r in attacked.records:
        assert {"attack_auc", "attack_advantage", "attack_tpr_at_1fpr"} <= set(r.metrics)
        assert r.config["attack"]["name"] == "attribute"
        assert r.config["attack"]["threat_model"]["queries"] and r.config["attack"]["threat_model"]["answers"]
    out = attacked.to_json()
    assert out["attack"]["name"] == "attribute"
    assert {row["metric"] for row in out["results"]} >= {"accuracy", "attack_auc", "attack_advantage"}
    assert attacked.columns[0] == "accuracy" and "attack_auc" in attacked.columns


def test_embedding_release_attribute_attack_is_the_task_s_own():
    spec = ExperimentSpec(method="ppcvgae", dataset="planted", trials=1, params={"epochs": 30})
    plain, attacked = run_experiment(spec), run_experiment(ExperimentSpec(**{**spec.__dict__, "attack": "attribute"}))
    assert plain.records[0].metrics == attacked.records[0].metrics
    assert "attack_auc" in plain.records[0].metrics


@pytest.mark.parametrize(
    "spec,message",
    [
        (dict(method="gcn-raw", dataset="sbm", attack="attribute"), "sbm has none"),
        (dict(method="gcn-raw", dataset="sbm", attack="bogus"), "unknown attack"),
        (dict(method="gcn-raw", dataset="sbm", attack_params={"case": "a"}), "without an attack"),
        (dict(method="gcn-raw", dataset="planted", attack="attribute", attack_params={"bogus": 1}), "no parameter"),
        (dict(method="ppcvgae", dataset="planted", attack="attribute", attack_params={"case": "a"}), "--case"),
        (dict(method="ppcvgae", dataset="planted", attack="membership-confidence"), "inference API"),
        (dict(method="mlp", dataset="sbm", attack="linkteller"), "never uses"),
        (dict(method="hetedp", task="lp", attack="membership-confidence"), "link model"),
    ],
)
def test_bad_attack_specs_are_refused_before_work(spec, message):
    with pytest.raises(ValueError, match=message):
        ExperimentSpec(**spec).validate()


def test_cli_attack_json_and_store(tmp_path):
    db = tmp_path / "r.db"
    res = runner.invoke(
        app,
        [
            "attack",
            "attribute",
            "--method",
            "gcn-raw",
            "--dataset",
            "planted",
            "--trials",
            "1",
            "--set",
            "epochs=30",
            "--db",
            str(db),
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["attack"]["name"] == "attribute" and out["attack"]["threat_model"]["knowledge"]
    metrics = {r["metric"] for r in out["results"]}
    assert {"accuracy", "attack_auc", "attack_advantage", "attack_tpr_at_1fpr"} <= metrics
    (record,) = ResultsStore(db).records()
    assert "attack_auc" in record.metrics and record.config["attack"]["name"] == "attribute"
    table = runner.invoke(
        app,
        [
            "attack",
            "attribute",
            "--method",
            "gcn-raw",
            "--dataset",
            "planted",
            "--trials",
            "1",
            "--set",
            "epochs=30",
            "--db",
            str(db),
        ],
    )
    assert table.exit_code == 0 and "Threat model" in table.output and "attack auc" in table.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["attack", "bogus", "--method", "gcn-raw"], "unknown attack"),
        (["attack", "attribute", "--method", "gcn-raw", "--attack-param", "bogus=1"], "no parameter"),
        (["attack", "attribute", "--method", "gcn-raw", "--dataset", "sbm"], "sensitive"),
    ],
)
def test_cli_attack_bad_input_exits_2(args, message, tmp_path):
    res = runner.invoke(app, [*args, "--db", str(tmp_path / "r.jsonl")])  # not the default: results/ in the cwd
    assert res.exit_code == 2 and message in res.output, res.output


def test_cli_lists_attacks():
    res = runner.invoke(app, ["attacks"])
    assert res.exit_code == 0
    for name in ATTACKS:
        assert name in res.output


def test_api_attack_on_a_release_and_on_a_fit_result():
    data = sensitive_sbm_graph(seed=1)
    release = pg.privatize(data, "rr", epsilon=2.0, seed=0)
    direct = pg.attack(release, "attribute", truth=data, seed=0)
    fitted = pg.fit(release, seed=0)
    assert pg.attack(fitted, "attribute", truth=data, seed=0).metrics == direct.metrics
    assert direct.threat_model.answers.startswith("the graph the server holds")
    embedding = pg.privatize(data, "ppcvgae", epsilon=4.0, seed=0, epochs=30)
    assert "released embeddings" in pg.attack(embedding, "attribute", truth=data).threat_model.answers
    with pytest.raises(TypeError, match="PrivateRelease"):
        pg.attack(data, "attribute", truth=data)
    with pytest.raises(ValueError, match="inference API"):
        pg.attack(embedding, "membership-confidence", truth=data)
