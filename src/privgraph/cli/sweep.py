"""``privgraph sweep`` (an experiment grid), and what reads its stores: ``plot``, ``report`` and
``convert-store``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from privgraph.cli.checks import _device, _resolve_device
from privgraph.cli.console import OutputFormat, _fail, out_console, user_errors
from privgraph.cli.options import DEVICE_HELP, FORMAT_OPTION, RAY_ADDRESS_HELP, InputOptions, input_options
from privgraph.cli.render import _fmt_eps, print_tsv
from privgraph.progress import ConsoleProgress, console_progress, format_duration


def plot(
    db: Path = typer.Option(
        Path("results/privgraph.jsonl"), help="results store (JSON lines; an older SQLite store is read too)"
    ),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="folder for the PNGs (default results/), or a .png file"
    ),
    dataset: str | None = typer.Option(None, help="only this dataset"),
    metric: str | None = typer.Option(
        None,
        help="metric to draw (default: accuracy, micro_f1, roc_auc or utility_accuracy, whichever the trials have)",
    ),
) -> None:
    """Draw privacy–utility curves (one panel per privacy unit, 95% CI bands) from stored results."""
    from privgraph.experiments.plot import plot_db

    if not db.exists():
        _fail(f"no results database at {db}")
    with user_errors(status=1):
        paths = plot_db(db, output, dataset, metric)
    for path in paths:
        out_console.print(f"wrote {path}")


def trial_notes(progress: ConsoleProgress) -> tuple[Callable[..., None], Callable[..., None]]:
    """The sweep's ``on_error`` and ``on_trial``: one progress note per trial when it is stored (``failed …``
    with the error's last line, or ``… done in``)."""

    def show_error(record) -> None:  # every failed trial, when it is stored
        last = (record.error or "").strip().splitlines()[-1:] or [""]
        progress.note(
            f"failed {record.config.get('label', record.method)} on {record.dataset} "
            f"ε={_fmt_eps(record.epsilon)} trial {record.trial}: {last[0]}"
        )

    def show_trial(setting, record, seconds: float) -> None:  # every trial that ran, when it is stored
        if record.ok:  # a failure has its line (show_error)
            progress.note(
                f"{setting.label} on {setting.dataset} ε={_fmt_eps(setting.epsilon)} trial {record.trial}: "
                f"done in {format_duration(seconds)}"
            )

    return show_error, show_trial


@input_options
def sweep(
    grid: Path = typer.Argument(..., help="a grid file, or a shipped grid's name (`privgraph grids` lists them)"),
    workers: int | None = typer.Option(
        None, help="trials at a time (default: all CPUs; 0 or 1 runs them in this process)"
    ),
    address: str | None = typer.Option(None, help=f"{RAY_ADDRESS_HELP}; the trials run on its machines"),
    executor: str = typer.Option(
        "auto",
        help="auto: in this process while the work left is small (under 10 s estimated), then worker "
        "processes; local: this process; processes: worker processes; ray: a local Ray cluster "
        "(or --address's)",
    ),
    device: str | None = typer.Option(
        None,
        "--device",
        help=DEVICE_HELP + " (a grid's own device before $PRIVGRAPH_DEVICE); with --gpus-per-trial: cuda, Ray's GPU",
    ),
    gpus_per_trial: float = typer.Option(
        0.0,
        "--gpus-per-trial",
        min=0.0,
        help="GPUs Ray gives each trial (e.g. 1, or 0.5: two trials a GPU); runs the trials on Ray and on cuda",
    ),
    db: Path = typer.Option(
        Path("results/sweeps.jsonl"), help="results store (JSON lines); trials already in it are skipped"
    ),
    table: list[str] = typer.Option([], help="only this table of the grid (repeatable)"),
    dataset: list[str] = typer.Option([], help="only this dataset (repeatable)"),
    row: list[str] = typer.Option([], help="only the row with this label (repeatable)"),
    epsilon: list[str] = typer.Option([], help="only this ε, a number or none (repeatable)"),
    trials: int | None = typer.Option(None, help="trials per setting instead of the grid's"),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="run again the trials stored with an error"),
    inputs: InputOptions = InputOptions(),
    dry_run: bool = typer.Option(False, "--dry-run", help="check the grid and list what would run"),
    progress_every: float = typer.Option(
        10.0, "--progress-every", min=0.01, help="seconds between progress lines when the output is not a terminal"
    ),
    format: OutputFormat = FORMAT_OPTION,
) -> None:
    """Run an experiment grid (a paper's protocol): resumable, failures stored, one writer; in this process,
    local worker processes or a Ray cluster (--executor), on the CPU or GPUs (--device, --gpus-per-trial).
    The grid and its datasets are checked first; each trial is stored, and shown, when it ends; Ctrl-C stops,
    and the same command resumes."""
    device = _device(device)
    from privgraph.experiments.grid import Grid
    from privgraph.experiments.store import ResultsStore
    from privgraph.experiments.sweep import SweepInterrupted, placement
    from privgraph.experiments.sweep import sweep as run_sweep

    with user_errors():
        chosen = Grid.load(grid, inputs.root).select(table, dataset, row, trials, epsilon)
        if inputs.input is not None:  # your own graph in place of every setting's dataset
            from privgraph.cli.inputs import read_for_methods
            from privgraph.experiments.pipeline import new_input_id

            methods = list(dict.fromkeys(s.spec.method for s in chosen.settings))
            own = read_for_methods(inputs, methods, seed=chosen.settings[0].spec.seed if chosen.settings else 0)
            chosen = chosen.with_input(own, new_input_id(), name=inputs.dataset(None))
        chosen.validate()
        executor, device = placement(chosen, executor, workers, address, device, gpus_per_trial)
    if not address and not dry_run:  # a cluster's trials run on its machines' devices
        for each in {device} if device is not None else {s.spec.device for s in chosen.unique_settings()}:
            _resolve_device(each)  # None: $PRIVGRAPH_DEVICE's, else the CPU
    if dry_run:
        stored = ResultsStore(db).stored() if db.exists() else set()
        listing = Table(title=f"{chosen.name}: {chosen.title}" if chosen.title else chosen.name)
        for column in ("table", "row", "dataset", "model", "ε", "trials", "stored"):
            listing.add_column(column)
        for s in chosen.settings:
            have = sum((s.key, t) in stored for t in range(s.trials))
            listing.add_row(s.table, escape(s.label), s.dataset, s.model, _fmt_eps(s.epsilon), str(s.trials), str(have))
        if format == OutputFormat.tsv:
            print_tsv(listing)
            return
        out_console.print(listing)
        unique = chosen.unique_settings()
        out_console.print(
            f"{len(unique)} settings, {sum(s.trials for s in unique)} trials"
            + (f"; {chosen.duration}" if chosen.duration else "")
        )
        return

    with console_progress(interval=progress_every, heartbeat=True) as progress:
        show_error, show_trial = trial_notes(progress)
        try:  # a ValueError: the grid, its data or the store (nothing ran); a RuntimeError: Ray did not start
            with user_errors(failures=(RuntimeError,)):
                summary = run_sweep(
                    chosen,
                    db,
                    workers,
                    address,
                    retry_errors,
                    progress,
                    show_error,
                    executor,
                    device,
                    gpus_per_trial,
                    on_trial=show_trial,
                    notify=progress.note,
                    check_data=not address,  # a cluster's machines hold the data, maybe not this one
                )
        except KeyboardInterrupt as err:
            progress.close()
            stored = ResultsStore(db).stored() if db.exists() else set()
            done = sum((s.key, t) in stored for s in chosen.unique_settings() for t in range(s.trials))
            total = sum(s.trials for s in chosen.unique_settings())
            ran = f" ({err.summary.ran + err.summary.failed} by this run)" if isinstance(err, SweepInterrupted) else ""
            print(f"interrupted: {done} of {total} trials stored{ran}; run the same command to resume", file=sys.stderr)
            raise typer.Exit(130) from None
    if format == OutputFormat.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        out_console.print(
            f"{summary.grid}: {summary.ran} trials ran, {summary.skipped} were stored already, "
            f"{summary.failed} failed; {summary.seconds:.1f}s ({summary.executor or 'nothing to run'}); store {db}"
        )
    if summary.failed:
        raise typer.Exit(1)


def report(
    db: Path = typer.Option(
        ..., help="the results store a sweep (or run) wrote (JSON lines; an older SQLite store is read too)"
    ),
    grid: Path | None = typer.Option(
        None,
        help="the grid file: its tables, rows and published numbers "
        "(default: one table per task and dataset of the store)",
    ),
    output: Path = typer.Option(Path("docs/results"), "-o", "--output", help="output folder"),
    published: Path | None = typer.Option(
        None, help="the paper's numbers (default: the grid's src/privgraph/published/NAME.toml)"
    ),
    figures: bool = typer.Option(True, "--figures/--no-figures", help="also draw the figures"),
) -> None:
    """Markdown tables (mean ± 95% CI, trials, the paper's numbers and the difference) and figures
    (metric against ε with CI bands) from stored trials."""
    from privgraph.experiments.report import report as write_report

    if not db.exists():
        _fail(f"no results database at {db}")
    with user_errors(status=1):
        paths = write_report(db, grid, output, published, figures)
    for path in paths:
        out_console.print(f"wrote {path}")


def convert_store(
    old: Path = typer.Argument(..., help="an SQLite results store written by an older privgraph (.db)"),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="the JSON-lines store to write (default: OLD with the suffix .jsonl)"
    ),
) -> None:
    """Convert an older SQLite results store to a JSON-lines store: every trial, unchanged, in order."""
    from privgraph.experiments.store import ResultsStore

    with user_errors(OSError, ValueError):
        store = ResultsStore.from_sqlite(old, output)
    out_console.print(f"wrote {sum(1 for _ in store.records(errors=True))} trials to {store.path}")
