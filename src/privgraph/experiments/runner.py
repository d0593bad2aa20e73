"""Experiment runner: releases, (optional) tuning on validation, trials, storage.

Protocol for one setting (dataset, method, ε):

* trial ``t`` uses seed ``seed + t`` for its split, its one-time feature
  (and label) release and the model initialisation;
* with ``tune``, hyperparameters are chosen once per (dataset, ε) on the
  *validation* accuracy of trial 0's release — the same release, so no extra
  privacy is spent — by a seeded random search over the method's grid
  (``SEARCH_SPACE``, ``tune_budget`` configurations, the defaults always
  included); all trials then use the chosen values, which are stored;
* under label privacy the validation accuracy is measured on the denoised
  noisy labels the server holds, never on the true labels;
* a method's *release* parameters (``Method.release_search``, e.g. Blink's
  degree share δ) change the release itself, so with ``tune`` and no value
  given each candidate is released anew on trial 0 and the one with the best
  validation accuracy (default hyperparameters) is kept before the
  hyperparameters are searched on its release.  Those candidate releases
  are real privacy spending on the same data: the guarantee's notes state
  the total (basic composition), as the source papers do not;
* randomness: every release draws from its own stream
  (:func:`~privgraph.mechanisms.release_source`: trial seed, ε index and,
  for a candidate of the selection, its index; the OS source with
  ``secure``).  Basic composition over candidates holds only for independent
  draws: two Blink candidates that shared one Laplace draw at two known
  scales gave every node's exact degree.  Trial 0 *is* the chosen candidate's
  release, and tuning reads trial 0's release, so neither is a new release;
  label reports are drawn once per trial and ε and shared by the candidates
  (they do not depend on the release parameters).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from torch_geometric.data import Data

from privgraph import __version__
from privgraph.accounting import PrivacyReport
from privgraph.data import load, mark_private_edges, sbm_graph, stratified_split, validate_graph
from privgraph.data.annotations import check_private_ratio
from privgraph.mechanisms import SECURE_NOTE, check_epsilon, derive_seed, release_source
from privgraph.methods import (
    SEARCH_SPACE,
    Hyperparameters,
    LabelReports,
    Method,
    Task,
    get_method,
    method_class,
    report_labels,
)
from privgraph.methods.base import Release
from privgraph.nn import MODELS
from privgraph.experiments.selection import Selection, select_on_validation
from privgraph.experiments.store import ResultsStore, TrialRecord
from privgraph.experiments.summary import summarize
from privgraph.progress import ProgressHook
from privgraph.train import TrainResult


@dataclass
class ExperimentSpec:
    method: str
    dataset: str = "sbm"
    epsilons: list[float] = field(default_factory=lambda: [1.0])
    model: str | None = None
    trials: int = 10
    seed: int = 0
    mechanism: str = "multibit"
    delta: float | None = None  # Gaussian δ (default 1e-5) or Blink's degree share δ (default 0.1)
    variant: str | None = None  # Blink: hard | hybrid
    epsilon_y: float | None = None
    tune: bool = False
    tune_budget: int = 20
    split: str = "random"
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    secure: bool = False
    clip: bool = False
    data_root: str | None = None
    synthetic: dict[str, Any] = field(default_factory=dict)
    private_ratio: float | None = None  # mark this fraction of edges private (seeded by ``seed``)
    # the method's own parameters (its Params fields, e.g. HeteroRR's epsilon_f, gamma, mcmc_steps)
    options: dict[str, Any] = field(default_factory=dict)

    def method_params(self) -> dict[str, Any]:
        """The method's parameters given by this spec (its ``Params`` fill the rest): ``options``
        as they are, and the spec's shared fields (``mechanism``, ``delta``, ``variant``, ``clip``)
        for the methods that have them; one set away from its default for a method without that
        parameter is an error."""
        known = {f.name for f in dataclasses.fields(method_class(self.method).Params)}
        shared = {name: getattr(self, name) for name in ("mechanism", "delta", "variant", "clip")}
        defaults = {f.name: f.default for f in dataclasses.fields(self) if f.name in shared}
        stray = sorted(k for k, v in shared.items() if k not in known and v != defaults[k])
        if stray:
            raise ValueError(f"method {self.method!r} has no parameter {', '.join(stray)}; its parameters: "
                             f"{', '.join(sorted(known)) or 'none'}")
        return {**{k: v for k, v in shared.items() if k in known and v is not None}, **self.options}

    def validate(self) -> None:
        cls = method_class(self.method)
        if cls.task != Task.NODE_CLASSIFICATION or cls.heterogeneous:
            raise ValueError(f"{self.method} is a {cls.task.value} method on "
                             f"{'HeteroData' if cls.heterogeneous else 'Data'}: the node-classification runner "
                             "does not run it")
        method = get_method(self.method, **self.method_params())
        if self.model is not None and self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose from {MODELS}")
        if method.private:
            if not self.epsilons:
                raise ValueError(f"method {self.method!r} needs at least one --epsilon")
            self.epsilons = [check_epsilon(e) for e in self.epsilons]
        if self.epsilon_y is not None:
            check_epsilon(self.epsilon_y, "epsilon_y")
        if self.trials < 1:
            raise ValueError("trials must be >= 1")
        if self.split not in ("random", "public"):
            raise ValueError(f"split must be 'random' or 'public', got {self.split!r}")
        if self.tune_budget < 1:
            raise ValueError("tune_budget must be >= 1")
        self._validate_options(method)
        Hyperparameters().update(**self.hyperparameters)

    def _validate_options(self, method: Method) -> None:
        """What the method's ``Params`` cannot check: the private-edge annotation it reads."""
        if self.private_ratio is not None:
            check_private_ratio(self.private_ratio)
        if method.needs_private_edges and self.private_ratio is None:
            raise ValueError(f"method {self.method!r} protects private edges: say which with --private-ratio ρ "
                             "(a seeded random fraction of the edges is marked private)")


@dataclass
class ExperimentResult:
    """A run's trials and reports; ``to_json`` is one object with one entry per summary row.
    The embedding and heterogeneous runners subclass it (their own metrics and header)."""

    spec: ExperimentSpec
    run_id: str
    records: list[TrialRecord]
    reports: dict[float | None, PrivacyReport]

    JSON_KEYS: ClassVar[tuple[str, ...]] = ("epsilon", "epsilon_y", "metric", "mean", "std", "ci95", "trials",
                                            "mechanism", "model", "hyperparameters", "release_options", "tuned",
                                            "privacy")

    def summary(self) -> list[dict[str, Any]]:
        return summarize(self.records)

    def json_header(self) -> dict[str, Any]:
        """Run-level fields of the JSON object besides method, dataset, run id and results."""
        return {"model": self.records[0].model if self.records else self.spec.model}

    def to_json(self) -> dict[str, Any]:
        return _json_safe({
            "method": self.spec.method,
            "dataset": self.records[0].dataset if self.records else self.spec.dataset,
            **self.json_header(),
            "run_id": self.run_id,
            "results": [{k: row[k] for k in self.JSON_KEYS} for row in self.summary()],
        })


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def load_dataset(spec: ExperimentSpec) -> Data:
    if spec.dataset.lower() == "sbm":
        data = sbm_graph(seed=spec.seed, **spec.synthetic)
    else:
        data = load(spec.dataset, root=spec.data_root, split=spec.split, seed=spec.seed)
    if spec.private_ratio is not None:
        mark_private_edges(data, spec.private_ratio, seed=derive_seed(spec.seed, 5))
    return data


def search_configs(method: Method, base: Hyperparameters, budget: int, seed: int, labels: bool) -> list[Hyperparameters]:
    """The defaults plus up to ``budget − 1`` distinct random points of the grid."""
    names = [n for n in method.tunable] + (["label_steps"] if labels else [])
    grid = list(itertools.product(*(SEARCH_SPACE[n] for n in names)))
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(grid))
    configs = [base]
    for i in order:
        hp = base.update(**dict(zip(names, grid[i])))
        if hp not in configs:
            configs.append(hp)
        if len(configs) >= budget:
            break
    return configs


class Experiment:
    """Runs an :class:`ExperimentSpec`; see the module docstring for the protocol."""

    def __init__(self, spec: ExperimentSpec, store: ResultsStore | None = None, progress: ProgressHook | None = None):
        spec.validate()
        self.spec = spec
        self.method = get_method(spec.method, **spec.method_params())
        self.model = spec.model or self.method.default_model
        self.store = store
        self.progress = progress or (lambda task, done, total: None)
        self.run_id = uuid.uuid4().hex[:12]
        self.graph_notes: list[str] = []

    # -------------------------------------------------------------- pieces
    def load(self) -> Data:
        """The spec's graph, validated at the boundary (:func:`~privgraph.data.validate_graph`):
        duplicate edges merged (stated in every report), and for link-level methods an undirected
        graph without self-loops required."""
        simple = self.method.simple_graph
        data, notes = validate_graph(load_dataset(self.spec), undirected=simple, self_loops=not simple)
        self.graph_notes = [f"input graph: {n}" for n in notes]
        return data

    def _source(self, trial_seed: int, *stream: int):
        """The randomness of one release (module docstring, "randomness")."""
        return release_source(None if self.spec.secure else trial_seed, *stream)

    def _trial_data(self, data: Data, trial_seed: int) -> Data:
        if self.spec.split == "public":
            return data
        return stratified_split(copy.copy(data), seed=trial_seed)  # shallow: new masks, shared features

    def _fit(self, data: Data, release: Release, labels, hp: Hyperparameters, seed: int) -> TrainResult:
        return self.method.fit(release, data, self.model, hp, seed, labels)

    def _labels(self, data: Data, trial_seed: int, eps_index: int) -> LabelReports | None:
        """The trial's label reports (one collection per trial and ε), or None without label privacy."""
        if self.spec.epsilon_y is None:
            return None
        return report_labels(data, self.spec.epsilon_y, self._source(trial_seed, 2, eps_index))

    def _release(self, data: Data, eps: float | None, trial_seed: int, eps_index: int,
                 overrides: dict[str, Any] | None = None, candidate: int | None = None,
                 labels: LabelReports | None = None) -> tuple[Release, LabelReports | None, PrivacyReport]:
        """One release of ``data``; ``candidate`` (index of a selection candidate) gives it a stream of
        its own; ``labels`` reuses the trial's label reports (drawn here when None)."""
        method = self.method.with_params(**overrides) if overrides else self.method
        stream = (1, eps_index) if candidate is None else (1, eps_index, 1 + candidate)
        release = method.release(data, eps, self._source(trial_seed, *stream), self.progress)
        if labels is None:
            labels = self._labels(data, trial_seed, eps_index)
        report = PrivacyReport([release.guarantee] + list(release.extra_guarantees)
                               + ([labels.guarantee()] if labels else []))
        if self.spec.secure:
            report.guarantees = [g.with_note(SECURE_NOTE) for g in report.guarantees]
        for note in self.graph_notes:
            report.guarantees[0] = report.guarantees[0].with_note(note)
        return release, labels, report

    def _select_release_options(self, data: Data, eps: float | None, eps_index: int, base: Hyperparameters
                                ) -> Selection | None:
        """Choose the method's release parameters not given by the user (see module docstring);
        the selection holds the chosen candidate's release (trial 0's).  None when nothing is chosen."""
        given = self.spec.method_params()
        space = {k: v for k, v in self.method.release_search.items() if given.get(k) is None}
        if not self.spec.tune or not space:
            return None
        trial_seed = self.spec.seed
        tdata = self._trial_data(data, trial_seed)
        labels = self._labels(tdata, trial_seed, eps_index)

        def evaluate(i: int, options: dict[str, Any]):
            released = self._release(tdata, eps, trial_seed, eps_index, options, candidate=i, labels=labels)
            return self._fit(tdata, released[0], labels, base, derive_seed(trial_seed, 4, eps_index)).val_accuracy, \
                released

        candidates = [dict(zip(space, values)) for values in itertools.product(*space.values())]
        return select_on_validation(candidates, evaluate, "validation accuracy", self.progress,
                                    f"choosing {', '.join(space)} at ε={eps}")

    def _tune(self, tdata: Data, released: tuple, eps: float | None, eps_index: int,
              base: Hyperparameters) -> Hyperparameters:
        """Hyperparameters chosen on validation accuracy over trial 0's own release (``released``)."""
        release, labels, _ = released
        configs = search_configs(self.method, base, self.spec.tune_budget, derive_seed(self.spec.seed, 3, eps_index),
                                 labels is not None)
        best, best_val = base, -1.0
        for i, hp in enumerate(configs):
            self.progress(f"tuning ε={eps}", i, len(configs))
            result = self._fit(tdata, release, labels, hp, derive_seed(self.spec.seed, 4, eps_index))
            if result.val_accuracy > best_val:
                best, best_val = hp, result.val_accuracy
        self.progress(f"tuning ε={eps}", len(configs), len(configs))
        return best

    # ----------------------------------------------------------------- run
    def run(self) -> ExperimentResult:
        spec = self.spec
        data = self.load()
        base = Hyperparameters().update(**spec.hyperparameters)
        epsilons: list[float | None] = list(spec.epsilons) if self.method.private else [None]
        records: list[TrialRecord] = []
        reports: dict[float | None, PrivacyReport] = {}
        total = len(epsilons) * spec.trials
        done = 0
        for k, eps in enumerate(epsilons):
            selection = self._select_release_options(data, eps, k, base)
            chosen = selection.chosen if selection else {}
            selections = selection.candidates if selection else 0
            first = selection.release if selection else None
            if spec.tune:
                tdata = self._trial_data(data, spec.seed)
                first = first or self._release(tdata, eps, spec.seed, k, chosen)
                hp = self._tune(tdata, first, eps, k, base)
            else:
                hp = base
            for t in range(spec.trials):
                self.progress(f"{spec.method} on {spec.dataset}", done, total)
                start = time.perf_counter()
                trial_seed = spec.seed + t
                tdata = self._trial_data(data, trial_seed)
                # trial 0 is the release the selection and the tuning already looked at
                release, labels, report = (first if t == 0 and first is not None
                                           else self._release(tdata, eps, trial_seed, k, chosen))
                if selection:
                    report.guarantees[0] = report.guarantees[0].with_note(selection.note(eps))
                result = self._fit(tdata, release, labels, hp, derive_seed(trial_seed, 4, k))
                reports[eps] = report
                record = TrialRecord(
                    run_id=self.run_id, method=spec.method, dataset=getattr(data, "name", spec.dataset),
                    model=self.model, mechanism=release.details.get("mechanism"),
                    epsilon=eps, epsilon_y=spec.epsilon_y, trial=t, seed=None if spec.secure else trial_seed,
                    config={
                        "hyperparameters": hp.to_dict(), "tuned": spec.tune, "split": spec.split,
                        "delta": chosen.get("delta", spec.delta), "variant": spec.variant,
                        "release_options": chosen, "selection_releases": selections,
                        "secure": spec.secure, "release": release.details,
                        "private_ratio": spec.private_ratio, "options": spec.options,
                        "normalization": getattr(data, "normalization", None),
                    },
                    metrics={
                        "accuracy": result.test_accuracy, "val_accuracy": result.val_accuracy,
                        "train_accuracy": result.train_accuracy, "best_epoch": result.best_epoch,
                        "epochs_run": result.epochs_run, "train_seconds": result.seconds,
                    },
                    guarantee=report.to_dict(), wall_time=time.perf_counter() - start, version=__version__,
                )
                records.append(record)
                if self.store is not None:
                    self.store.add(record)
                done += 1
        self.progress(f"{spec.method} on {spec.dataset}", total, total)
        return ExperimentResult(spec, self.run_id, records, reports)


def run_experiment(spec: ExperimentSpec, store: ResultsStore | None = None,
                   progress: ProgressHook | None = None) -> ExperimentResult:
    return Experiment(spec, store, progress).run()
