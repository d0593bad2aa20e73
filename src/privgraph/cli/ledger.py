"""``privgraph ledger``: a dataset's ledger of releases, its budgets and what remains."""

from __future__ import annotations

from pathlib import Path

import typer

from privgraph.cli.console import OutputFormat, _fail, user_errors
from privgraph.cli.options import FORMAT_OPTION
from privgraph.cli.render import print_ledger


def _open_ledger(
    path: Path,
    dataset: str | None = None,
    budget: dict | None = None,
    advanced_delta: float | None = None,
    content_hash: bool = False,
):
    """The ledger at ``path`` (:class:`privgraph.accounting.Ledger`; one line and exit 2 if it is damaged,
    of another dataset, or names an unknown unit)."""
    from privgraph.accounting.ledger import Ledger

    with user_errors(OSError, ValueError, prefix=f"cannot use the ledger {path}: "):  # JSONDecodeError: a ValueError
        return Ledger(path, budget, dataset=dataset, advanced_delta=advanced_delta, content_hash=content_hash)


def _ledger_dataset(path: Path, ledger_name: str | None, input_file: Path | None, dataset: str | None) -> str | None:
    """The dataset name a release checks the ledger at ``path`` against.  Without ``--input``: the dataset's.
    With ``--input``: ``--ledger-name``, else the name the ledger records (the owner's record of one dataset:
    renaming the file does not break it), else, for a ledger without one, the file's stem (the name the
    results go under).  The graph itself is checked by the ledger's fingerprint (node count, content hash)."""
    if input_file is None:
        if ledger_name is not None and ledger_name != dataset:
            _fail(f"--ledger-name names the dataset of an --input graph; the ledger of {dataset} is named {dataset}")
        return dataset
    if ledger_name is not None:
        return ledger_name  # the ledger refuses it when it records another name
    return _open_ledger(path).dataset or input_file.stem


def ledger_command(
    path: Path = typer.Argument(..., help="the ledger file (JSON) of one dataset"),
    budget: list[str] = typer.Option(
        [],
        "--budget",
        help="set the budget of a unit: 'UNIT=EPS' or 'UNIT=EPS,DELTA' (repeat it; '*' for every unit "
        "not named), e.g. --budget 'adjacency list=4'",
    ),
    dataset: str | None = typer.Option(None, "--dataset", help="the dataset the ledger is for (set once)"),
    advanced_delta: float | None = typer.Option(
        None,
        "--advanced-delta",
        help="δ′ of the Rényi filter for a unit with an ε-only budget (set once; default: basic composition there)",
    ),
    content_hash: bool = typer.Option(
        False,
        "--content-hash",
        help="the first release also records a SHA-256 of the graph's content in the ledger's fingerprint (not "
        "private: it confirms a guessed graph), and later releases on other content are refused",
    ),
    format: OutputFormat = FORMAT_OPTION,
) -> None:
    """Print a dataset's ledger: every release (method, ε and δ per unit, time, file), then each unit's
    total by its privacy filter (valid when each release is chosen after the last: the Rényi filter of the
    Gaussian and pure releases, or basic composition; the rule is printed per unit) against its budget and what
    remains; --budget, --dataset and --advanced-delta set them."""
    if not budget and dataset is None and not path.exists():
        _fail(f"no ledger at {path} (create one with --dataset NAME --budget 'UNIT=EPS')")
    book = _open_ledger(path, dataset, advanced_delta=advanced_delta, content_hash=content_hash)
    if budget:
        parsed = {}
        for item in budget:
            unit, sep, value = item.rpartition("=")
            try:
                parsed[unit.strip()] = tuple(float(v) for v in value.split(",")) if sep and unit.strip() else None
                if parsed[unit.strip()] is None or len(parsed[unit.strip()]) not in (1, 2):
                    raise ValueError
            except ValueError:
                _fail(f"--budget takes 'UNIT=EPS' or 'UNIT=EPS,DELTA', got {item!r}")
        with user_errors(prefix="--budget: "):
            book.set_budget({u: v[0] if len(v) == 1 else v for u, v in parsed.items()})
    elif (
        (dataset is not None and book.dataset is None)
        or (advanced_delta is not None and book.advanced_delta is None)
        or (content_hash and book.fingerprint is None)
    ):
        book.set_budget(book.budget)  # records the dataset, δ′ and the content-hash choice
    with user_errors(prefix=f"cannot use the ledger {path}: "):
        state = book.to_dict()
    if format == OutputFormat.json:
        from privgraph.accounting.ledger.storage import dumps_ledger

        print(dumps_ledger(state), end="")  # one line per release: O(releases)
        return
    if format == OutputFormat.tsv:
        _fail("privgraph ledger prints its tables or --format json")
    print_ledger(state)
