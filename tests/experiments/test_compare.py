"""``privgraph compare`` / ``pg.compare``: methods side by side, grouped by privacy unit, from stored trials."""

from __future__ import annotations

import inspect
import json
import os
from types import SimpleNamespace

import pytest
import torch
from typer.testing import CliRunner

import privgraph as pg
from privgraph.cli import app
from privgraph.cli import compare as cli_compare
from privgraph.experiments import compare as api
from privgraph.experiments.store import ResultsStore

runner = CliRunner()
TINY = {"num_nodes": 120, "num_features": 12}
FAST = {"epochs": 10, "patience": 10}
ARGS = ["--trials", "1", "--epsilon", "1", "--set", "epochs=10", "--set", "patience=10", "--workers", "0"]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """lpgnn (feature LDP) and blink (link LDP), one trial at ε = 1, on a tiny SBM, compared by the API."""
    folder = tmp_path_factory.mktemp("compare")
    result = pg.compare(
        ["blink", "lpgnn"],
        epsilons=[1],
        trials=1,
        db=folder / "c.jsonl",
        out=folder / "out",
        hyperparameters=FAST,
        synthetic=TINY,
        workers=0,
    )
    return folder, result


def test_rows_are_grouped_by_unit_with_every_column(stored):
    _, result = stored
    assert [(r.unit, r.method) for r in result.rows] == [("feature LDP", "lpgnn"), ("link LDP", "blink")]
    assert result.header() == ["unit", "method", "ε=1", "membership-confidence AUC", "s/trial", "peak MiB"]
    for row in result.rows:
        assert set(row.accuracy) == {1.0} and 0 <= row.accuracy[1.0][0] <= 1
        assert row.attack_auc is not None and 0 <= row.attack_auc[1.0][0] <= 1
        assert row.seconds > 0 and row.peak_mib > 0 and row.trials == 1
    assert result.summary.ran == 2


def test_the_table_and_the_figure_are_written(stored):
    folder, result = stored
    md = (folder / "out" / "compare.md").read_text()
    assert "| unit | method | ε=1 | membership-confidence AUC | s/trial | peak MiB |" in md
    assert "| feature LDP | lpgnn |" in md and "| link LDP | blink |" in md
    assert "without noise" in md and "no guarantee covers them" in md  # time and memory are data-dependent
    png = folder / "out" / "compare.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in result.files] == ["compare.md", "compare.png"]


def test_every_stored_trial_records_its_peak_memory(stored):
    folder, _ = stored
    records = list(ResultsStore(folder / "c.jsonl").records())
    assert len(records) == 2 and all(r.peak_rss_mib > 0 and r.wall_time > 0 for r in records)


def test_resuming_runs_nothing_stored_and_gives_the_same_rows(stored):
    folder, result = stored
    again = api.compare(
        ["blink", "lpgnn"],
        epsilons=[1],
        trials=1,
        db=folder / "c.jsonl",
        hyperparameters=FAST,
        synthetic=TINY,
        workers=0,
    )
    assert (again.summary.ran, again.summary.skipped) == (0, 2)
    assert [r.to_dict() for r in again.rows] == [r.to_dict() for r in result.rows]


def test_the_command_prints_the_rows_pg_compare_returns(tmp_path):
    """The command and the API read the same store: the CLI's JSON rows are ``pg.compare``'s."""
    db = tmp_path / "c.jsonl"
    res = runner.invoke(
        app, ["compare", "mlp", "lpgnn", *ARGS, "--db", str(db), "-o", str(tmp_path), "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    said = json.loads(res.stdout[res.stdout.index("{") :])
    assert [(r["unit"], r["method"]) for r in said["rows"]] == [("feature LDP", "lpgnn"), ("non-private", "mlp")]
    assert said["sweep"]["ran"] == 2 and (tmp_path / "compare.png").exists()
    api_rows = pg.compare(
        ["mlp", "lpgnn"], epsilons=[1], trials=1, db=db, hyperparameters={"epochs": 10, "patience": 10}, workers=0
    )
    assert api_rows.summary.ran == 0
    assert json.loads(json.dumps([r.to_dict() for r in api_rows.rows])) == said["rows"]
    table = runner.invoke(app, ["compare", "mlp", "lpgnn", *ARGS, "--db", str(db)])
    assert table.exit_code == 0 and "0 trials ran, 2 were stored already" in table.stdout
    assert "feature LDP" in table.stdout and "non-private" in table.stdout and "peak MiB" in table.stdout
    assert "no guarantee covers them" in " ".join(table.stdout.split())  # said in one line under the table


def test_an_unknown_method_is_refused_with_one_line_before_any_work(tmp_path):
    db = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["compare", "lpgnn", "nosuch", "--db", str(db)])
    assert res.exit_code == 2
    assert res.stderr.strip().count("\n") == 0 and "unknown method 'nosuch'" in res.stderr
    assert not db.exists()
    with pytest.raises(ValueError, match="unknown method 'nosuch'"):
        api.compare(["lpgnn", "nosuch"], db=db)
    assert not db.exists()


def test_a_method_outside_its_domain_is_refused_before_any_trial(tmp_path):
    """GAP-NDP's enforced cap (restricted node-DP) below the graph's largest degree: one line, nothing stored.
    The default soft cap refuses no graph (checked through the same path)."""
    db = tmp_path / "c.jsonl"
    enforced = {"max_degree": 1, "degree_cap": "enforced"}
    with pytest.raises(ValueError, match="gap-ndp cannot run on sbm: .*max_degree=1") as err:
        api.compare(["lpgnn", "gap-ndp"], params={"gap-ndp": enforced}, db=db, synthetic=TINY)
    assert "\n" not in str(err.value) and not db.exists()
    from privgraph.methods import get_method

    star = SimpleNamespace(edge_index=torch.tensor([[0, 0, 0], [1, 2, 3]]), num_nodes=4)  # degree 3 > D = 1
    assert get_method("gap-ndp", max_degree=1).check_domain(star) is True


def test_the_commands_defaults_are_the_apis(monkeypatch, tmp_path):
    """``privgraph compare`` with no option calls ``api.compare`` with the values of its signature's defaults
    (the command keeps its own copies so that its help loads without torch)."""
    signature = inspect.signature(api.compare)
    called = {}

    def capture(*args, **kwargs):
        called.update(signature.bind(*args, **kwargs).arguments)
        raise KeyboardInterrupt  # stop before any trial

    monkeypatch.setattr(api, "compare", capture)
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["compare"]).exit_code == 130

    def plain(value):  # a list is the tuple it holds, a path the string it names
        return (
            tuple(value)
            if isinstance(value, list | tuple)
            else os.fspath(value)
            if hasattr(value, "__fspath__")
            else value
        )

    shared = ["methods", "dataset", "epsilons", "trials", "db", "out", "attack", "model", "seed", "workers", "executor"]
    assert {n: plain(called[n]) for n in shared} == {n: plain(signature.parameters[n].default) for n in shared}
    assert cli_compare.DEFAULT_METHODS == signature.parameters["methods"].default  # the help names the same


def test_a_method_the_attack_does_not_apply_to_runs_without_it_and_shows_a_dash(tmp_path):
    """ppcvgae releases embeddings: membership inference queries a model's API, so its column is "—"."""
    grid, no_attack = api.build_grid(["lpgnn", "ppcvgae"], epsilons=[1], trials=1)
    assert set(no_attack) == {"ppcvgae"}
    assert {s.label: s.spec.attack for s in grid.settings} == {"lpgnn": api.DEFAULT_ATTACK, "ppcvgae": None}
    result = api.comparison(grid, ResultsStore(tmp_path / "empty.jsonl"))
    auc = result.header().index("membership-confidence AUC")
    assert [row[auc] for row in result.cells()] == ["—", "—"]
    assert [r.attack_auc for r in result.rows] == [{}, None]


def _own_graph_files(folder):
    """A 120-node two-community graph as a user has it: an edge list, features in [0, 1] and labels."""
    import numpy as np
    import torch
    from torch_geometric.utils import stochastic_blockmodel_graph

    torch.manual_seed(0)
    edges = stochastic_blockmodel_graph([60, 60], [[0.1, 0.01], [0.01, 0.1]]).t().tolist()
    (folder / "edges.csv").write_text("source,target\n" + "".join(f"{u},{v}\n" for u, v in edges if u < v))
    y = np.repeat([0, 1], 60)
    np.save(folder / "y.npy", y)
    rng = np.random.default_rng(0)
    np.save(folder / "x.npy", (rng.random((120, 8)) < 0.2 + 0.4 * (np.arange(8) % 2 == y[:, None])).astype("float32"))
    return ["--input", str(folder / "edges.csv"), "--features", str(folder / "x.npy")] + [
        "--labels",
        str(folder / "y.npy"),
        "--domain",
        "0,1",
    ]


def test_compare_runs_on_your_own_graph_and_stores_nothing_derived_from_it(tmp_path):
    """``compare --input``: the user's graph read with ``release``'s rules, every method compared on
    it; the store identifies its trials by a random id (never a function of the graph), so a second call runs
    them again and the two calls' rows never mix."""
    files = _own_graph_files(tmp_path)
    db = tmp_path / "c.jsonl"
    first = runner.invoke(app, ["compare", "mlp", "lpgnn", *ARGS, *files, "--db", str(db), "--format", "json"])
    assert first.exit_code == 0, first.output
    said = json.loads(first.stdout[first.stdout.index("{") :])
    assert said["dataset"] == "edges" and said["sweep"]["ran"] == 2
    assert all(r["accuracy"][0]["trials"] == 1 for r in said["rows"])
    again = runner.invoke(app, ["compare", "mlp", "lpgnn", *ARGS, *files, "--db", str(db), "--format", "json"])
    assert json.loads(again.stdout[again.stdout.index("{") :])["sweep"]["ran"] == 2  # a new identity: runs again
    hashes = {r.config_hash for r in ResultsStore(db).records()}
    assert len(hashes) == 4 and None not in hashes
    no_domain = [f for f in files if f not in ("--domain", "0,1")]
    refused = runner.invoke(app, ["compare", "lpgnn", *ARGS, *no_domain, "--db", str(db)])
    assert refused.exit_code == 2 and "--domain" in refused.output  # release's rule, before any trial


def test_pg_compare_takes_your_own_data(tmp_path):
    import torch
    from torch_geometric.data import Data

    from privgraph.data import stratified_split

    torch.manual_seed(0)
    y = torch.arange(2).repeat_interleave(40)
    edge_index = torch.tensor([[i, (i + 1) % 80] for i in range(80)]).t()
    edge_index = torch.cat([edge_index, edge_index.flip(0)], 1)
    data = stratified_split(Data(x=torch.rand(80, 6), edge_index=edge_index, y=y), seed=0)
    data.feature_domain = (0.0, 1.0)
    result = pg.compare(
        ["lpgnn"], epsilons=[1], trials=1, db=tmp_path / "c.jsonl", hyperparameters=FAST, data=data, workers=0
    )
    assert result.rows[0].method == "lpgnn" and result.rows[0].accuracy[1.0][2] == 1


def test_a_shipped_grid_sweeps_your_own_graph(tmp_path):
    """``privgraph sweep GRID --input FILE``: every setting of the grid on the user's graph, named by
    the file, under a random identity (so the store holds no function of the graph)."""
    files = _own_graph_files(tmp_path)
    db = tmp_path / "s.jsonl"
    grid = ["quickstart", "--epsilon", "1", "--trials", "1", "--workers", "0", "--db", str(db)]
    res = runner.invoke(app, ["sweep", *grid, *files])
    assert res.exit_code == 0, res.output
    rows = list(ResultsStore(db).records())
    assert len(rows) == 1 and rows[0].dataset == "edges" and rows[0].config_hash
