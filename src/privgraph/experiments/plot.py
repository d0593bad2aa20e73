"""Privacy–utility curves from stored results.

One figure per dataset, one panel per privacy unit (a feature-LDP ε and a
link-LDP ε are not the same axis): the mean of each (method, model, variant)
over the trials against ε on a log axis, with a 95% confidence band; the
non-private baselines as dashed horizontal lines in every panel.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator, PercentFormatter  # noqa: E402

from privgraph.accounting.guarantee import TrustModel, Unit  # noqa: E402
from privgraph.experiments.store import ResultsStore, TrialRecord  # noqa: E402
from privgraph.experiments.summary import mean_ci, spent_epsilon  # noqa: E402

DEFAULT_DIR = Path("results")
# the metric a figure shows when none is asked for: the first one the trials have
DEFAULT_METRICS = ("accuracy", "micro_f1", "roc_auc", "utility_accuracy", "attack_accuracy", "macro_f1")
UNKNOWN_UNIT = "unknown unit"
_UNIT_ORDER = (
    Unit.NODE_FEATURES,
    Unit.NODE_LABEL,
    Unit.NODE,
    Unit.NODE_WITH_EDGES,
    Unit.ADJACENCY_LIST,
    Unit.PRIVATE_EDGE,
    Unit.EDGE,
    Unit.SENSITIVE_ATTRIBUTE,
)
_TRUST_SHORT = {TrustModel.LOCAL: "LDP", TrustModel.CENTRAL: "DP"}


class LineKey(NamedTuple):
    """What one curve is: the same method, model and release variant at every ε."""

    method: str
    model: str
    mechanism: str | None = None
    variant: str | None = None
    label_epsilon: float | None = None

    @property
    def label(self) -> str:
        mech, method = self.mechanism, self.method
        text = mech if mech and mech.startswith(method) else method
        extras = [self.model]
        if mech and mech != "multibit" and not mech.startswith(method):
            extras.append(mech)
        if self.variant:
            extras.append(str(self.variant))
        if self.label_epsilon is not None:
            extras.append(f"ε_y={self.label_epsilon:g}")
        return f"{text} ({', '.join(extras)})"


@dataclass(frozen=True)
class Point:
    """The mean of one setting's trials, with the half-width of its 95% CI (NaN: one trial)."""

    dataset: str
    unit: str
    trust_model: str
    line: LineKey
    epsilon: float | None
    mean: float
    ci95: float
    trials: int


def guarantee_unit(guarantee: dict[str, Any] | None) -> tuple[str, str]:
    """(unit, trust model) of the first guarantee of a stored ``PrivacyReport.to_dict()``."""
    gs = (guarantee or {}).get("guarantees") or []
    if not gs:
        return UNKNOWN_UNIT, ""
    return gs[0].get("unit") or UNKNOWN_UNIT, gs[0].get("trust_model") or ""


def choose_metric(records: Iterable[TrialRecord]) -> str:
    """The first of :data:`DEFAULT_METRICS` the trials carry (the most common one wins a tie)."""
    counts: dict[str, int] = defaultdict(int)
    for r in records:
        for m in r.metrics:
            counts[m] += 1
    for m in DEFAULT_METRICS:
        if counts.get(m):
            return m
    if not counts:
        raise ValueError("the trials carry no metrics")
    return max(counts, key=lambda m: (counts[m], m))


def points_from_records(records: Iterable[TrialRecord], metric: str) -> list[Point]:
    """Aggregate trials per (dataset, unit, line, ε spent) with :func:`mean_ci`; trials without ``metric`` are
    left out.  A setting tuned on validation is placed at the ε it spent (its candidates × ε)."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    trust: dict[tuple, str] = {}
    for r in records:
        value = r.metrics.get(metric)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        unit, trust_model = guarantee_unit(r.guarantee)
        line = LineKey(r.method, r.model, r.mechanism, (r.config or {}).get("variant"), r.label_epsilon)
        key = (r.dataset, unit, line, spent_epsilon(r))  # a tuned setting at its total ε (candidates × ε)
        groups[key].append(float(value))
        trust.setdefault(key, trust_model)
    points = []
    for key, values in groups.items():
        mean, _, half = mean_ci(values)
        dataset, unit, line, eps = key
        points.append(Point(dataset, unit, trust[key], line, eps, mean, half, len(values)))
    return points


def points_from_rows(rows: Iterable[dict[str, Any]]) -> list[Point]:
    """Points from :func:`~privgraph.experiments.summary.summarize` rows (already aggregated)."""
    points = []
    for r in rows:
        unit, trust_model = guarantee_unit(r.get("privacy"))
        line = LineKey(
            r["method"], r["model"], r.get("mechanism"), r.get("variant"), r.get("label_epsilon", r.get("epsilon_y"))
        )
        points.append(
            Point(
                r["dataset"],
                unit,
                trust_model,
                line,
                r.get("epsilon_spent", r["epsilon"]),
                r["mean"],
                r["ci95"],
                r.get("trials", 1),
            )
        )
    return points


def _unit_order(unit: str) -> tuple:
    for i, u in enumerate(_UNIT_ORDER):
        if unit == u or unit.startswith(u + " "):
            return (i, unit)
    return (len(_UNIT_ORDER), unit)


def _fmt_eps(eps: float, _pos: Any = None) -> str:
    return f"{eps:g}"


def _is_fraction(points: list[Point]) -> bool:
    return all(-0.05 <= p.mean <= 1.05 for p in points)


def figure_from_points(points: list[Point], metric: str = "accuracy", title: str | None = None) -> Figure:
    """The figure: a row of panels (one per privacy unit) per dataset."""
    if not points:
        raise ValueError("no results to plot")
    datasets = sorted({p.dataset for p in points})
    private = [p for p in points if p.epsilon is not None]
    panels: dict[str, list[str]] = {}
    for d in datasets:
        units = sorted({p.unit for p in private if p.dataset == d}, key=_unit_order)
        panels[d] = units or ["non-private only"]
    ncols = max(len(u) for u in panels.values())
    nrows = len(datasets)

    lines = sorted({p.line for p in points}, key=lambda k: (k.label_epsilon is None, k.label))
    palette = matplotlib.colormaps["tab10" if len(lines) <= 10 else "tab20"].colors
    colors = {line: palette[i % len(palette)] for i, line in enumerate(lines)}
    fraction = _is_fraction(points)

    fig = Figure(figsize=(max(5.0 * ncols, 6.5), 4.0 * nrows + 0.3 * (len(lines) // 3 + 1) + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey="row")
    handles: dict[str, Any] = {}
    baseline_handles: dict[str, Any] = {}
    for row, dataset in enumerate(datasets):
        baselines = [p for p in points if p.dataset == dataset and p.epsilon is None]
        for col in range(ncols):
            ax = axes[row][col]
            if col >= len(panels[dataset]):
                ax.remove()
                continue
            unit = panels[dataset][col]
            here = [p for p in private if p.dataset == dataset and p.unit == unit]
            curves: dict[LineKey, list[Point]] = defaultdict(list)
            for p in here:
                curves[p.line].append(p)
            for line in sorted(curves, key=lambda k: k.label):
                pts = sorted(curves[line], key=lambda p: p.epsilon)
                xs = [p.epsilon for p in pts]
                ys = [p.mean for p in pts]
                halves = [0.0 if math.isnan(p.ci95) else p.ci95 for p in pts]
                color = colors[line]
                (handle,) = ax.plot(xs, ys, marker="o", markersize=4.5, linewidth=1.8, color=color, label=line.label)
                handles.setdefault(line.label, handle)
                if any(not math.isnan(p.ci95) for p in pts):
                    if len(pts) > 1:
                        ax.fill_between(
                            xs,
                            [y - h for y, h in zip(ys, halves)],
                            [y + h for y, h in zip(ys, halves)],
                            color=color,
                            alpha=0.18,
                            linewidth=0,
                        )
                    else:
                        ax.errorbar(xs, ys, yerr=halves, color=color, capsize=4, linewidth=1.2)
            for p in sorted(baselines, key=lambda p: p.line.label):
                color = colors[p.line]
                handle = ax.axhline(p.mean, linestyle="--", linewidth=1.4, color=color, label=p.line.label)
                baseline_handles.setdefault(p.line.label, handle)
                if not math.isnan(p.ci95):
                    ax.axhspan(p.mean - p.ci95, p.mean + p.ci95, color=color, alpha=0.08, linewidth=0)

            eps = sorted({p.epsilon for p in here})
            ax.set_xscale("log")
            if eps:
                ax.set_xlim(eps[0] / 1.5, eps[-1] * 1.5)
            else:
                ax.set_xlim(0.1, 10)
            ax.xaxis.set_major_locator(FixedLocator(eps))
            ax.xaxis.set_major_formatter(FuncFormatter(_fmt_eps))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_minor_formatter(NullFormatter())
            trusts = {p.trust_model for p in here} - {""}
            kind = _TRUST_SHORT.get(next(iter(trusts)), "DP") if len(trusts) == 1 else "DP"
            ax.set_xlabel(f"ε per {unit} ({kind}, log scale)" if here else "no private runs")
            if fraction:
                ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=None))  # decimals from the range
            if col == 0:
                ax.set_ylabel(metric.replace("_", " "))
            ax.set_title(unit if nrows == 1 else f"{dataset}: {unit}", fontsize=11)
            ax.grid(True, which="major", alpha=0.3)
        if fraction:  # the row shares its y axis: clamp it to [0, 100%] once everything is drawn
            lo, hi = axes[row][0].get_ylim()
            axes[row][0].set_ylim(max(lo, 0.0), min(hi, 1.02))

    fig.suptitle(
        title or (f"{', '.join(datasets)}: {metric.replace('_', ' ')}, mean ± 95% CI over trials"), fontsize=12
    )
    handles = dict(sorted(handles.items())) | dict(sorted(baseline_handles.items()))  # curves, then baselines
    if handles:
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncol=min(3, len(handles)),
            fontsize=9,
            frameon=False,
        )
    return fig


def build_figure(records: Iterable[TrialRecord], metric: str | None = None, title: str | None = None) -> Figure:
    """The privacy–utility figure of stored trials (``metric``: default :func:`choose_metric`)."""
    records = list(records)
    if not records:
        raise ValueError("no trials to plot")
    metric = metric or choose_metric(records)
    points = points_from_records(records, metric)
    if not points:
        raise ValueError(
            f"no trial carries the metric {metric!r}; the trials have "
            f"{', '.join(sorted({m for r in records for m in r.metrics}))}"
        )
    return figure_from_points(points, metric, title)


def save_figure(fig: Figure, out: Path) -> Path:
    """Write ``fig`` to ``out`` (parents created), at the resolution of every figure here."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "dataset"


def plot_rows(rows: list[dict[str, Any]], out: str | Path, metric_name: str = "test accuracy") -> Path:
    """Draw :func:`~privgraph.experiments.summary.summarize` rows (already aggregated) to ``out``."""
    if not rows:
        raise ValueError("no results to plot")
    return save_figure(figure_from_points(points_from_rows(rows), metric_name), Path(out))


def plot_db(
    db_path: str | Path, output: str | Path | None = None, dataset: str | None = None, metric: str | None = None
) -> list[Path]:
    """One PNG per dataset from the trials stored in ``db_path``; the written paths.

    ``output``: a folder (default ``results/``), where each dataset goes to
    ``privacy_utility_<dataset>.png`` (``..._<metric>.png`` when ``metric`` is
    given), or a ``.png`` file (with several datasets: ``<stem>_<dataset>.png``
    beside it).
    """
    db_path = Path(db_path)
    if not db_path.exists():
        raise ValueError(f"no results database at {db_path}")
    store = ResultsStore(db_path)
    records = list(store.records(**({"dataset": dataset} if dataset else {})))
    if not records:
        if dataset:
            known = sorted({r.dataset for r in store.records()})
            raise ValueError(
                f"no trials for dataset {dataset!r} in {db_path}" + (f" (it has {', '.join(known)})" if known else "")
            )
        raise ValueError(f"no trials in {db_path}")
    by_dataset: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        by_dataset[r.dataset].append(r)
    if metric is not None and not any(metric in r.metrics for r in records):
        have = sorted({m for r in records for m in r.metrics})
        raise ValueError(f"no trials with the metric {metric!r}; the trials have {', '.join(have)}")

    output = DEFAULT_DIR if output is None else Path(output)
    single_file = output.suffix.lower() == ".png"
    paths = []
    for name in sorted(by_dataset):
        rs = by_dataset[name]
        if metric is not None and not any(metric in r.metrics for r in rs):
            continue  # another dataset has it
        if single_file:
            out = output if len(by_dataset) == 1 else output.with_name(f"{output.stem}_{_slug(name)}{output.suffix}")
        else:
            out = output / f"privacy_utility_{_slug(name)}{'_' + _slug(metric) if metric else ''}.png"
        paths.append(save_figure(build_figure(rs, metric), out))
    return paths
