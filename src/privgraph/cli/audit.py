"""``privgraph audit``: a method's claim audited by distinguishing neighbouring inputs."""

from __future__ import annotations

import json

import typer

from privgraph.cli.checks import (
    _assign,
    _check_declared,
    _device,
    _method,
    _one_epsilon,
    _resolve_device,
    check_epsilon_given,
)
from privgraph.cli.console import OutputFormat, _fail, user_errors
from privgraph.cli.inputs import _build_method, _check_request, _input_files, _read_input
from privgraph.cli.options import (
    DATA,
    DEVICE_HELP,
    FORMAT_OPTION,
    LABEL_EPSILON_OPTION,
    PARAM_OPTION,
    PRIVACY,
    InputOptions,
    epsilon_option,
    input_options,
)
from privgraph.cli.render import audit_table, print_audit, print_tsv
from privgraph.progress import console_progress


@input_options
def audit_command(
    method: str = typer.Argument(..., help="a method (`privgraph methods`)"),
    epsilon: list[str] = epsilon_option("ε the method is released with (required by private methods)"),
    delta: float | None = typer.Option(
        None,
        help="δ of the claim (the methods that declare a δ parameter: HeteDP, PPCVGAE, GAP, node-dpsgd, "
        "mechanism=gaussian)",
        rich_help_panel=PRIVACY,
    ),
    label_epsilon: float | None = LABEL_EPSILON_OPTION,
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
    inputs: InputOptions = InputOptions(),
    device: str | None = typer.Option(None, "--device", help=DEVICE_HELP),
    format: OutputFormat = FORMAT_OPTION,
) -> None:
    """Audit a method's claim: release two neighbouring inputs SAMPLES times each through the method's own
    code, distinguish them, and bound ε from below (95 % Clopper–Pearson).  Exits 1 on a VIOLATION
    (ε_LB above the ε asked for a unit, or a claim that differs from it)."""
    from privgraph.catalogue import hints

    device = _device(device)
    entry = _method(method)
    eps = _one_epsilon(epsilon)
    check_epsilon_given(method, entry["info"], eps)
    values = _assign(param, hints(entry["params"]), "--param", f"method {method!r}", "parameter", entry.get("renamed"))
    _check_declared(entry, values)
    if dataset is not None and inputs.input is not None:
        _fail("give --dataset or --input, not both")
    _input_files(inputs)
    request = _check_request(method, inputs)  # the method's rules that the request decides, then its Params
    _resolve_device(device)
    _build_method(method, values)  # before the input is read
    data, _ = _read_input(inputs, method, device, request, split_seed=seed)
    _resolve_device(device)
    from privgraph.audit import audit_method
    from privgraph.audit.graphs import annotate

    with user_errors(ValueError, TypeError):
        if dataset is not None:
            from privgraph.data.datasets import load

            data = load(dataset, inputs.data_root, seed=seed)
        if data is not None:
            data = annotate(data, seed)
        with console_progress(heartbeat=True) as progress:
            report = audit_method(
                data,
                method,
                epsilon=eps,
                delta=delta,
                samples=samples,
                seed=seed,
                label_epsilon=label_epsilon,
                progress=progress,
                device=device,
                **values,
            )
    if format == OutputFormat.json:
        print(json.dumps(report.to_dict(), indent=2))
    elif format == OutputFormat.tsv:
        print_tsv(audit_table(report))
    else:
        print_audit(report)
    if report.violation:
        raise typer.Exit(1)
