"""Experiment grids: a paper's protocol as a TOML file, expanded into settings and trials.

A grid is methods × datasets × models × ε × method parameters × trials, plus
the tuning protocol.  The file (``src/privgraph/grids/*.toml``)::

    name = "blink"                      # the grid's name (report file names)
    title = "Blink (Zhu et al. 2023), Table 3"
    published = "blink"                 # src/privgraph/published/blink.toml (beside the grids folder)
    duration = "about 2 h with 2 workers on a 2-core machine"
    metric = "accuracy"                 # the metric the tables show (a table may list its own `metrics`)

    [defaults]                          # ExperimentSpec fields for every setting
    trials = 30
    tune = true
    tune_budget = 20

    [[tables]]
    name = "gcn"
    datasets = ["cora", "citeseer"]
    models = ["gcn"]                    # the task model; a row may fix its own
    epsilons = [1, 2, 3, 4, 5, 6, 7, 8]

    [[tables.rows]]
    label = "Blink-Hard"
    method = "blink"
    params = { variant = "hard" }       # fixed method parameters
    grid = { degree_share = [0.1, 0.5] }  # method parameters swept (one setting per combination)

Any :class:`~privgraph.experiments.pipeline.ExperimentSpec` field may be set
in ``[defaults]``, a table or a row (the row wins).  A method without ε
(non-private baselines) gets one setting without noise; ``epsilons`` on a row
replaces the table's, and ``"none"`` in it is the release without noise of a
method where ε is optional (PPCVGAE).  A setting several tables share (the MLP beside every model) runs
once.  Each setting is one ε of one spec (so ``privgraph run
--epsilon E`` of the same spec runs the same trials), identified by its
:func:`~privgraph.experiments.pipeline.config_hash`; trial ``t`` has seed
``seed + t``.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privgraph.device import parse_device
from privgraph.experiments.pipeline import ExperimentSpec, config_hash
from privgraph.grids import GRIDS_DIR, grid_file
from privgraph.methods import method_class

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SPEC_FIELDS = {f.name for f in dataclasses.fields(ExperimentSpec)} - {
    "input",
    "input_id",
    "method",
    "dataset",
    "epsilons",
    "params",
}
_GRID_KEYS = {"name", "title", "published", "duration", "metric", "description", "defaults", "tables"}
_TABLE_KEYS = {"name", "title", "datasets", "models", "epsilons", "rows", "metrics"} | SPEC_FIELDS
_ROW_KEYS = {"label", "method", "params", "grid", "epsilons", "models"} | SPEC_FIELDS


@dataclass(frozen=True)
class GridSetting:
    """One ε of one spec in one table row: the unit that trials repeat."""

    table: str
    label: str
    dataset: str
    model: str
    epsilon: float | None
    spec: ExperimentSpec
    key: str  # config_hash(spec, epsilon)

    @property
    def trials(self) -> int:
        return self.spec.trials


@dataclass
class Table:
    name: str
    title: str
    datasets: list[str]
    epsilons: list[float | None]
    labels: list[str]  # row labels in the file's order (with their parameter grid)
    metrics: list[str] = field(default_factory=list)  # the metrics shown (default: the grid's, or the task's first)


@dataclass
class Grid:
    """A parsed grid file (module docstring)."""

    name: str
    title: str = ""
    published: str | None = None
    duration: str = ""
    metric: str | None = None
    description: str = ""
    tables: list[Table] = field(default_factory=list)
    settings: list[GridSetting] = field(default_factory=list)
    path: Path | None = None

    @classmethod
    def load(cls, path: str | Path, data_root: str | None = None) -> Grid:
        """A grid file, or the name of a grid shipped with privgraph (:func:`grid_file`)."""
        path = grid_file(path)
        try:
            raw = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path}: not valid TOML: {err}") from None
        grid = cls.from_dict(raw, data_root=data_root, where=str(path))
        grid.path = path
        return grid

    @classmethod
    def from_dict(cls, raw: dict[str, Any], data_root: str | None = None, where: str = "grid") -> Grid:
        _known(raw, _GRID_KEYS, where)
        if "name" not in raw:
            raise ValueError(f"{where}: a grid needs a name")
        defaults = dict(raw.get("defaults", {}))
        _known(defaults, SPEC_FIELDS, f"{where} [defaults]")
        grid = cls(
            name=raw["name"],
            title=raw.get("title", ""),
            published=raw.get("published"),
            duration=raw.get("duration", ""),
            metric=raw.get("metric"),
            description=raw.get("description", ""),
        )
        names = set()
        for i, table in enumerate(raw.get("tables", [])):
            tname = table.get("name", f"table{i + 1}")
            if tname in names:
                raise ValueError(f"{where}: two tables are named {tname!r}")
            names.add(tname)
            grid._expand_table(tname, table, defaults, data_root, f"{where} table {tname!r}")
        if not grid.settings:
            raise ValueError(f"{where}: the grid has no settings (give [[tables]] with datasets and rows)")
        seen: set[tuple[str, str]] = set()
        for s in grid.settings:
            if (s.table, s.key) in seen:
                raise ValueError(
                    f"{where}: the setting {s.label} on {s.dataset} at ε={s.epsilon} appears twice in table {s.table!r}"
                )
            seen.add((s.table, s.key))
        return grid

    def _expand_table(
        self, tname: str, table: dict[str, Any], defaults: dict[str, Any], data_root: str | None, where: str
    ) -> None:
        _known(table, _TABLE_KEYS, where)
        datasets = list(table.get("datasets", []))
        if not datasets or not table.get("rows"):
            raise ValueError(f"{where}: a table needs datasets and rows")
        shared = {k: v for k, v in table.items() if k in SPEC_FIELDS}
        eps_all = [_epsilon(e) for e in table.get("epsilons", [])]
        labels: list[str] = []
        for row in table["rows"]:
            _known(row, _ROW_KEYS, f"{where} row {row.get('label', '?')!r}")
            if "method" not in row:
                raise ValueError(f"{where}: every row needs a method")
            cls = method_class(row["method"])
            fields = {**defaults, **shared, **{k: v for k, v in row.items() if k in SPEC_FIELDS}}
            models = (
                [fields.pop("model")]
                if "model" in row
                else row.get("models") or table.get("models") or [fields.pop("model", None)]
            )
            fields.pop("model", None)
            swept = row.get("grid", {})
            combos = [dict(zip(swept, values)) for values in itertools.product(*swept.values())] or [{}]
            eps_row = [_epsilon(e) for e in row["epsilons"]] if "epsilons" in row else eps_all
            for combo in combos:
                label = row.get("label", row["method"])
                if combo:
                    label += " (" + ", ".join(f"{k}={v}" for k, v in combo.items()) + ")"
                labels.append(label)
                for dataset, model in itertools.product(datasets, models):
                    private = getattr(cls, "private", True)
                    epsilons: list[float | None] = list(eps_row) if private else [None]
                    if private and not epsilons:
                        epsilons = [None] if getattr(cls, "epsilon_optional", False) else []
                    if not epsilons:
                        raise ValueError(f"{where}: {label} is private and needs epsilons")
                    for eps in epsilons:
                        spec = ExperimentSpec(
                            method=row["method"],
                            dataset=dataset,
                            epsilons=[eps],
                            params={**row.get("params", {}), **combo},
                            model=model,
                            data_root=data_root,
                            **fields,
                        )
                        self.settings.append(
                            GridSetting(tname, label, dataset, model or "", eps, spec, config_hash(spec, eps))
                        )
        self.tables.append(
            Table(
                tname,
                table.get("title", tname),
                datasets,
                eps_all,
                list(dict.fromkeys(labels)),
                list(table.get("metrics", [])),
            )
        )

    def select(
        self,
        tables: Iterable[str] = (),
        datasets: Iterable[str] = (),
        labels: Iterable[str] = (),
        trials: int | None = None,
        epsilons: Iterable[Any] = (),
    ) -> Grid:
        """The part of the grid to run (empty filters keep everything); ``trials`` overrides the count.
        ``epsilons`` are numbers or "none"; a setting's trials do not depend on which others run (each
        setting is its own spec), so a filtered sweep stores what the whole grid would."""
        tables, datasets, labels = set(tables), {d.lower() for d in datasets}, set(labels)
        eps_wanted = {_epsilon(e) for e in epsilons}
        for what, wanted, have in (
            ("table", tables, {s.table for s in self.settings}),
            ("dataset", datasets, {s.dataset.lower() for s in self.settings}),
            ("row", labels, {s.label for s in self.settings}),
            ("ε", eps_wanted, {s.epsilon for s in self.settings}),
        ):
            unknown = wanted - have
            if unknown:

                def names(values: set[Any]) -> str:
                    return ", ".join(sorted(_epsilon_name(v) if what == "ε" else v for v in values))  # noqa: B023

                raise ValueError(f"the grid {self.name} has no {what} {names(unknown)} (it has {names(have)})")
        if trials is not None and trials < 1:
            raise ValueError("trials must be >= 1")
        chosen = [
            s
            for s in self.settings
            if (not tables or s.table in tables)
            and (not datasets or s.dataset.lower() in datasets)
            and (not labels or s.label in labels)
            and (not eps_wanted or s.epsilon in eps_wanted)
        ]
        if trials is not None:
            chosen = [dataclasses.replace(s, spec=dataclasses.replace(s.spec, trials=trials)) for s in chosen]
        return dataclasses.replace(self, settings=chosen)

    def unique_settings(self) -> list[GridSetting]:
        """The settings to run: a setting several tables show (the MLP of every model's table) runs once."""
        return list({s.key: s for s in reversed(self.settings)}.values())[::-1]

    def validate(self) -> None:
        """Every setting's spec checked before any work (``ValueError`` names the bad one); a device's
        spelling only (:func:`~privgraph.device.parse_device`: the trials may run on other machines)."""
        for s in self.unique_settings():
            try:
                if s.spec.device is not None:
                    parse_device(s.spec.device)
                dataclasses.replace(s.spec, epsilons=list(s.spec.epsilons)).build()
            except ValueError as err:
                raise ValueError(f"grid {self.name}, table {s.table}, {s.label} on {s.dataset}: {err}") from None

    def check_data(self, settings: Iterable[GridSetting] | None = None, timeout: float = 3.0) -> None:
        """The datasets of ``settings`` (default: every setting) can be read on this machine: their raw
        files under the data folder or the cache, or their download host answering within ``timeout``
        seconds (:meth:`~privgraph.data.registry.DatasetInfo.unavailable`); else ``ValueError``, one
        sentence per missing dataset.  Reads no data: a sweep calls it before any trial or worker starts."""
        from privgraph.data.registry import get_dataset

        seen: dict[tuple[str, str | None, tuple[str, ...]], None] = {}
        for s in self.unique_settings() if settings is None else settings:
            if s.spec.input is None:
                graphs = type(s.spec.build()[1]).datasets
                seen.setdefault((s.dataset, s.spec.data_root, graphs))
        missing = [
            reason
            for name, root, graphs in seen
            if (reason := get_dataset(name, *graphs).unavailable(root, timeout)) is not None
        ]
        if missing:
            raise ValueError(f"grid {self.name}: " + "; ".join(dict.fromkeys(missing)))

    def with_input(self, input: Any, input_id: str, name: str | None = None) -> Grid:
        """This grid on the user's own graph: every setting's spec given ``input`` and ``input_id`` (its
        identity in the store) in place of its dataset (named ``name``, default the graph's ``name`` or
        ``input``), and its key recomputed (:func:`config_hash` hashes ``input_id``); settings that differed
        only by their dataset become one."""
        name = name or getattr(input, "name", None) or "input"
        settings = []
        for s in self.settings:
            spec = dataclasses.replace(s.spec, dataset=name, input=input, input_id=input_id)
            settings.append(dataclasses.replace(s, dataset=name, spec=spec, key=config_hash(spec, s.epsilon)))
        return dataclasses.replace(self, settings=settings)

    def published_path(self) -> Path | None:
        """``src/privgraph/published/NAME.toml`` beside the grids folder, if the grid names one."""
        if self.published is None:
            return None
        base = self.path.parent.parent if self.path is not None else GRIDS_DIR.parent
        return base / "published" / f"{self.published}.toml"


def _epsilon(value: Any) -> float | None:
    """An ε of a grid file: a number, or "none" (the release without noise, where ε is optional)."""
    if isinstance(value, str) and value.lower() == "none":
        return None
    return float(value)


def _epsilon_name(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"


def _known(raw: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(raw) - allowed
    if unknown:
        raise ValueError(f"{where}: unknown keys {', '.join(sorted(unknown))} (known: {', '.join(sorted(allowed))})")


__all__ = ["Grid", "GridSetting", "Table"]
