"""The results store: JSON lines that round-trip, survive a killed writer, resume by hash; old SQLite stores."""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from privgraph.cli import app
from privgraph.experiments.store import ERROR, ResultsStore, TrialRecord, encode


def record(trial: int = 0, config_hash: str | None = "h1", **changes) -> TrialRecord:
    base = TrialRecord(
        run_id="r",
        method="rr",
        dataset="Cora",
        model="gcn",
        mechanism=None,
        epsilon=1.0,
        label_epsilon=None,
        trial=trial,
        seed=5 + trial,
        config={"label": "RR, ε = 1", "params": {"b": [1, 2], "a": None}},
        metrics={"accuracy": 0.1 + 0.2 * trial, "val_accuracy": 1 / 3, "loss": math.inf},
        guarantee={"epsilon": "inf", "notes": ["π ≈ 3.14"]},
        wall_time=0.5,
        version="0.1.0",
        config_hash=config_hash,
        created_at="2026-01-01 00:00:00",
    )
    return replace(base, **changes)


def fill(path: Path, records: list[TrialRecord]) -> ResultsStore:
    store = ResultsStore(path)
    for r in records:
        store.add(r)
    return store


def test_records_round_trip_exactly_one_sorted_line_each(tmp_path):
    written = [
        record(0),
        record(1, config_hash="h2"),
        record(2, status=ERROR, error="Traceback …\nValueError: x", metrics={}),
    ]
    fill(tmp_path / "s.jsonl", written)
    read = list(ResultsStore(tmp_path / "s.jsonl").records(errors=True))
    assert [asdict(r) for r in read] == [asdict(r) for r in written]
    lines = (tmp_path / "s.jsonl").read_bytes().split(b"\n")
    assert len(lines) == 4 and lines[-1] == b""
    row = json.loads(lines[0])
    assert list(row) == sorted(row) and list(row["config"]) == sorted(row["config"])
    assert "RR, ε = 1" in lines[0].decode("utf-8")  # readable in a diff
    assert [r.trial for r in ResultsStore(tmp_path / "s.jsonl").records()] == [0, 1]  # errors only when asked


def test_the_store_stamps_the_time_and_types_numbers_as_the_fields_say(tmp_path):
    store = fill(tmp_path / "s.jsonl", [record(created_at=None, epsilon=2, wall_time=1)])
    (r,) = store.records()
    assert r.created_at and len(r.created_at) == 19
    assert isinstance(r.epsilon, float) and isinstance(r.wall_time, float) and r.epsilon == 2.0


def test_filters_and_the_hash_index(tmp_path):
    store = fill(tmp_path / "s.jsonl", [record(t, config_hash=h) for h in ("a", "b") for t in range(3)])
    assert [(r.config_hash, r.trial) for r in store.records(config_hash="b", trial=1)] == [("b", 1)]
    assert len(list(store.records(dataset="Cora", epsilon=1.0))) == 6
    assert list(store.records(mechanism=None, config_hash="c")) == []
    with pytest.raises(ValueError, match="no field colour"):
        list(store.records(colour="red"))


def test_a_partial_last_line_is_ignored_then_cut_off_by_the_next_append(tmp_path):
    path = tmp_path / "s.jsonl"
    fill(path, [record(0), record(1)])
    whole = path.read_bytes()
    path.write_bytes(whole + encode(record(2))[:40])  # a writer killed mid-line
    store = ResultsStore(path)
    assert [r.trial for r in store.records()] == [0, 1]
    assert store.stored() == {("h1", 0), ("h1", 1)}
    with pytest.warns(UserWarning, match="partial last line"):
        store.add(record(3))
    assert path.read_bytes() == whole + encode(record(3))
    assert [r.trial for r in store.records()] == [0, 1, 3]


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(encode(record(0)).rstrip(b"\n"))  # written by hand, say
    store = ResultsStore(path)
    assert [r.trial for r in store.records()] == [0]
    store.add(record(1))
    assert [r.trial for r in store.records()] == [0, 1]
    assert path.read_bytes() == encode(record(0)) + encode(record(1))


def test_a_broken_line_inside_the_file_is_an_error_with_its_line_number(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(encode(record(0)) + b"<<<<<<< HEAD\n" + encode(record(1)))
    with pytest.raises(ValueError, match="s.jsonl, line 2: not a trial record"):
        ResultsStore(path)


def test_a_store_sees_what_another_writer_appended_and_replaced(tmp_path):
    path = tmp_path / "s.jsonl"
    reader, writer = ResultsStore(path), ResultsStore(path)
    writer.add(record(0, status=ERROR, error="boom", metrics={}))
    writer.add(record(1))
    assert reader.stored() == {("h1", 0), ("h1", 1)} and reader.stored(errors=False) == {("h1", 1)}
    assert writer.delete_errors({("h1", 0)}) == 1
    assert reader.stored() == {("h1", 1)}
    assert [r.trial for r in reader.records(errors=True)] == [1]


def test_resume_by_configuration_hash_on_a_jsonl_store(tmp_path):
    from privgraph.experiments.sweep import sweep

    grid = tmp_path / "g.toml"
    grid.write_text("""
name = "g"
[defaults]
trials = 3
synthetic = { num_nodes = 100, num_features = 8 }
hyperparameters = { epochs = 5, patience = 5 }
[[tables]]
name = "nc"
datasets = ["sbm"]
epsilons = [2]
[[tables.rows]]
label = "RR"
method = "rr"
""")
    path = tmp_path / "g.jsonl"
    assert sweep(grid, path, workers=0).ran == 3
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[2])  # trial 1 lost
    again = sweep(grid, path, workers=0)
    assert (again.ran, again.skipped) == (1, 2)
    assert sorted(r.trial for r in ResultsStore(path).records()) == [0, 1, 2]
    assert path.read_bytes().startswith(lines[0] + lines[2])  # appended, the stored lines untouched


def old_sqlite_store(path: Path, records: list[TrialRecord]) -> Path:
    """A store as privgraph wrote it before the JSON-lines format."""
    with sqlite3.connect(path) as con:
        con.execute(
            "CREATE TABLE trials (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, "
            "created_at TEXT NOT NULL DEFAULT (datetime('now')), method TEXT NOT NULL, dataset TEXT NOT NULL, "
            "model TEXT NOT NULL, mechanism TEXT, epsilon REAL, epsilon_y REAL, trial INTEGER NOT NULL, "
            "seed INTEGER, config TEXT NOT NULL, metrics TEXT NOT NULL, guarantee TEXT NOT NULL, "
            "wall_time REAL NOT NULL, version TEXT, config_hash TEXT, status TEXT NOT NULL DEFAULT 'ok', "
            "error TEXT)"
        )
        for r in records:
            row = asdict(r)
            row.pop("peak_rss_mib")  # added after the JSON-lines format
            row["epsilon_y"] = row.pop("label_epsilon")  # the old name of the label ε
            for key in ("config", "metrics", "guarantee"):
                row[key] = json.dumps(row[key], sort_keys=True)
            con.execute(
                f"INSERT INTO trials ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})", list(row.values())
            )
    return path


def test_an_old_sqlite_store_is_read_but_not_written_and_converts_unchanged(tmp_path):
    records = [record(0), record(1, status=ERROR, error="boom", metrics={})]
    db = old_sqlite_store(tmp_path / "old.db", records)
    store = ResultsStore(db)
    assert [asdict(r) for r in store.records(errors=True)] == [asdict(r) for r in records]
    assert store.stored(errors=False) == {("h1", 0)}
    with pytest.raises(ValueError, match="convert-store"):
        store.add(record(2))
    res = CliRunner().invoke(app, ["convert-store", str(db)])
    assert res.exit_code == 0 and "wrote 2 trials" in res.output, res.output
    converted = ResultsStore(tmp_path / "old.jsonl")
    assert [asdict(r) for r in converted.records(errors=True)] == [asdict(r) for r in records]
    again = CliRunner().invoke(app, ["convert-store", str(db)])
    assert again.exit_code == 2 and "stored twice" in again.output


def test_the_commands_read_an_old_sqlite_store_and_refuse_to_write_it(tmp_path):
    db = old_sqlite_store(tmp_path / "old.db", [record(0)])
    runner = CliRunner()
    rep = runner.invoke(app, ["report", "--db", str(db), "-o", str(tmp_path / "rep"), "--no-figures"])
    assert rep.exit_code == 0, rep.output
    assert "| rr |" in (tmp_path / "rep" / "old.md").read_text()
    run = runner.invoke(app, ["run", "rr", "--epsilon", "1", "--trials", "1", "--db", str(db)])
    assert run.exit_code == 2 and "convert-store" in run.output


def test_an_sqlite_store_older_than_the_hash_columns_is_read(tmp_path):
    db = tmp_path / "older.db"
    with sqlite3.connect(db) as con:
        con.execute(
            "CREATE TABLE trials (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, created_at TEXT, "
            "method TEXT NOT NULL, dataset TEXT NOT NULL, model TEXT NOT NULL, mechanism TEXT, "
            "epsilon REAL, epsilon_y REAL, trial INTEGER NOT NULL, seed INTEGER, config TEXT NOT NULL, "
            "metrics TEXT NOT NULL, guarantee TEXT NOT NULL, wall_time REAL NOT NULL, version TEXT)"
        )
        con.execute(
            "INSERT INTO trials (run_id, method, dataset, model, trial, config, metrics, guarantee, "
            "wall_time) VALUES ('r', 'rr', 'Cora', 'gcn', 0, '{}', '{\"accuracy\": 0.5}', '{}', 1.0)"
        )
    (r,) = ResultsStore(db).records()
    assert r.ok and r.config_hash is None and r.metrics == {"accuracy": 0.5}
