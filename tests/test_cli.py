import json

import pytest
from typer.testing import CliRunner

from privgraph.cli import app, expand_multi_value_options
from privgraph.experiments import ResultsStore

runner = CliRunner()
FAST = ["--set", "epochs=30", "--set", "patience=10"]


def test_expand_multi_value_options():
    argv = ["run", "lpgnn", "--epsilon", "0.1", "0.5", "1", "--trials", "2", "--epsilon=2,3"]
    assert expand_multi_value_options(argv) == [
        "run", "lpgnn", "--epsilon", "0.1", "--epsilon", "0.5", "--epsilon", "1", "--trials", "2",
        "--epsilon", "2", "--epsilon", "3",
    ]


def test_run_json_schema_and_results_store(tmp_path):
    db = tmp_path / "r.db"
    args = ["run", "lpgnn", "--dataset", "sbm", "--epsilon", "0.5", "--epsilon", "2", "--trials", "2",
            "--db", str(db), "--format", "json", *FAST]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["method"] == "lpgnn" and out["dataset"] == "SBM"
    assert [r["epsilon"] for r in out["results"]] == [0.5, 2.0]
    for r in out["results"]:
        assert r["metric"] == "accuracy" and r["trials"] == 2
        assert 0.0 <= r["mean"] <= 1.0 and r["std"] >= 0.0
        assert r["privacy"]["by_unit"]["node feature vector"]["epsilon"] == r["epsilon"]
    rows = list(ResultsStore(db).records())
    assert len(rows) == 4
    assert {"accuracy", "val_accuracy"} <= set(rows[0].metrics)
    assert rows[0].seed == 0 and rows[1].seed == 1 and rows[0].wall_time > 0
    assert rows[0].config["hyperparameters"]["epochs"] == 30


def test_run_table_baseline_and_plot(tmp_path):
    db = tmp_path / "r.db"
    res = runner.invoke(app, ["run", "mlp", "--dataset", "sbm", "--trials", "2", "--db", str(db), *FAST])
    assert res.exit_code == 0, res.output
    assert "Privacy report" in res.stdout and "no protection" in res.stdout
    res = runner.invoke(app, ["run", "lpgnn", "--dataset", "sbm", "--epsilon", "1", "--trials", "1",
                              "--mechanism", "gaussian", "--db", str(db), *FAST])
    assert res.exit_code == 0, res.output
    assert "(1, 1e-05)-LDP" in res.stdout
    png = tmp_path / "plot.png"
    res = runner.invoke(app, ["plot", "--db", str(db), "-o", str(png)])
    assert res.exit_code == 0, res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("bad", [["--epsilon", "0"], ["--epsilon", "-1"], ["--epsilon-y", "0"]])
def test_bad_privacy_parameters_exit_with_error(tmp_path, bad):
    res = runner.invoke(app, ["run", "lpgnn", "--dataset", "sbm", "--db", str(tmp_path / "r.db"), *bad])
    assert res.exit_code == 2
    assert "epsilon" in res.output


def test_unknown_dataset_and_missing_db(tmp_path):
    res = runner.invoke(app, ["run", "gcn-raw", "--dataset", "nope", "--db", str(tmp_path / "r.db")])
    assert res.exit_code == 1 and "unknown dataset" in res.output
    res = runner.invoke(app, ["plot", "--db", str(tmp_path / "missing.db")])
    assert res.exit_code == 2


def test_expand_multi_value_options_stops_at_short_options():
    assert expand_multi_value_options(["release", "x", "--epsilon", "1", "-o", "g.pt"]) == [
        "release", "x", "--epsilon", "1", "-o", "g.pt"]
    assert expand_multi_value_options(["--epsilon", "-1", "2"]) == ["--epsilon", "-1", "--epsilon", "2"]


def test_run_heterorr_reports_both_units(tmp_path):
    args = ["run", "heterorr", "--dataset", "sbm", "--private-ratio", "0.2", "--epsilon-f", "2", "--epsilon", "1",
            "--trials", "1", "--mcmc-steps", "2000", "--bins", "3", "--db", str(tmp_path / "r.db"), "--format",
            "json", *FAST]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    units = json.loads(res.stdout)["results"][0]["privacy"]["by_unit"]
    assert units["node feature vector"]["epsilon"] == 2.0
    assert units["private edge"]["epsilon"] == 1.0 and units["private edge"]["trust_model"].startswith("central")


@pytest.mark.parametrize("args, message", [
    (["run", "edgerr", "--dataset", "sbm"], "--private-ratio"),
    (["run", "featurerr", "--dataset", "sbm", "--gamma", "1.5"], "gamma"),
    (["run", "featurerr", "--dataset", "sbm", "--bins", "1"], "bins"),
    (["run", "heterorr", "--dataset", "sbm", "--private-ratio", "0.2", "--epsilon-e", "0"], "epsilon_e"),
    (["run", "edgerr", "--dataset", "sbm", "--private-ratio", "2"], "ratio"),
])
def test_heterorr_bad_options_exit_with_error(tmp_path, args, message):
    res = runner.invoke(app, args + ["--db", str(tmp_path / "r.db")])
    assert res.exit_code == 2 and message in res.output


@pytest.mark.parametrize("method", ["edgerr", "featureldp", "lapgraph"])
def test_release_writes_graph_and_report(tmp_path, method):
    import torch

    out = tmp_path / "g.pt"
    own = {"edgerr": ["--mcmc-steps", "500"], "featureldp": ["--mechanism", "piecewise"], "lapgraph": []}[method]
    args = ["release", method, "--dataset", "sbm", "--epsilon", "2", "--private-ratio", "0.3", *own,
            "--reproducible", "-o", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    graph = torch.load(out)
    meta = json.loads((tmp_path / "g.pt.json").read_text())
    assert graph["x"].shape[0] == graph["num_nodes"] and graph["edge_index"].shape[0] == 2
    assert meta["method"] == method and meta["epsilon"] == 2.0 and meta["edges"] == graph["edge_index"].shape[1]
    unit = "node feature vector" if method == "featureldp" else "private edge"
    assert meta["privacy"]["by_unit"][unit]["epsilon"] == 2.0
    again = tmp_path / "h.pt"
    assert runner.invoke(app, args[:-1] + [str(again)]).exit_code == 0
    assert torch.equal(torch.load(again)["edge_index"], graph["edge_index"])  # seeded: the same release


def test_secure_note_reaches_every_guarantee(tmp_path):
    args = ["run", "heterorr", "--dataset", "sbm", "--private-ratio", "0.2", "--epsilon", "1", "--trials", "1",
            "--mcmc-steps", "500", "--secure", "--db", str(tmp_path / "r.db"), "--format", "json", *FAST]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    for g in json.loads(res.stdout)["results"][0]["privacy"]["guarantees"]:
        assert any(n.startswith("randomness from the OS cryptographic source") for n in g["notes"])


def test_cli_copies_of_the_library_choices_match():
    """The CLI restates the topology modes to build its options without importing torch; they must agree.
    (Method names are not copied: the CLI reads the registry.)"""
    import privgraph.cli as cli
    from privgraph.methods.hetedp.topology import TOPOLOGY_MODES

    assert tuple(t.value for t in cli.Topology) == TOPOLOGY_MODES
    assert not hasattr(cli, "EMBEDDING_METHODS") and not hasattr(cli, "HETERO_METHODS")


def test_a_flag_the_method_has_no_parameter_for_is_refused(tmp_path):
    for args in (["run", "edgerr", "--private-ratio", "0.2", "--mechanism", "piecewise"],
                 ["run", "lapgraph", "--private-ratio", "0.2", "--mcmc-steps", "10"],
                 ["run", "blink", "--clip"]):
        res = runner.invoke(app, [*args, "--db", str(tmp_path / "r.db")])
        assert res.exit_code == 2 and ("no parameter" in res.output or "takes no" in res.output), res.output
