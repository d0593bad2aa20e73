"""The ``privgraph`` command (typer + rich)."""

from __future__ import annotations

import json
import math
import sys
import time
from enum import Enum
from pathlib import Path
from types import UnionType
from typing import Any, NoReturn, Union, get_args, get_origin

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.table import Table

from privgraph.progress import console_progress, format_duration

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="privgraph: privacy-preserving learning on graphs.",
)


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
err_console = PipeConsole(stderr=True)
out_console = PipeConsole()

# options that accept several space-separated values (`--epsilon 0.1 0.5 1`)
MULTI_VALUE_OPTIONS = ("--epsilon",)


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    tsv = "tsv"


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

    try:
        set_threads(None if threads is None else check_threads(threads, "--threads"))
    except ValueError as err:
        _fail(str(err))


def print_tsv(table: Table) -> None:
    """``--format tsv``: a table's header and rows on stdout, tab-separated (:mod:`csv`'s ``excel-tab``
    dialect), without markup: one line a row, for ``cut``, a spreadsheet or ``csv.reader``."""
    import csv

    from rich.text import Text

    def plain(cell: Any) -> str:
        return cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain

    writer = csv.writer(sys.stdout, dialect="excel-tab", lineterminator="\n")
    writer.writerow(plain(c.header) for c in table.columns)
    for row in zip(*(c.cells for c in table.columns)):
        writer.writerow(plain(c) for c in row)


def _fmt_eps(eps: float | None) -> str:
    return "—" if eps is None else f"{eps:g}"


def _pct(mean: float, half: float) -> str:
    ci = "" if math.isnan(half) else f" ± {100 * half:.1f}"
    return f"{100 * mean:.1f}{ci}"


def print_report(report, console: Console = out_console) -> None:
    """One release's report: the plain sentence for a data owner, then the expert lines."""
    console.print(escape(report.plain_summary()))
    for line in report.lines():
        console.print(f"  {escape(line)}")


def _setting_label(eps: float | None, releases: int = 1) -> str:
    """``ε = 4``, or ``ε = 4 × 5 releases`` for a setting that released 5 candidates (it spent 20)."""
    return f"ε = {_fmt_eps(eps)}" + (f" × {releases} releases" if releases > 1 and eps is not None else "")


def print_reports(reports: dict, console: Console = out_console, releases: dict | None = None) -> None:
    """The privacy report of each ε (``releases``: how many candidate releases a setting made, 1 if not
    given): the plain sentence for the weakest setting (the largest ε) labelled with it, each setting's
    guarantees, then the notes every setting shares once and the others labelled with their ε."""
    console.print("[bold]Privacy report[/bold]")
    releases = releases or {}
    labels = {eps: _setting_label(eps, releases.get(eps, 1)) for eps in reports}
    if reports:
        weakest = max(reports, key=lambda e: math.inf if e is None else e)
        prefix = f"At {labels[weakest]} (the weakest setting): " if len(reports) > 1 else ""
        console.print(escape(prefix + reports[weakest].plain_summary()))
    notes: dict = {}
    for eps, report in reports.items():
        lines = report.lines()
        console.print(f"  {labels[eps]}: " + escape("; ".join(ln for ln in lines if not ln.startswith("note: "))))
        notes[eps] = [ln[len("note: ") :] for ln in lines if ln.startswith("note: ")]
    shared = set.intersection(*(set(n) for n in notes.values())) if notes else set()
    for note in dict.fromkeys(n for ns in notes.values() for n in ns if n in shared):
        console.print(f"  [dim]note: {escape(note)}[/dim]")
    for eps, ns in notes.items():
        for note in dict.fromkeys(n for n in ns if n not in shared):
            console.print(f"  [dim]note ({escape(labels[eps])}): {escape(note)}[/dim]")


def _unit_budgets(row: dict) -> dict[str, float]:
    """The ε of each privacy unit of a setting (node labels have their own column)."""
    units = (row.get("privacy") or {}).get("by_unit") or {}
    return {
        u: g["epsilon"] for u, g in units.items() if u != "node label" and isinstance(g.get("epsilon"), (int, float))
    }


def _budgets(row: dict) -> str:
    """The ε the setting spent; a method with a budget per unit (HeteroRR's ε_f and ε_e, HeteDP's ε_f and
    ε_s) shows each, in the order of the footnote :func:`print_result` prints.  A setting that released
    several candidates (a selection on validation) shows the total, then ``(k × ε)``."""
    budgets = _unit_budgets(row)
    k = row.get("releases", 1)
    if len(budgets) < 2 and k == 1:
        return _fmt_eps(row["epsilon"])
    spent = " / ".join(f"{e:g}" for e in budgets.values()) if budgets else _fmt_eps(row.get("epsilon_spent"))
    return spent + (f" ({k} × {_fmt_eps(row['epsilon'])})" if k > 1 else "")


def print_result(result, console: Console = out_console) -> None:
    """A run's summary: one row per ε, one column per metric of its task (%, mean ± 95% CI), within 80
    columns (an attack's run: the target's utility and the attack's headline metrics, all of them in
    the JSON); ε_y only under label privacy; the chosen hyperparameters and release options and the
    attack's threat model below."""
    table, choices = result_table(result)
    console.print(table)
    rows = result.summary()
    by_eps: dict = {}
    for r in rows:
        by_eps.setdefault((r["epsilon"], r["epsilon_y"]), {})[r["metric"]] = r
    split = next(
        (_unit_budgets(m[result.metrics[0]]) for m in by_eps.values() if len(_unit_budgets(m[result.metrics[0]])) > 1),
        None,
    )
    if split:
        console.print(f"  [dim]ε per unit: {escape(' / '.join(split))}[/dim]")
    for line in choices:
        console.print(f"  [dim]chosen on validation: {escape(line)}[/dim]")
    if result.attack:
        threat = result.attack["threat_model"]
        from privgraph.attacks import ThreatModel

        console.print(
            f"[bold]Threat model[/bold] ({escape(result.attack['name'])}): {escape(ThreatModel(**threat).describe())}"
        )
        console.print(
            "  [dim]advantage: TPR − FPR of the attacker's decision; tpr@1%fpr: TPR at 1% FPR; all "
            "metrics with --format json[/dim]"
        )
    print_reports(result.reports, console, {r["epsilon"]: r["releases"] for r in rows})


def result_table(result) -> tuple[Table, list[str]]:
    """:func:`print_result`'s table (one row per ε, one column per metric: %, mean ± 95% CI) and the
    values chosen on validation, one line per ε."""
    rows = result.summary()
    by_eps: dict = {}
    for r in rows:
        by_eps.setdefault((r["epsilon"], r["epsilon_y"]), {})[r["metric"]] = r
    dataset = rows[0]["dataset"] if rows else result.spec.dataset
    attack = f"{result.attack['name']} against " if result.attack else ""
    title = f"{attack}{result.spec.method} on {dataset} ({result.model}): %, mean ± 95% CI"
    table = Table(title=title, min_width=len(title))  # the title on one line where the width allows
    shown = result.columns
    label_private = any(eps_y is not None for _, eps_y in by_eps)
    table.add_column("ε", no_wrap=True)
    if label_private:
        table.add_column("ε_y", no_wrap=True)
    for m in shown:
        table.add_column(_short(m), no_wrap=True, justify="right")
    table.add_column("n", no_wrap=True, justify="right")
    choices = []
    for (eps, eps_y), metrics in sorted(by_eps.items(), key=lambda kv: (kv[0][0] is not None, kv[0][0] or 0)):
        first = metrics[shown[0]]
        table.add_row(
            _budgets(first),
            *([_fmt_eps(eps_y)] if label_private else []),
            *(_pct(metrics[m]["mean"], metrics[m]["ci95"]) for m in shown),
            str(first["trials"]),
        )
        chosen = dict(first.get("release_options") or {})
        if first.get("tuned") and first.get("hyperparameters"):
            chosen.update({k: v for k, v in first["hyperparameters"].items() if k in _TUNED})
        if chosen:
            choices.append(
                f"ε = {_fmt_eps(eps)}: "
                + ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in chosen.items())
            )
    return table, choices


def _short(metric: str) -> str:
    """A column header: ``attack_tpr_at_1fpr`` → ``tpr@1%fpr``, ``attack_auc`` → ``attack auc``."""
    return {"attack_tpr_at_1fpr": "tpr@1%fpr", "attack_advantage": "advantage", "attack_precision": "precision@k"}.get(
        metric, metric.replace("_", " ")
    )


_TUNED = ("lr", "weight_decay", "dropout", "kprop_steps", "label_steps")


METHOD_HELP = "a registered method: `privgraph methods` lists them, `privgraph methods NAME` its parameters"
PARAM_HELP = (
    "a parameter of the method, e.g. --param variant=hybrid, --param sensitive_features=3,17 (a tuple), "
    "--param mcmc_steps=none; `privgraph methods METHOD` lists them"
)


def _fail(message: str, status: int = 2) -> NoReturn:
    """One error line; exit with ``status`` (2: bad input, 1: the run failed)."""
    err_console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(status)


def _parse(text: str, hint: Any) -> Any:
    """``text`` as a value of the annotated type ``hint`` (int, float, bool, str, a tuple given
    comma-separated, or optional: ``none``); ``ValueError`` when it is not one."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType):
        if type(None) in args and text.lower() in ("none", "null"):
            return None
        return _parse(text, next(a for a in args if a is not type(None)))  # X | None: every Params union
    if origin is tuple:
        items = [s.strip() for s in text.split(",")] if text.strip() else []
        kinds = [args[0]] * len(items) if len(args) == 2 and args[1] is Ellipsis else list(args)
        if len(kinds) != len(items):
            raise ValueError(text)
        return tuple(_parse(s, k) for s, k in zip(items, kinds))
    if hint is bool and text.lower() in ("true", "yes", "on", "1", "false", "no", "off", "0"):
        return text.lower() in ("true", "yes", "on", "1")
    if hint in (int, float, str):
        return hint(text)
    raise ValueError(text)


def _assign(
    items: list[str], hints: dict[str, Any], flag: str, owner: str, noun: str, renamed: dict[str, str] | None = None
) -> dict[str, Any]:
    """``NAME=VALUE`` items parsed against ``hints`` (each name's type, in order: a catalogue entry's,
    :func:`privgraph.catalogue.hints`); an unknown name or a value of the wrong type exits 2 with one
    line listing the names (a ``renamed`` one: with its hint)."""
    known = list(hints)
    listing = f"its {noun}s: {', '.join(known) or 'none'}"
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            _fail(f"{flag} takes NAME=VALUE, got {item!r}")
        if name not in known and name in (renamed or {}):
            _fail(f"{flag} {name}: {(renamed or {})[name]}")
        if name not in known:
            _fail(f"{owner} has no {noun} {name!r}; {listing}")
        try:
            out[name] = _parse(text.strip(), hints[name])
        except ValueError:
            kind = hints[name].__name__ if hints[name] in (int, float, bool, str) else hints[name]
            _fail(f"{flag} {name}={text!r}: {noun} {name} of {owner} takes {kind}; {listing}")
    return out


INPUT_HELP = (
    "your own graph instead of --dataset: a torch.save'd PyG Data/HeteroData (.pt), an edge list "
    "(.csv/.tsv/.txt, header optional) or a SciPy sparse adjacency (.npz)"
)
DATA, PRIVACY, METHOD, TRAINING, OUTPUT = "Data", "Privacy", "Method", "Training and evaluation", "Output"


def _epsilons(values: list[str]) -> list[float | None]:
    """``--epsilon`` values: numbers, or ``none`` (a method where ε is optional, without noise)."""
    out: list[float | None] = []
    for v in values:
        if v.lower() in ("none", "null"):
            out.append(None)
            continue
        try:
            out.append(float(v))
        except ValueError:
            _fail(f"--epsilon {v!r}: give numbers (or none for a method whose noise is optional)")
    return out


def _method(method: str) -> dict[str, Any]:
    """The catalogue's entry of ``method`` (:mod:`privgraph.catalogue`: no torch); an unknown name exits 2."""
    from privgraph.catalogue import method_entry

    try:
        return method_entry(method)
    except ValueError as err:
        _fail(str(err))


def _device(device: str | None) -> str | None:
    """``--device``'s spelling (:func:`~privgraph.device.parse_device`, no torch), or None to leave the
    choice to ``$PRIVGRAPH_DEVICE`` (whose spelling is checked here too), else the CPU; exits 2 with one line."""
    import os

    from privgraph.device import DEVICE_ENV, DeviceError, parse_device

    try:
        if device is not None:
            return parse_device(device)
        if os.environ.get(DEVICE_ENV):
            parse_device(os.environ[DEVICE_ENV])
    except DeviceError as err:
        _fail(f"--device: {err}" if device is not None else f"${DEVICE_ENV}: {err}")
    return None


def _resolve_device(device: str | None) -> None:
    """``device`` (:func:`_device`'s) is present on this machine: called once torch is needed, before any data
    is read or work starts (:func:`~privgraph.device.resolve_device`); a missing one exits 2 with one line."""
    from privgraph.device import DeviceError, resolve_device

    try:
        resolve_device(device)
    except DeviceError as err:
        _fail(str(err))


def _prepare(
    method: str,
    params: list[str],
    hparams: list[str],
    task: str | None = None,
    epsilons: list[float | None] | None = None,
    epsilon_y: float | None = None,
    dataset: str | None = None,
    device: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The checks that need only the catalogue, before torch is imported: the method, ``--param``
    NAME=VALUE parsed against its parameters' types, ``--task``, ``--set`` against the task's training
    hyperparameters, ε (:func:`~privgraph.accounting.validation.check_epsilons`), ε_y, the dataset's
    name (``dataset``: None with ``--input``) and ``--device``'s spelling.  Returns the parameters and the
    hyperparameters; bad input exits 2 with the line the pipeline would print after loading torch."""
    from privgraph.accounting.validation import check_epsilon, check_epsilons
    from privgraph.catalogue import hints, task_entry

    _device(device)
    entry = _method(method)
    try:
        evaluation = task_entry(entry, task)
    except ValueError as err:
        _fail(str(err))
    values = _assign(params, hints(entry["params"]), "--param", f"method {method!r}", "parameter", entry.get("renamed"))
    trained: dict[str, Any] = {}
    if hparams and evaluation is not None:  # an unknown --task: the pipeline refuses it
        if evaluation["training"] is None:
            _fail(
                f"{method} does not take --set: it trains no model of the task's own (its settings are --param; "
                f"`privgraph methods {method}`)"
            )
        trained = _assign(hparams, hints(evaluation["training"]), "--set", f"{method}'s training", "hyperparameter")
    info = entry["info"]
    try:
        check_epsilons(method, info["private"], info["epsilon_optional"], list(epsilons or []))
        if epsilon_y is not None:
            check_epsilon(epsilon_y, "epsilon_y")
        if dataset is not None and evaluation is not None and evaluation["datasets"]:
            from privgraph.data.registry import get_dataset

            get_dataset(dataset, *evaluation["datasets"])
    except ValueError as err:
        _fail(str(err))
    return values, trained


def _spec(method: str, params: list[str], hparams: list[str], **fields: Any):
    """The pipeline's spec for ``method``: :func:`_prepare`'s checks (no torch), the device present
    (:func:`_resolve_device`), then the spec's own (:meth:`~privgraph.experiments.ExperimentSpec.validate`),
    before any work (bad input exits 2 with one line)."""
    values, trained = _prepare(
        method,
        params,
        hparams,
        fields.get("task"),
        fields.get("epsilons"),
        fields.get("epsilon_y"),
        None if fields.get("input") is not None else fields.get("dataset", "sbm"),
    )
    fields["device"] = _device(fields.get("device"))
    _resolve_device(fields["device"])
    from privgraph.experiments import ExperimentSpec

    spec = ExperimentSpec(method=method, params=values, hyperparameters=trained, **fields)
    try:
        spec.validate()
    except (ValueError, TypeError) as err:
        _fail(str(err))
    return spec


def _read_input(
    path: Path | None,
    method: str,
    features: Path | None,
    labels: Path | None,
    private_edges: Path | None,
    private_column: str | None,
    domain: str | None,
    clip: bool,
    directed: bool = False,
    trust_pickle: bool = False,
    device: str | None = None,
) -> tuple[Any, list[str]]:
    """The user's graph file (``--input``) read and checked against ``method`` (its features, an
    undirected graph for a link-level method), and the notes on what reading changed; (None, [])
    without ``--input``.  ``device`` (:func:`_device`'s) must be present before the file is read.  Bad
    input exits 2 with one line."""
    given = {
        "--features": features,
        "--labels": labels,
        "--private-edges": private_edges,
        "--private-column": private_column,
        "--domain": domain,
        "--clip": clip or None,
        "--directed": directed or None,
        "--trust-pickle": trust_pickle or None,
    }
    if path is None:
        stray = [flag for flag, v in given.items() if v is not None]
        if stray:
            verb = "describes" if len(stray) == 1 else "describe"
            _fail(f"{', '.join(stray)} {verb} an --input file: give --input")
        return None, []
    from privgraph.data.files import (
        FEATURE_SUFFIXES,
        GRAPH_SUFFIXES,
        LABEL_SUFFIXES,
        MASK_SUFFIXES,
        TORCH_SUFFIXES,
        existing_file,
    )

    _method(method)
    bounds = None
    if domain is not None:
        try:
            lo, hi = (float(v) for v in domain.split(","))
        except ValueError:
            _fail(f"--domain takes LO,HI (e.g. 0,1), got {domain!r}")
        bounds = (lo, hi)
    try:  # the files exist (no torch yet)
        existing_file(path, "graph", GRAPH_SUFFIXES)
        for file, role, suffixes in (
            (features, "features", FEATURE_SUFFIXES),
            (labels, "labels", LABEL_SUFFIXES),
            (private_edges, "private-edge mask", MASK_SUFFIXES),
        ):
            if file is not None:
                existing_file(file, role, suffixes)
    except ValueError as err:
        _fail(str(err))
    _resolve_device(device)
    from torch_geometric.data import Data

    from privgraph.data import check_graph
    from privgraph.data.io import GraphInputError, read_graph
    from privgraph.methods import method_class

    try:
        cls = method_class(method)
        data, notes = read_graph(
            path,
            features=features,
            labels=labels,
            private_edges=private_edges,
            private_column=private_column,
            domain=bounds,
            clip=clip,
            directed=directed,
            self_loops=not cls.simple_graph,
            trust_pickle=trust_pickle,
        )
    except (GraphInputError, ValueError) as err:
        _fail(str(err))
    if isinstance(data, Data) == cls.heterogeneous:
        _fail(
            f"{method} takes a {'HeteroData' if cls.heterogeneous else 'homogeneous graph (Data)'}, but {path.name} "
            f"holds a {type(data).__name__}"
        )
    if isinstance(data, Data) and cls.needs_features and data.x is None:
        _fail(
            f"{method} reads the node features, but {path.name} comes with none: give --features FILE "
            "(the link-level methods release a graph without features)"
        )
    if cls.needs_domain and getattr(data, "feature_domain", None) is None:
        _fail(
            f"{method} perturbs the features within a public domain, but none is declared for {path.name}: "
            "give --domain LO,HI (the features' range, fixed without looking at them, e.g. --domain 0,1)"
        )
    if isinstance(data, Data) and cls.simple_graph:
        try:
            check_graph(
                data.edge_index,
                data.num_nodes,
                undirected=True,
                private_edge_mask=data.get("private_edge_mask"),
                what=f"the graph in {path.name}",
            )
        except ValueError as err:
            keep = (
                " (drop --directed to add the missing reverse edges)"
                if directed and path.suffix.lower() not in TORCH_SUFFIXES
                else ""
            )
            _fail(f"{method} protects the links of an undirected graph: {err}{keep}")
    for note in notes:
        err_console.print(f"[dim]{escape(str(path))}: {escape(note)}[/dim]")
    return data, notes


# the options that describe the user's own graph, shared by run and release
INPUT_OPTION = typer.Option(None, "--input", help=INPUT_HELP, rich_help_panel=DATA)
FEATURES_OPTION = typer.Option(None, help="--input's node features (.npy or .csv)", rich_help_panel=DATA)
LABELS_OPTION = typer.Option(None, help="--input's node labels (.npy, .csv or .txt)", rich_help_panel=DATA)
PRIVATE_EDGES_OPTION = typer.Option(
    None, "--private-edges", help="--input's private-edge mask (.npy, one 0/1 per edge)", rich_help_panel=DATA
)
PRIVATE_COLUMN_OPTION = typer.Option(
    None,
    "--private-column",
    help="the edge list's 0/1 column marking private edges (name, or index without header)",
    rich_help_panel=DATA,
)
DOMAIN_OPTION = typer.Option(None, help="the features' declared domain LO,HI (e.g. 0,1)", rich_help_panel=DATA)
CLIP_OPTION = typer.Option(
    False, "--clip", help="clip --input's features into --domain instead of refusing", rich_help_panel=DATA
)
DIRECTED_OPTION = typer.Option(
    False,
    "--directed",
    help="keep an --input edge list (.csv/.tsv/.txt/.edges/.npz) as "
    "given, a directed graph; by default it is an undirected graph and the reverse of "
    "each edge listed one way is added (said in the report); the link-level methods "
    "refuse a directed graph",
    rich_help_panel=DATA,
)
TRUST_PICKLE_OPTION = typer.Option(
    False,
    "--trust-pickle",
    help="unpickle a .pt --input with "
    "torch.load(weights_only=False): the file can run any code, so only for a file "
    "you trust (the report says it was trusted); by default only tensors, plain "
    "values and PyG's data classes are read",
    rich_help_panel=DATA,
)
DATA_ROOT_OPTION = typer.Option(None, help="raw-data folder (default: $PRIVGRAPH_DATA)", rich_help_panel=DATA)
DATASET_OPTION = typer.Option("sbm", help="a dataset (`privgraph datasets`), or sbm (synthetic)", rich_help_panel=DATA)


SPLIT_OPTION = typer.Option(
    "random",
    help="random (seeded stratified 50/25/25; heterogeneous graphs: the "
    "dataset's own split) or public (Planetoid); heterogeneous node classification: "
    "hetedp (the HeteDP authors' random 20/10/70)",
    rich_help_panel=DATA,
)
PRIVATE_RATIO_OPTION = typer.Option(
    None,
    "--private-ratio",
    help="mark this fraction ρ of the edges private at random (edge-level methods)",
    rich_help_panel=DATA,
)
EPSILON_OPTION = typer.Option(
    [],
    help="privacy budget(s) ε, e.g. --epsilon 1 2 4 8 (default 1 for a private method; "
    "none: without noise where ε is optional)",
    rich_help_panel=PRIVACY,
)
EPSILON_Y_OPTION = typer.Option(
    None, "--epsilon-y", help="label privacy budget (off by default)", rich_help_panel=PRIVACY
)
SECURE_OPTION = typer.Option(
    False, help="draw noise from the OS cryptographic source (not reproducible)", rich_help_panel=PRIVACY
)
PARAM_OPTION = typer.Option([], "--param", help=PARAM_HELP, rich_help_panel=METHOD)
MODEL_OPTION = typer.Option(None, help="gcn, sage, gat or mlp (default: the method's own)", rich_help_panel=TRAINING)
TRIALS_OPTION = typer.Option(10, min=1, rich_help_panel=TRAINING)
SEED_OPTION = typer.Option(0, rich_help_panel=TRAINING)
HPARAM_OPTION = typer.Option(
    [],
    "--set",
    help="a training hyperparameter of the task's model, e.g. --set "
    "kprop_steps=8 (the method's own settings are --param)",
    rich_help_panel=TRAINING,
)
DB_OPTION = typer.Option(
    Path("results/privgraph.jsonl"), help="results store (JSON lines, one trial a line)", rich_help_panel=OUTPUT
)
FORMAT_OPTION = typer.Option(
    OutputFormat.table,
    "--format",
    help="table, json (everything) or tsv (the table, tab-separated)",
    rich_help_panel=OUTPUT,
)
DEVICE_HELP = "cpu, cuda, cuda:N or mps; default $PRIVGRAPH_DEVICE, else cpu"
DEVICE_OPTION = typer.Option(None, "--device", help=DEVICE_HELP, rich_help_panel=TRAINING)


@app.command()
def run(
    method: str = typer.Argument(..., help=METHOD_HELP),
    dataset: str = DATASET_OPTION,
    input: Path | None = INPUT_OPTION,
    features: Path | None = FEATURES_OPTION,
    labels: Path | None = LABELS_OPTION,
    private_edges: Path | None = PRIVATE_EDGES_OPTION,
    private_column: str | None = PRIVATE_COLUMN_OPTION,
    domain: str | None = DOMAIN_OPTION,
    clip: bool = CLIP_OPTION,
    directed: bool = DIRECTED_OPTION,
    trust_pickle: bool = TRUST_PICKLE_OPTION,
    data_root: Path | None = DATA_ROOT_OPTION,
    split: str = SPLIT_OPTION,
    private_ratio: float | None = PRIVATE_RATIO_OPTION,
    epsilon: list[str] = EPSILON_OPTION,
    epsilon_y: float | None = EPSILON_Y_OPTION,
    secure: bool = SECURE_OPTION,
    param: list[str] = PARAM_OPTION,
    task: str | None = typer.Option(
        None,
        help="nc, lp or attribute (default: the method's own; heterogeneous methods: nc)",
        rich_help_panel=TRAINING,
    ),
    model: str | None = MODEL_OPTION,
    trials: int = TRIALS_OPTION,
    seed: int = SEED_OPTION,
    tune: bool = typer.Option(
        False, help="choose release parameters and hyperparameters on validation", rich_help_panel=TRAINING
    ),
    tune_budget: int = typer.Option(20, help="configurations tried by --tune", rich_help_panel=TRAINING),
    hparam: list[str] = HPARAM_OPTION,
    case: str | None = typer.Option(
        None,
        help="embeddings: the threat model evaluated — a: the adversary "
        "knows A (GCN attack), b: it does not (MLP attack)",
        rich_help_panel=TRAINING,
    ),
    balance: bool = typer.Option(
        False, "--balance", help="embeddings: balance the attack's classes by resampling", rich_help_panel=TRAINING
    ),
    device: str | None = DEVICE_OPTION,
    db: Path = DB_OPTION,
    format: OutputFormat = FORMAT_OPTION,
) -> None:
    """Run a method over one or more ε and several seeded trials: release, train the task's model,
    evaluate; store and print the results with the privacy report."""
    epsilons = _epsilons(epsilon)
    _prepare(method, param, hparam, task, epsilons, epsilon_y, None if input else dataset, device)
    data, _ = _read_input(
        input, method, features, labels, private_edges, private_column, domain, clip, directed, trust_pickle, device
    )
    spec = _spec(
        method,
        param,
        hparam,
        dataset=input.stem if input else dataset,
        input=data,
        epsilons=epsilons,
        task=task,
        model=model,
        trials=trials,
        seed=seed,
        epsilon_y=epsilon_y,
        tune=tune,
        tune_budget=tune_budget,
        split=split,
        secure=secure,
        private_ratio=private_ratio,
        case=case,
        balance=balance,
        data_root=str(data_root) if data_root else None,
        device=device,
    )
    _run_and_print(spec, db, format)


def _run_and_print(spec: Any, db: Path, format: OutputFormat) -> None:
    """Run ``spec`` through the pipeline with progress, store its trials, print the table or JSON."""
    store = _store(db)
    from privgraph.experiments import Experiment

    start = time.perf_counter()
    with console_progress() as progress:  # prints nothing until the run reports
        try:
            experiment = Experiment(spec, store, progress)  # the checks that need the loaded input
        except ValueError as err:
            _fail(str(err))
        try:
            result = experiment.run()
        except ValueError as err:  # a bad value met only once the run reads it: the user's input
            _fail(str(err))
        except RuntimeError as err:
            _fail(str(err), 1)
    if format == OutputFormat.json:
        print(json.dumps(result.to_json(), indent=2))
        return
    if format == OutputFormat.tsv:
        print_tsv(result_table(result)[0])
        return
    print_result(result)
    out_console.print(
        f"[dim]{len(result.records)} trials stored in {db} (run {result.run_id}), "
        f"{time.perf_counter() - start:.1f}s[/dim]"
    )


ATTACK_HELP = "an attack: `privgraph attacks` lists them, with their threat models and parameters"


@app.command()
def attack(
    name: str = typer.Argument(..., metavar="ATTACK", help=ATTACK_HELP),
    method: str = typer.Option(..., "--method", help=METHOD_HELP, rich_help_panel=METHOD),
    attack_param: list[str] = typer.Option(
        [],
        "--attack-param",
        help="a parameter of the attack, e.g. --attack-param nodes=300; `privgraph attacks` lists them",
        rich_help_panel=METHOD,
    ),
    dataset: str = DATASET_OPTION,
    input: Path | None = INPUT_OPTION,
    features: Path | None = FEATURES_OPTION,
    labels: Path | None = LABELS_OPTION,
    private_edges: Path | None = PRIVATE_EDGES_OPTION,
    private_column: str | None = PRIVATE_COLUMN_OPTION,
    domain: str | None = DOMAIN_OPTION,
    clip: bool = CLIP_OPTION,
    directed: bool = DIRECTED_OPTION,
    trust_pickle: bool = TRUST_PICKLE_OPTION,
    data_root: Path | None = DATA_ROOT_OPTION,
    split: str = SPLIT_OPTION,
    private_ratio: float | None = PRIVATE_RATIO_OPTION,
    epsilon: list[str] = EPSILON_OPTION,
    epsilon_y: float | None = EPSILON_Y_OPTION,
    secure: bool = SECURE_OPTION,
    param: list[str] = PARAM_OPTION,
    task: str | None = typer.Option(
        None,
        help="the task whose model is attacked (default: the method's own; heterogeneous methods: nc, "
        "their node classifier; lp: their link model)",
        rich_help_panel=TRAINING,
    ),
    model: str | None = MODEL_OPTION,
    trials: int = TRIALS_OPTION,
    seed: int = SEED_OPTION,
    hparam: list[str] = HPARAM_OPTION,
    device: str | None = DEVICE_OPTION,
    db: Path = DB_OPTION,
    format: OutputFormat = FORMAT_OPTION,
) -> None:
    """Attack a method: per ε and seeded trial, release, train the target exactly as `run` does, run the
    attack against it; store and print the attack's success beside the target's utility."""
    from privgraph.catalogue import attack_entry, hints

    try:
        entry = attack_entry(name)
    except ValueError as err:
        _fail(str(err))
    values = _assign(attack_param, hints(entry["params"]), "--attack-param", f"attack {name!r}", "parameter")
    epsilons = _epsilons(epsilon)
    _prepare(method, param, hparam, task, epsilons, epsilon_y, None if input else dataset, device)
    data, _ = _read_input(
        input, method, features, labels, private_edges, private_column, domain, clip, directed, trust_pickle, device
    )
    spec = _spec(
        method,
        param,
        hparam,
        dataset=input.stem if input else dataset,
        input=data,
        epsilons=epsilons,
        task=task,
        model=model,
        trials=trials,
        seed=seed,
        epsilon_y=epsilon_y,
        split=split,
        secure=secure,
        private_ratio=private_ratio,
        data_root=str(data_root) if data_root else None,
        attack=name,
        attack_params=values,
        device=device,
    )
    _run_and_print(spec, db, format)


@app.command("attacks")
def list_attacks_command() -> None:
    """The attacks: what each queries and knows, its metrics and its parameters."""
    from privgraph.catalogue import load_catalogue

    for entry in load_catalogue()["attacks"].values():
        info = entry["info"]
        out_console.print(f"[bold]{info['name']}[/bold] ({info['family']}): {escape(info['description'])}")
        out_console.print(f"  queries: {escape(info['threat_model']['queries'])}")
        out_console.print(f"  knows: {escape(info['threat_model']['knowledge'])}")
        for p in info["parameters"]:
            out_console.print(f"  --attack-param {p['name']}={p['default']}: {escape(p['help'])}")


def _store(db: Path):
    """The results store at ``db``; an unwritable path exits 2 before any work."""
    from privgraph.experiments import ResultsStore

    try:
        store = ResultsStore(db)
        store.check_writable()
        return store
    except (OSError, ValueError) as err:
        _fail(f"cannot write the results database {db}: {err}")


class ReleaseFormat(str, Enum):
    """How ``release`` writes the data (privgraph.release_formats): each opens without privgraph."""

    pt = "pt"
    npz = "npz"
    csv = "csv"


@app.command()
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
    dataset: str = DATASET_OPTION,
    input: Path | None = INPUT_OPTION,
    features: Path | None = FEATURES_OPTION,
    labels: Path | None = LABELS_OPTION,
    private_edges: Path | None = PRIVATE_EDGES_OPTION,
    private_column: str | None = PRIVATE_COLUMN_OPTION,
    domain: str | None = DOMAIN_OPTION,
    clip: bool = CLIP_OPTION,
    directed: bool = DIRECTED_OPTION,
    trust_pickle: bool = TRUST_PICKLE_OPTION,
    data_root: Path | None = DATA_ROOT_OPTION,
    private_ratio: float | None = typer.Option(
        None, "--private-ratio", help="fraction ρ of edges marked private", rich_help_panel=DATA
    ),
    epsilon: str | None = typer.Option(
        None,
        help="privacy budget ε (the method's own meaning; default 1 for a private method)",
        rich_help_panel=PRIVACY,
    ),
    epsilon_y: float | None = typer.Option(
        None, "--epsilon-y", help="also protect the labels (label LDP)", rich_help_panel=PRIVACY
    ),
    param: list[str] = typer.Option([], "--param", help=PARAM_HELP, rich_help_panel=METHOD),
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
) -> None:
    """Privatize a graph (or train and release an embedding or link model) once and write it
    with its privacy report (OUTPUT + OUTPUT.json).  The noise comes from the OS cryptographic
    source unless --reproducible; diagnostics are left out unless --diagnostics."""
    if secure and reproducible:
        _fail("--secure and --reproducible exclude each other (--secure is the default)")
    epsilons = _epsilons([epsilon]) if epsilon is not None else []
    _prepare(method, param, [], None, epsilons, epsilon_y, None if input else dataset, device)
    if not output.parent.is_dir():
        if not mkdir:
            _fail(f"cannot write {output}: the folder {output.parent} does not exist (--mkdir creates it)")
        if not _writable(output.parent):
            _fail(f"cannot write {output}: its folder cannot be created")
    data, notes = _read_input(
        input, method, features, labels, private_edges, private_column, domain, clip, directed, trust_pickle, device
    )
    spec = _spec(
        method,
        param,
        [],
        dataset=input.stem if input else dataset,
        input=data,
        epsilons=epsilons,
        trials=1,
        seed=seed,
        epsilon_y=epsilon_y,
        secure=not reproducible and _adds_noise(method, epsilon),
        private_ratio=private_ratio,
        data_root=str(data_root) if data_root else None,
        device=device,
    )
    from privgraph.experiments.release import check_release, release_file

    try:
        check_release(spec, allow_non_private)
    except ValueError as err:
        _fail(str(err))

    book = None if ledger is None else _open_ledger(ledger, dataset=input.name if input else dataset)
    try:
        with console_progress() as progress:
            path, report_path, rel = release_file(
                spec,
                output,
                progress,
                diagnostics,
                allow_non_private,
                notes,
                release_format.value,
                book and book.for_file(output),
            )
    except ValueError as err:  # what the input or the options do not allow: a user error
        _fail(str(err))
    except RuntimeError as err:
        _fail(str(err), 1)
    print_report(rel.report)
    raw = [name for name, status in rel.fields.items() if not status.startswith(("privatized", "withheld"))]
    if raw:
        out_console.print(f"fields written as given (not protected): {escape(', '.join(raw))}")
    out_console.print(f"wrote {', '.join(str(f) for f in rel.files(output, release_format.value))}")


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

    try:
        return Ledger(path, budget, dataset=dataset, advanced_delta=advanced_delta, content_hash=content_hash)
    except (OSError, ValueError) as err:  # json.JSONDecodeError is a ValueError
        _fail(f"cannot use the ledger {path}: {err}")


@app.command("ledger")
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
        help="δ′ of advanced composition for a unit's pure ε-DP releases (set once; default: basic composition)",
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
    total by the composition rule that applies (exact or RDP for Gaussian releases, advanced composition at
    δ′ for pure ones, basic otherwise) against its budget and what remains; --budget, --dataset and
    --advanced-delta set them."""
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
        try:
            book.set_budget({u: v[0] if len(v) == 1 else v for u, v in parsed.items()})
        except ValueError as err:
            _fail(f"--budget: {err}")
    elif (
        (dataset is not None and book.dataset is None)
        or (advanced_delta is not None and book.advanced_delta is None)
        or (content_hash and book.fingerprint is None)
    ):
        book.set_budget(book.budget)  # records the dataset, δ′ and the content-hash choice
    try:
        state = book.to_dict()
    except ValueError as err:
        _fail(f"cannot use the ledger {path}: {err}")
    if format == OutputFormat.json:
        print(json.dumps(state, indent=2))
        return
    if format == OutputFormat.tsv:
        _fail("privgraph ledger prints its tables or --format json")
    print_ledger(state)


def print_ledger(state: dict, console: Console = out_console) -> None:
    """A ledger as tables: each release, then each unit's total against its budget."""
    console.print(f"[bold]Ledger[/bold] {escape(state['path'])} — dataset {escape(str(state['dataset']))}")
    fp = state.get("fingerprint")
    if fp:
        hashed = ", content hash recorded" if "content_sha256" in fp else ""
        console.print(escape(f"bound to a graph of {fp['num_nodes']} nodes (public fingerprint{hashed})"))
    budget = [
        f"{unit}: ε = {b['epsilon']:g}" + (f", δ = {b['delta']:g}" if b["delta"] < 1 else "")
        for unit, b in state["budget"].items()
    ]
    console.print("budget: " + escape("; ".join(budget) if budget else "none (releases are recorded, not limited)"))
    releases = Table("#", "time (UTC)", "method", "status", "unit", "ε", "δ", "file")
    for i, entry in enumerate(state["entries"], 1):
        spends = entry["spent"] if entry["status"] == "done" and entry["spent"] is not None else entry["planned"]
        status = entry["status"] + ("" if entry["status"] == "done" else " (counted as planned)")
        for j, s in enumerate(spends or [{"unit": "—", "epsilon": 0, "delta": 0}]):
            first = j == 0
            releases.add_row(
                str(i) if first else "",
                entry["started"][:19] if first else "",
                escape(entry["method"]) if first else "",
                status if first else "",
                escape(s["unit"]),
                _fmt_eps(_ledger_float(s["epsilon"])),
                f"{s['delta']:g}",
                escape(entry["file"] or "") if first else "",
            )
    console.print(releases)
    totals = Table("unit", "releases", "ε spent", "δ spent", "ε budget", "δ budget", "ε left", "δ left", "rule")
    for t in state["totals"]:
        b, left = t["budget"], t["remaining"]
        totals.add_row(
            escape(t["unit"]),
            str(t["releases"]),
            _fmt_eps(_ledger_float(t["epsilon"])),
            f"{t['delta']:g}",
            "—" if b is None else f"{b['epsilon']:g}",
            "—" if b is None or b["delta"] >= 1 else f"{b['delta']:g}",
            "—" if left is None else f"{left['epsilon']:g}",
            "—" if left is None or b["delta"] >= 1 else f"{left['delta']:g}",
            escape(t.get("composition", "")),
        )
    console.print(totals)
    adv = state.get("advanced_delta")
    console.print(
        "[dim]rule: how each unit's total was composed (exact μ-GDP or RDP over the Gaussian releases, "
        + (f"advanced composition at δ′ = {adv:g}" if adv else "basic composition")
        + " over the pure ones, basic over the rest; the groups add up); a unit without a budget is recorded, "
        "not limited[/dim]"
    )


def _ledger_float(x: float | str) -> float:
    return math.inf if x == "inf" else float(x)


def _adds_noise(method: str, epsilon: str | None) -> bool:
    """Whether the release draws noise: ε given, or a private method whose ε has a default."""
    info = _method(method)["info"]
    return (epsilon is not None and epsilon.lower() != "none") or (info["private"] and not info["epsilon_optional"])


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return True
    except OSError:
        return False


@app.command()
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
    try:
        paths = plot_db(db, output, dataset, metric)
    except ValueError as err:
        _fail(str(err), 1)
    for path in paths:
        out_console.print(f"wrote {path}")


@app.command()
def sweep(
    grid: Path = typer.Argument(..., help="a grid file (benchmarks/grids/*.toml)"),
    workers: int | None = typer.Option(
        None, help="trials at a time (default: all CPUs; 0 or 1 runs them in this process)"
    ),
    address: str | None = typer.Option(
        None, help="join this Ray cluster (`ray start --head` prints it); the trials run on its machines"
    ),
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
    data_root: Path | None = DATA_ROOT_OPTION,
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

    try:
        chosen = Grid.load(grid, str(data_root) if data_root else None).select(table, dataset, row, trials, epsilon)
        chosen.validate()
        executor, device = placement(chosen, executor, workers, address, device, gpus_per_trial)
    except ValueError as err:
        _fail(str(err))
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

        try:
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
        except ValueError as err:  # the grid, its data or the store: nothing ran
            _fail(str(err))
        except RuntimeError as err:  # Ray did not start
            _fail(str(err), 1)
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


@app.command()
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
        None, help="the paper's numbers (default: the grid's benchmarks/published/NAME.toml)"
    ),
    figures: bool = typer.Option(True, "--figures/--no-figures", help="also draw the figures"),
) -> None:
    """Markdown tables (mean ± 95% CI, trials, the paper's numbers and the difference) and figures
    (metric against ε with CI bands) from stored trials."""
    from privgraph.experiments.report import report as write_report

    if not db.exists():
        _fail(f"no results database at {db}")
    try:
        paths = write_report(db, grid, output, published, figures)
    except ValueError as err:
        _fail(str(err), 1)
    for path in paths:
        out_console.print(f"wrote {path}")


@app.command("convert-store")
def convert_store(
    old: Path = typer.Argument(..., help="an SQLite results store written by an older privgraph (.db)"),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="the JSON-lines store to write (default: OLD with the suffix .jsonl)"
    ),
) -> None:
    """Convert an older SQLite results store to a JSON-lines store: every trial, unchanged, in order."""
    from privgraph.experiments.store import ResultsStore

    try:
        store = ResultsStore.from_sqlite(old, output)
    except (OSError, ValueError) as err:
        _fail(str(err))
    out_console.print(f"wrote {sum(1 for _ in store.records(errors=True))} trials to {store.path}")


@app.command("audit")
def audit_command(
    method: str = typer.Argument(..., help="a method (`privgraph methods`)"),
    epsilon: float | None = typer.Option(
        None, help="ε the method is released with (required by private methods)", rich_help_panel=PRIVACY
    ),
    delta: float | None = typer.Option(
        None,
        help="δ of the claim (the methods that declare a δ parameter: HeteDP, PPCVGAE, GAP, node-dpsgd, "
        "mechanism=gaussian)",
        rich_help_panel=PRIVACY,
    ),
    epsilon_y: float | None = typer.Option(
        None, "--epsilon-y", help="also audit the label unit (label LDP)", rich_help_panel=PRIVACY
    ),
    samples: int = typer.Option(
        1000, min=4, help="releases per neighbouring input (half choose the threshold, half count the errors)"
    ),
    seed: int = typer.Option(0, help="every release draws from its own stream derived from it"),
    param: list[str] = PARAM_OPTION,
    dataset: str | None = typer.Option(
        None,
        help="audit on this dataset (`privgraph datasets`) instead of the small synthetic graph",
        rich_help_panel=DATA,
    ),
    input: Path | None = INPUT_OPTION,
    features: Path | None = FEATURES_OPTION,
    labels: Path | None = LABELS_OPTION,
    private_edges: Path | None = PRIVATE_EDGES_OPTION,
    private_column: str | None = PRIVATE_COLUMN_OPTION,
    domain: str | None = DOMAIN_OPTION,
    clip: bool = CLIP_OPTION,
    directed: bool = DIRECTED_OPTION,
    trust_pickle: bool = TRUST_PICKLE_OPTION,
    data_root: Path | None = DATA_ROOT_OPTION,
    device: str | None = typer.Option(None, "--device", help=DEVICE_HELP),
    format: OutputFormat = FORMAT_OPTION,
) -> None:
    """Audit a method's claim: release two neighbouring inputs SAMPLES times each through the method's own
    code, distinguish them, and bound ε from below (95 % Clopper–Pearson).  Exits 1 on a VIOLATION
    (ε_LB above the ε asked for a unit, or a claim that differs from it)."""
    from privgraph.catalogue import hints

    device = _device(device)
    entry = _method(method)
    info = entry["info"]
    if info["private"] and epsilon is None and not info["epsilon_optional"]:
        _fail(f"{method} is private: give --epsilon")
    if not info["private"] and epsilon is not None:
        _fail(f"{method} is a non-private baseline: it takes no --epsilon (its audit shows what it leaks)")
    values = _assign(param, hints(entry["params"]), "--param", f"method {method!r}", "parameter", entry.get("renamed"))
    if dataset is not None and input is not None:
        _fail("give --dataset or --input, not both")
    data, _ = _read_input(
        input, method, features, labels, private_edges, private_column, domain, clip, directed, trust_pickle, device
    )
    _resolve_device(device)
    from privgraph.audit import audit
    from privgraph.audit.graphs import annotate

    try:
        if dataset is not None:
            from privgraph.data.datasets import load

            data = load(dataset, data_root, seed=seed)
        if data is not None:
            data = annotate(data, seed)
        with console_progress() as progress:
            report = audit(
                method,
                epsilon,
                data=data,
                delta=delta,
                samples=samples,
                seed=seed,
                label_epsilon=epsilon_y,
                progress=progress,
                device=device,
                **values,
            )
    except (ValueError, TypeError) as err:
        _fail(str(err))
    if format == OutputFormat.json:
        print(json.dumps(report.to_dict(), indent=2))
    elif format == OutputFormat.tsv:
        print_tsv(audit_table(report))
    else:
        print_audit(report)
    if report.violation:
        raise typer.Exit(1)


def print_audit(report, console: Console = out_console) -> None:
    """The audit's rows: the ε asked for the unit, the claim, ε_LB (95 %), its ceiling, tightness, verdict;
    then each row's test and notes (why a VIOLATION)."""
    console.print(audit_table(report))
    console.print(
        f"[dim]{report.input}, seed {report.seed}; ε_LB: {100 * report.confidence:g} % Clopper–Pearson "
        "lower bound; max: the most these samples can show[/dim]"
    )
    for r in report.rows:
        console.print(
            f"[dim]{escape(r.label)}: {escape(r.test)}; 2 × {r.samples} releases in {r.seconds:.1f}s, "
            f"FPR {r.fpr:.3f} and FNR {r.fnr:.3f} on the {r.evaluation} + {r.evaluation} held out[/dim]"
        )
        for note in r.notes:
            console.print(f"[dim]  note: {escape(note)}[/dim]")


def audit_table(report) -> Table:
    """:func:`print_audit`'s table: one row per unit."""
    at = f" at ε = {report.epsilon:g}" if report.epsilon is not None else ""
    table = Table(title=f"audit of {report.method}{at}")
    table.add_column("unit")
    for col in ("asked", "claim", "ε_LB", "max", "ε_LB/ε"):
        table.add_column(col, justify="right")
    table.add_column("verdict", no_wrap=True)
    for r in report.rows:
        claim = (
            "none"
            if math.isinf(r.epsilon)
            else (f"{r.epsilon:.4g}" if r.delta == 0 else f"({r.epsilon:.4g}, {r.delta:g})")
        )
        style = {"VIOLATION": "bold red", "consistent": "green"}.get(r.verdict, "yellow")
        asked = "—" if r.requested is None else f"{r.requested:.4g}"
        table.add_row(
            escape(r.label),
            asked,
            claim,
            f"{r.epsilon_lb:.3f}",
            f"{r.ceiling:.2f}",
            "—" if r.ratio is None else f"{r.ratio:.2f}",
            f"[{style}]{r.verdict}[/{style}]",
        )
    return table


@app.command()
def demo(
    out: Path = typer.Option(Path("demo-out"), help="folder for the results database and the plot"),
    trials: int = typer.Option(3, min=1),
    seed: int = typer.Option(0),
    device: str | None = typer.Option(None, "--device", help=DEVICE_HELP),
) -> None:
    """LPGNN vs the non-private GCN and an MLP on a synthetic SBM graph (no download)."""
    device = _device(device)
    import torch

    _resolve_device(device)

    # The demo graph is small: one thread is as fast as two, and immune to the
    # OpenMP oversubscription that slows torch ~10× when the cores are busy.
    torch.set_num_threads(1)
    from privgraph.experiments import ExperimentSpec, ResultsStore, run_experiment, summarize
    from privgraph.experiments.demo import DEMO_EPSILONS, DEMO_GRAPH, demo_table
    from privgraph.experiments.plot import plot_rows

    out.mkdir(parents=True, exist_ok=True)
    db = out / "demo.jsonl"
    if db.exists():
        db.unlink()
    store = ResultsStore(db)
    results = []
    start = time.perf_counter()
    with console_progress() as progress:
        for method, eps in (("gcn-raw", []), ("mlp", []), ("lpgnn", DEMO_EPSILONS)):
            spec = ExperimentSpec(
                method=method,
                dataset="sbm",
                epsilons=eps,
                trials=trials,
                seed=seed,
                synthetic=DEMO_GRAPH,
                device=device,
            )
            results.append(run_experiment(spec, store, progress))
    out_console.print(demo_table(results))
    out_console.print("[bold]LPGNN[/bold]")
    print_reports(results[-1].reports)
    png = plot_rows(summarize(store.records()), out / "privacy_utility.png")
    out_console.print(f"wrote {png} and {db} in {time.perf_counter() - start:.1f}s")


@app.command("methods")
def list_methods_command(
    method: str | None = typer.Argument(None, help="a method: print its parameters"),
    format: OutputFormat = typer.Option(
        OutputFormat.table, "--format", help="table, json or tsv (the table, tab-separated)"
    ),
) -> None:
    """List the registered methods (unit, task), or one method's parameters and defaults."""
    from privgraph.catalogue import load_catalogue

    registry = {name: entry["info"] for name, entry in load_catalogue()["methods"].items()}
    if method is not None and method not in registry:
        _fail(f"unknown method {method!r}; choose from {', '.join(registry)}")
    if format == OutputFormat.json:
        print(json.dumps(registry[method] if method else registry, indent=2, default=str))
        return
    if method is None:
        table = Table(title="methods (privgraph methods NAME: its parameters)")
        for col in ("name", "unit", "task", "ε", "description"):
            table.add_column(col)
        for name, e in registry.items():
            eps = "optional" if e["epsilon_optional"] else ("yes" if e["private"] else "—")
            table.add_row(name, e["unit"], e["task"], eps, escape(e["description"]))
        print_tsv(table) if format == OutputFormat.tsv else out_console.print(table)
        return
    e = registry[method]
    table = Table(title=f"{method} parameters (run|release {method} --param NAME=VALUE)")
    for col in ("name", "type", "default", "help"):
        table.add_column(col)
    for p in e["parameters"]:
        table.add_row(p["name"], escape(p["type"]), escape(repr(p["default"])), escape(p["help"]))
    if format == OutputFormat.tsv:
        print_tsv(table)
        return
    out_console.print(f"[bold]{method}[/bold]: {escape(e['description'])}")
    out_console.print(
        f"unit: {e['unit']}; task: {e['task']}; takes a {e['graph']}; "
        f"protects {', '.join(e['private_fields']) or 'nothing'}; public: "
        f"{', '.join(e['public_fields']) or 'none'}"
    )
    out_console.print(table)


class DatasetsFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    tsv = "tsv"


@app.command()
def datasets(
    format: DatasetsFormat = typer.Option(
        DatasetsFormat.table,
        "--format",
        help="table, json (every field), markdown (docs/datasets.md's table) or tsv (the table, tab-separated)",
    ),
) -> None:
    """List every dataset the loaders know (the registry), its source, and whether $PRIVGRAPH_DATA holds it."""
    import os

    from privgraph.data.registry import DATA_ENV, SYNTHETIC, list_datasets, markdown_table

    entries = list_datasets()
    if format == DatasetsFormat.markdown:
        print(markdown_table(entries), end="")
        return
    if format == DatasetsFormat.json:
        print(json.dumps([{**e.describe(), "available": e.available()} for e in entries], indent=2))
        return
    root = os.environ.get(DATA_ENV)
    status = {None: "built in", True: "yes", False: "no"}
    if not root:
        (err_console if format == DatasetsFormat.tsv else out_console).print(
            f"[yellow]${DATA_ENV} is not set:[/yellow] availability unknown; on a machine with "
            "internet the PyG datasets download on first use"
        )
    table = Table(title=f"datasets (raw files under ${DATA_ENV}{f' = {root}' if root else ''})")
    for col in ("name", "kind", "tasks", "source", "here"):
        table.add_column(col)
    for e in entries:
        here = "built in" if e.layout is None else ("?" if not root else status[e.available()])
        kind = f"{SYNTHETIC} ({e.graph})" if e.synthetic else e.kind
        table.add_row(e.key, kind, ", ".join(e.tasks), escape(e.source), here)
    print_tsv(table) if format == DatasetsFormat.tsv else out_console.print(table)


def _is_option(arg: str) -> bool:
    """``--name`` or ``-o`` (but not a negative number)."""
    if not arg.startswith("-"):
        return False
    try:
        float(arg)
        return False
    except ValueError:
        return True


def expand_multi_value_options(argv: list[str]) -> list[str]:
    """Rewrite ``--epsilon 0.1 0.5 1`` as ``--epsilon 0.1 --epsilon 0.5 --epsilon 1``
    (click options take one value each); ``--epsilon 0.1,0.5`` also works."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, _, inline = arg.partition("=")
        if name in MULTI_VALUE_OPTIONS:
            values = [inline] if inline else []
            i += 1
            while not inline and i < len(argv) and not _is_option(argv[i]):
                values.append(argv[i])
                i += 1
            for v in values:
                for piece in filter(None, v.split(",")):
                    out += [name, piece]
            if not values:
                out.append(name)
            continue
        out.append(arg)
        i += 1
    return out


def main() -> None:
    app(args=expand_multi_value_options(sys.argv[1:]), prog_name="privgraph")


if __name__ == "__main__":
    main()
