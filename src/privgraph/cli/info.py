"""``privgraph methods`` and ``datasets``: what the catalogue and the dataset registry hold (no torch)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from privgraph.cli.console import OutputFormat, _fail, err_console, out_console, prose_width
from privgraph.cli.render import print_tsv


def list_methods_command(
    method: str | None = typer.Argument(
        None, help="a method: print its guarantee, parameters, and where its code, derivation, tests and benchmark live"
    ),
    format: OutputFormat = typer.Option(
        OutputFormat.table, "--format", help="table, json or tsv (the table, tab-separated)"
    ),
) -> None:
    """List the registered methods (unit, task), or one method: its guarantee, parameters and defaults, and
    where its code, derivation, tests and benchmark live."""
    from privgraph.catalogue import method_entries
    from privgraph.cli.checks import plugin_warnings

    with plugin_warnings():
        catalogue = method_entries()  # the built-in ones, then the installed plugins' (docs/extending.md)
    registry = {name: entry["info"] for name, entry in catalogue.items()}
    if method is not None and method not in registry:
        from privgraph.where import unknown_method

        _fail(unknown_method(method))
    if method is not None:
        from privgraph.where import method_sources

        where = method_sources(method)
    if format == OutputFormat.json:
        print(json.dumps({**registry[method], "where": where} if method else registry, indent=2, default=str))
        return
    if method is None:
        table = Table(
            title="methods (privgraph methods NAME: its parameters and where it lives)",
            box=box.SIMPLE_HEAD,
            collapse_padding=True,
            pad_edge=False,
        )  # compact: the descriptions get the width, wrapped there (120 columns piped: prose_width)
        for col in ("name", "unit", "trust model", "task", "ε"):
            table.add_column(col, no_wrap=col != "unit", max_width=20 if col == "unit" else None)
        table.add_column("description")
        for name, e in registry.items():
            eps = "optional" if e["epsilon_optional"] else ("yes" if e["private"] else "—")
            trust = " + ".join(t.split(" (")[0] for t in e.get("trust", [])) or "—"  # local, central, or none
            table.add_row(name, _unit(e), trust, e["task"], eps, escape(e["description"]))
        print_tsv(table) if format == OutputFormat.tsv else out_console.print(table, width=prose_width(out_console))
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
    width = prose_width(out_console)
    out_console.print(f"[bold]{method}[/bold]: {escape(e['description'])}", width=width)
    out_console.print(
        f"unit: {_unit(e, long=True)}; trust model: {' + '.join(e.get('trust', [])) or 'none'}; "
        f"guarantee: {escape(guarantee_form(e, catalogue[method].get('delta_param')))}",
        width=width,
    )
    out_console.print(
        f"task: {e['task']}; takes a {e['graph']}; protects {', '.join(e['private_fields']) or 'nothing'}; "
        f"public: {', '.join(e['public_fields']) or 'none'}",
        width=width,
    )
    out_console.print(table, width=width)
    out_console.print(where_table(method, where), width=width)


def guarantee_form(info: dict[str, Any], delta_param: str | None) -> str:
    """The form of a method's guarantee from its catalogue entry: ``ε-LDP per node feature vector``,
    ``(ε, δ)-DP per edge (δ is --param delta, default …: its help)``, or that it states none."""
    if not info["private"]:
        return "none (ε = ∞: it protects nothing)"
    trust = info.get("trust", [])
    eps = "(ε, δ)" if delta_param else "ε"
    local, central = (any(t.startswith(side) for t in trust) for side in ("local", "central"))
    form = f"{eps}-{'LDP' if local else 'DP'} per {info['unit']}"
    if local and central:  # HeteroRR: the local part per its unit, the curator's part per its own
        form += f", and {eps}-DP for what the trusted curator releases (the report states each unit)"
    param = next((p for p in info["parameters"] if p["name"] == delta_param), None)
    if param is not None:
        form += f" (δ is --param {delta_param}, default {param['default']!r}: {param['help']})"
    if info.get("epsilon_optional"):
        form += "; it also runs without ε, then without noise (ε = ∞)"
    return form


def where_table(method: str, where: dict[str, Any]) -> Table:
    """The table of where ``method`` lives (:func:`privgraph.where.method_sources`)."""
    from privgraph.where import NOT_IN_PACKAGE

    table = Table(title=f"where {method} lives", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("path")
    code = f"{where['code']} (class {where['class']})" if where["code"] else "—"
    table.add_row("code", escape(code))
    if where["mechanisms"]:
        table.add_row("mechanisms", escape(", ".join(where["mechanisms"]) + " (imported by its module)"))
    table.add_row("derivation", escape(where["derivation"] or "— (none declared in privgraph.where.DERIVATION)"))
    tests, bench = where["tests"], where["benchmarks"]
    table.add_row("tests", escape(NOT_IN_PACKAGE if tests is None else ", ".join(tests) or "—"))
    if bench is None:
        table.add_row("benchmark", NOT_IN_PACKAGE)
    else:
        runs = ", ".join(bench["grids"] + bench["scripts"]) or "—"
        table.add_row("benchmark", escape(runs))
        if bench["results"]:
            table.add_row("results", escape(", ".join(bench["results"])))
    return table


def _unit(entry: dict, long: bool = False) -> str:
    """A method's privacy unit as listed: a non-private baseline that reads the data protects none."""
    if not entry.get("no_guarantee"):
        return entry["unit"]
    if long:
        return f"— (a non-private baseline; its report states ε = ∞ on {entry['unit']})"
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


def grids(
    format: DatasetsFormat = typer.Option(
        DatasetsFormat.table, "--format", help="table, json, markdown or tsv (the table, tab-separated)"
    ),
) -> None:
    """List the experiment grids shipped with privgraph (the papers' protocols, the quick start): run one by
    name from any folder, ``privgraph sweep NAME``."""
    from privgraph.grids import describe_grids

    rows = describe_grids()
    if format == DatasetsFormat.json:
        print(json.dumps(rows, indent=2))
        return
    if format == DatasetsFormat.markdown:
        lines = ["| grid | what | duration |", "|---|---|---|"]
        lines += [f"| `{r['name']}` | {r['title']} | {r['duration']} |" for r in rows]
        print("\n".join(lines))
        return
    table = Table(title="shipped grids (privgraph sweep NAME; privgraph sweep NAME --dry-run lists the trials)")
    for col in ("name", "what", "duration"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], escape(r["title"]), escape(r["duration"]))
    print_tsv(table) if format == DatasetsFormat.tsv else out_console.print(table)
