"""The data owner's ledger (privgraph.accounting.ledger): releases of one dataset composed per unit,
a budget refused before any noise is drawn, and a JSON file that two writers or a killed writer
cannot corrupt."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

import privgraph as pg
from privgraph.accounting import BudgetExceeded, Ledger, PrivacyGuarantee, Spend, TrustModel, Unit

SRC = Path(__file__).resolve().parents[2] / "src"


def small_graph(n: int = 40) -> Data:
    g = torch.Generator().manual_seed(0)
    edges = torch.randint(0, n, (2, 120), generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    masks = torch.zeros(3, n, dtype=torch.bool)
    masks[torch.randint(0, 3, (n,), generator=g), torch.arange(n)] = True
    return Data(
        x=torch.rand(n, 5, generator=g),
        edge_index=torch.cat([edges, edges.flip(0)], 1),
        y=y,
        train_mask=masks[0],
        val_mask=masks[1],
        test_mask=masks[2],
        feature_domain=(0.0, 1.0),  # declared: LPGNN refuses a graph without one
        num_classes=3,  # the public label set label LDP reads
    )


def guarantee(unit: str, eps: float, delta: float = 0.0) -> PrivacyGuarantee:
    return PrivacyGuarantee(unit, TrustModel.LOCAL, eps, delta, "test mechanism")


def test_the_fifth_release_over_budget_is_refused_before_any_noise(tmp_path, monkeypatch):
    ledger = Ledger(tmp_path / "book.json", {Unit.NODE_FEATURES: 4.0}, dataset="mine")
    data, rng = small_graph(), torch.Generator().manual_seed(7)
    for _ in range(4):
        pg.privatize(data, "lpgnn", epsilon=1.0, rng=rng, ledger=ledger)
    total = ledger.totals()[Unit.NODE_FEATURES]
    assert (total.epsilon, total.releases, total.remaining.epsilon) == (4.0, 4, 0.0)
    # the fifth: the method's release must not even start, and the generator must not move
    state = rng.get_state().clone()
    from privgraph.methods import LPGNN

    def no_noise(*args, **kwargs):
        raise AssertionError("noise drawn for a refused release")

    monkeypatch.setattr(LPGNN, "release", no_noise)
    with pytest.raises(BudgetExceeded, match="node feature vector: spent \\(4, 0\\), this release \\(1, 0\\)"):
        pg.privatize(data, "lpgnn", epsilon=1.0, rng=rng, ledger=ledger)
    assert torch.equal(rng.get_state(), state)
    assert len(ledger.entries) == 4 and all(e.status == "done" for e in ledger.entries)
    # a smaller release still fits exactly (ten tenths make one: the float sum is not refused)
    exact = Ledger(tmp_path / "exact.json", {Unit.NODE_FEATURES: 1.0}, dataset="mine")
    for _ in range(10):
        exact.complete(exact.reserve([Spend(Unit.NODE_FEATURES, 0.1)], "m"), [guarantee(Unit.NODE_FEATURES, 0.1)])
    with pytest.raises(BudgetExceeded):
        exact.reserve([Spend(Unit.NODE_FEATURES, 0.01)], "m")


def test_two_units_are_totalled_apart_and_a_unit_the_release_does_not_bound_is_refused(tmp_path):
    budget = {Unit.NODE_FEATURES: 3.0, Unit.NODE_LABEL: 1.0}
    ledger = Ledger(tmp_path / "book.json", budget, dataset="mine")
    data = small_graph()
    for seed in range(2):
        rel = pg.privatize(data, "lpgnn", epsilon=1.0, label_epsilon=0.5, seed=seed, ledger=ledger)
        assert {g.unit for g in rel.report.guarantees} == {Unit.NODE_FEATURES, Unit.NODE_LABEL}
    totals = ledger.totals()
    assert (totals[Unit.NODE_FEATURES].epsilon, totals[Unit.NODE_LABEL].epsilon) == (2.0, 1.0)
    # the labels are spent: a third release is refused although the features have room
    with pytest.raises(BudgetExceeded, match="node label"):
        pg.privatize(data, "lpgnn", epsilon=1.0, label_epsilon=0.5, seed=3, ledger=ledger)
    # without label LDP the labels are used as given: ε = ∞ on the label budget, refused before any noise
    with pytest.raises(BudgetExceeded, match="node label: .*this release does not bound it"):
        pg.privatize(data, "lpgnn", epsilon=1.0, seed=3, ledger=ledger)
    assert ledger.totals()[Unit.NODE_FEATURES].epsilon == 2.0 and len(ledger.entries) == 2
    # LPGNN writes the edges in clear: a private-edge budget is never met by it (fail closed per unit)
    edges = Ledger(tmp_path / "edges.json", {Unit.NODE_FEATURES: 3.0, Unit.PRIVATE_EDGE: 0.5}, dataset="mine")
    with pytest.raises(BudgetExceeded, match="private edge: .*does not bound it"):
        pg.privatize(data, "lpgnn", epsilon=1.0, seed=0, ledger=edges)
    assert edges.entries == [] and edges.totals()[Unit.PRIVATE_EDGE].releases == 0
    entry = ledger.entries[0]
    assert entry.method == "lpgnn" and entry.params["epsilon"] == 1.0 and entry.params["label_epsilon"] == 0.5
    assert entry.description == ["1-LDP per node feature vector [multibit; local (untrusted server)]"] + [
        "0.5-LDP per node label [3-ary randomized response; local (untrusted server)]"
    ]


def test_delta_adds_up_and_a_delta_budget_refuses(tmp_path):
    # the filter gives basic composition half the δ budget (the Rényi certificate the other half)
    ledger = Ledger(tmp_path / "book.json", {Unit.SENSITIVE_ATTRIBUTE: (10.0, 5e-5)}, dataset="mine")
    for _ in range(2):
        entry = ledger.reserve([Spend(Unit.SENSITIVE_ATTRIBUTE, 1.0, 1e-5)], "ppcvgae")
        ledger.complete(entry, [guarantee(Unit.SENSITIVE_ATTRIBUTE, 1.0, 1e-5)])
    total = ledger.totals()[Unit.SENSITIVE_ATTRIBUTE]
    assert total.epsilon == 2.0 and total.delta == pytest.approx(2e-5)
    assert total.composition.startswith("basic composition filter") and total.composition.endswith("over 2")
    with pytest.raises(BudgetExceeded, match="sensitive attribute"):
        ledger.reserve([Spend(Unit.SENSITIVE_ATTRIBUTE, 1.0, 1e-5)], "ppcvgae")  # ε fits, δ does not
    # ε only: δ is recorded, not limited; an unprotected release (ε = ∞) never fits a budget
    eps_only = Ledger(tmp_path / "eps.json", {Unit.NODE_FEATURES: 5.0, Unit.EDGE: 5.0}, dataset="mine")
    eps_only.reserve([Spend(Unit.NODE_FEATURES, 1.0, 0.5), Spend(Unit.EDGE, 1.0)], "m")
    with pytest.raises(BudgetExceeded):
        eps_only.reserve([Spend(Unit.EDGE, math.inf)], "gcn-raw")
    assert eps_only.totals()[Unit.NODE_FEATURES].delta == 0.5


def test_a_failed_or_killed_release_stays_counted(tmp_path, monkeypatch):
    ledger = Ledger(tmp_path / "book.json", {Unit.NODE_FEATURES: 2.5}, dataset="mine")
    from privgraph.methods import LPGNN

    def crash(*args, **kwargs):
        raise RuntimeError("the process died mid-release")

    monkeypatch.setattr(LPGNN, "release", crash)
    with pytest.raises(RuntimeError):
        pg.privatize(small_graph(), "lpgnn", epsilon=1.0, seed=0, ledger=ledger)
    (entry,) = ledger.entries
    assert entry.status == "failed" and "RuntimeError" in entry.error
    ledger.reserve([Spend(Unit.NODE_FEATURES, 1.0)], "lpgnn")  # a process killed here leaves it pending
    assert [e.status for e in ledger.entries] == ["failed", "pending"]
    assert ledger.totals()[Unit.NODE_FEATURES].epsilon == 2.0
    with pytest.raises(BudgetExceeded):
        ledger.reserve([Spend(Unit.NODE_FEATURES, 1.0)], "lpgnn")


def test_dataset_and_budget_are_kept(tmp_path):
    path = tmp_path / "book.json"
    Ledger(path, {Unit.ADJACENCY_LIST: 4.0}, dataset="cora").reserve([Spend(Unit.ADJACENCY_LIST, 1.0)], "blink")
    with pytest.raises(ValueError, match="for dataset 'cora', not 'citeseer'"):
        Ledger(path, dataset="citeseer")
    with pytest.raises(ValueError, match="holds the budget"):
        Ledger(path, {Unit.ADJACENCY_LIST: 8.0})
    again = Ledger(path)  # reads the dataset and the budget from the file
    assert again.dataset == "cora" and again.budget[Unit.ADJACENCY_LIST].epsilon == 4.0
    again.set_budget({Unit.ADJACENCY_LIST: 8.0})  # on purpose
    assert Ledger(path, {Unit.ADJACENCY_LIST: 8.0}).totals()[Unit.ADJACENCY_LIST].remaining.epsilon == 7.0
    # what the file holds: ε, δ, method, time, file, description — and the format
    state = json.loads(path.read_text())
    assert state["format"] == "privgraph-ledger/1" and state["dataset"] == "cora"
    assert set(state["entries"][0]) == {
        "id",
        "method",
        "status",
        "params",
        "planned",
        "spent",
        "started",
        "finished",
        "file",
        "description",
        "error",
    }


APPEND = """
import sys
from privgraph.accounting.ledger import Ledger, Spend
from privgraph.accounting.guarantee import PrivacyGuarantee
ledger = Ledger(sys.argv[1], dataset="mine")
for _ in range(int(sys.argv[2])):
    entry = ledger.reserve([Spend("node feature vector", 0.01)], "writer")
    ledger.complete(entry, [PrivacyGuarantee("node feature vector", "local", 0.01)])
"""


def _python(code: str, *args: str, **kwargs) -> subprocess.Popen:
    """A fresh interpreter running ``code`` with privgraph on its path (the ledger imports no torch)."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, **kwargs)


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "book.json"
    Ledger(path, {Unit.NODE_FEATURES: 20.0}, dataset="mine").set_budget({Unit.NODE_FEATURES: 20.0})
    writers = [_python(APPEND, str(path), "20") for _ in range(2)]
    assert [w.wait(120) for w in writers] == [0, 0]
    state = json.loads(path.read_text())
    assert len(state["entries"]) == 40 and len({e["id"] for e in state["entries"]}) == 40
    assert all(e["status"] == "done" for e in state["entries"])
    assert Ledger(path).totals()[Unit.NODE_FEATURES].epsilon == pytest.approx(0.4)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_a_write_that_never_reaches_the_replace_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "book.json"
    ledger = Ledger(path, dataset="mine")
    ledger.reserve([Spend(Unit.NODE_FEATURES, 1.0)], "first")
    before = path.read_text()

    def killed(*args):
        raise KeyboardInterrupt  # the process dies between the temporary file and the rename

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        ledger.reserve([Spend(Unit.NODE_FEATURES, 1.0)], "second")
    monkeypatch.undo()
    assert path.read_text() == before and [e.method for e in Ledger(path).entries] == ["first"]
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


WRITER = """
import sys
from privgraph.accounting.ledger import Ledger, Spend
ledger = Ledger(sys.argv[1], dataset="mine")
i = 0
while True:
    ledger.reserve([Spend("node feature vector", 0.001)], f"w{i}")
    i += 1
    print(i, flush=True)
"""


def test_a_writer_killed_in_a_loop_of_writes_leaves_every_completed_record(tmp_path):
    path = tmp_path / "book.json"
    proc = _python(WRITER, str(path), stdout=subprocess.PIPE, text=True)
    done = 0
    deadline = time.monotonic() + 60
    while done < 30 and time.monotonic() < deadline:  # let it write, then kill it without warning
        done = int(proc.stdout.readline() or done)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    rest = proc.stdout.read().split()
    done = int(rest[-1]) if rest else done
    entries = json.loads(path.read_text())["entries"]  # parses: never half written
    assert done >= 30 and len(entries) in (done, done + 1)  # every completed write, at most one more
    assert [e["method"] for e in entries[:done]] == [f"w{i}" for i in range(done)]


def test_privgraph_ledger_and_release_with_a_ledger(tmp_path, monkeypatch):
    """``privgraph release --ledger`` records each release and refuses the one over budget (nothing
    written); ``privgraph ledger FILE`` prints the releases and the totals (table and JSON)."""
    from typer.testing import CliRunner

    from privgraph.cli import app

    runner = CliRunner()
    monkeypatch.chdir(tmp_path)  # short paths: the table's file column stays on one line
    book = tmp_path / "book.json"
    made = runner.invoke(app, ["ledger", str(book), "--dataset", "sbm", "--budget", "node feature vector=1.5"])
    assert made.exit_code == 0, made.output
    release = ["release", "lpgnn", "--dataset", "sbm", "--epsilon", "1", "--ledger", str(book), "-o"]
    first = runner.invoke(app, [*release, "a.pt"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, [*release, str(tmp_path / "b.pt")])
    assert second.exit_code == 2 and "exceed the ledger's budget" in second.output
    assert not (tmp_path / "b.pt").exists()
    other = runner.invoke(app, ["release", "lpgnn", "--dataset", "cora", "--ledger", str(book), "-o", "c.pt"])
    assert other.exit_code == 2 and "is for dataset 'sbm', not 'cora'" in other.output
    shown = runner.invoke(app, ["ledger", str(book), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    state = json.loads(shown.stdout)
    (entry,) = state["entries"]
    assert entry["status"] == "done" and entry["file"] == "a.pt"
    assert entry["spent"] == [{"unit": "node feature vector", "epsilon": 1.0, "delta": 0.0}]
    (total,) = state["totals"]
    assert (
        total["epsilon"] == 1.0
        and total["remaining"]["epsilon"] == 0.5
        and total["composition"].startswith("basic composition filter")
    )
    table = runner.invoke(app, ["ledger", str(book)], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "lpgnn" in table.output and "a.pt" in table.output
    assert "node feature vector" in table.output and "0.5" in table.output
    bad = runner.invoke(app, ["ledger", str(book), "--budget", "oops"])
    assert bad.exit_code == 2 and "UNIT=EPS" in bad.output


def test_a_report_over_its_declaration_is_counted_and_warned(tmp_path):
    ledger = Ledger(tmp_path / "book.json", dataset="mine")
    entry = ledger.reserve([Spend(Unit.ADJACENCY_LIST, 1.0)], "m")
    with pytest.warns(UserWarning, match="spent more than it declared"):
        ledger.complete(entry, [guarantee(Unit.ADJACENCY_LIST, 2.0)])
    assert ledger.totals()[Unit.ADJACENCY_LIST].epsilon == 2.0
