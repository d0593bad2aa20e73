"""``privgraph compare``: several methods on one dataset across ε, side by side, grouped by privacy unit
(:func:`privgraph.experiments.compare.compare`, of which it is a thin layer)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from privgraph.cli.checks import _assign, _check_declared, _epsilons, _method
from privgraph.cli.console import OutputFormat, _fail, out_console, user_errors
from privgraph.cli.inputs import read_for_methods
from privgraph.cli.options import (
    DATASET_OPTION,
    FORMAT_OPTION,
    MODEL_OPTION,
    SEED_OPTION,
    InputOptions,
    input_options,
)
from privgraph.cli.render import print_tsv
from privgraph.progress import console_progress

# the API's defaults, repeated here so that `privgraph compare --help` imports no torch (a test compares them)
DEFAULT_METHODS = ("lpgnn", "blink", "gap-edp", "gap-ndp")
DEFAULT_EPSILONS = ("1", "4")
DEFAULT_ATTACK = "membership-confidence"


def _method_params(items: list[str], methods: list[str]) -> dict[str, dict[str, Any]]:
    """``--param METHOD.NAME=VALUE`` items, each parsed against its method's parameter types (one error line)."""
    from privgraph.catalogue import hints

    given: dict[str, list[str]] = {}
    for item in items:
        target, dot, rest = item.partition(".")
        if not dot or "=" not in rest or "=" in target:
            _fail(f"--param takes METHOD.NAME=VALUE (e.g. gap-ndp.max_degree=200), got {item!r}")
        if target not in methods:
            _fail(f"--param {item!r}: {target} is not compared (the methods: {', '.join(methods)})")
        given.setdefault(target, []).append(rest)
    out = {}
    for name, values in given.items():
        entry = _method(name)
        out[name] = _assign(
            values, hints(entry["params"]), "--param", f"method {name!r}", "parameter", entry.get("renamed")
        )
        _check_declared(entry, out[name])
    return out


def _hyperparameters(items: list[str], methods: list[str]) -> dict[str, Any]:
    """``--set NAME=VALUE`` items, typed by the first compared method whose task trains a model of its own."""
    from privgraph.catalogue import hints

    if not items:
        return {}
    for name in methods:
        training = (_method(name)["tasks"].get("") or {}).get("training")
        if training:
            return _assign(items, hints(training), "--set", f"{name}'s training", "hyperparameter")
    _fail("--set: none of the compared methods trains a model of its task's own (their settings are --param)")


@input_options
def compare(
    methods: list[str] = typer.Argument(
        None, help=f"the methods compared (`privgraph methods`; default: {' '.join(DEFAULT_METHODS)})"
    ),
    dataset: str = DATASET_OPTION,
    epsilon: list[str] = typer.Option(
        [],
        "--epsilon",
        help=f"the ε of every private method, e.g. --epsilon 1 4 (default: {' '.join(DEFAULT_EPSILONS)})",
    ),
    trials: int = typer.Option(3, min=1, help="trials per method and ε (trial t has seed SEED + t)"),
    attack: str = typer.Option(
        DEFAULT_ATTACK,
        help="the attack run against every trial's model, its AUC in the table (none: no attack; — where it "
        "does not apply)",
    ),
    param: list[str] = typer.Option(
        [], "--param", help="a method's parameter, METHOD.NAME=VALUE (e.g. gap-ndp.max_degree=200); repeatable"
    ),
    hparam: list[str] = typer.Option(
        [], "--set", help="a training hyperparameter of the task's model, for every method (e.g. --set epochs=50)"
    ),
    model: str | None = MODEL_OPTION,
    seed: int = SEED_OPTION,
    db: Path = typer.Option(
        Path("results/compare.jsonl"), help="results store (JSON lines); trials already in it are not run again"
    ),
    out: Path | None = typer.Option(None, "-o", "--out", help="write compare.md (the table) and compare.png here"),
    workers: int | None = typer.Option(
        None, help="trials at a time (default: the sweep's; 0 or 1 runs them in this process)"
    ),
    executor: str = typer.Option("auto", help="the sweep's: auto, local, processes or ray"),
    inputs: InputOptions = InputOptions(),
    progress_every: float = typer.Option(
        10.0, "--progress-every", min=0.01, help="seconds between progress lines when the output is not a terminal"
    ),
    format: OutputFormat = FORMAT_OPTION,
) -> None:
    """Compare several methods on one dataset (or your own graph, --input) across ε, grouped by privacy unit
    (feature LDP, link LDP, edge DP, node DP): accuracy ± 95% CI, an attack's AUC, seconds and peak memory (RSS)
    per trial.  The trials run as a sweep (stored, resumable: the same command runs nothing stored again; on
    --input a new call runs them again); the table and the figure are built from the store."""
    methods = list(methods or DEFAULT_METHODS)
    for name in methods:
        _method(name)  # an unknown method: one line, before torch
    params = _method_params(param, methods)
    hyperparameters = _hyperparameters(hparam, methods)
    epsilons = _epsilons(epsilon or list(DEFAULT_EPSILONS))
    chosen_attack = None if attack.lower() == "none" else attack
    if chosen_attack is not None:
        from privgraph.catalogue import attack_entry

        with user_errors():
            attack_entry(chosen_attack)

    data = read_for_methods(inputs, methods, seed)
    data_root = inputs.data_root
    from privgraph.cli.render import print_measured_note
    from privgraph.cli.sweep import trial_notes
    from privgraph.experiments.compare import compare as run_compare

    with console_progress(interval=progress_every, heartbeat=True) as progress:
        show_error, show_trial = trial_notes(progress)
        try:  # a ValueError: a method refused before any trial (one line); a RuntimeError: Ray did not start
            with user_errors(failures=(RuntimeError,)):
                result = run_compare(
                    methods,
                    dataset,
                    epsilons,
                    trials,
                    db,
                    out,
                    chosen_attack,
                    params,
                    hyperparameters,
                    model,
                    seed,
                    data_root=str(data_root) if data_root else None,
                    workers=workers,
                    executor=executor,
                    progress=progress,
                    on_trial=show_trial,
                    on_error=show_error,
                    notify=progress.note,
                    data=data,
                )
        except KeyboardInterrupt:
            progress.close()
            print("interrupted: the trials that ended are stored; run the same command to resume", file=sys.stderr)
            raise typer.Exit(130) from None
    summary = result.summary
    if format == OutputFormat.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        table = Table(title=f"privgraph compare: {escape(result.dataset)}")
        for column in result.header():
            table.add_column(escape(column), justify="left" if column in ("unit", "method") else "right")
        last = None
        for row, cells in zip(result.rows, result.cells()):
            if last is not None and row.unit != last:
                table.add_section()
            table.add_row(*(escape(c) for c in cells))
            last = row.unit
        if format == OutputFormat.tsv:
            print_tsv(table)
        else:
            out_console.print(table)
            print_measured_note()
            out_console.print(
                f"{summary.ran} trials ran, {summary.skipped} were stored already, {summary.failed} failed; "
                f"store {db}" + "".join(f"; wrote {p}" for p in result.files)
            )
    if summary.failed:
        raise typer.Exit(1)


__all__ = ["compare"]
