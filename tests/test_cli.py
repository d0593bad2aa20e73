import json

import pytest
from typer.testing import CliRunner

from privgraph.api import load_release
from privgraph.cli import app, expand_multi_value_options
from privgraph.experiments import ResultsStore

runner = CliRunner()
FAST = ["--set", "epochs=30", "--set", "patience=10"]


def test_expand_multi_value_options():
    argv = ["run", "lpgnn", "--epsilon", "0.1", "0.5", "1", "--trials", "2", "--epsilon=2,3"]
    assert expand_multi_value_options(argv) == [
        "run",
        "lpgnn",
        "--epsilon",
        "0.1",
        "--epsilon",
        "0.5",
        "--epsilon",
        "1",
        "--trials",
        "2",
        "--epsilon",
        "2",
        "--epsilon",
        "3",
    ]


def test_run_json_schema_and_results_store(tmp_path):
    db = tmp_path / "r.db"
    args = [
        "run",
        "lpgnn",
        "--dataset",
        "sbm",
        "--epsilon",
        "0.5",
        "--epsilon",
        "2",
        "--trials",
        "2",
        "--db",
        str(db),
        "--format",
        "json",
        *FAST,
    ]
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
    from privgraph.experiments.compare import MEASURED_NOTE  # under run's table as under compare's

    assert " ".join(MEASURED_NOTE.split()) in " ".join(res.stdout.split())
    res = runner.invoke(
        app,
        [
            "run",
            "lpgnn",
            "--dataset",
            "sbm",
            "--epsilon",
            "1",
            "--trials",
            "1",
            "--param",
            "mechanism=gaussian",
            "--db",
            str(db),
            *FAST,
        ],
    )
    assert res.exit_code == 0, res.output
    assert "(1, 1e-05)-LDP" in res.stdout
    png = tmp_path / "plot.png"
    res = runner.invoke(app, ["plot", "--db", str(db), "-o", str(png)])
    assert res.exit_code == 0, res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("bad", [["--epsilon", "0"], ["--epsilon", "-1"], ["--label-epsilon", "0"]])
def test_bad_privacy_parameters_exit_with_error(tmp_path, bad):
    res = runner.invoke(app, ["run", "lpgnn", "--dataset", "sbm", "--db", str(tmp_path / "r.db"), *bad])
    assert res.exit_code == 2
    assert "epsilon" in res.output


def test_unknown_dataset_and_missing_db(tmp_path):
    res = runner.invoke(app, ["run", "gcn-raw", "--dataset", "nope", "--db", str(tmp_path / "r.db")])
    assert res.exit_code == 2 and "unknown homogeneous dataset" in res.output  # before any work
    res = runner.invoke(app, ["plot", "--db", str(tmp_path / "missing.db")])
    assert res.exit_code == 2


def test_expand_multi_value_options_stops_at_short_options():
    assert expand_multi_value_options(["release", "x", "--epsilon", "1", "-o", "g.pt"]) == [
        "release",
        "x",
        "--epsilon",
        "1",
        "-o",
        "g.pt",
    ]
    assert expand_multi_value_options(["--epsilon", "-1", "2"]) == ["--epsilon", "-1", "--epsilon", "2"]


def test_run_heterorr_reports_both_units(tmp_path):
    args = [
        "run",
        "heterorr",
        "--dataset",
        "sbm",
        "--private-ratio",
        "0.2",
        "--param",
        "epsilon_f=2",
        "--epsilon",
        "1",
        "--trials",
        "1",
        "--param",
        "mcmc_steps=2000",
        "--param",
        "structure=private-mcmc",  # the paper's private MCMC (the default fits on the public edges)
        "--param",
        "convergence=waive",  # 1·n moves: EdgeRR would refuse; waived, the edge claim is ε = ∞
        "--param",
        "bins=3",
        "--db",
        str(tmp_path / "r.db"),
        "--format",
        "json",
        *FAST,
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    units = json.loads(res.stdout)["results"][0]["privacy"]["by_unit"]
    assert units["node feature vector"]["epsilon"] == 2.0
    assert units["private edge"]["epsilon"] == "inf" and units["private edge"]["trust_model"].startswith("central")


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "edgerr", "--dataset", "sbm"], "--private-ratio"),
        (["run", "featurerr", "--dataset", "sbm", "--param", "gamma=1.5"], "gamma"),
        (["run", "featurerr", "--dataset", "sbm", "--param", "bins=1"], "bins"),
        (["run", "heterorr", "--dataset", "sbm", "--private-ratio", "0.2", "--param", "epsilon_e=0"], "epsilon_e"),
        (["run", "edgerr", "--dataset", "sbm", "--private-ratio", "2"], "ratio"),
    ],
)
def test_heterorr_bad_options_exit_with_error(tmp_path, args, message):
    res = runner.invoke(app, args + ["--db", str(tmp_path / "r.db")])
    assert res.exit_code == 2 and message in res.output


@pytest.mark.parametrize("method", ["edgerr", "featureldp", "lapgraph"])
def test_release_writes_graph_and_report(tmp_path, method):
    import torch

    out = tmp_path / "g.pt"
    # EdgeRR's private MCMC: 500 moves on 2000 nodes do not converge, so its claim is waived (ε = ∞), not refused
    own = {
        "edgerr": ["--param", "mcmc_steps=500", "--param", "structure=private-mcmc", "--param", "convergence=waive"],
        "featureldp": ["--param", "mechanism=piecewise"],
        "lapgraph": [],
    }[method]
    args = [
        "release",
        method,
        "--dataset",
        "sbm",
        "--epsilon",
        "2",
        "--private-ratio",
        "0.3",
        *own,
        "--reproducible",
        "-o",
        str(out),
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    saved = torch.load(out)  # plain tensors and values: torch alone reads them
    meta = json.loads((tmp_path / "g.pt.json").read_text())
    assert saved["format"] == meta["format"] == "privgraph-release/2" and saved["kind"] == "Data"
    graph = saved["graph"]
    assert torch.equal(load_release(out).data.edge_index, graph["edge_index"])  # privgraph reads it as a Data
    assert graph["x"].shape[0] == graph["num_nodes"] and graph["edge_index"].shape[0] == 2
    assert meta["method"] == method and meta["epsilon"] == 2.0 and meta["provenance"]["private_ratio"] == 0.3
    unit = "node feature vector" if method == "featureldp" else "private edge"
    claimed = meta["privacy"]["by_unit"][unit]["epsilon"]
    assert claimed == ("inf" if method == "edgerr" else 2.0), claimed  # the JSON writes ε = ∞ as "inf"
    again = tmp_path / "h.pt"
    assert runner.invoke(app, args[:-1] + [str(again)]).exit_code == 0
    assert torch.equal(torch.load(again)["graph"]["edge_index"], graph["edge_index"])  # seeded: the same release


def test_secure_note_reaches_every_guarantee(tmp_path):
    args = [
        "run",
        "heterorr",
        "--dataset",
        "sbm",
        "--private-ratio",
        "0.2",
        "--epsilon",
        "1",
        "--trials",
        "1",
        "--param",
        "mcmc_steps=500",
        "--param",
        "structure=private-mcmc",
        "--param",
        "convergence=waive",
        "--secure",
        "--db",
        str(tmp_path / "r.db"),
        "--format",
        "json",
        *FAST,
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    guarantees = json.loads(res.stdout)["results"][0]["privacy"]["guarantees"]
    # the waived chain's private edges, and the public edges written in clear (ε = ∞ per edge)
    assert sorted(g["unit"] for g in guarantees if g["epsilon"] == "inf") == ["edge", "private edge"]
    for g in guarantees:  # as privgraph.privatize: the note on every guarantee that draws noise under ε
        secure = any(n.startswith("randomness from the OS cryptographic source") for n in g["notes"])
        assert secure == (g["epsilon"] != "inf"), g


def test_the_cli_copies_no_method_lists_or_choices():
    """Method names and parameter choices are not copied: the CLI reads the registry (``--param``)."""
    import privgraph.cli as cli

    assert not hasattr(cli, "EMBEDDING_METHODS") and not hasattr(cli, "HETERO_METHODS")
    for copy in ("Topology", "Mechanism", "Case", "Calibration", "_release_options", "_embedding_spec"):
        assert not hasattr(cli, copy), copy


def test_a_flag_the_method_has_no_parameter_for_is_refused(tmp_path):
    for args in (
        ["run", "edgerr", "--private-ratio", "0.2", "--param", "mechanism=piecewise"],
        ["run", "lapgraph", "--private-ratio", "0.2", "--param", "mcmc_steps=10"],
        ["run", "blink", "--param", "clip=true"],
    ):
        res = runner.invoke(app, [*args, "--db", str(tmp_path / "r.db")])
        assert res.exit_code == 2 and ("no parameter" in res.output or "takes no" in res.output), res.output


def test_param_reaches_the_method_and_the_stored_config(tmp_path):
    db = tmp_path / "r.db"
    res = runner.invoke(
        app,
        [
            "run",
            "blink",
            "--epsilon",
            "4",
            "--trials",
            "1",
            "--param",
            "variant=hybrid",
            "--param",
            "degree_share=0.3",
            "--db",
            str(db),
            "--format",
            "json",
            *FAST,
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["results"][0]["mechanism"] == "blink-hybrid"
    config = list(ResultsStore(db).records())[0].config
    assert config["params"]["variant"] == "hybrid" and config["params"]["degree_share"] == 0.3
    res = runner.invoke(
        app,
        [
            "run",
            "edgerr",
            "--private-ratio",
            "0.2",
            "--epsilon",
            "2",
            "--trials",
            "1",
            "--param",
            "mcmc_steps=500",
            "--param",
            "convergence=waive",
            "--db",
            str(db),
            "--format",
            "json",
            *FAST,
        ],
    )
    assert res.exit_code == 0, res.output
    assert list(ResultsStore(db).records())[-1].config["params"]["mcmc_steps"] == 500


def test_release_takes_typed_params(tmp_path):
    out = tmp_path / "f.pt"
    res = runner.invoke(
        app,
        [
            "release",
            "featurerr",
            "--epsilon",
            "2",
            "--param",
            "bins=3",
            "--param",
            "sensitive_features=3,17",
            "--param",
            "debias=false",
            "--reproducible",
            "--diagnostics",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "f.pt.json").read_text())
    assert {k: meta["params"][k] for k in ("bins", "sensitive_features", "debias")} == {
        "bins": 3,
        "sensitive_features": [3, 17],
        "debias": False,
    }
    assert meta["details"]["bins"] == 3 and meta["details"]["debiased"] is False
    assert meta["privacy"]["by_unit"]["node feature vector"]["epsilon"] == 2.0


@pytest.mark.parametrize(
    "args, needles",
    [
        (
            ["run", "blink", "--param", "foo=1"],
            ["'foo'", "variant, degree_share, soft_exact_limit, soft_min_probability"],
        ),
        (["run", "featurerr", "--param", "bins=x"], ["bins='x'", "int", "gamma, bins, public_fraction"]),
        (["release", "featurerr", "--param", "bins=1.5", "-o", "x.pt"], ["bins='1.5'", "int"]),
        (["run", "featurerr", "--param", "debias=maybe"], ["debias='maybe'", "bool"]),
        (["run", "featurerr", "--param", "sensitive_features=3,x"], ["sensitive_features", "tuple[int, ...] | None"]),
        (["run", "featurerr", "--param", "bins"], ["NAME=VALUE"]),
        (["run", "ppcvgae", "--param", "case=c"], ["case"]),
        (["run", "vgae", "--param", "penalty=1"], ["'penalty'", "latent, hidden, epochs, lr"]),
        (["run", "hetedp", "--param", "edge_type=a,b,c"], ["edge_type"]),
        (["run", "ppcvgae", "--case", "b", "--param", "case=a"], ["differ"]),
        (["run", "lpgnn", "--set", "foo=1"], ["'foo'", "kprop_steps"]),
        (["run", "ppcvgae", "--set", "epochs=5"], ["does not take --set", "--param"]),
        (["run", "hetedp", "--set", "dpsgd.epochs=2"], ["epochs, hidden"]),
        (["run", "ppcvgae", "--model", "gat"], ["does not take model"]),
        (["run", "lpgnn", "--task", "lp"], ["task 'lp' does not apply"]),
        (["run", "mlp", "--epsilon", "1"], ["is a non-private baseline: it takes no epsilon"]),
    ],
)
def test_a_bad_param_is_one_error_line(tmp_path, args, needles):
    res = runner.invoke(app, [*args, "--db", str(tmp_path / "r.db")] if args[0] == "run" else args)
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert text.startswith("error:") and text.count("error:") == 1 and "Traceback" not in res.output
    for needle in needles:
        assert needle in text, (needle, text)


def test_param_and_set_build_one_spec():
    from privgraph.cli import _spec

    spec = _spec("blink", ["variant=hybrid", "soft-min-probability=0.01"], [])
    assert spec.params == {"variant": "hybrid", "soft_min_probability": 0.01}
    spec = _spec("heterorr", ["sensitive_features=3,17", "mcmc_steps=none", "clip=yes"], [], private_ratio=0.2)
    assert spec.params == {"sensitive_features": (3, 17), "mcmc_steps": None, "clip": True}
    spec = _spec("ppcvgae", ["case=b", "calibration=classical", "delta=1e-5", "epochs=5", "encoder_penalty=0.5"], [])
    assert spec.params == {"case": "b", "calibration": "classical", "delta": 1e-5, "epochs": 5, "encoder_penalty": 0.5}
    spec = _spec(
        "hetedp",
        ["clip_bound=2", "clip=0.5", "epochs=3", "topology=node", "feature_share=0.3"],
        ["epochs=50"],
        task="lp",
    )
    assert spec.params == {"clip_bound": 2.0, "clip": 0.5, "epochs": 3, "topology": "node", "feature_share": 0.3}
    assert spec.hyperparameters == {"epochs": 50}


def test_every_registered_parameter_parses_from_its_text():
    """--param covers every parameter type in the registry: each default, written out, parses back."""
    import typing

    from privgraph.cli import _parse
    from privgraph.methods import METHODS

    def text(value):
        if value is None:
            return "none"
        return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)

    for name, cls in METHODS.items():
        hints = typing.get_type_hints(cls.Params)
        for p in cls.Params.describe():
            assert _parse(text(p["default"]), hints[p["name"]]) == p["default"], (name, p["name"])
    assert _parse("author,writes,paper", tuple[str, str, str] | None) == ("author", "writes", "paper")
    with pytest.raises(ValueError):
        _parse("a,b", tuple[str, str, str] | None)


def test_methods_prints_a_methods_parameters():
    res = runner.invoke(app, ["methods", "blink"])
    assert res.exit_code == 0, res.output
    for word in ("variant", "'hard'", "degree_share", "soft_exact_limit", "soft_min_probability", "--param"):
        assert word in res.stdout, word
    res = runner.invoke(app, ["methods", "featurerr"])
    assert "tuple[int," in res.stdout  # the type tuple[int, ...] | None is not read as rich markup
    res = runner.invoke(app, ["methods", "blink", "--format", "json"])
    assert [p["name"] for p in json.loads(res.stdout)["parameters"]] == [
        "variant",
        "degree_share",
        "soft_exact_limit",
        "soft_min_probability",
        "server",
        "workers",
        "address",
    ]


def test_reports_of_several_epsilons_label_their_notes_and_the_plain_sentence():
    """With several ε the plain sentence names the setting it describes (the weakest) and a
    note that only one setting has is labelled with its ε; the notes every setting shares print once."""
    from rich.console import Console

    from privgraph.accounting import PrivacyGuarantee, PrivacyReport, TrustModel
    from privgraph.cli import print_reports

    def report(eps, *notes):
        return PrivacyReport(
            [PrivacyGuarantee("node feature vector", TrustModel.LOCAL, eps, 0.0, "multibit", ("shared note", *notes))]
        )

    console = Console(record=True, width=300)
    print_reports({0.5: report(0.5, "only at half"), 4.0: report(4.0)}, console)
    text = console.export_text()
    assert "At ε = 4 (the weakest setting): Whatever else they know" in text and "(ε = 4)" in text
    assert text.count("note: shared note") == 1
    assert "note (ε = 0.5): only at half" in text
