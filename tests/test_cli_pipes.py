"""The command line's output where stdout is no terminal (``privgraph methods | cat``, a log): tables are
not wrapped at rich's 80 columns, ``--format tsv`` parses with :mod:`csv`, and help texts reflow."""

import csv
import inspect
import io
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer.rich_utils
from rich.cells import cell_len
from typer.main import get_command
from typer.testing import CliRunner

from privgraph.catalogue import load_catalogue
from privgraph.cli import PipeConsole, app
from privgraph.cli.console import PROSE_WIDTH
from privgraph.experiments.demo import demo_table

SRC = Path(__file__).resolve().parents[1] / "src"
runner = CliRunner()


def piped(*args: str) -> str:
    """``privgraph ARGS | cat``: stdout a pipe, no $COLUMNS (as in a log or a cron job)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(SRC)
    res = subprocess.run(
        [sys.executable, "-m", "privgraph", *args],
        capture_output=True,  # stdout is a pipe, as in `privgraph methods | cat`
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def _longest_breakable(line: str) -> int:
    """The width of ``line`` (terminal cells), or 0 where it is only long for a token that cannot break."""
    width = cell_len(line.rstrip())
    return 0 if any(cell_len(token) > PROSE_WIDTH // 2 for token in line.split()) else width


def test_piped_methods_wrap_at_a_sane_width_and_keep_each_description_whole():
    """``privgraph methods | cat`` (lines of 300+ characters): wrapped within 120 columns, each
    description whole in its own column, word by word."""
    out = piped("methods")
    lines = out.splitlines()
    assert max(_longest_breakable(ln) for ln in lines) <= PROSE_WIDTH, out
    unit, column = lines[2].index("unit"), lines[2].index("description")  # the header, under the title
    for name, entry in load_catalogue()["methods"].items():
        start = next(i for i, ln in enumerate(lines) if ln.startswith(f" {name} "))
        end = next((i for i in range(start + 1, len(lines)) if lines[i][:unit].strip()), len(lines))  # next name
        text = " ".join(" ".join(ln[column:] for ln in lines[start:end]).split())
        assert text == entry["info"]["description"], (name, out)
    for method in ("lpgnn", "blink", "heterorr"):  # one method: its sentences and its tables
        out = piped("methods", method)
        assert max(_longest_breakable(ln) for ln in out.splitlines()) <= PROSE_WIDTH, out


def test_tsv_parses_with_csv():
    methods = load_catalogue()["methods"]
    rows = list(csv.reader(io.StringIO(piped("methods", "--format", "tsv")), dialect="excel-tab"))
    assert rows[0] == ["name", "unit", "trust model", "task", "ε", "description"]
    assert {r[0]: r[5] for r in rows[1:]} == {n: e["info"]["description"] for n, e in methods.items()}
    assert all(len(r) == 6 for r in rows)
    trust = {r[0]: r[2] for r in rows[1:]}  # the trust model: who must be trusted, or — without a guarantee
    assert trust["lpgnn"] == "local" and trust["gap-edp"] == "central" and trust["heterorr"] == "local + central"
    assert trust["rgcn"] == trust["gcn-raw"] == "—"
    unit = {r[0]: r[1] for r in rows[1:]}  # a non-private baseline that reads the data protects no unit
    assert unit["rgcn"] == unit["hgt"] == unit["metapath2vec"] == unit["gcn-raw"] == "— (no guarantee)"
    assert unit["lpgnn"] == "node feature vector" and unit["gcn-rnd"] == "node feature vector"  # ε = 0: not read
    assert "unit: — (a non-private baseline; its report states ε = ∞ on" in piped("methods", "rgcn")
    params = list(csv.reader(io.StringIO(piped("methods", "blink", "--format", "tsv")), dialect="excel-tab"))
    assert params[0] == ["name", "type", "default", "help"]
    assert [r[0] for r in params[1:]] == [p["name"] for p in methods["blink"]["info"]["parameters"]]
    res = runner.invoke(app, ["datasets", "--format", "tsv"])
    assert res.exit_code == 0, res.output
    data = list(csv.reader(io.StringIO(res.stdout), dialect="excel-tab"))
    assert data[0] == ["name", "kind", "tasks", "source", "here"] and {"cora", "sbm"} <= {r[0] for r in data[1:]}


def _result(method, rows):
    return SimpleNamespace(spec=SimpleNamespace(method=method), summary=lambda: rows)


def test_the_demo_table_keeps_mean_and_ci_together_in_a_pipe(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    eps = [0.1, 0.5, 1.0, 2.0, 8.0]
    results = [
        _result("gcn-raw", [{"epsilon": None, "mean": 0.971, "ci95": 0.017, "trials": 3}]),
        _result("lpgnn", [{"epsilon": e, "mean": 0.5 + e / 20, "ci95": 0.0123, "trials": 3} for e in eps]),
    ]
    file = io.StringIO()  # no terminal: what `privgraph demo | cat` writes to
    PipeConsole(file=file).print(demo_table(results))
    out = file.getvalue()
    assert out.count("97.1 ± 1.7") == len(eps), out  # every cell whole, on one line
    for e in eps:
        assert f"{100 * (0.5 + e / 20):.1f} ± 1.2" in out, out
    narrow = io.StringIO()  # $COLUMNS still sets the width
    monkeypatch.setenv("COLUMNS", "60")
    PipeConsole(file=narrow).print(demo_table(results))
    assert max(map(len, narrow.getvalue().splitlines())) <= 60


def _one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", sorted(get_command(app).commands))
def test_help_reflows_docstrings_and_option_help(name, monkeypatch):
    """Wide enough not to wrap, each paragraph of the command's docstring and each option's help is one
    line of ``privgraph NAME --help``: no hard line break of the source survives."""
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 2000)
    command = get_command(app).commands[name]
    res = runner.invoke(app, [name, "--help"])
    assert res.exit_code == 0, res.output
    lines = [_one_line(ln.strip("│ ")) for ln in res.stdout.splitlines()]
    texts = inspect.cleandoc(command.help or "").split("\n\n")
    texts += [p.help for p in command.params if getattr(p, "help", None)]
    for text in texts:
        assert any(_one_line(text) in ln for ln in lines), f"{name} --help breaks {text!r}:\n{res.stdout}"
