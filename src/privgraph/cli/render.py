"""The command's rendering: runs' tables and privacy reports, the ledger, the audit, and tab-separated output."""

from __future__ import annotations

import math
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from privgraph.cli.console import out_console
from privgraph.display import format_metric, is_auc


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


def print_measured_note(console: Console = out_console) -> None:
    """The line under every table of measured trials (``run``, ``attack``, ``compare``): what no guarantee
    covers (:data:`~privgraph.experiments.compare.MEASURED_NOTE`)."""
    from privgraph.experiments.compare import MEASURED_NOTE

    console.print(f"[dim]{escape(MEASURED_NOTE)}[/dim]")


def print_result(result, console: Console = out_console) -> None:
    """A run's summary: one row per ε, one column per metric of its task (%, an AUC 0–1:
    :mod:`privgraph.display`; mean ± 95% CI), within 80 columns (an attack's run: the target's utility and
    the attack's headline metrics, all of them in the JSON); ε_y only under label privacy; the chosen
    hyperparameters and release options and the attack's threat model below."""
    table, choices = result_table(result)
    console.print(table)
    print_measured_note(console)
    rows = result.summary()
    by_eps: dict = {}
    for r in rows:
        by_eps.setdefault((r["epsilon"], r["label_epsilon"]), {})[r["metric"]] = r
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
    """:func:`print_result`'s table (one row per ε, one column per metric: %, an AUC 0–1; mean ± 95% CI) and the
    values chosen on validation, one line per ε."""
    rows = result.summary()
    by_eps: dict = {}
    for r in rows:
        by_eps.setdefault((r["epsilon"], r["label_epsilon"]), {})[r["metric"]] = r
    dataset = rows[0]["dataset"] if rows else result.spec.dataset
    attack = f"{result.attack['name']} against " if result.attack else ""
    shown = result.columns
    aucs = sum(is_auc(m) for m in shown)
    units = "%" if not aucs else "AUC 0–1" if aucs == len(shown) else "%, AUC 0–1"
    title = f"{attack}{result.spec.method} on {dataset} ({result.model}): {units}, mean ± 95% CI"
    table = Table(title=title, min_width=len(title))  # the title on one line where the width allows
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
            *(format_metric(m, metrics[m]["mean"], metrics[m]["ci95"]) for m in shown),
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
    _print_releases(state["entries"], console)
    totals = Table("unit", "releases", "ε spent", "δ spent", "ε budget", "δ budget", "ε left", "δ left", "rule")
    for t in state["totals"]:
        b, left = t["budget"], t["remaining"]
        totals.add_row(
            escape(t["unit"]),
            str(t["releases"]),
            _fmt_eps(_ledger_float(t["epsilon"])),
            f"{t['delta']:g}",
            "—" if b is None else f"{b['epsilon']:g}",
            "—" if b is None else "no δ budget" if b["delta"] is None else f"{b['delta']:g}",
            "—" if left is None else f"{left['epsilon']:g}",
            "—" if left is None else "n/a" if left["delta"] is None else f"{left['delta']:g}",
            escape(t.get("composition", "")),
        )
    console.print(totals)
    adv = state.get("advanced_delta")
    console.print(
        "[dim]rule: each unit is a privacy filter (a release may be chosen after seeing the last): the smaller of "
        "basic composition (Σ ε, Σ δ within half a δ budget) and the Rényi filter of its Gaussian and pure releases "
        "(at half the δ budget"
        + (f", or δ′ = {adv:g} for an ε-only budget" if adv else "; an ε-only budget: basic alone")
        + "); a unit without a budget is recorded, not limited[/dim]"
    )


def _print_releases(entries: list[dict], console: Console) -> None:
    """The releases as one plain, aligned table written at once: O(rows), seconds for 200,000 releases (a rich
    Table lays out, measures and wraps every cell: minutes).  Control characters in names are shown as ``?``."""
    header = ("#", "time (UTC)", "method", "status", "unit", "ε", "δ", "file")
    rows = []
    for i, entry in enumerate(entries, 1):
        spends = entry["spent"] if entry["status"] == "done" and entry["spent"] is not None else entry["planned"]
        status = entry["status"] + ("" if entry["status"] == "done" else " (counted as planned)")
        for j, s in enumerate(spends or [{"unit": "—", "epsilon": 0, "delta": 0}]):
            first = (str(i), entry["started"][:19], entry["method"], status) if j == 0 else ("", "", "", "")
            last = (entry["file"] or "") if j == 0 else ""
            rows.append((*first, s["unit"], _fmt_eps(_ledger_float(s["epsilon"])), f"{s['delta']:g}", last))
    if not rows:
        console.print("no releases")
        return
    widths = [max(len(h), max(map(len, col))) for h, col in zip(header, zip(*rows))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(_printable(v).ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    console.file.write("\n".join(lines) + "\n")


def _printable(text: str) -> str:
    return text if text.isprintable() else "".join(c if c.isprintable() else "?" for c in text)


def _ledger_float(x: float | str) -> float:
    return math.inf if x == "inf" else float(x)


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
