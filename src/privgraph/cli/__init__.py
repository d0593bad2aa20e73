"""The ``privgraph`` command (typer + rich): the app, its commands registered in ``--help``'s order, and
:func:`main`, the console entry point.

The package's modules, by theme (none imports torch at its top: ``privgraph --help`` and the catalogue's
commands stay light):

* :mod:`~privgraph.cli.console`: the consoles, the output formats, :func:`_fail` and :func:`user_errors`
  (a ``ValueError`` as one error line and exit 2);
* :mod:`~privgraph.cli.options`: the shared options, and :class:`~privgraph.cli.options.InputOptions` (``--input``
  and its companions, declared once);
* :mod:`~privgraph.cli.checks`: the catalogue's checks before torch and the spec built on them;
* :mod:`~privgraph.cli.inputs`: ``--input`` read and checked against the method's input rules;
* :mod:`~privgraph.cli.render`: the tables, reports and tab-separated output;
* the commands: :mod:`~privgraph.cli.run` (run, attack, attacks, demo), :mod:`~privgraph.cli.release`,
  :mod:`~privgraph.cli.ledger`, :mod:`~privgraph.cli.sweep` (sweep, plot, report, convert-store),
  :mod:`~privgraph.cli.audit`, :mod:`~privgraph.cli.info` (methods, datasets);
* :mod:`~privgraph.cli.argv`: ``--epsilon 0.1 0.5 1`` rewritten before click parses it.
"""

from __future__ import annotations

import sys

import typer

from privgraph.cli import audit as _audit
from privgraph.cli import compare as _compare
from privgraph.cli import info as _info
from privgraph.cli import ledger as _ledger
from privgraph.cli import release as _release
from privgraph.cli import run as _run
from privgraph.cli import sweep as _sweep
from privgraph.cli.argv import MULTI_VALUE_OPTIONS, expand_multi_value_options
from privgraph.cli.checks import _assign, _device, _epsilons, _method, _parse, _prepare, _resolve_device, _spec
from privgraph.cli.console import PIPE_WIDTH, OutputFormat, PipeConsole, _fail, err_console, out_console, user_errors
from privgraph.cli.inputs import _read_input
from privgraph.cli.render import print_ledger, print_report, print_reports, print_result, print_tsv, result_table

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="privgraph: privacy-preserving learning on graphs.",
)


def _version(value: bool) -> None:
    if value:
        from privgraph import __version__

        print(f"privgraph {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print the version and exit"
    ),
    threads: str | None = typer.Option(
        None,
        "--threads",
        help="threads to compute with (default: $PRIVGRAPH_THREADS, else $OMP_NUM_THREADS, else the CPUs this "
        "process may use: its affinity and cgroup quota); waiting threads sleep instead of spinning",
    ),
) -> None:
    """privgraph: privacy-preserving learning on graphs."""
    from privgraph.threads import check_threads, set_threads

    with user_errors():
        set_threads(None if threads is None else check_threads(threads, "--threads"))


# the commands, in --help's order
app.command()(_run.run)
app.command()(_run.attack)
app.command("attacks")(_run.list_attacks)
app.command()(_release.release)
app.command("ledger")(_ledger.ledger_command)
app.command()(_sweep.plot)
app.command()(_sweep.sweep)
app.command()(_sweep.report)
app.command()(_compare.compare)
app.command("convert-store")(_sweep.convert_store)
app.command("audit")(_audit.audit_command)
app.command()(_run.demo)
app.command("methods")(_info.list_methods_command)
app.command()(_info.datasets)
app.command()(_info.grids)


def main() -> None:
    app(args=expand_multi_value_options(sys.argv[1:]), prog_name="privgraph")


__all__ = [
    "MULTI_VALUE_OPTIONS",
    "PIPE_WIDTH",
    "OutputFormat",
    "PipeConsole",
    "_assign",
    "_device",
    "_epsilons",
    "_fail",
    "_method",
    "_parse",
    "_prepare",
    "_read_input",
    "_resolve_device",
    "_spec",
    "app",
    "err_console",
    "expand_multi_value_options",
    "main",
    "out_console",
    "print_ledger",
    "print_report",
    "print_reports",
    "print_result",
    "print_tsv",
    "result_table",
    "user_errors",
]
