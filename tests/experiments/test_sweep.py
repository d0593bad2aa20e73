"""Grids, sweeps on Ray and the report."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from privgraph.cli import app
from privgraph.experiments import ExperimentSpec, Grid, ResultsStore, config_hash, run_experiment
from privgraph.experiments.report import GENERATED, Published, report
from privgraph.experiments.sweep import sweep

REPO = Path(__file__).resolve().parents[2]

TINY = """
name = "tiny"
title = "A tiny grid"
duration = "seconds"

[defaults]
trials = 3
seed = 5
synthetic = { num_nodes = 120, num_features = 12 }
hyperparameters = { epochs = 15, patience = 15 }

[[tables]]
name = "nc"
datasets = ["sbm"]
models = ["gcn"]
epsilons = [1, 4]

[[tables.rows]]
label = "RR"
method = "rr"

[[tables.rows]]
label = "non-private"
method = "gcn-raw"
"""

BROKEN_ROW = """
[[tables]]
name = "broken"
datasets = ["sbm"]
epsilons = [2]
synthetic = { num_nodes = 120, num_features = 12, num_classes = 0 }   # raises when the data is made

[[tables.rows]]
label = "RR on nothing"
method = "rr"
"""

TUNED = """
name = "tuned"
[defaults]
trials = 3
seed = 2
tune = true
tune_budget = 3
synthetic = { num_nodes = 120, num_features = 12 }
hyperparameters = { epochs = 10, patience = 10 }
search_space = { lr = [0.1, 0.01], dropout = [0.0, 0.5] }

[[tables]]
name = "nc"
datasets = ["sbm"]
models = ["gcn"]
epsilons = [2]

[[tables.rows]]
label = "RR"
method = "rr"
"""


def write(tmp_path: Path, text: str, name: str = "grid.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def outcome(metrics: dict) -> dict:
    """A trial's metrics without its timings."""
    return {k: v for k, v in metrics.items() if not k.endswith("_seconds")}


def by_key(db: Path, errors: bool = False) -> dict[tuple[str, int], object]:
    return {(r.config_hash, r.trial): r for r in ResultsStore(db).records(errors=errors)}


# ------------------------------------------------------------------------------------------- grid files
def test_grid_expands_methods_datasets_epsilons_and_parameters(tmp_path):
    grid = Grid.load(
        write(
            tmp_path,
            TINY
            + """
[[tables.rows]]
label = "Blink"
method = "blink"
grid = { degree_share = [0.1, 0.5] }
""",
        )
    )
    labels = [(s.label, s.epsilon) for s in grid.settings]
    assert labels == [
        ("RR", 1.0),
        ("RR", 4.0),
        ("non-private", None),
        ("Blink (degree_share=0.1)", 1.0),
        ("Blink (degree_share=0.1)", 4.0),
        ("Blink (degree_share=0.5)", 1.0),
        ("Blink (degree_share=0.5)", 4.0),
    ]
    blink = [s for s in grid.settings if s.label.startswith("Blink")]
    assert {s.spec.params["degree_share"] for s in blink} == {0.1, 0.5}
    assert all(s.spec.trials == 3 and s.spec.seed == 5 and s.spec.epsilons == [s.epsilon] for s in grid.settings)
    assert len({s.key for s in grid.settings}) == len(grid.settings)
    part = grid.select(labels=["RR"], trials=7)
    assert [s.label for s in part.settings] == ["RR", "RR"] and all(s.trials == 7 for s in part.settings)
    assert [s.key for s in part.settings] == [s.key for s in grid.settings[:2]]  # trials are not in the hash
    by_eps = grid.select(epsilons=["4", "none"])
    assert [(s.label, s.epsilon) for s in by_eps.settings] == [
        ("RR", 4.0),
        ("non-private", None),
        ("Blink (degree_share=0.1)", 4.0),
        ("Blink (degree_share=0.5)", 4.0),
    ]
    assert {s.key for s in by_eps.settings} <= {s.key for s in grid.settings}  # the same settings, not new ones
    with pytest.raises(ValueError, match="no ε 2 \\(it has 1, 4, none\\)"):
        grid.select(epsilons=[2])


@pytest.mark.parametrize(
    "extra, message",
    [
        ("\n[oops]\nx = 1\n", "unknown keys oops"),
        ('\n[[tables]]\nname = "nc"\ndatasets = ["sbm"]\n[[tables.rows]]\nmethod = "rr"\n', "two tables"),
        ('\n[[tables]]\nname = "x"\ndatasets = ["sbm"]\n[[tables.rows]]\nlabel = "a"\n', "needs a method"),
        (
            '\n[[tables]]\nname = "y"\ndatasets = ["sbm"]\n[[tables.rows]]\nmethod = "rr"\nspeed = 2\n',
            "unknown keys speed",
        ),
    ],
)
def test_bad_grid_files_are_refused(tmp_path, extra, message):
    with pytest.raises(ValueError, match=message):
        Grid.load(write(tmp_path, TINY + extra))


def test_a_bad_setting_is_refused_before_any_work(tmp_path):
    grid = Grid.load(write(tmp_path, TINY.replace("epsilons = [1, 4]", "epsilons = [1, 4]\ntune_budget = 0")))
    with pytest.raises(ValueError, match="table nc, RR on sbm: tune_budget"):
        sweep(grid, tmp_path / "x.jsonl", workers=0)
    assert not (tmp_path / "x.jsonl").exists() or not list(ResultsStore(tmp_path / "x.jsonl").records(errors=True))
    spec = ExperimentSpec(method="rr", epsilons=[1.0], tune=True, search_space={"speed": [1]})
    with pytest.raises(ValueError, match="'speed' is not a hyperparameter"):
        spec.build()


def test_config_hash_names_what_changes_a_trial():
    spec = ExperimentSpec(method="rr", epsilons=[1.0], trials=3)
    h = config_hash(spec, 1.0)
    assert h == config_hash(dataclasses.replace(spec, trials=30, data_root="/elsewhere"), 1.0)
    for changed in (
        dataclasses.replace(spec, seed=1),
        dataclasses.replace(spec, params={"x": 1}),
        dataclasses.replace(spec, model="sage"),
        dataclasses.replace(spec, tune=True),
    ):
        assert config_hash(changed, 1.0) != h
    assert config_hash(spec, 2.0) != h and config_hash(spec, 1.0, eps_index=1) != h


# ------------------------------------------------------------------------------------------- sweeps
def test_sweep_on_two_ray_workers_resumes_records_failures_and_matches_in_process(tmp_path):
    path = write(tmp_path, TINY + BROKEN_ROW)
    db, local_db = tmp_path / "ray.jsonl", tmp_path / "local.jsonl"
    failures = []
    summary = sweep(path, db, workers=2, on_error=failures.append, executor="ray")
    assert summary.executor == "a local Ray cluster"
    # every trial ran; the broken setting's 3 trials are stored with their error and the others finished
    assert (summary.total, summary.ran, summary.failed, summary.skipped) == (12, 9, 3, 0)
    assert len(failures) == 3 and all("num_classes >= 2" in f.error for f in failures)
    stored = by_key(db, errors=True)
    assert len(stored) == 12
    errors = [r for r in stored.values() if not r.ok]
    assert len(errors) == 3 and all(r.metrics == {} and "ValueError" in r.error for r in errors)
    assert {r.config["label"] for r in errors} == {"RR on nothing"}
    assert all(0 <= r.metrics["accuracy"] <= 1 for r in stored.values() if r.ok)

    # a second run skips every stored trial (failed ones too) and starts no worker
    again = sweep(path, db, workers=2)
    assert (again.ran, again.failed, again.skipped) == (0, 0, 12)
    # --retry-errors runs only the failed ones again, replacing their rows
    retried = sweep(path, db, workers=0, retry_errors=True)
    assert (retried.ran, retried.failed, retried.skipped) == (0, 3, 9)
    assert len(list(ResultsStore(db).records(errors=True))) == 12

    # the same trials in this process give the same results, and so does `privgraph run` of each setting
    sweep(Grid.load(path).select(tables=["nc"]), local_db, workers=0)
    ray_ok, local = by_key(db), by_key(local_db)
    assert ray_ok.keys() == local.keys() and len(local) == 9
    for key, record in local.items():
        assert outcome(ray_ok[key].metrics) == outcome(record.metrics)
        assert ray_ok[key].seed == record.seed == 5 + record.trial
    torch.set_num_threads(1)
    for s in Grid.load(path).select(tables=["nc"]).settings:
        for record in run_experiment(s.spec).records:
            assert record.config_hash == s.key
            assert outcome(record.metrics) == outcome(local[(s.key, record.trial)].metrics)


@pytest.mark.parametrize("executor", ["processes", "auto"])
def test_worker_processes_store_the_records_of_the_trials_run_in_process(tmp_path, monkeypatch, executor):
    """Whichever executor runs a trial, the store holds the same record (config hash, seed, metrics);
    ``auto`` with no threshold hands the trials after the first to the pool (and says so).  Here the workers
    come from the forkserver (what a driver with other threads gets); the forked pool is tested below."""
    import privgraph.experiments.executors as executors

    monkeypatch.setattr(executors, "POOL_MIN_SECONDS", 0.0)
    monkeypatch.setattr(executors, "fork_is_safe", lambda cpu_trials=True: False)
    path = write(tmp_path, TINY)
    failures = []
    summary = sweep(path, tmp_path / "pool.jsonl", workers=2, executor=executor, on_error=failures.append)
    assert (summary.ran, summary.failed) == (9, 0), failures
    expected = "2 worker processes" if executor == "processes" else "1 in this process, then 2 worker processes"
    assert summary.executor == expected
    local = sweep(path, tmp_path / "local.jsonl", workers=1)
    assert local.executor == "in this process"
    pool, here = by_key(tmp_path / "pool.jsonl"), by_key(tmp_path / "local.jsonl")
    assert pool.keys() == here.keys() and len(here) == 9
    for key, record in here.items():
        assert pool[key].seed == record.seed and outcome(pool[key].metrics) == outcome(record.metrics)


FORKED_SWEEP = """
import json, sys, threading
from privgraph.experiments import ResultsStore
from privgraph.experiments.sweep import fork_is_safe, sweep

assert fork_is_safe()  # a fresh interpreter: one Python thread
summary = sweep(sys.argv[1], sys.argv[2], workers=2)
stop = threading.Event()
thread = threading.Thread(target=stop.wait)
thread.start()
unsafe = fork_is_safe()  # another Python thread alive
stop.set()
thread.join()
print(json.dumps({"executor": summary.executor, "ran": summary.ran, "unsafe": unsafe}))
"""


def test_auto_forks_its_workers_when_this_is_the_only_thread_and_they_store_the_same_records(tmp_path):
    """``auto`` in a driver with one Python thread forks its workers at once (no in-process first trial, no
    forkserver imports) and hands them every trial; with another thread alive it would not fork.  Run in a
    fresh interpreter: pytest's workers have threads of their own."""
    import json
    import os
    import subprocess
    import sys

    path = write(tmp_path, TINY)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run(
        [sys.executable, "-c", FORKED_SWEEP, str(path), str(tmp_path / "forked.jsonl")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    said = json.loads(out.stdout.strip().splitlines()[-1])
    assert said == {"executor": "2 worker processes (forked)", "ran": 9, "unsafe": False}
    sweep(path, tmp_path / "local.jsonl", workers=0)
    forked, here = by_key(tmp_path / "forked.jsonl"), by_key(tmp_path / "local.jsonl")
    assert forked.keys() == here.keys() and len(here) == 9
    for key, record in here.items():
        assert forked[key].seed == record.seed and outcome(forked[key].metrics) == outcome(record.metrics)


def test_workers_of_trials_on_an_accelerator_are_never_forked(tmp_path, monkeypatch):
    """A child cannot use CUDA once its parent has touched it: trials on a GPU get forkserver workers."""
    from privgraph.device import DEVICE_ENV
    from privgraph.experiments.sweep import accelerators, fork_is_safe

    monkeypatch.delenv(DEVICE_ENV, raising=False)
    grid = Grid.load(write(tmp_path, TINY))
    assert accelerators(grid) == [] and accelerators(grid, "cuda:1") == ["cuda:1"]
    monkeypatch.setenv(DEVICE_ENV, "cuda")
    assert accelerators(grid) == ["cuda"] and accelerators(grid, "cpu") == []
    assert not fork_is_safe(cpu_trials=False)


def test_auto_runs_a_small_sweep_in_process_and_refuses_contradictions(tmp_path, monkeypatch):
    import privgraph.experiments.executors as executors

    monkeypatch.setattr(executors, "POOL_MIN_SECONDS", 3600.0)  # the 9 trials: far less work than this
    monkeypatch.setattr(executors, "fork_is_safe", lambda cpu_trials=True: False)  # forkserver path: here first
    path = write(tmp_path, TINY)
    summary = sweep(path, tmp_path / "a.jsonl", workers=2)
    assert summary.ran == 9 and summary.executor == "9 in this process (the work was small: no worker started)"
    with pytest.raises(ValueError, match="executor must be one of"):
        sweep(path, tmp_path / "b.jsonl", executor="threads")
    with pytest.raises(ValueError, match="cannot"):
        sweep(path, tmp_path / "b.jsonl", address="127.0.0.1:6379", executor="processes")
    with pytest.raises(ValueError, match="needs workers"):
        sweep(path, tmp_path / "b.jsonl", workers=0, executor="processes")


def test_a_tuned_setting_chooses_once_and_a_resume_reuses_the_choice(tmp_path):
    path = write(tmp_path, TUNED)
    db = tmp_path / "tuned.jsonl"
    assert sweep(path, db, workers=0).ran == 3
    records = sorted(ResultsStore(db).records(), key=lambda r: r.trial)
    chosen = records[0].config["hyperparameters"]
    assert all(r.config["hyperparameters"] == chosen and r.config["tuned"] for r in records)
    assert {chosen["lr"], chosen["dropout"]} <= {0.1, 0.01, 0.0, 0.5}
    # equal to `privgraph run --tune` of the setting
    spec = Grid.load(path).settings[0].spec
    assert [outcome(r.metrics) for r in run_experiment(spec).records] == [outcome(r.metrics) for r in records]
    # drop trial 2 (as if the sweep had been stopped): the resume runs it alone with trial 0's choice
    db.write_text("".join(ln for ln in db.read_text().splitlines(keepends=True) if '"trial":2,' not in ln))
    again = sweep(path, db, workers=0)
    assert (again.ran, again.skipped) == (1, 2)
    (redone,) = [r for r in ResultsStore(db).records() if r.trial == 2]
    assert outcome(redone.metrics) == outcome(records[2].metrics) and redone.config["hyperparameters"] == chosen


def test_a_failed_choice_fails_the_rest_of_its_setting(tmp_path, monkeypatch):
    from privgraph.experiments import pipeline

    def broken(self, *args, **kwargs):
        raise RuntimeError("tuning broke")

    monkeypatch.setattr(pipeline.Experiment, "prepare", broken)
    summary = sweep(write(tmp_path, TUNED), tmp_path / "t.jsonl", workers=0)
    assert (summary.ran, summary.failed) == (0, 3)
    errors = sorted(ResultsStore(tmp_path / "t.jsonl").records(errors=True), key=lambda r: r.trial)
    assert "tuning broke" in errors[0].error and "trial 0" in errors[1].error


# ------------------------------------------------------------------------------------------- report
PUBLISHED = """
[source]
paper = "A paper"
where = "Table 1"
trials = 30
scale = 100

[nc.sbm.accuracy]
"non-private" = 90.0
"RR" = { "1" = 30.0, "4" = [60.0, 2.5] }
"both" = { "none" = 70.0, "1" = 50.0 }
"""


def test_report_regenerates_the_same_tables_from_the_store(tmp_path):
    path = write(tmp_path, TINY)
    db = tmp_path / "r.jsonl"
    sweep(path, db, workers=0)
    pub = write(tmp_path, PUBLISHED, "tiny.toml")
    first = report(db, path, tmp_path / "a", published=pub)
    second = report(db, path, tmp_path / "b", published=pub, figures=False)
    page_a, page_b = (tmp_path / "a" / "tiny.md").read_text(), (tmp_path / "b" / "tiny.md").read_text()

    def tables(page: str) -> list[str]:
        return [ln for ln in page.splitlines() if ln and not ln.startswith(("![", "privgraph report"))]

    assert tables(page_a) == tables(page_b)
    assert (tmp_path / "a" / "tiny" / "nc_sbm_accuracy.png").stat().st_size > 1000
    assert (tmp_path / "a" / "_tiny-nc.md").read_text() == (tmp_path / "b" / "_tiny-nc.md").read_text()
    assert len(first) == 3 and len(second) == 2

    # the cells are the stored trials' mean ± 95% CI; the paper's numbers and the difference beside them
    rr = [r.metrics["accuracy"] for r in ResultsStore(db).records() if r.method == "rr" and r.epsilon == 4.0]
    mean = 100 * float(np.mean(rr))
    half = 100 * float(np.std(rr, ddof=1)) * 4.302652729911275 / math.sqrt(3)  # t(0.975, 2)
    lines = page_a.splitlines()
    ours = next(ln for ln in lines if ln.startswith("| RR | ours"))
    assert f"{mean:.1f} ± {half:.1f}" in ours and ours.rstrip().endswith("| 3 |")
    paper = lines[lines.index(ours) + 1]
    delta = lines[lines.index(ours) + 2]
    assert "| paper (± std) |  | 30.0 | 60.0 ± 2.5 |" in paper and paper.rstrip().endswith("| 30 |")
    assert f"{mean - 60.0:+.1f}" in delta
    assert "| non-private | ours |" in page_a and "| paper | 90.0 |  |  |" in page_a


def test_report_removes_its_stale_fragments_but_not_another_scripts(tmp_path):
    path = write(tmp_path, TINY)
    db = tmp_path / "r.jsonl"
    sweep(path, db, workers=0)
    out = tmp_path / "out"
    out.mkdir()
    stale = out / "_tiny-gone.md"  # a table an earlier report wrote, whose trials are no longer stored
    stale.write_text(GENERATED + "\n\n| old |\n")
    other = out / "_tiny-protocol.md"  # another script's fragment that shares the grid's prefix
    other.write_text("<!-- generated by `python benchmarks/other.py table`: do not edit -->\n")
    report(db, path, out, figures=False)
    assert not stale.exists() and other.exists() and (out / "_tiny-nc.md").exists()


def test_published_numbers_are_read_by_table_dataset_metric_label_and_epsilon(tmp_path):
    pub = Published.load(write(tmp_path, PUBLISHED, "p.toml"))
    assert pub.scale == 100
    assert pub.value("nc", "sbm", "accuracy", "RR", 1.0) == (30.0, None)
    assert pub.value("nc", "sbm", "accuracy", "RR", 4.0) == (60.0, 2.5)
    assert pub.value("nc", "sbm", "accuracy", "RR", 2.0) is None
    assert pub.value("nc", "sbm", "accuracy", "non-private", None) == (90.0, None)
    assert pub.value("nc", "cora", "accuracy", "RR", 1.0) is None
    assert pub.value("nc", "sbm", "accuracy", "non-private", 1.0) is None
    assert pub.value("nc", "sbm", "accuracy", "both", None) == (70.0, None)
    assert pub.value("nc", "sbm", "accuracy", "both", 1.0) == (50.0, None)


def test_a_row_may_ask_for_the_release_without_noise(tmp_path):
    grid = Grid.load(
        write(
            tmp_path,
            TINY
            + """
[[tables.rows]]
label = "PPCVGAE"
method = "ppcvgae"
epsilons = ["none", 0.5]
""",
        )
    )
    assert [(s.label, s.epsilon) for s in grid.settings if s.spec.method == "ppcvgae"] == [
        ("PPCVGAE", None),
        ("PPCVGAE", 0.5),
    ]


def test_cli_sweep_dry_run_and_report(tmp_path):
    path = write(tmp_path, TINY)
    runner = CliRunner()
    dry = runner.invoke(app, ["sweep", str(path), "--dry-run", "--db", str(tmp_path / "c.jsonl")])
    assert dry.exit_code == 0, dry.output
    assert "3 settings, 9 trials" in dry.output
    ran = runner.invoke(app, ["sweep", str(path), "--workers", "0", "--db", str(tmp_path / "c.jsonl"), "--row", "RR"])
    assert ran.exit_code == 0, ran.output
    assert "6 trials ran" in ran.output
    out = runner.invoke(
        app,
        ["report", "--db", str(tmp_path / "c.jsonl"), "--grid", str(path), "-o", str(tmp_path / "rep"), "--no-figures"],
    )
    assert out.exit_code == 0, out.output
    assert "| RR | ours |" in (tmp_path / "rep" / "tiny.md").read_text()
    bad = runner.invoke(app, ["sweep", str(path), "--row", "nope", "--dry-run"])
    assert bad.exit_code == 2 and "no row nope" in bad.output


# ------------------------------------------------------------------------------------------- the docs
GRIDS = sorted((REPO / "src" / "privgraph" / "grids").glob("*.toml"))


@pytest.mark.parametrize("grid", GRIDS, ids=[g.stem for g in GRIDS])
def test_every_shipped_grid_is_valid_and_states_its_duration(grid):
    g = Grid.load(grid)
    g.validate()
    assert g.duration.strip(), f"{grid.name} must say how long it takes"
    if g.published:
        assert g.published_path().is_file()


STORED = [g for g in GRIDS if (REPO / "benchmarks" / "results" / f"{g.stem}.jsonl").is_file()]


@pytest.mark.parametrize("grid", STORED, ids=[g.stem for g in STORED])
def test_the_docs_tables_are_the_report_of_the_stored_trials(grid, tmp_path, monkeypatch):
    """docs/results/NAME.md must be what `privgraph report` makes of benchmarks/results/NAME.jsonl."""
    monkeypatch.chdir(REPO)
    db = Path("benchmarks/results") / f"{grid.stem}.jsonl"
    report(
        db,
        Path("src/privgraph/grids") / grid.name,
        tmp_path,
        figures=False,
        command=f"privgraph report --db {db.as_posix()} --grid src/privgraph/grids/{grid.name} -o docs/results",
    )
    committed = REPO / "docs" / "results"
    for made in sorted(tmp_path.glob("*.md")):
        mine = [ln for ln in made.read_text().splitlines() if ln and not ln.startswith("![")]
        theirs = [ln for ln in (committed / made.name).read_text().splitlines() if ln and not ln.startswith("![")]
        assert mine == theirs, f"docs/results/{made.name} is stale: rerun privgraph report"


@pytest.mark.parametrize("budget", [1, 2, 5])
def test_tune_budget_is_the_number_of_configurations_tried(budget):
    """A budget of 1 is the defaults alone (it used to add one random point)."""
    from privgraph.experiments import ExperimentSpec
    from privgraph.experiments.tasks import NodeClassification
    from privgraph.methods import get_method
    from privgraph.methods.base import Hyperparameters

    spec = ExperimentSpec(method="gcn-raw", tune=True, tune_budget=budget)
    task = NodeClassification(spec, get_method("gcn-raw"), lambda *a: None)
    configs = task.search_configs(Hyperparameters(), 0, False)
    assert len(configs) == budget and configs[0] == Hyperparameters() and len(set(configs)) == budget
