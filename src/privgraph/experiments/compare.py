"""Several methods on one dataset across ε, side by side: ``privgraph compare`` / :func:`compare`.

One grid (:mod:`privgraph.experiments.grid`): one row per method, every ε given (one setting without noise
for a non-private baseline), each setting with the same attack (:data:`DEFAULT_ATTACK`).  The sweep
(:func:`~privgraph.experiments.sweep.sweep`) runs the trials the store does not hold (a stopped compare
resumes: nothing stored runs again); the table and the figure are built from the stored trials only:

* the privacy unit of each method, from its stored guarantee (feature LDP, link LDP, edge DP, node DP, …),
  the rows grouped by it;
* accuracy, mean ± the half-width of the 95 % Student-t CI over the trials
  (:func:`~privgraph.experiments.summary.mean_ci`), one column per ε;
* the attack's AUC against the model trained on the release (``membership-confidence``: members are the
  target's training nodes, non-members its test nodes; it applies to every node-classification method),
  at each ε; "—" for a method it does not apply to (its setting runs without the attack);
* seconds per trial (the trial's wall time, :attr:`TrialRecord.wall_time
  <privgraph.experiments.store.TrialRecord.wall_time>`: release, training, evaluation and attack) and the
  peak RSS of a trial in the process that ran it (:mod:`privgraph.experiments.memory`), the largest over
  the trials; "?" for trials stored before privgraph recorded it.

Every method is checked before any trial: its name, its parameters and the dataset (the spec's checks), and
a restricted node-level method's degree cap against the graph (GAP-NDP's degree_cap=enforced, node-dpsgd refuse a
graph above it; GAP-NDP's default refuses none): a method
that cannot run is a ``ValueError`` of one line.  ``num_train`` (node-level DP-SGD's public training count) is
filled by the pipeline from the benchmark's public split, as ``privgraph run`` does.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privgraph.accounting.guarantee import TrustModel, Unit
from privgraph.display import format_metric
from privgraph.experiments.grid import Grid, GridSetting
from privgraph.experiments.pipeline import ExperimentSpec
from privgraph.experiments.store import ResultsStore, TrialRecord
from privgraph.experiments.summary import mean_ci
from privgraph.experiments.sweep import SweepSummary, sweep
from privgraph.progress import ProgressHook

if TYPE_CHECKING:
    from privgraph.request import MethodLike

DEFAULT_ATTACK = "membership-confidence"
DEFAULT_METHODS = ("lpgnn", "blink", "gap-edp", "gap-ndp")  # one per unit: feature LDP, link LDP, edge DP, node DP
DEFAULT_EPSILONS = (1.0, 4.0)
DEFAULT_DB = "results/compare.jsonl"
NON_PRIVATE = "non-private"
# the privacy units by their short names, in the table's order (privgraph.accounting.guarantee.Unit)
UNIT_NAMES = {
    "node feature vector": "feature",
    "node label": "label",
    "adjacency list": "link",
    "private edge": "edge",
    "edge": "edge",
    "node (features and label)": "node",
    "node (features, label and edges)": "node",
    "sensitive attribute": "attribute",
}
UNIT_ORDER = (
    "feature LDP", "label LDP", "link LDP", "edge LDP", "edge DP", "node DP", "restricted node DP", "attribute DP"
)  # fmt: skip


# one line, printed under the table and written under compare.md: what no guarantee covers
MEASURED_NOTE = (
    "s/trial and peak MiB are measured on the data as given, without noise (like the accuracy and the AUC): they "
    "depend on it (its size, its degrees) and no guarantee covers them; on a private graph, do not publish them "
    "as part of a release (the figure shows accuracy and attack AUC only)"
)


def unit_group(record: TrialRecord) -> str:
    """The privacy unit a stored trial's guarantee protects, short (``feature LDP``, ``link LDP``, ``edge DP``,
    ``node DP``, …), or ``non-private`` for a setting without noise."""
    from privgraph.experiments.plot import guarantee_unit

    if record.epsilon is None:
        return NON_PRIVATE
    unit, trust = guarantee_unit(record.guarantee)
    restricted = Unit.restricted_degree(unit) is not None  # "node (degree ≤ D)": its own group, never node DP's
    short = UNIT_NAMES.get(unit, "edge" if unit.startswith("edge") else "restricted node" if restricted else unit)
    return f"{short} {'LDP' if trust == TrustModel.LOCAL else 'DP'}"


def _unit_key(unit: str) -> tuple:
    if unit == NON_PRIVATE:
        return (len(UNIT_ORDER) + 1, unit)
    return (UNIT_ORDER.index(unit), unit) if unit in UNIT_ORDER else (len(UNIT_ORDER), unit)


@dataclass
class CompareRow:
    """One method's line: its unit, accuracy and attack AUC per ε (mean, CI half-width, trials), seconds per
    trial (mean) and peak RSS (the largest of its trials, MiB)."""

    unit: str
    method: str
    model: str
    accuracy: dict[float | None, tuple[float, float, int]] = field(default_factory=dict)
    attack_auc: dict[float | None, tuple[float, float, int]] | None = None  # None: the attack does not apply
    seconds: float | None = None
    peak_mib: float | None = None
    trials: int = 0
    failed: int = 0
    metric: str = "accuracy"  # the task's utility metric shown (accuracy; an embedding release: utility_accuracy)

    def to_dict(self) -> dict[str, Any]:
        def cells(values: dict[float | None, tuple[float, float, int]] | None) -> list[dict[str, Any]] | None:
            if values is None:
                return None
            return [
                {"epsilon": eps, "mean": m, "ci95": None if math.isnan(h) else h, "trials": n}
                for eps, (m, h, n) in values.items()
            ]

        return {
            "unit": self.unit,
            "method": self.method,
            "model": self.model,
            "metric": self.metric,
            "accuracy": cells(self.accuracy),
            "attack_auc": cells(self.attack_auc),
            "seconds_per_trial": self.seconds,
            "peak_rss_mib": self.peak_mib,
            "trials": self.trials,
            "failed": self.failed,
        }


@dataclass
class Comparison:
    """What :func:`compare` returns: the rows (grouped by unit), the ε, the attack, what the sweep did and the
    files written."""

    dataset: str
    epsilons: list[float | None]
    attack: str | None
    rows: list[CompareRow]
    summary: SweepSummary | None = None
    files: list[Path] = field(default_factory=list)

    def header(self) -> list[str]:
        return [
            "unit",
            "method",
            *(f"ε={_eps(e)}" for e in self.epsilons),
            f"{self.attack} AUC" if self.attack else "attack AUC",
            "s/trial",
            "peak MiB",
        ]

    def cells(self) -> list[list[str]]:
        """The table's text, one list per row (:meth:`header`'s columns); the unit only on a group's first row."""
        out, last = [], None
        for r in self.rows:
            acc = [_utility(r.accuracy.get(e), r.metric) for e in self.epsilons]
            if r.attack_auc is None:
                auc = "—"
            else:
                auc = " / ".join(_auc(r.attack_auc[e]) for e in self.epsilons if e in r.attack_auc) or "—"
            seconds = "—" if r.seconds is None else f"{r.seconds:.1f}"
            peak = "?" if r.peak_mib is None else f"{r.peak_mib:.0f}"
            method = r.method if r.metric == "accuracy" else f"{r.method} ({r.metric})"
            method = method if not r.failed else f"{method} ({r.failed} failed)"
            out.append([r.unit if r.unit != last else "", method, *acc, auc, seconds, peak])
            last = r.unit
        return out

    def markdown(self) -> str:
        header = self.header()
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in self.cells()]
        attack = f"`{self.attack}`" if self.attack else "none"
        several = " (one value per ε, in the columns' order)" if len(self.epsilons) > 1 else ""
        notes = [
            f"Dataset {self.dataset}; accuracy (%) on the test nodes, mean ± 95 % CI over the trials; attack: "
            f"{attack}, its AUC{several} against the model trained on the release (—: it does not apply); "
            "s/trial: wall seconds of a trial (release, training, evaluation, attack); peak MiB: the largest peak "
            "RSS of a trial in the process that ran it.",
            "",
            MEASURED_NOTE[0].upper() + MEASURED_NOTE[1:] + ".",
        ]
        return f"# privgraph compare: {self.dataset}\n\n" + "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "epsilons": self.epsilons,
            "attack": self.attack,
            "rows": [r.to_dict() for r in self.rows],
            "files": [str(p) for p in self.files],
            **({"sweep": self.summary.to_dict()} if self.summary is not None else {}),
        }


def _eps(eps: float | None) -> str:
    return "none" if eps is None else f"{eps:g}"


def _utility(cell: tuple[float, float, int] | None, metric: str = "accuracy") -> str:
    return "—" if cell is None else format_metric(metric, cell[0], cell[1])


def _auc(cell: tuple[float, float, int]) -> str:
    return format_metric("attack_auc", cell[0], cell[1])


def build_grid(
    methods: Sequence[MethodLike],
    dataset: str = "sbm",
    epsilons: Iterable[float | None] = DEFAULT_EPSILONS,
    trials: int = 3,
    attack: str | None = DEFAULT_ATTACK,
    params: dict[str, dict[str, Any]] | None = None,
    hyperparameters: dict[str, Any] | None = None,
    model: str | None = None,
    seed: int = 0,
    synthetic: dict[str, Any] | None = None,
    data_root: str | None = None,
    data: Any = None,
) -> tuple[Grid, dict[str, str]]:
    """The comparison's grid, checked, and the methods the attack does not apply to (with the reason).
    ``data``: the user's own graph instead of ``dataset`` (each setting's ``input``, under one fresh
    :func:`~privgraph.experiments.pipeline.new_input_id`).

    Raises ``ValueError`` (one line) before any trial: an unknown or repeated method, a parameter of another
    method, a method that cannot run on the dataset (its spec's checks, and the degree bound of a node-level
    method on the graph: this loads the dataset)."""
    from privgraph.experiments.pipeline import new_input_id
    from privgraph.methods import method_class
    from privgraph.request import method_name_and_params

    params = dict(params or {})
    named = [method_name_and_params(m) for m in methods]  # a Params object or a built method: its name and values
    for name, values in named:
        if values:
            params[name] = {**values, **params.get(name, {})}
    methods = [name for name, _ in named]
    if not methods:
        raise ValueError("compare needs at least one method")
    repeated = sorted({m for m in methods if methods.count(m) > 1})
    if repeated:
        raise ValueError(f"compare: {', '.join(repeated)} given twice")
    for m in methods:
        method_class(m)  # an unknown name: the registry's one line
    stray = sorted(set(params) - set(methods))
    if stray:
        raise ValueError(f"compare: parameters given for {', '.join(stray)}, which is not compared")
    epsilons = list(epsilons)
    fields: dict[str, Any] = {"trials": trials, "seed": seed}
    if hyperparameters:
        fields["hyperparameters"] = dict(hyperparameters)
    if synthetic:
        fields["synthetic"] = dict(synthetic)
    if model is not None:
        fields["model"] = model
    own = {"input": data, "input_id": new_input_id()} if data is not None else {}
    if data is not None:
        dataset = getattr(data, "name", None) or "input"

    no_attack: dict[str, str] = {}
    rows = []
    data_cache: dict[str, Any] = {}
    for m in methods:
        private = getattr(method_class(m), "private", True)
        base = ExperimentSpec(
            m, dataset, epsilons[:1] if private else [], dict(params.get(m, {})), data_root=data_root, **fields, **own
        )
        try:
            method, task = base.build()
        except ValueError as err:
            raise ValueError(f"{m} cannot run on {dataset}: {err}") from None
        _check_domain(m, dataset, method, task, data_cache)
        row: dict[str, Any] = {"label": m, "method": m, "params": dict(params.get(m, {}))}
        if attack is not None:
            try:
                with_attack = dict(params.get(m, {}))
                ExperimentSpec(
                    m, dataset, list(base.epsilons), with_attack, data_root=data_root, attack=attack, **fields, **own
                ).build()
                row["attack"] = attack
            except ValueError as err:
                no_attack[m] = str(err)
        rows.append(row)
    raw = {
        "name": "compare",
        "title": f"compare on {dataset}",
        "defaults": fields,
        "tables": [{"name": "compare", "datasets": [dataset], "epsilons": epsilons or [1.0], "rows": rows}],
    }
    try:
        grid = Grid.from_dict(raw, data_root=data_root, where="compare")
        if data is not None:  # the user's graph in every setting, identified by this call's input_id
            grid = grid.with_input(**own)
        grid.validate()
    except ValueError as err:
        raise ValueError(str(err).replace("grid compare, table compare, ", "")) from None
    return grid, no_attack


def _check_domain(name: str, dataset: str, method: Any, task: Any, cache: dict[str, Any]) -> None:
    """A method with a data domain (a node-level degree bound) refuses the dataset here, before any trial."""
    check = getattr(method, "check_domain", None)
    if check is None:
        return
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # no native thread pool started here: the sweep may fork its workers from this process
    try:
        if task.name not in cache:
            cache[task.name] = task.load()
        check(cache[task.name])
    except ValueError as err:
        raise ValueError(
            f"{name} cannot run on {dataset}: {err} (in compare: --param {name}.NAME=VALUE)".replace("\n", " ")
        ) from None
    finally:
        torch.set_num_threads(previous)


def collect(grid: Grid, store: ResultsStore, attack: str | None = DEFAULT_ATTACK) -> list[CompareRow]:
    """The table's rows from the trials ``store`` holds for ``grid``'s settings, grouped by unit (in
    :data:`UNIT_ORDER`, the non-private baselines last), in the methods' order within a unit."""
    from privgraph.experiments.plot import choose_metric

    settings: dict[str, GridSetting] = {s.key: s for s in grid.unique_settings()}
    ok: dict[str, list[TrialRecord]] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    for r in store.records(errors=True):
        if r.config_hash not in settings or r.trial >= settings[r.config_hash].trials:
            continue
        if r.ok:
            ok[r.config_hash].append(r)
        else:
            failed[r.config_hash] += 1
    rows: list[CompareRow] = []
    order = list(dict.fromkeys(s.label for s in grid.settings))
    for label in order:
        mine = [s for s in settings.values() if s.label == label]
        records = [r for s in mine for r in ok[s.key]]
        row = CompareRow(
            unit=unit_group(records[0]) if records else "?",
            method=label,
            model=records[0].model if records else (mine[0].model or ""),
            failed=sum(failed[s.key] for s in mine),
        )
        metric = choose_metric(records) if records else "accuracy"  # accuracy; an embedding's utility_accuracy
        row.metric = metric
        attacked = any(s.spec.attack for s in mine)
        row.attack_auc = {} if attacked and attack else None
        for s in mine:
            rs = ok[s.key]
            if not rs:
                continue
            m, _, h = mean_ci(r.metrics[metric] for r in rs)
            row.accuracy[s.epsilon] = (m, h, len(rs))
            aucs = [r.metrics["attack_auc"] for r in rs if "attack_auc" in r.metrics]
            if row.attack_auc is not None and aucs:
                m, _, h = mean_ci(aucs)
                row.attack_auc[s.epsilon] = (m, h, len(aucs))
        if records:
            row.seconds = sum(r.wall_time for r in records) / len(records)
            peaks = [r.peak_rss_mib for r in records if r.peak_rss_mib is not None]
            row.peak_mib = max(peaks) if peaks else None
            row.trials = len(records)
        rows.append(row)
    rows.sort(key=lambda r: _unit_key(r.unit))  # stable: the methods' order within a unit
    return rows


def figure(grid: Grid, store: ResultsStore, attack: str | None = DEFAULT_ATTACK) -> Any:
    """The figure of the stored trials (:func:`~privgraph.experiments.plot.figure_from_points`): one panel per
    privacy unit, accuracy against ε in the first row and the attack's AUC in the second, each mean ± 95 % CI;
    the non-private baselines dashed."""
    from dataclasses import replace

    from privgraph.experiments.plot import choose_metric, figure_from_points, points_from_records

    keys = {s.key for s in grid.unique_settings()}
    records = [r for r in store.records() if r.config_hash in keys]
    dataset = grid.settings[0].dataset
    by_method: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        by_method[r.method].append(r)
    points = [
        replace(p, dataset=f"{dataset}: accuracy")
        for rs in by_method.values()
        for p in points_from_records(rs, choose_metric(rs))
    ]
    if attack:
        points += [replace(p, dataset=f"{dataset}: {attack} AUC") for p in points_from_records(records, "attack_auc")]
    if not points:
        raise ValueError("no stored trial to plot")
    return figure_from_points(
        points,
        "accuracy / attack AUC",
        title=f"{dataset}: accuracy and {attack or 'no'} attack AUC, mean ± 95% CI over trials",
    )


def compare(
    methods: Sequence[MethodLike] = DEFAULT_METHODS,
    dataset: str = "sbm",
    epsilons: Iterable[float | None] = DEFAULT_EPSILONS,
    trials: int = 3,
    db: str | Path = DEFAULT_DB,
    out: str | Path | None = None,
    attack: str | None = DEFAULT_ATTACK,
    params: dict[str, dict[str, Any]] | None = None,
    hyperparameters: dict[str, Any] | None = None,
    model: str | None = None,
    seed: int = 0,
    synthetic: dict[str, Any] | None = None,
    data_root: str | None = None,
    workers: int | None = None,
    executor: str = "auto",
    progress: ProgressHook | None = None,
    on_trial: Callable[[GridSetting, TrialRecord, float], None] | None = None,
    on_error: Callable[[TrialRecord], None] | None = None,
    notify: Callable[[str], None] | None = None,
    data: Any = None,
) -> Comparison:
    """Compare ``methods`` on ``dataset`` (or on your own graph, ``data``) at every ε of ``epsilons`` (module
    docstring).

    Args:
        methods: registered methods (``privgraph methods``) by name, ``Params`` object or built; each is one row.
        dataset: a dataset, or ``sbm`` (the synthetic graph, the default).
        epsilons: the ε of every private method (a non-private one runs once, without noise).
        trials: trials per (method, ε); trial ``t`` has seed ``seed + t``.
        db: the JSON-lines store: trials it holds are not run again, and the table reads it.
        out: a folder for ``compare.md`` (the table) and ``compare.png`` (the figure); None writes nothing.
        attack: the attack run against every trial's model (None: no attack column values).
        params: each method's parameters, ``{method: {name: value}}``.
        hyperparameters: the task model's training settings, for every method that trains one.
        model: the task model (default: each method's own).
        seed: the first trial's seed.
        synthetic: settings of the synthetic graph (``sbm``).
        data_root: the raw-data folder (default ``$PRIVGRAPH_DATA``).
        workers: the sweep's trials at a time (:func:`~privgraph.experiments.sweep.sweep`).
        executor: the sweep's executor.
        progress: the sweep's progress hook (per trial).
        on_trial: called with every trial that ran, once stored.
        on_error: called with every failed trial's record.
        notify: called with one line before a slow start.
        data: your own graph (a PyG ``Data``, e.g. :func:`~privgraph.data.read_graph`'s, with the same checks as
            :func:`~privgraph.privatize`) instead of ``dataset``.  Its trials are stored under a fresh random
            identity (nothing derived from the graph is stored), so a second call runs them again.

    Returns:
        The comparison (:class:`Comparison`): its rows (grouped by unit), what the sweep did, the files written.
    """
    grid, _ = build_grid(
        methods, dataset, epsilons, trials, attack, params, hyperparameters, model, seed, synthetic, data_root, data
    )
    summary = sweep(
        grid,
        db,
        workers=workers,
        executor=executor,
        progress=progress,
        on_error=on_error,
        on_trial=on_trial,
        notify=notify,
    )
    return comparison(grid, ResultsStore(db), attack, out, summary)


def comparison(
    grid: Grid,
    store: ResultsStore,
    attack: str | None = DEFAULT_ATTACK,
    out: str | Path | None = None,
    summary: SweepSummary | None = None,
) -> Comparison:
    """The :class:`Comparison` of the trials ``store`` holds for ``grid``; with ``out``, ``compare.md`` and
    ``compare.png`` written there."""
    eps = list(dict.fromkeys(s.epsilon for s in grid.settings))
    eps.sort(key=lambda e: (e is None, e or 0.0))
    result = Comparison(grid.settings[0].dataset, eps, attack, collect(grid, store, attack), summary)
    if out is not None:
        from privgraph.experiments.plot import save_figure

        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        table = folder / "compare.md"
        table.write_text(result.markdown(), encoding="utf-8")
        result.files = [table]
        if any(r.accuracy for r in result.rows):
            result.files.append(save_figure(figure(grid, store, attack), folder / "compare.png"))
    return result


__all__ = [
    "DEFAULT_ATTACK",
    "DEFAULT_DB",
    "DEFAULT_EPSILONS",
    "DEFAULT_METHODS",
    "CompareRow",
    "Comparison",
    "build_grid",
    "collect",
    "compare",
    "comparison",
    "figure",
    "unit_group",
]
