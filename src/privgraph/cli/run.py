"""``privgraph run``, ``attack`` (and ``attacks``, the list) and ``demo``: experiments run through the pipeline,
stored and printed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from privgraph.cli.checks import _assign, _check_declared, _device, _epsilons, _prepare, _resolve_device
from privgraph.cli.console import OutputFormat, out_console, user_errors
from privgraph.cli.inputs import _input_spec
from privgraph.cli.options import (
    ATTACK_HELP,
    DATASET_OPTION,
    DB_OPTION,
    DEVICE_HELP,
    DEVICE_OPTION,
    DIAGNOSTICS_OPTION,
    EPSILON_OPTION,
    FORMAT_OPTION,
    HPARAM_OPTION,
    LABEL_EPSILON_OPTION,
    METHOD,
    METHOD_HELP,
    MODEL_OPTION,
    PARAM_OPTION,
    PRIVATE_RATIO_OPTION,
    SECURE_OPTION,
    SEED_OPTION,
    SPLIT_OPTION,
    TRAINING,
    TRIALS_OPTION,
    InputOptions,
    input_options,
)
from privgraph.cli.render import print_reports, print_result, print_tsv, result_table
from privgraph.progress import console_progress


@input_options
def run(
    method: str = typer.Argument(..., help=METHOD_HELP),
    dataset: str = DATASET_OPTION,
    inputs: InputOptions = InputOptions(),
    split: str = SPLIT_OPTION,
    private_ratio: float | None = PRIVATE_RATIO_OPTION,
    epsilon: list[str] = EPSILON_OPTION,
    label_epsilon: float | None = LABEL_EPSILON_OPTION,
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
    diagnostics: bool = DIAGNOSTICS_OPTION,
    format: OutputFormat = FORMAT_OPTION,
) -> None:
    """Run a method over one or more ε and several seeded trials: release, train the task's model,
    evaluate; store and print the results with the privacy report."""
    _experiment(
        method, param, hparam, task, epsilon, label_epsilon, dataset, inputs, device, db, format,
        model=model, trials=trials, seed=seed, tune=tune, tune_budget=tune_budget, split=split, secure=secure,
        private_ratio=private_ratio, case=case, balance=balance, diagnostics=diagnostics,
    )  # fmt: skip


@input_options
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
    inputs: InputOptions = InputOptions(),
    split: str = SPLIT_OPTION,
    private_ratio: float | None = PRIVATE_RATIO_OPTION,
    epsilon: list[str] = EPSILON_OPTION,
    label_epsilon: float | None = LABEL_EPSILON_OPTION,
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
    diagnostics: bool = DIAGNOSTICS_OPTION,
    format: OutputFormat = FORMAT_OPTION,
) -> None:
    """Attack a method: per ε and seeded trial, release, train the target exactly as `run` does, run the
    attack against it; store and print the attack's success beside the target's utility."""
    from privgraph.catalogue import attack_entry, hints

    with user_errors():
        entry = attack_entry(name)
    values = _assign(attack_param, hints(entry["params"]), "--attack-param", f"attack {name!r}", "parameter")
    _check_declared(entry, values)
    _experiment(
        method, param, hparam, task, epsilon, label_epsilon, dataset, inputs, device, db, format,
        model=model, trials=trials, seed=seed, split=split, secure=secure, private_ratio=private_ratio,
        attack=name, attack_params=values, diagnostics=diagnostics,
    )  # fmt: skip


def _experiment(
    method: str,
    param: list[str],
    hparam: list[str],
    task: str | None,
    epsilon: list[str],
    label_epsilon: float | None,
    dataset: str,
    inputs: InputOptions,
    device: str | None,
    db: Path,
    format: OutputFormat,
    **fields: Any,
) -> None:
    """What run and attack share: the options checked (no torch), ``--input`` read, the spec (``fields``: the
    command's own), run and printed."""
    epsilons = _epsilons(epsilon)
    prepared = _prepare(method, param, hparam, task, epsilons, label_epsilon, inputs.named(dataset), device)
    spec, _ = _input_spec(  # the results database writable (before_read), before the input is read
        method, param, hparam, prepared, inputs, dataset, device, lambda _: _store(db), epsilons=epsilons, task=task,
        label_epsilon=label_epsilon,
        **fields,
    )  # fmt: skip
    _run_and_print(spec, db, format)


def _run_and_print(spec: Any, db: Path, format: OutputFormat) -> None:
    """Run ``spec`` through the pipeline with progress, store its trials, print the table or JSON."""
    store = _store(db)
    from privgraph.experiments import Experiment

    start = time.perf_counter()
    with console_progress(heartbeat=True) as progress:  # nothing until the run reports; then a line each 10 s piped
        with user_errors():
            experiment = Experiment(spec, store, progress)  # the checks that need the loaded input
        # a bad value met only once the run reads it: the user's input; a RuntimeError: the run failed
        with user_errors(failures=(RuntimeError,)):
            result = experiment.run()
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


def _store(db: Path):
    """The results store at ``db``; an unwritable path exits 2 before any work."""
    from privgraph.experiments import ResultsStore

    with user_errors(OSError, ValueError, prefix=f"cannot write the results database {db}: "):
        store = ResultsStore(db)
        store.check_writable()
        return store


def list_attacks() -> None:
    """The attacks: what each queries and knows, its metrics and its parameters."""
    from privgraph.catalogue import load_catalogue

    for entry in load_catalogue()["attacks"].values():
        info = entry["info"]
        out_console.print(f"[bold]{info['name']}[/bold] ({info['family']}): {escape(info['description'])}")
        out_console.print(f"  queries: {escape(info['threat_model']['queries'])}")
        out_console.print(f"  knows: {escape(info['threat_model']['knowledge'])}")
        for p in info["parameters"]:
            out_console.print(f"  --attack-param {p['name']}={p['default']}: {escape(p['help'])}")


def demo(
    out: Path = typer.Option(Path("demo-out"), help="folder for the results database and the plot"),
    trials: int = typer.Option(3, min=1),
    seed: int = typer.Option(0),
    device: str | None = typer.Option(None, "--device", help=DEVICE_HELP),
) -> None:
    """LPGNN vs the non-private GCN and an MLP on a synthetic SBM graph (no download): the accuracy per ε and,
    from the same trials, a link-stealing attack's AUC against each trained model."""
    device = _device(device)
    import torch

    _resolve_device(device)

    # The demo graph is small: one thread is as fast as two, and immune to the
    # OpenMP oversubscription that slows torch ~10× when the cores are busy.
    torch.set_num_threads(1)
    from privgraph.experiments import ExperimentSpec, ResultsStore, run_experiment, summarize
    from privgraph.experiments.demo import (
        ATTACK_NOTE,
        DEMO_ATTACK,
        DEMO_EPSILONS,
        DEMO_GRAPH,
        demo_table,
        graph_note,
    )
    from privgraph.experiments.plot import plot_rows

    out.mkdir(parents=True, exist_ok=True)
    db = out / "demo.jsonl"
    if db.exists():
        db.unlink()
    store = ResultsStore(db)
    results = []
    start = time.perf_counter()
    with console_progress(heartbeat=True) as progress:
        for method, eps in (("gcn-raw", []), ("mlp", []), ("lpgnn", DEMO_EPSILONS)):
            spec = ExperimentSpec(
                method=method,
                dataset="sbm",
                epsilons=eps,
                trials=trials,
                seed=seed,
                synthetic=DEMO_GRAPH,
                device=device,
                attack=DEMO_ATTACK,
            )
            results.append(run_experiment(spec, store, progress))
    out_console.print(demo_table(results))
    out_console.print(f"[dim]{escape(graph_note())}[/dim]")
    out_console.print(demo_table(results, "attack_auc"))
    out_console.print(f"[dim]{escape(ATTACK_NOTE)}[/dim]")
    out_console.print("[bold]LPGNN[/bold]")
    print_reports(results[-1].reports)
    png = plot_rows(summarize(store.records()), out / "privacy_utility.png")
    out_console.print(f"wrote {png} and {db} in {time.perf_counter() - start:.1f}s")
