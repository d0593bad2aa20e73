"""The command's consoles, its output formats and its one way to fail: one error line and an exit status."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import NoReturn

import click
import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape


class PipeConsole(Console):
    """rich's Console, whose lines are not wrapped where it writes to no terminal (``privgraph methods | cat``,
    a log): rich wraps at 80 columns there, splitting a table's cells (a description one word a line,
    ``97.1 ±`` from ``1.7``); $COLUMNS, when set, still sets the width."""

    @property
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)
        if self.is_terminal or self._width is not None or "COLUMNS" in self._environ:
            return size
        return ConsoleDimensions(PIPE_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)


PIPE_WIDTH = 10_000  # columns of a console that writes to no terminal: no line of privgraph's is longer
PROSE_WIDTH = 120  # a listing of prose (privgraph methods) piped: its text wrapped here, not left on one line


def prose_width(console: Console) -> int | None:
    """The width to print a table of prose at (``console.print(table, width=…)``): :data:`PROSE_WIDTH` where
    ``console`` writes to no terminal and no width was set ($COLUMNS, ``width=``), else None (its own)."""
    return PROSE_WIDTH if console.size.width == PIPE_WIDTH else None


err_console = PipeConsole(stderr=True)
out_console = PipeConsole()


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    tsv = "tsv"


def _fail(message: str, status: int = 2) -> NoReturn:
    """One error line, never wrapped by the console (a terminal folds it; a log or a test reads one line); exit
    with ``status`` (2: bad input, 1: the run failed)."""
    err_console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(status)


@contextmanager
def user_errors(
    *errors: type[Exception],
    prefix: str = "",
    suffix: str = "",
    status: int = 2,
    failures: tuple[type[Exception], ...] = (),
) -> Iterator[None]:
    """The one error context of the commands: an exception of ``errors`` (default ``ValueError``) raised in
    the block becomes :func:`_fail`'s one line (the error's text between ``prefix`` and ``suffix``) and exit
    ``status`` (2: the user's input); one of ``failures`` (e.g. ``RuntimeError``: the run failed) exits 1.
    An exit already decided in the block (:func:`_fail`'s, a ``RuntimeError`` to click) passes unchanged."""
    caught = errors or (ValueError,)
    try:
        yield
    except click.exceptions.Exit:
        raise
    except caught as err:
        _fail(prefix + str(err) + suffix, status)
    except failures as err:
        _fail(str(err), 1)
