"""Heterogeneous experiments: HeteDP and the baselines end to end on the synthetic graph, and the CLI."""

import json

import pytest
from typer.testing import CliRunner

from privgraph.cli import app, expand_multi_value_options
from privgraph.experiments import ExperimentSpec, run_experiment
from privgraph.experiments.tasks import SHARE_GRID

SMALL_DPSGD = {"batch_size": 256, "epochs": 5}


def test_node_classification_hetedp_and_baselines():
    clean = run_experiment(ExperimentSpec(method="hetedp", task="nc", trials=1, hyperparameters={"epochs": 60}))
    noisy = run_experiment(
        ExperimentSpec(
            method="hetedp", task="nc", epsilons=[0.1], trials=1, hyperparameters={"epochs": 60}, diagnostics=True
        )
    )
    out = {r["metric"]: r["mean"] for r in clean.to_json()["results"]}
    assert set(out) == {"micro_f1", "macro_f1"} and out["micro_f1"] > 0.8
    g = noisy.to_json()["results"][0]["privacy"]["guarantees"][0]
    assert g["epsilon"] == 0.1 and g["unit"] == "node feature vector"
    assert noisy.records[0].config["release"]["features"]["noise_std"] > 0
    for method in ("rgcn", "hgt"):
        res = run_experiment(ExperimentSpec(method=method, task="nc", trials=1, hyperparameters={"epochs": 60}))
        assert res.summary()[0]["mean"] > 0.6


def test_link_prediction_reports_both_units_and_the_budget_search():
    res = run_experiment(
        ExperimentSpec(
            method="hetedp", task="lp", epsilons=[2.0], trials=1, params=SMALL_DPSGD, tune=True, diagnostics=True
        )
    )
    row = res.to_json()["results"][0]
    assert row["metric"] == "roc_auc" and 0.0 <= row["mean"] <= 1.0
    chosen = row["release_options"]["feature_share"]
    assert chosen in SHARE_GRID
    assert {c["values"]["feature_share"] for c in res.records[0].config["selection"]} == set(SHARE_GRID)
    units = {g["unit"]: g for g in row["privacy"]["guarantees"]}
    k = len(SHARE_GRID)  # every candidate released both units: the guarantees state what the selection spent
    assert units["node feature vector"]["epsilon"] == pytest.approx(k * chosen * 2.0)
    edge = units["edge of ('paper', 'to', 'author')"]
    assert edge["epsilon"] <= k * (1 - chosen) * 2.0 + 1e-9
    assert any("5×ε" in n for n in edge["notes"])  # the selection's cost is stated
    assert (row["epsilon"], row["releases"], row["epsilon_spent"]) == (2.0, k, k * 2.0)
    assert res.records[0].config["release"]["dpsgd"]["relations"] == ["subject__to__paper"]  # not paper–author


def test_message_passing_mode_claims_no_edge_level_epsilon(tmp_path):
    args = [
        "run",
        "hetedp",
        "--task",
        "lp",
        "--param",
        "topology=message-passing",
        "--epsilon",
        "1",
        "--trials",
        "1",
        "--param",
        "feature_share=0.5",
        "--param",
        "epochs=2",
        "--db",
        str(tmp_path / "r.db"),
        "--format",
        "json",
    ]
    res = CliRunner().invoke(app, expand_multi_value_options(args))
    assert res.exit_code == 0, res.output
    guarantees = json.loads(res.stdout)["results"][0]["privacy"]["guarantees"]
    topology = [g for g in guarantees if g["unit"] != "node feature vector"]
    assert len(topology) == 1 and topology[0]["unit"].startswith("loss term of one training example")
    assert not any(g["unit"].startswith("edge") for g in guarantees)
    assert any("NOT edge-level DP" in n for n in topology[0]["notes"])


@pytest.mark.parametrize(
    "spec, match",
    [
        (dict(method="rgcn", epsilons=[1.0]), "non-private baseline: it takes no epsilon"),
        (dict(task="xx"), "task"),
        (dict(dataset="amazon", task="nc"), "no node labels"),
        (dict(dataset="imdb", task="nc"), "multi-label"),
        (dict(params={"feature_share": 1.5}), "feature_share"),
        (dict(epsilons=[-1.0]), "epsilon"),
        (dict(params={"clip_bound": 0.0}), r"clip_bound must lie in \(0, inf\)"),
        (dict(params={"clip": -1}), "clip"),
        (dict(task="lp", params={"topology": "full"}), "topology"),
        (dict(tune=True), "--tune"),
        (dict(model="gat"), "does not take model"),
        (dict(hyperparameters={"lr": 0.1}), "unknown hyperparameters"),
    ],
)
def test_bad_hetero_specs(spec, match):
    with pytest.raises(ValueError, match=match):
        ExperimentSpec(**{"method": "hetedp", **spec}).validate()


def test_cli_hetedp_json(tmp_path):
    args = [
        "run",
        "hetedp",
        "--task",
        "nc",
        "--epsilon",
        "0.01",
        "1",
        "--trials",
        "1",
        "--set",
        "epochs=20",
        "--db",
        str(tmp_path / "r.db"),
        "--format",
        "json",
    ]
    res = CliRunner().invoke(app, expand_multi_value_options(args))
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {(r["metric"], r["epsilon"]) for r in out["results"]} == {
        (m, e) for m in ("micro_f1", "macro_f1") for e in (0.01, 1.0)
    }
    bad = CliRunner().invoke(app, ["run", "hgt", "--epsilon", "1", "--db", str(tmp_path / "r.db")])
    assert bad.exit_code == 2 and "non-private baseline: it takes no epsilon" in bad.output


def test_metapath2vec_baseline_learns_the_planted_classes():
    res = run_experiment(ExperimentSpec(method="metapath2vec", task="nc", trials=1))
    assert {r["metric"]: r["mean"] for r in res.to_json()["results"]}["micro_f1"] > 0.6  # 3 classes: chance 1/3


def test_the_papers_calibration_runs_in_the_pipeline_and_says_it_is_not_dp():
    """calibration=paper (opt-in): the same trial as the default, its features' report says ε = ∞
    (not DP); the default keeps its (ε, δ) claim."""
    runs = {
        cal: run_experiment(
            ExperimentSpec(
                method="hetedp",
                task="lp",
                epsilons=[1.0],
                trials=1,
                params={**SMALL_DPSGD, "feature_share": 0.5, **({"calibration": cal} if cal else {})},
                diagnostics=True,
            )
        )
        for cal in (None, "paper")
    }
    units = {cal: {g["unit"]: g for g in r.to_json()["results"][0]["privacy"]["guarantees"]} for cal, r in runs.items()}
    assert units[None]["node feature vector"]["epsilon"] == pytest.approx(0.5)
    paper = units["paper"]["node feature vector"]
    assert paper["epsilon"] in ("inf", float("inf"), None) and "NOT DP" in paper["mechanism"]
    release = runs["paper"].records[0].config["release"]
    assert release["calibration"] == "paper" and release["features"]["lambda"] == 0.01
    assert runs[None].records[0].config["release"]["calibration"] == "clipped"
