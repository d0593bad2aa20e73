"""Privacy–utility curves from stored results."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from privgraph.experiments.store import ResultsStore  # noqa: E402
from privgraph.experiments.summary import summarize  # noqa: E402


def _label(row: dict[str, Any]) -> str:
    mechanism = row["mechanism"]
    label = mechanism if mechanism and mechanism.startswith(row["method"]) else row["method"]
    label += f" ({row['model']}"
    if mechanism and mechanism != "multibit" and not mechanism.startswith(row["method"]):
        label += f", {mechanism}"
    if row["epsilon_y"] is not None:
        label += f", ε_y={row['epsilon_y']:g}"
    return label + ")"


def plot_rows(rows: list[dict[str, Any]], out: str | Path, metric_name: str = "test accuracy") -> Path:
    """One panel per dataset: accuracy vs ε (log axis) with 95% CI bars for
    private methods; methods without ε as horizontal lines with a CI band."""
    if not rows:
        raise ValueError("no results to plot")
    datasets = sorted({r["dataset"] for r in rows})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4.2), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        drows = [r for r in rows if r["dataset"] == dataset]
        curves: dict[str, list[dict[str, Any]]] = {}
        flat = []
        for r in drows:
            (flat if r["epsilon"] is None else curves.setdefault(_label(r), [])).append(r)
        eps_all = sorted({r["epsilon"] for r in drows if r["epsilon"] is not None}) or [1.0]
        colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"] * 4)
        for label, rs in sorted(curves.items()):
            rs = sorted(rs, key=lambda r: r["epsilon"])
            err = [0.0 if math.isnan(r["ci95"]) else r["ci95"] for r in rs]
            ax.errorbar([r["epsilon"] for r in rs], [r["mean"] for r in rs], yerr=err, marker="o", capsize=3,
                        label=label, color=next(colors))
        for r in sorted(flat, key=_label):
            color = next(colors)
            ax.axhline(r["mean"], linestyle="--", linewidth=1.2, label=_label(r), color=color)
            if not math.isnan(r["ci95"]):
                ax.axhspan(r["mean"] - r["ci95"], r["mean"] + r["ci95"], color=color, alpha=0.12)
        ax.set_xscale("log")
        ax.set_xticks(eps_all)
        ax.set_xticklabels([f"{e:g}" for e in eps_all])
        ax.set_xlabel("privacy budget ε")
        ax.set_ylabel(metric_name)
        ax.set_title(dataset)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def plot_db(db: str | Path, out: str | Path, dataset: str | None = None) -> Path:
    store = ResultsStore(db)
    records = list(store.records(**({"dataset": dataset} if dataset else {})))
    if not records:
        raise ValueError(f"no results in {db}" + (f" for dataset {dataset!r}" if dataset else ""))
    return plot_rows(summarize(records), out)
