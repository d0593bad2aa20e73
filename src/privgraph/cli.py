"""The ``privgraph`` command (typer + rich)."""

from __future__ import annotations

import json
import math
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Any, Optional

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


class Mechanism(str, Enum):
    multibit = "multibit"
    onebit = "onebit"
    laplace = "laplace"
    gaussian = "gaussian"
    duchi = "duchi"
    piecewise = "piecewise"
    hybrid = "hybrid"
    three_output = "three-output"
    pm_sub = "pm-sub"


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
    rows = result.summary()
    title = f"{result.spec.method} on {rows[0]['dataset'] if rows else result.spec.dataset} " \
            f"({result.records[0].model if result.records else ''})"
    table = Table(title=title + " — test accuracy (%), mean ± 95% CI")
    for col in ("ε", "ε_y", "accuracy", "std", "trials", "hyperparameters"):
        table.add_column(col)
    for r in sorted(rows, key=lambda r: (r["epsilon"] is not None, r["epsilon"] or 0)):
        hp = r["hyperparameters"] or {}
        shown = {k: hp[k] for k in ("lr", "weight_decay", "dropout") if k in hp}
        if result.spec.method == "lpgnn":
            shown["K"] = hp.get("kprop_steps")
        if r["epsilon_y"] is not None:
            shown["K_y"] = hp.get("label_steps")
        shown.update(r.get("release_options") or {})
        table.add_row(_fmt_eps(r["epsilon"]), _fmt_eps(r["epsilon_y"]), _pct(r["mean"], r["ci95"]),
                      f"{100 * r['std']:.1f}", str(r["trials"]),
                      ", ".join(f"{k}={v:g}" for k, v in shown.items()) + (" (tuned)" if r["tuned"] else ""))
    console.print(table)
    print_reports(result.reports, console)


def _parse_hparams(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        num = float(value)
        key = key.strip().replace("-", "_")
        out[key] = int(num) if num.is_integer() and key.split(".")[-1] in (
            "hidden", "epochs", "patience", "kprop_steps", "label_steps", "latent", "batch_size", "negatives") else num
    return out


def _nested(params: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``{prefix.name: v}`` entries moved into ``params[prefix] = {name: v}`` (``--set dpsgd.epochs=5``)."""
    inner = {k.split(".", 1)[1]: params.pop(k) for k in [k for k in params if k.startswith(prefix + ".")]}
    return {**params, **({prefix: inner} if inner else {})}


def _release_options(epsilon_f, epsilon_e, gamma, bins, public_fraction, sensitive, mcmc_steps,
                     mcmc_share, debias=None) -> dict[str, Any]:
    options = {"epsilon_f": epsilon_f, "epsilon_e": epsilon_e, "gamma": gamma, "bins": bins, "debias": debias,
               "public_fraction": public_fraction, "mcmc_steps": mcmc_steps, "mcmc_share": mcmc_share,
               "sensitive_features": [int(i) for i in sensitive.split(",")] if sensitive else None}
    return {k: v for k, v in options.items() if v is not None}


def _checked_spec(**fields: Any):
    """An :class:`ExperimentSpec`, validated; bad input exits with status 2 and the reason."""
    from privgraph.experiments import ExperimentSpec

    try:
        spec = ExperimentSpec(**fields)
        spec.validate()
    except ValueError as err:
        err_console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2) from None
    return spec


METHOD_HELP = "a registered method: `privgraph methods` lists them, `privgraph methods NAME` its parameters"


def _method_kind(method: str) -> str:
    """``"graph"``, ``"embedding"`` or ``"hetero"``: which runner takes ``method`` (from the registry)."""
    from privgraph.methods import Task, method_class

    try:
        cls = method_class(method)
    except ValueError as err:
        err_console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2) from None
    return "hetero" if cls.heterogeneous else "embedding" if cls.task == Task.EMBEDDING else "graph"


class Task(str, Enum):
    nc = "nc"
    lp = "lp"


class Topology(str, Enum):
    edge = "edge"
    node = "node"
    message_passing = "message-passing"


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


class Calibration(str, Enum):
    analytic = "analytic"
    classical = "classical"


class Case(str, Enum):
    a = "a"
    b = "b"


def _embedding_spec(method: str, dataset: str, epsilon: list[float], delta: Optional[float], case: "Case", dp: bool,
                    penalty: Optional[float], balance: bool, hparam: list[str], trials: int, seed: int,
                    data_root: Optional[Path], secure: bool = False, calibration: str = "analytic"):
    """An :class:`EmbeddingSpec`, validated; bad input exits with status 2 and the reason."""
    from privgraph.experiments.embedding import EmbeddingSpec

    config = _parse_hparams(hparam)
    if penalty is not None:
        config["penalty"] = penalty
    try:
        spec = EmbeddingSpec(method=method, dataset=dataset, case=case.value, dp=dp,
                             epsilons=list(epsilon) or [0.01], delta=1e-4 if delta is None else delta,
                             trials=trials, seed=seed, balance=balance, config=config, secure=secure,
                             calibration=calibration, data_root=str(data_root) if data_root else None)
        spec.validate()
    except ValueError as err:
        err_console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2) from None
    return spec


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
    model: Optional[str] = typer.Option(None, help="gcn, sage, gat or mlp (default: the method's own)"),
    trials: int = typer.Option(10, min=1),
    seed: int = typer.Option(0),
    mechanism: Mechanism = typer.Option(Mechanism.multibit, help="feature mechanism of lpgnn and featureldp"),
    delta: Optional[float] = typer.Option(
        None, help="lpgnn --mechanism gaussian: δ per node (default 1e-5); blink/dprr: degree share δ of ε "
                   "(default 0.1; blink chooses it from {0.1,…,0.9} with --tune when not given)"),
    variant: Optional[str] = typer.Option(None, help="blink: hard, soft or hybrid"),
    epsilon_y: Optional[float] = typer.Option(None, "--epsilon-y", help="label privacy budget (off by default)"),
    tune: bool = typer.Option(False, help="choose hyperparameters on validation per dataset and ε"),
    tune_budget: int = typer.Option(20, help="configurations tried by --tune"),
    split: str = typer.Option("random", help="random (seeded stratified 50/25/25) or public (Planetoid)"),
    hparam: list[str] = typer.Option(
        [], "--set", help="override a hyperparameter, e.g. --set kprop_steps=8 (hetedp DP-SGD: --set dpsgd.epochs=5)"),
    secure: bool = typer.Option(False, help="draw noise from the OS cryptographic source (not reproducible)"),
    clip: bool = typer.Option(False, help="clip features into the declared domain instead of failing"),
    data_root: Optional[Path] = typer.Option(None, help="raw-data folder (default: $PRIVGRAPH_DATA)"),
    private_ratio: Optional[float] = typer.Option(
        None, "--private-ratio", help="mark this fraction ρ of the edges private at random (edge-level methods)"),
    calibration: Calibration = typer.Option(
        Calibration.analytic, help="ppcvgae --dp: Gaussian calibration — analytic (Balle & Wang, default) or "
                                   "classical (the paper's eq. 6, ε < 1, over-noises)"),
    epsilon_f: Optional[float] = typer.Option(None, "--epsilon-f", help="heterorr: feature budget ε_f"),
    epsilon_e: Optional[float] = typer.Option(None, "--epsilon-e", help="heterorr: private-edge budget ε_e"),
    gamma: Optional[float] = typer.Option(None, help="FeatureRR: importance weight γ of eq. 7 (default 0.5)"),
    bins: Optional[int] = typer.Option(None, help="FeatureRR: number of bins k (default 2)"),
    public_fraction: Optional[float] = typer.Option(
        None, "--public-fraction", help="FeatureRR: share of training nodes declared public (default 0.1)"),
    sensitive_features: Optional[str] = typer.Option(
        None, "--sensitive-features", help="FeatureRR: comma-separated sensitive feature indices"),
    mcmc_steps: Optional[int] = typer.Option(None, "--mcmc-steps", help="EdgeRR/privHRG: MCMC moves (default 1000·n)"),
    mcmc_share: Optional[float] = typer.Option(None, "--mcmc-share", help="EdgeRR/privHRG: ε₁/ε_e (default 0.5)"),
    debias: Optional[bool] = typer.Option(
        None, "--debias/--raw-reports", help="FeatureRR: train on the unbiased estimate (default) or on the raw "
                                             "reports u/k as the paper does"),
    case: Case = typer.Option(Case.a, help="ppcvgae/vgae/dpgcn: threat model — a: the adversary knows A (GCN "
                                           "attack), b: it does not (MLP attack)"),
    dp: bool = typer.Option(False, "--dp", help="ppcvgae: add Gaussian noise for (ε, δ)-DP w.r.t. the candidates"),
    penalty: Optional[float] = typer.Option(None, help="ppcvgae: weight λ of the privacy penalty Δν (default 10)"),
    balance: bool = typer.Option(False, "--balance", help="ppcvgae/vgae/dpgcn: balance the attack's classes by "
                                                          "resampling (the paper's Credit treatment)"),
    task: Task = typer.Option(Task.nc, help="hetedp/rgcn/hgt/metapath2vec: nc (node classification) or lp (link "
                                            "prediction)"),
    feature_share: Optional[float] = typer.Option(
        None, "--feature-share", help="hetedp --task lp: ε_f/ε (default: chosen on validation, bi-level search)"),
    clip_bound: float = typer.Option(1.0, "--clip-bound", help="hetedp: L2 bound C_f of each node's features"),
    topology: Topology = typer.Option(
        Topology.edge, help="hetedp --task lp: edge (messages over the other relations only: ε is edge-level DP), "
                            "node (no messages; edge-level DP) or message-passing (the paper's: also over the "
                            "predicted relation; ε covers one example's loss term, not an edge)"),
    db: Path = typer.Option(Path("results/privgraph.db"), help="SQLite results database"),
    format: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Run a method over one or more ε, several seeded trials; store and print results."""
    from privgraph.experiments import run_experiment

    kind = _method_kind(method)
    if kind != "graph":
        ignored = [flag for flag, given in (("--tune", tune), ("--model", model is not None), ("--clip", clip),
                                             ("--epsilon-y", epsilon_y is not None), ("--variant", variant is not None),
                                             ("--private-ratio", private_ratio is not None)) if given]
        if ignored:
            err_console.print(f"[red]error:[/red] {method} does not take {', '.join(ignored)} (hetedp's feature clipping "
                              "bound is --clip-bound; ppcvgae's settings go through --set)")
            raise typer.Exit(2)
    if kind == "hetero":
        from privgraph.experiments.hetero import HeteroSpec, run_hetero_experiment

        try:
            hetero = HeteroSpec(method=method, dataset=dataset, task=task.value, epsilons=list(epsilon),
                                delta=1e-5 if delta is None else delta, trials=trials, seed=seed,
                                feature_share=feature_share, clip=clip_bound, topology=topology.value,
                                secure=secure, data_root=str(data_root) if data_root else None,
                                **_nested(_parse_hparams(hparam), "dpsgd"))
            hetero.validate()
        except (ValueError, TypeError) as err:
            err_console.print(f"[red]error:[/red] {err}")
            raise typer.Exit(2) from None
        _run_and_report(run_hetero_experiment, hetero, db, format, print_hetero_summary)
        return
    if kind == "embedding":
        from privgraph.experiments.embedding import run_embedding_experiment

        spec = _embedding_spec(method, dataset, epsilon, delta, case, dp, penalty, balance, hparam, trials, seed,
                               data_root, secure, calibration.value)
        _run_and_report(run_embedding_experiment, spec, db, format, print_embedding_summary)
        return
    spec = _checked_spec(
        method=method, dataset=dataset, epsilons=list(epsilon) or [1.0], model=model, trials=trials, seed=seed,
        mechanism=mechanism.value, delta=delta, variant=variant, epsilon_y=epsilon_y, tune=tune,
        tune_budget=tune_budget, split=split, hyperparameters=_parse_hparams(hparam), secure=secure, clip=clip,
        data_root=str(data_root) if data_root else None, private_ratio=private_ratio,
        options=_release_options(epsilon_f, epsilon_e, gamma, bins, public_fraction, sensitive_features,
                                 mcmc_steps, mcmc_share, debias),
    )
    _run_and_report(run_experiment, spec, db, format, print_summary)


def _run_and_report(run_fn, spec, db: Path, format: OutputFormat, printer) -> None:
    """Run ``spec`` with a progress display, store the trials, print JSON or ``printer``'s table."""
    from privgraph.experiments import ResultsStore

    start = time.perf_counter()
    try:
        with RichProgress(enabled=sys.stderr.isatty()) as progress:
            result = run_fn(spec, ResultsStore(db), progress)
    except (ValueError, RuntimeError) as err:
        err_console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(1) from None
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
    seed: int = typer.Option(0, help="seed of the split and the annotations (and of the noise only with "
                                     "--reproducible)"),
    secure: bool = typer.Option(False, "--secure", help="noise from the OS cryptographic source (the default; "
                                                        "nothing recorded can regenerate it)"),
    reproducible: bool = typer.Option(
        False, "--reproducible", help="draw the noise from --seed and record it: anyone with the seed can remove "
                                      "the noise, so the file is for research only"),
    mechanism: Mechanism = typer.Option(Mechanism.multibit, help="feature mechanism of lpgnn and featureldp"),
    delta: Optional[float] = typer.Option(None, help="as in `privgraph run`"),
    variant: Optional[str] = typer.Option(None, help="blink: hard, soft or hybrid"),
    clip: bool = typer.Option(False, help="clip features into the declared domain instead of failing"),
    data_root: Optional[Path] = typer.Option(None, help="raw-data folder (default: $PRIVGRAPH_DATA)"),
    private_ratio: Optional[float] = typer.Option(None, "--private-ratio", help="fraction ρ of edges marked private"),
    epsilon_f: Optional[float] = typer.Option(None, "--epsilon-f", help="heterorr: feature budget ε_f"),
    epsilon_e: Optional[float] = typer.Option(None, "--epsilon-e", help="heterorr: private-edge budget ε_e"),
    gamma: Optional[float] = typer.Option(None, help="FeatureRR: γ of eq. 7 (default 0.5)"),
    bins: Optional[int] = typer.Option(None, help="FeatureRR: number of bins k (default 2)"),
    public_fraction: Optional[float] = typer.Option(None, "--public-fraction", help="FeatureRR: public share"),
    sensitive_features: Optional[str] = typer.Option(None, "--sensitive-features", help="FeatureRR: indices"),
    mcmc_steps: Optional[int] = typer.Option(None, "--mcmc-steps", help="EdgeRR/privHRG: MCMC moves"),
    mcmc_share: Optional[float] = typer.Option(None, "--mcmc-share", help="EdgeRR/privHRG: ε₁/ε_e"),
    debias: Optional[bool] = typer.Option(None, "--debias/--raw-reports", help="FeatureRR: estimate or raw reports"),
    case: Case = typer.Option(Case.a, help="ppcvgae: a (the adversary knows A) or b"),
    dp: bool = typer.Option(False, "--dp", help="ppcvgae: add Gaussian noise for (ε, δ)-DP w.r.t. the candidates"),
    penalty: Optional[float] = typer.Option(None, help="ppcvgae: weight λ of the privacy penalty Δν (default 10)"),
    hparam: list[str] = typer.Option([], "--set", help="ppcvgae: embedding setting, e.g. --set epochs=500"),
    calibration: Calibration = typer.Option(
        Calibration.analytic, help="ppcvgae --dp: analytic (default) or classical (the paper's eq. 6)"),
) -> None:
    """Privatize a graph (or train and release an embedding) once and write it with its
    privacy report (OUTPUT + OUTPUT.json).  The noise comes from the OS cryptographic
    source unless --reproducible."""
    from privgraph.experiments.release import release_embedding_file, release_graph

    if secure and reproducible:
        err_console.print("[red]error:[/red] --secure and --reproducible exclude each other (--secure is the default)")
        raise typer.Exit(2)
    kind = _method_kind(method)
    if kind == "hetero":
        err_console.print(f"[red]error:[/red] {method} has no release command yet: release a HeteroData from "
                          f"Python with privgraph.privatize (see `privgraph methods {method}`), or use `privgraph run`")
        raise typer.Exit(2)
    if kind == "embedding":
        spec = _embedding_spec(method, dataset, [epsilon] if epsilon is not None else [], delta, case, dp, penalty,
                               False, hparam, 1, seed, data_root, secure=dp and not reproducible,
                               calibration=calibration.value)
        _release_and_report(release_embedding_file, spec, output)
        return
    spec = _checked_spec(
        method=method, dataset=dataset, epsilons=[1.0 if epsilon is None else epsilon], trials=1, seed=seed,
        mechanism=mechanism.value,
        delta=delta, variant=variant, secure=not reproducible, clip=clip,
        data_root=str(data_root) if data_root else None,
        private_ratio=private_ratio,
        options=_release_options(epsilon_f, epsilon_e, gamma, bins, public_fraction, sensitive_features,
                                 mcmc_steps, mcmc_share, debias),
    )
    _release_and_report(release_graph, spec, output)


def _release_and_report(release_fn, spec, output: Path) -> None:
    """Write the release and its report; print the report's lines."""
    try:
        with RichProgress(enabled=sys.stderr.isatty()) as progress:
            path, report_path, report = release_fn(spec, output, progress)
    except (ValueError, RuntimeError) as err:
        err_console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(1) from None
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
        err_console.print(f"[red]error:[/red] no results database at {db}")
        raise typer.Exit(2)
    try:
        path = plot_db(db, output, dataset)
    except ValueError as err:
        err_console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(1) from None
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
        err_console.print(f"[red]error:[/red] unknown method {method!r}; choose from {', '.join(registry)}")
        raise typer.Exit(2)
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
    table = Table(title=f"{method} parameters")
    for col in ("name", "type", "default", "help"):
        table.add_column(col)
    for p in e["parameters"]:
        table.add_row(p["name"], p["type"], repr(p["default"]), escape(p["help"]))
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
