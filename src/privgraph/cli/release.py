"""``privgraph release``: a method's release written once, with its privacy report (and the ledger's check)."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path

import typer
from rich.markup import escape

from privgraph.catalogue import declared_spend
from privgraph.cli.checks import _method, _one_epsilon, _prepare
from privgraph.cli.console import _fail, out_console, user_errors
from privgraph.cli.inputs import _input_spec
from privgraph.cli.ledger import _ledger_dataset, _open_ledger
from privgraph.cli.options import (
    DATA,
    DATASET_OPTION,
    DEVICE_HELP,
    LABEL_EPSILON_OPTION,
    METHOD,
    METHOD_HELP,
    OUTPUT,
    PARAM_HELP,
    PRIVACY,
    RAY_ADDRESS_HELP,
    InputOptions,
    epsilon_option,
    input_options,
)
from privgraph.cli.render import print_report
from privgraph.progress import console_progress
from privgraph.release_files import check_output


class ReleaseFormat(str, Enum):
    """How ``release`` writes the data (privgraph.release_formats): each opens without privgraph."""

    pt = "pt"
    npz = "npz"
    csv = "csv"


@input_options
def release(
    method: str = typer.Argument(..., help=METHOD_HELP),
    output: Path = typer.Option(
        ...,
        "-o",
        "--output",
        help="the release's file (its folder must exist unless --mkdir); the report goes to OUTPUT.json",
        rich_help_panel=OUTPUT,
    ),
    release_format: ReleaseFormat = typer.Option(
        ReleaseFormat.pt,
        "--format",
        help="pt: a dict of tensors (torch.load); npz: arrays (numpy.load); csv: OUTPUT.edges.csv and "
        "OUTPUT.nodes.csv (one per type for a heterogeneous graph)",
        rich_help_panel=OUTPUT,
    ),
    mkdir: bool = typer.Option(False, "--mkdir", help="create OUTPUT's folder if missing", rich_help_panel=OUTPUT),
    force: bool = typer.Option(
        False,
        "--force",
        help="replace an existing release at OUTPUT (atomically: a failed write leaves the previous one); "
        "refused without it",
        rich_help_panel=OUTPUT,
    ),
    dataset: str = DATASET_OPTION,
    inputs: InputOptions = InputOptions(),
    private_ratio: float | None = typer.Option(
        None, "--private-ratio", help="fraction ρ of edges marked private", rich_help_panel=DATA
    ),
    epsilon: list[str] = epsilon_option(
        "privacy budget ε (the method's own meaning; default 1 for a private method; none: without noise where "
        "ε is optional)"
    ),
    label_epsilon: float | None = LABEL_EPSILON_OPTION,
    param: list[str] = typer.Option([], "--param", help=PARAM_HELP, rich_help_panel=METHOD),
    address: str | None = typer.Option(
        None,
        "--address",
        help=f"{RAY_ADDRESS_HELP}; Blink's server runs on its machines (--param address=…, the same graph as here)",
        rich_help_panel=METHOD,
    ),
    seed: int = typer.Option(
        0,
        help="seed of the split and the annotations (and of the noise only with --reproducible)",
        rich_help_panel=PRIVACY,
    ),
    secure: bool = typer.Option(
        False,
        "--secure",
        help="noise from the OS cryptographic source (the default; nothing recorded can regenerate it)",
        rich_help_panel=PRIVACY,
    ),
    reproducible: bool = typer.Option(
        False,
        "--reproducible",
        help="draw the noise from --seed and record it: anyone with the seed can remove "
        "the noise, so the file is for research only",
        rich_help_panel=PRIVACY,
    ),
    allow_non_private: bool = typer.Option(
        False,
        "--allow-non-private",
        help="write the release of a method that protects nothing",
        rich_help_panel=PRIVACY,
    ),
    diagnostics: bool = typer.Option(
        False,
        "--diagnostics",
        help="also write the release details (exact counts, clipping rates, MCMC traces): "
        "data-dependent, not covered by the guarantee — for the curator's own copy",
        rich_help_panel=OUTPUT,
    ),
    device: str | None = typer.Option(
        None,
        "--device",
        help=DEVICE_HELP + "; where a method that trains (PPCVGAE, HeteDP) trains",
        rich_help_panel=METHOD,
    ),
    ledger: Path | None = typer.Option(
        None,
        "--ledger",
        help="the dataset's ledger (JSON): the release is checked against its budget before any noise "
        "and recorded (`privgraph ledger FILE` prints it)",
        rich_help_panel=PRIVACY,
    ),
    ledger_name: str | None = typer.Option(
        None,
        "--ledger-name",
        help="with --input: the dataset name the ledger must record (default: the ledger's own name; a new "
        "ledger: the file's stem); the graph is checked by the ledger's fingerprint, not the file's name",
        rich_help_panel=PRIVACY,
    ),
) -> None:
    """Privatize a graph (or train and release an embedding or link model) once and write it
    with its privacy report (OUTPUT + OUTPUT.json).  The noise comes from the OS cryptographic
    source unless --reproducible; diagnostics are left out unless --diagnostics."""
    if secure and reproducible:
        _fail("--secure and --reproducible exclude each other (--secure is the default)")
    eps = _one_epsilon(epsilon)
    epsilons = [eps] if epsilon else []
    if address is not None:
        param = [*param, f"address={address}"]
    prepared = _prepare(method, param, [], None, epsilons, label_epsilon, inputs.named(dataset), device)
    if not output.parent.is_dir():
        if not mkdir:
            _fail(f"cannot write {output}: the folder {output.parent} does not exist (--mkdir creates it)")
        if not _writable(output.parent):
            _fail(f"cannot write {output}: its folder cannot be created")
    elif not os.access(output.parent, os.W_OK | os.X_OK):
        _fail(f"cannot write {output}: the folder {output.parent} is not writable")
    if output.is_dir():
        _fail(f"cannot write {output}: it is a folder (give the release's file name)")
    with user_errors(failures=(OSError,)):  # the target (exists, a link, '-', a name too long), before any noise
        check_output(output, file_format=release_format.value, overwrite=force, mkdir=mkdir)
    # the ledger (damaged, an unknown unit, another dataset), before the graph is read; with --input it is named by
    # its own recorded name (or --ledger-name), not the file's.  Its fingerprint is checked once the graph is read.
    if ledger_name is not None and ledger is None:
        _fail("--ledger-name names the dataset of --ledger: give --ledger")
    book = None if ledger is None else _open_ledger(ledger, _ledger_dataset(ledger, ledger_name, inputs.input, dataset))
    if book is not None and label_epsilon is None:  # the budget, where the catalogue tells the spend (no torch)
        _check_budget(book, method, epsilons, lambda eps: declared_spend(_method(method), eps, prepared[0]))

    def before_read(built) -> None:  # the method built with its parameters, nothing read yet
        if book is not None:
            _check_budget(book, method, epsilons, lambda eps: _planned(built, eps, label_epsilon))

    spec, notes = _input_spec(
        method, param, [], prepared, inputs, dataset, device, before_read, epsilons=epsilons, trials=1, seed=seed,
        label_epsilon=label_epsilon, secure=not reproducible and _adds_noise(method, epsilons),
        private_ratio=private_ratio,
    )  # fmt: skip
    from privgraph.experiments.release import check_release, release_file

    with user_errors():
        check_release(spec, allow_non_private)
    # what the input or the options do not allow: a user error (2); a RuntimeError or the disk (a full one: "no
    # space left on …: nothing was replaced"): the release failed (1)
    with user_errors(failures=(RuntimeError, OSError)):
        with console_progress(heartbeat=True) as progress:
            path, report_path, rel = release_file(
                spec,
                output,
                progress,
                diagnostics,
                allow_non_private,
                notes,
                release_format.value,
                book and book.for_file(output),
                overwrite=force,
            )
    print_report(rel.report)
    raw = [name for name, status in rel.fields.items() if not status.startswith(("privatized", "withheld"))]
    if raw:
        out_console.print(f"fields written as given (not protected): {escape(', '.join(raw))}")
    out_console.print(f"wrote {', '.join(str(f) for f in rel.files(output, release_format.value))}")


def _adds_noise(method: str, epsilons: list[float | None]) -> bool:
    """Whether the release draws noise: ε given, or a private method whose ε has a default."""
    info = _method(method)["info"]
    return any(e is not None for e in epsilons) or (info["private"] and not info["epsilon_optional"])


def _check_budget(book, method: str, epsilons: list[float | None], planned) -> None:
    """The ledger's budget against the release's declared spend (``planned(ε)``; None where it reads the data:
    checked only once the data are read, by the release), before the graph is read; one line and exit 2 when it
    would exceed it (the release checks it again before the noise)."""
    from privgraph.accounting.validation import check_epsilons

    info = _method(method)["info"]
    with user_errors():
        eps = check_epsilons(method, info["private"], info["epsilon_optional"], list(epsilons))[0]
    spends = None if eps is None else planned(eps)
    if spends is None:
        return
    with user_errors(prefix=f"cannot use the ledger {book.path}: "):
        book.check(spends)


def _planned(built, epsilon: float, label_epsilon: float | None):
    """The built method's declared spend, or None where it reads the data (``spend_reads_data``)."""
    return None if built.spend_reads_data else built.planned_spend(epsilon, label_epsilon)


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return True
    except OSError:
        return False
