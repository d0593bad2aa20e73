"""The README's Python examples run as written.

Every ```python block of README.md is executed in a fresh namespace with the
working directory set to a temporary folder (the examples write files).  The
README's example builds its own small graph, so no dataset is needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def test_readme_has_a_python_example():
    assert python_blocks(), "README.md has no ```python block: the Python example is missing"


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_block_runs(index, tmp_path, monkeypatch):
    code = python_blocks()[index]
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"readme_block_{index}"}
    exec(compile(code, f"README.md (python block {index})", "exec"), namespace)


# ---- docs/usage.md: its Python example runs and prints what the page shows; every command line parses ----

USAGE = README.parent / "docs" / "usage.md"
FENCE = re.compile(r"^```(\w+)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def usage_blocks() -> list[tuple[str, str]]:
    return FENCE.findall(USAGE.read_text(encoding="utf-8"))


def test_usage_python_example_runs_and_prints_what_the_page_shows(tmp_path, monkeypatch, capsys):
    """The Python block on a small graph (``data``: features in [0, 1], a split); the ```text block after
    it is exactly what ``print(rel.report)`` printed."""
    from privgraph.data import sbm_graph

    blocks = usage_blocks()
    index = next(i for i, (lang, code) in enumerate(blocks) if lang == "python" and "print(rel.report)" in code)
    assert blocks[index + 1][0] == "text", "the printed report should follow the Python block"
    data = sbm_graph(num_nodes=80, num_classes=2, num_features=6, avg_degree=4.0, seed=0)
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[index][1], "docs/usage.md (python block)", "exec"), {"data": data})
    assert capsys.readouterr().out == blocks[index + 1][1]


def _command_lines() -> list[str]:
    lines = []
    for lang, code in usage_blocks():
        if lang == "bash":
            lines += [ln.split("  #")[0].strip() for ln in code.splitlines() if ln.startswith("privgraph ")]
    return lines


def _alternatives(word: str) -> list[str]:
    """``a|b`` → a, b; ``name=a|b`` → name=a, name=b."""
    head, sep, values = word.rpartition("=") if "=" in word else ("", "", word)
    return [head + sep + v for v in values.split("|")]


def _variants(line: str) -> list[list[str]]:
    """The argument lists a documented line stands for: ``[...]`` optional parts included, ``a|b|c``
    alternatives taken in step (the i-th of each)."""
    words = line.replace("[", " ").replace("]", " ").split()[1:]
    choices = [_alternatives(w) for w in words]
    return [[c[i % len(c)] for c in choices] for i in range(max(len(c) for c in choices))]


@pytest.mark.parametrize("line", _command_lines())
def test_usage_command_lines_parse(line):
    """Each ``privgraph ...`` line of docs/usage.md: the command exists, click accepts its options and their
    types (parsed, not run), and for run/attack/release the catalogue's checks pass (the method, each
    ``--param``'s name and type, ``--set``, ε, the dataset's name, the attack), as the command does
    before importing torch."""
    import typer
    from typer.main import get_command

    from privgraph import cli

    group = get_command(cli.app)
    for args in _variants(line):
        args = cli.expand_multi_value_options(args)
        assert args[0] in group.commands, f"{line}: no command {args[0]!r}"
        command = group.commands[args[0]]
        try:
            with command.make_context(args[0], args[1:]) as ctx:
                p = ctx.params
        except Exception as err:  # click's usage errors: an unknown option, a bad value
            pytest.fail(f"{' '.join(args)}: {err}")
        try:
            if args[0] in ("run", "attack", "release"):
                if args[0] == "attack":
                    from privgraph.catalogue import attack_entry

                    attack_entry(p["name"])
                eps = cli._epsilons([p["epsilon"]] if isinstance(p["epsilon"], str) else p["epsilon"] or [])
                cli._prepare(
                    p["method"],
                    p["param"],
                    p.get("hparam", []),
                    p.get("task"),
                    eps,
                    p["label_epsilon"],
                    p["dataset"],
                    p["device"],
                )
            elif args[0] == "methods" and p["method"] is not None:
                cli._method(p["method"])
        except (typer.Exit, ValueError) as err:
            pytest.fail(f"{' '.join(args)}: refused ({err!r}; the error line is on stderr)")


# ---- README.md's command line block: a command that reads the user's own files has them made by a line before ----


def _readme_cli_lines() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("## 30 seconds: the command line")
    block = re.compile(r"```bash\n(.*?)```", re.DOTALL).search(text, start)
    assert block is not None
    return [ln.split("  #")[0].strip() for ln in block.group(1).splitlines() if ln.strip()]


def test_readme_own_graph_command_runs_as_written_in_an_empty_folder(tmp_path, monkeypatch, invoke):
    """``--input edges.csv --features x.npy`` named files nobody had; the README's line before it
    writes them (run here as written), and the release then reads them."""
    import shlex

    lines = _readme_cli_lines()
    index = next(i for i, ln in enumerate(lines) if "--input edges.csv" in ln)
    maker = next(ln for ln in lines[:index] if "edges.csv" in ln and "x.npy" in ln)
    words = shlex.split(maker)
    assert words[:2] == ["python", "-c"], maker
    monkeypatch.chdir(tmp_path)
    exec(compile(words[2], "README.md (the line that writes edges.csv, x.npy)", "exec"), {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edges.csv", "x.npy"]
    code, text, _ = invoke(*shlex.split(lines[index])[1:])
    assert code == 0, text
    assert (tmp_path / "g.pt").exists() and "1-LDP per node feature vector" in text
