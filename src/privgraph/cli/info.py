"""``privgraph methods`` and ``datasets``: what the catalogue and the dataset registry hold (no torch)."""

from __future__ import annotations

import json
from enum import Enum

import typer
from rich.markup import escape
from rich.table import Table

from privgraph.cli.console import OutputFormat, _fail, err_console, out_console
from privgraph.cli.render import print_tsv


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
        for col in ("name", "unit", "trust model", "task", "ε", "description"):
            table.add_column(col)
        for name, e in registry.items():
            eps = "optional" if e["epsilon_optional"] else ("yes" if e["private"] else "—")
            trust = " + ".join(t.split(" (")[0] for t in e.get("trust", [])) or "—"  # local, central, or none
            table.add_row(name, _unit(e), trust, e["task"], eps, escape(e["description"]))
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
        f"unit: {_unit(e, long=True)}; task: {e['task']}; takes a {e['graph']}; "
        f"protects {', '.join(e['private_fields']) or 'nothing'}; public: "
        f"{', '.join(e['public_fields']) or 'none'}"
    )
    out_console.print(table)


def _unit(entry: dict, long: bool = False) -> str:
    """A method's privacy unit as listed: a non-private baseline that reads the data protects none."""
    if not entry.get("no_guarantee"):
        return entry["unit"]
    if long:
        return f"none: a non-private baseline, no guarantee (its report states ε = ∞ on {entry['unit']})"
    return "— (no guarantee)"


class DatasetsFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    tsv = "tsv"


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
