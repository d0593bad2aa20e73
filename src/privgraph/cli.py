"""The ``privgraph`` command (typer + rich)."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from enum import Enum
from pathlib import Path
from types import UnionType
from typing import Any, Callable, NamedTuple, NoReturn, Optional, Union, get_args, get_origin, get_type_hints

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="privgraph: privacy-preserving learning on graphs.")
err_console = Console(stderr=True)
out_console = Console()

# options that accept several space-separated values (`--epsilon 0.1 0.5 1`)
MULTI_VALUE_OPTIONS = ("--epsilon",)


class OutputFormat(str, Enum):
    table = "table"
    json = "json"


class RichProgress:
    """Adapter from the runner's progress hook to a rich progress display."""

    def __init__(self, enabled: bool = True):
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=err_console, transient=True, disable=not enabled)
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> "RichProgress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, name: str, done: int, total: int) -> None:
        if name not in self.tasks:
            self.tasks[name] = self.progress.add_task(name, total=total)
        self.progress.update(self.tasks[name], completed=done, total=total)


def _fmt_eps(eps: Optional[float]) -> str:
    return "—" if eps is None else f"{eps:g}"


def _pct(mean: float, half: float) -> str:
    ci = "" if math.isnan(half) else f" ± {100 * half:.1f}"
    return f"{100 * mean:.1f}{ci}"


def print_reports(reports: dict, console: Console = out_console) -> None:
    """The privacy report of each ε."""
    console.print("[bold]Privacy report[/bold]")
    for eps, report in reports.items():
        console.print(f"  ε = {_fmt_eps(eps)}:")
        for line in report.lines():
            console.print(f"    {escape(line)}")


def print_summary(result, console: Console = out_console) -> None:
    from privgraph.methods import method_class

    rows = result.summary()
    title = f"{result.spec.method} on {rows[0]['dataset'] if rows else result.spec.dataset} " \
            f"({result.records[0].model if result.records else ''})"
    table = Table(title=title + " — test accuracy (%), mean ± 95% CI")
    for col in ("ε", "ε_y", "accuracy", "std", "trials", "hyperparameters"):
        table.add_column(col)
    for r in sorted(rows, key=lambda r: (r["epsilon"] is not None, r["epsilon"] or 0)):
        hp = r["hyperparameters"] or {}
        shown = {k: hp[k] for k in ("lr", "weight_decay", "dropout") if k in hp}
        if "kprop_steps" in method_class(result.spec.method).tunable:  # LPGNN's K
            shown["K"] = hp.get("kprop_steps")
        if r["epsilon_y"] is not None:
            shown["K_y"] = hp.get("label_steps")
        shown.update(r.get("release_options") or {})
        table.add_row(_fmt_eps(r["epsilon"]), _fmt_eps(r["epsilon_y"]), _pct(r["mean"], r["ci95"]),
                      f"{100 * r['std']:.1f}", str(r["trials"]),
                      ", ".join(f"{k}={v:g}" for k, v in shown.items()) + (" (tuned)" if r["tuned"] else ""))
    console.print(table)
    print_reports(result.reports, console)


METHOD_HELP = "a registered method: `privgraph methods` lists them, `privgraph methods NAME` its parameters"
PARAM_HELP = ("a parameter of the method, e.g. --param variant=hybrid, --param sensitive_features=3,17 (a tuple), "
              "--param mcmc_steps=none; `privgraph methods METHOD` lists them")


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


def _assign(items: list[str], cls: type, flag: str, owner: str, noun: str,
            only: Optional[list[str]] = None) -> dict[str, Any]:
    """``NAME=VALUE`` items parsed against the field types of the dataclass ``cls`` (restricted to
    ``only``); an unknown name or a value of the wrong type exits 2 with one line listing the names."""
    hints = get_type_hints(cls)
    known = only if only is not None else [f.name for f in dataclasses.fields(cls)]
    listing = f"its {noun}s: {', '.join(known) or 'none'}"
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            _fail(f"{flag} takes NAME=VALUE, got {item!r}")
        if name not in known:
            _fail(f"{owner} has no {noun} {name!r}; {listing}")
        try:
            out[name] = _parse(text.strip(), hints[name])
        except ValueError:
            kind = hints[name].__name__ if hints[name] in (int, float, bool, str) else hints[name]
            _fail(f"{flag} {name}={text!r}: {noun} {name} of {owner} takes {kind}; {listing}")
    return out


class _Runner(NamedTuple):
    """A runner, its spec, and where the spec takes method parameters (:func:`_method_spec`)."""

    spec: type
    bucket: str
    settings: Optional[type]
    renames: dict[str, str]
    run: Callable
    printer: Callable
    release: Optional[Callable]


def _runner(kind: str) -> _Runner:
    if kind == "graph":
        from privgraph.experiments import ExperimentSpec, run_experiment
        from privgraph.experiments.release import release_graph

        return _Runner(ExperimentSpec, "options", None, {}, run_experiment, print_summary, release_graph)
    if kind == "embedding":
        from privgraph.experiments.embedding import EmbeddingSpec, run_embedding_experiment
        from privgraph.experiments.release import release_embedding_file
        from privgraph.methods.ppcvgae.embedding import EmbeddingConfig

        return _Runner(EmbeddingSpec, "config", EmbeddingConfig, {}, run_embedding_experiment,
                       print_embedding_summary, release_embedding_file)
    from privgraph.experiments.hetero import HeteroSpec, run_hetero_experiment
    from privgraph.train.dpsgd import DPSGDConfig

    return _Runner(HeteroSpec, "dpsgd", DPSGDConfig, {"clip_bound": "clip"}, run_hetero_experiment,
                   print_hetero_summary, None)


def _method_kind(method: str):
    """The registered class of ``method`` and which runner takes it: ``"graph"``, ``"embedding"`` or ``"hetero"``."""
    from privgraph.methods import Task, method_class

    try:
        cls = method_class(method)
    except ValueError as err:
        _fail(str(err))
    return cls, "hetero" if cls.heterogeneous else "embedding" if cls.task == Task.EMBEDDING else "graph"


def _method_spec(method: str, run_fields: dict[str, Any], params: list[str]):
    """The runner's spec for ``method``: the command's own options (``run_fields``) plus ``--param``
    NAME=VALUE, parsed against the method's ``Params`` field types and validated by it.  A parameter
    named like a field of the runner's ``settings`` goes into the spec's dict ``bucket``, else into
    the spec's field of that name (``renames`` applied), else (no ``settings``) into ``bucket``:
    node classification: ``ExperimentSpec``'s mechanism/delta/variant/clip, the rest in ``options``;
    embeddings: ``EmbeddingSpec``'s case/calibration/delta, the autoencoder's settings in ``config``;
    HeteDP: the DP-SGD settings in ``dpsgd``, ``clip_bound`` as ``clip``.  Bad input exits 2."""
    cls, kind = _method_kind(method)
    runner = _runner(kind)
    values = _assign(params, cls.Params, "--param", f"method {method!r}", "parameter")
    try:
        cls.Params.build(method, values)
    except (ValueError, TypeError) as err:
        _fail(str(err))
    settings = {f.name for f in dataclasses.fields(runner.settings)} if runner.settings else set()
    own = {f.name for f in dataclasses.fields(runner.spec)}
    mapped: dict[str, Any] = {}
    for name, value in values.items():
        target = runner.renames.get(name, name)
        if name in settings or (target not in own and not settings):
            mapped.setdefault(runner.bucket, {})[name] = value
        elif target in own:
            mapped[target] = value
        else:
            _fail(f"`privgraph` sets {method}'s parameter {name} itself (from the dataset): it takes no --param {name}")
    both = sorted(set(run_fields) & set(mapped))
    if both:
        _fail(f"{', '.join(both)} given twice (by --param and by an option): give it once")
    try:
        spec = runner.spec(**run_fields, **mapped)
        spec.validate()
    except (ValueError, TypeError) as err:
        _fail(str(err))
    return spec, runner


def _refuse_unused(method: str, kind: str, flags: dict[str, tuple[bool, str]]) -> None:
    """Exit 2 naming the given flags (``flag: (given, kinds that take it)``) that ``kind``'s runner ignores."""
    unused = [flag for flag, (given, kinds) in flags.items() if given and kind not in kinds.split()]
    if unused:
        _fail(f"{method} does not take {', '.join(unused)} (its parameters: `privgraph methods {method}`; "
              "--param NAME=VALUE sets one)")


class HeteroTask(str, Enum):
    nc = "nc"
    lp = "lp"


def print_hetero_summary(result, console: Console = out_console) -> None:
    rows = result.summary()
    spec = result.spec
    table = Table(title=f"{spec.method} {spec.task.upper()} on {rows[0]['dataset'] if rows else spec.dataset} — %, "
                        "mean ± 95% CI")
    for col in ("ε", "metric", "value", "trials", "release options"):
        table.add_column(col)
    for r in rows:
        table.add_row(_fmt_eps(r["epsilon"]), r["metric"], _pct(r["mean"], r["ci95"]), str(r["trials"]),
                      ", ".join(f"{k}={v:g}" for k, v in (r["release_options"] or {}).items()
                                if isinstance(v, (int, float))))
    console.print(table)
    print_reports(result.reports, console)


def print_embedding_summary(result, console: Console = out_console) -> None:
    from privgraph.experiments.embedding import METRICS

    rows = result.summary()
    spec = result.spec
    title = (f"{spec.method} case ({spec.case}) on {rows[0]['dataset'] if rows else spec.dataset} "
             f"({rows[0]['model'] if rows else ''}) — %, mean ± 95% CI")
    table = Table(title=title)
    for col in ("ε", *METRICS, "trials"):
        table.add_column(col)
    by_eps: dict = {}
    for r in rows:
        by_eps.setdefault(r["epsilon"], {})[r["metric"]] = r
    for eps, metrics in by_eps.items():
        table.add_row(_fmt_eps(eps), *(_pct(metrics[m]["mean"], metrics[m]["ci95"]) for m in METRICS),
                      str(metrics[METRICS[0]]["trials"]))
    console.print(table)
    print_reports(result.reports, console)


@app.command()
def run(
    method: str = typer.Argument(..., help=METHOD_HELP),
    dataset: str = typer.Option("sbm", help="cora, citeseer, pubmed, facebook, github, lastfm, or sbm (synthetic)"),
    epsilon: list[float] = typer.Option([], help="privacy budget(s) ε (features for lpgnn, adjacency lists for "
                                                 "the link methods, the candidates for ppcvgae --dp), e.g. "
                                                 "--epsilon 1 2 4 8 (default 1; ppcvgae: 0.01)"),
    param: list[str] = typer.Option([], "--param", help=PARAM_HELP),
    model: Optional[str] = typer.Option(None, help="gcn, sage, gat or mlp (default: the method's own)"),
    trials: int = typer.Option(10, min=1),
    seed: int = typer.Option(0),
    epsilon_y: Optional[float] = typer.Option(None, "--epsilon-y", help="label privacy budget (off by default)"),
    tune: bool = typer.Option(False, help="choose hyperparameters on validation per dataset and ε"),
    tune_budget: int = typer.Option(20, help="configurations tried by --tune"),
    split: str = typer.Option("random", help="random (seeded stratified 50/25/25) or public (Planetoid)"),
    hparam: list[str] = typer.Option(
        [], "--set", help="a training hyperparameter, e.g. --set kprop_steps=8 (hetero: --set epochs=20; the "
                          "methods' own settings are --param)"),
    secure: bool = typer.Option(False, help="draw noise from the OS cryptographic source (not reproducible)"),
    data_root: Optional[Path] = typer.Option(None, help="raw-data folder (default: $PRIVGRAPH_DATA)"),
    private_ratio: Optional[float] = typer.Option(
        None, "--private-ratio", help="mark this fraction ρ of the edges private at random (edge-level methods)"),
    case: Optional[str] = typer.Option(
        None, help="ppcvgae/vgae/dpgcn: the threat model evaluated — a: the adversary knows A (GCN attack), b: it "
                   "does not (MLP attack); default a (for ppcvgae the same as --param case=b)"),
    dp: bool = typer.Option(False, "--dp", help="ppcvgae: add Gaussian noise for (ε, δ)-DP w.r.t. the candidates"),
    balance: bool = typer.Option(False, "--balance", help="ppcvgae/vgae/dpgcn: balance the attack's classes by "
                                                          "resampling (the paper's Credit treatment)"),
    task: Optional[HeteroTask] = typer.Option(
        None, help="hetedp/rgcn/hgt/metapath2vec: nc (node classification, default) or lp (link prediction)"),
    db: Path = typer.Option(Path("results/privgraph.db"), help="SQLite results database"),
    format: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Run a method over one or more ε, several seeded trials; store and print results."""
    from privgraph.methods import Hyperparameters

    _, kind = _method_kind(method)
    _refuse_unused(method, kind, {
        "--model": (model is not None, "graph"), "--epsilon-y": (epsilon_y is not None, "graph"),
        "--tune": (tune, "graph"), "--split": (split != "random", "graph"),
        "--private-ratio": (private_ratio is not None, "graph"), "--set": (bool(hparam), "graph hetero"),
        "--case": (case is not None, "embedding"), "--dp": (dp, "embedding"), "--balance": (balance, "embedding"),
        "--task": (task is not None, "hetero")})
    fields: dict[str, Any] = dict(method=method, dataset=dataset, trials=trials, seed=seed, secure=secure,
                                  data_root=str(data_root) if data_root else None)
    own = {f.name for f in dataclasses.fields(_runner(kind).spec)}  # hetero: the spec's epochs and hidden
    training = _assign(hparam, Hyperparameters, "--set", f"{method}'s training", "hyperparameter",
                       [f.name for f in dataclasses.fields(Hyperparameters) if kind == "graph" or f.name in own])
    if kind == "graph":
        fields.update(epsilons=list(epsilon) or [1.0], model=model, epsilon_y=epsilon_y, tune=tune,
                      tune_budget=tune_budget, split=split, private_ratio=private_ratio, hyperparameters=training)
    elif kind == "embedding":
        fields.update(epsilons=list(epsilon) or [0.01], dp=dp, balance=balance, **({"case": case} if case else {}))
    else:
        fields.update(epsilons=list(epsilon), task=(task or HeteroTask.nc).value, **training)
    spec, runner = _method_spec(method, fields, param)
    _run_and_report(runner.run, spec, db, format, runner.printer)


def _run_and_report(run_fn, spec, db: Path, format: OutputFormat, printer) -> None:
    """Run ``spec`` with a progress display, store the trials, print JSON or ``printer``'s table."""
    from privgraph.experiments import ResultsStore

    start = time.perf_counter()
    try:
        with RichProgress(enabled=sys.stderr.isatty()) as progress:
            result = run_fn(spec, ResultsStore(db), progress)
    except (ValueError, RuntimeError) as err:
        _fail(str(err), 1)
    if format == OutputFormat.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        printer(result)
        out_console.print(f"[dim]{len(result.records)} trials stored in {db} (run {result.run_id}), "
                          f"{time.perf_counter() - start:.1f}s[/dim]")


@app.command()
def release(
    method: str = typer.Argument(..., help=METHOD_HELP),
    output: Path = typer.Option(..., "-o", "--output", help="file for the privatized graph (torch.save)"),
    dataset: str = typer.Option("sbm", help="cora, citeseer, facebook, github, ... or sbm (synthetic)"),
    epsilon: Optional[float] = typer.Option(None, help="privacy budget ε (the method's own meaning; default 1, "
                                                      "ppcvgae --dp: 0.01)"),
    param: list[str] = typer.Option([], "--param", help=PARAM_HELP),
    seed: int = typer.Option(0, help="seed of the split and the annotations (and of the noise only with "
                                     "--reproducible)"),
    secure: bool = typer.Option(False, "--secure", help="noise from the OS cryptographic source (the default; "
                                                        "nothing recorded can regenerate it)"),
    reproducible: bool = typer.Option(
        False, "--reproducible", help="draw the noise from --seed and record it: anyone with the seed can remove "
                                      "the noise, so the file is for research only"),
    data_root: Optional[Path] = typer.Option(None, help="raw-data folder (default: $PRIVGRAPH_DATA)"),
    private_ratio: Optional[float] = typer.Option(None, "--private-ratio", help="fraction ρ of edges marked private"),
    dp: bool = typer.Option(False, "--dp", help="ppcvgae: add Gaussian noise for (ε, δ)-DP w.r.t. the candidates"),
    diagnostics: bool = typer.Option(
        False, "--diagnostics", help="also write the release details (exact counts, clipping rates, MCMC traces): "
                                     "data-dependent, not covered by the guarantee — for the curator's own copy"),
) -> None:
    """Privatize a graph (or train and release an embedding) once and write it with its
    privacy report (OUTPUT + OUTPUT.json).  The noise comes from the OS cryptographic
    source unless --reproducible; diagnostics are left out unless --diagnostics."""
    if secure and reproducible:
        _fail("--secure and --reproducible exclude each other (--secure is the default)")
    _, kind = _method_kind(method)
    if kind == "hetero":
        _fail(f"{method} has no release command yet: release a HeteroData from Python with privgraph.privatize "
              f"(see `privgraph methods {method}`), or use `privgraph run`")
    _refuse_unused(method, kind, {"--private-ratio": (private_ratio is not None, "graph"), "--dp": (dp, "embedding")})
    fields: dict[str, Any] = dict(method=method, dataset=dataset, trials=1, seed=seed,
                                  data_root=str(data_root) if data_root else None)
    if kind == "embedding":
        fields.update(epsilons=[0.01 if epsilon is None else epsilon], dp=dp, secure=dp and not reproducible)
    else:
        fields.update(epsilons=[1.0 if epsilon is None else epsilon], secure=not reproducible,
                      private_ratio=private_ratio)
    spec, runner = _method_spec(method, fields, param)
    _release_and_report(runner.release, spec, output, diagnostics)


def _release_and_report(release_fn, spec, output: Path, diagnostics: bool = False) -> None:
    """Write the release and its report; print the report's lines."""
    try:
        with RichProgress(enabled=sys.stderr.isatty()) as progress:
            path, report_path, report = release_fn(spec, output, progress, diagnostics)
    except (ValueError, RuntimeError) as err:
        _fail(str(err), 1)
    for line in json.loads(report_path.read_text())["report"]:
        out_console.print(escape(line))
    out_console.print(f"wrote {path} and {report_path}")


@app.command()
def plot(
    db: Path = typer.Option(Path("results/privgraph.db"), help="SQLite results database"),
    output: Path = typer.Option(Path("privacy_utility.png"), "-o", "--output", help="PNG file to write"),
    dataset: Optional[str] = typer.Option(None, help="only this dataset"),
) -> None:
    """Draw privacy–utility curves from stored results."""
    from privgraph.experiments.plot import plot_db

    if not db.exists():
        _fail(f"no results database at {db}")
    try:
        path = plot_db(db, output, dataset)
    except ValueError as err:
        _fail(str(err), 1)
    out_console.print(f"wrote {path}")


@app.command()
def demo(
    out: Path = typer.Option(Path("demo-out"), help="folder for the results database and the plot"),
    trials: int = typer.Option(3, min=1),
    seed: int = typer.Option(0),
) -> None:
    """LPGNN vs the non-private GCN and an MLP on a synthetic SBM graph (no download)."""
    import torch

    # The demo graph is small: one thread is as fast as two, and immune to the
    # OpenMP oversubscription that slows torch ~10× when the cores are busy.
    torch.set_num_threads(1)
    from privgraph.experiments import ExperimentSpec, ResultsStore, run_experiment, summarize
    from privgraph.experiments.demo import DEMO_EPSILONS, DEMO_GRAPH, demo_table
    from privgraph.experiments.plot import plot_rows

    out.mkdir(parents=True, exist_ok=True)
    db = out / "demo.db"
    if db.exists():
        db.unlink()
    store = ResultsStore(db)
    results = []
    start = time.perf_counter()
    with RichProgress(enabled=sys.stderr.isatty()) as progress:
        for method, eps in (("gcn-raw", [1.0]), ("mlp", [1.0]), ("lpgnn", DEMO_EPSILONS)):
            spec = ExperimentSpec(method=method, dataset="sbm", epsilons=eps, trials=trials, seed=seed,
                                  synthetic=DEMO_GRAPH)
            results.append(run_experiment(spec, store, progress))
    out_console.print(demo_table(results))
    out_console.print("[bold]Privacy report (LPGNN)[/bold]")
    for eps, report in results[-1].reports.items():
        out_console.print(f"  ε = {eps:g}: " + escape("; ".join(report.lines())))
    png = plot_rows(summarize(store.records()), out / "privacy_utility.png")
    out_console.print(f"wrote {png} and {db} in {time.perf_counter() - start:.1f}s")


@app.command("methods")
def list_methods_command(
    method: Optional[str] = typer.Argument(None, help="a method: print its parameters"),
    format: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """List the registered methods (unit, task), or one method's parameters and defaults."""
    from privgraph.api import list_methods

    registry = list_methods()
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
            table.add_row(name, e["unit"], e["task"], eps, e["description"])
        out_console.print(table)
        return
    e = registry[method]
    out_console.print(f"[bold]{method}[/bold]: {escape(e['description'])}")
    out_console.print(f"unit: {e['unit']}; task: {e['task']}; takes a {e['graph']}; "
                      f"protects {', '.join(e['private_fields']) or 'nothing'}; public: "
                      f"{', '.join(e['public_fields']) or 'none'}")
    table = Table(title=f"{method} parameters (run|release {method} --param NAME=VALUE)")
    for col in ("name", "type", "default", "help"):
        table.add_column(col)
    for p in e["parameters"]:
        table.add_row(p["name"], escape(p["type"]), escape(repr(p["default"])), escape(p["help"]))
    out_console.print(table)


@app.command()
def datasets() -> None:
    """List the datasets and whether $PRIVGRAPH_DATA holds their raw files."""
    from privgraph.data import DATASETS, available_locally

    table = Table(title="datasets")
    table.add_column("name")
    table.add_column("PyG class / folder")
    table.add_column("raw files in $PRIVGRAPH_DATA")
    for key, spec in DATASETS.items():
        table.add_row(key, spec.name, "yes" if available_locally(key) else "no")
    table.add_row("sbm", "synthetic stochastic block model", "built in")
    out_console.print(table)


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
