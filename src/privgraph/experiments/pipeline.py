"""The experiment pipeline: load, release, the task's model, evaluation — one trial loop for every method.

One :class:`ExperimentSpec` names a registered method, its parameters
(``params``, validated by the method's ``Params``), a dataset (or the user's
own graph, ``input``), the ε values, the trials and the evaluation task
(:mod:`privgraph.experiments.tasks`: node classification, attribute
inference on embeddings, heterogeneous node classification, link
prediction).  Protocol for one setting (method, dataset, ε):

* trial ``t`` uses seed ``seed + t`` for its split, its release and the
  model's initialisation; every release draws from its own stream
  (:func:`~privgraph.mechanisms.release_source`: trial seed, ε index and,
  for a candidate of a selection, its index), or from the OS source with
  ``secure``.  Basic composition over releases holds only for independent
  draws: two Blink candidates that shared one Laplace draw at two known
  scales gave every node's exact degree;
* with ``tune``, the release parameters the task may choose and the user
  did not give (Blink's degree share δ, HeteDP's ε_f/ε) are chosen first on
  trial 0's validation score, each candidate a new release
  (:func:`~privgraph.experiments.selection.select_on_validation`; the cost,
  k×ε by basic composition, is stated in every guarantee of the setting);
  then the task's hyperparameters (node classification: a seeded random
  search over the method's grid, ``tune_budget`` configurations, defaults
  included) on the same release — no extra privacy spent.  Under label
  privacy the validation accuracy is measured on the denoised noisy labels;
* trial 0 *is* the chosen candidate's release, and tuning reads it, so
  neither is a new release;
* every trial is a :class:`~privgraph.experiments.store.TrialRecord` (its
  metrics, configuration and privacy report) in the store.

``privgraph run`` and (issue 18) ``privgraph sweep`` both run this pipeline.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from privgraph import __version__
from privgraph.accounting import PrivacyReport
from privgraph.experiments.selection import Selection, select_on_validation
from privgraph.experiments.store import ResultsStore, TrialRecord
from privgraph.experiments.summary import summarize
from privgraph.experiments.tasks import EvaluationTask, Released, task_for
from privgraph.mechanisms import check_epsilon, derive_seed
from privgraph.methods import Method, get_method, method_class
from privgraph.progress import ProgressHook
from privgraph.release import json_safe

DEFAULT_EPSILON = 1.0  # a private method's ε when none is given (not for methods where ε is optional)


@dataclass
class ExperimentSpec:
    """One setting grid of one method (module docstring).

    Args:
        method: a registered method (:data:`privgraph.methods.METHODS`).
        dataset: a dataset the loaders know, or ``sbm`` (synthetic); ignored with ``input``.
        epsilons: the ε values (one setting each); ``None`` is the method without noise where ε is
            optional (PPCVGAE); empty: ``[1.0]`` for a private method, none otherwise.
        params: the method's parameters (its ``Params`` fields).
        task: ``nc``, ``lp`` or ``attribute`` (default: the method's own; heterogeneous methods: ``nc``).
        trials: the number of trials; trial ``t`` is seeded by ``seed + t``.
        seed: the first trial's seed.
        hyperparameters: the task model's training settings (``--set``).
        tune: choose release parameters and hyperparameters on validation.
        tune_budget: hyperparameter configurations tried by ``tune``.
        secure: draw every noise from the OS source (nothing recorded can regenerate it).
        model: node classification's model (gcn, sage, gat, mlp).
        epsilon_y: node classification's label ε (LPGNN's label LDP).
        split: node classification's split, ``random`` or ``public``.
        private_ratio: mark this fraction of the edges private (edge-level methods).
        case: the attribute task's threat model (a or b).
        balance: the attribute task's class balancing of the attack.
        data_root: the raw-data folder (default ``$PRIVGRAPH_DATA``).
        synthetic: settings of the synthetic graph.
        input: the user's own graph (a ``Data``/``HeteroData``) instead of a dataset.
        attack: an attack (:data:`privgraph.attacks.ATTACKS`) run against every trial's target —
            the model trained on the release, or the released embedding; its metrics join the
            trial's (``privgraph attack``).
        attack_params: the attack's parameters.
    """

    method: str
    dataset: str = "sbm"
    epsilons: list[float | None] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    task: str | None = None
    trials: int = 10
    seed: int = 0
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    tune: bool = False
    tune_budget: int = 20
    secure: bool = False
    model: str | None = None
    epsilon_y: float | None = None
    split: str = "random"
    private_ratio: float | None = None
    case: str | None = None
    balance: bool = False
    data_root: str | None = None
    synthetic: dict[str, Any] = field(default_factory=dict)
    input: Any = None
    attack: str | None = None
    attack_params: dict[str, Any] = field(default_factory=dict)

    def build(self, progress: ProgressHook | None = None) -> tuple[Method, EvaluationTask]:
        """The method and the task, after every check (bad input raises ``ValueError`` before any work)."""
        cls = method_class(self.method)
        method = get_method(self.method, **self.params)
        task = task_for(cls, self.task)(self, method, progress or (lambda name, done, total: None))
        self._check_fields(task)
        if self.trials < 1:
            raise ValueError("trials must be >= 1")
        if self.tune_budget < 1:
            raise ValueError("tune_budget must be >= 1")
        self.epsilons = self._epsilons(method)
        task.validate()
        task.base_hyperparameters()
        attack = self.build_attack()
        if attack is not None:
            task.check_attack(attack)
        if self.tune and not task.tunes_hyperparameters() and not any(task.release_search(e) for e in self.epsilons):
            raise ValueError(f"{self.method} ({task.name} task) does not take --tune: nothing is chosen on validation "
                             "here (give its parameters with --param)")
        return method, task

    def validate(self) -> None:
        self.build()

    def build_attack(self) -> Any:
        """The attack (validated parameters), or None."""
        if self.attack is None:
            if self.attack_params:
                raise ValueError("attack_params given without an attack")
            return None
        from privgraph.attacks import get_attack

        return get_attack(self.attack, **self.attack_params)

    def _epsilons(self, method: Method) -> list[float | None]:
        eps = list(self.epsilons)
        if not method.private:
            if any(e is not None for e in eps):
                raise ValueError(f"{self.method} is not private: it takes no epsilon")
            return [None]
        if None in eps and not method.epsilon_optional:
            raise ValueError(f"{self.method} always adds noise: every setting needs an epsilon")
        if not eps:
            return [None] if method.epsilon_optional else [DEFAULT_EPSILON]
        return [None if e is None else check_epsilon(e) for e in eps]

    def _check_fields(self, task: EvaluationTask) -> None:
        """Fields that only some tasks read must stay at their defaults for the others."""
        optional = ("model", "epsilon_y", "split", "private_ratio", "case", "balance", "synthetic")
        defaults = {f.name: (f.default if f.default is not dataclasses.MISSING else f.default_factory())
                    for f in dataclasses.fields(self) if f.name in optional}
        stray = [name for name in optional if name not in task.reads and getattr(self, name) != defaults[name]]
        if stray:
            raise ValueError(f"{self.method} ({task.name} task) does not take {', '.join(stray)}")


@dataclass
class ExperimentResult:
    """A run's trials and reports; ``to_json`` is one object with one entry per summary row."""

    spec: ExperimentSpec
    run_id: str
    records: list[TrialRecord]
    reports: dict[float | None, PrivacyReport]
    task: str = "nc"
    metrics: tuple[str, ...] = ("accuracy",)
    model: str = ""
    attack: dict[str, Any] | None = None  # name, parameters, threat model of the attack run, if any

    JSON_KEYS = ("epsilon", "epsilon_y", "metric", "mean", "std", "ci95", "trials", "mechanism", "model",
                 "hyperparameters", "release_options", "tuned", "privacy")

    def summary(self) -> list[dict[str, Any]]:
        """One row per metric of the task and setting (mean, std, 95% CI over the trials)."""
        return [row for metric in self.metrics for row in summarize(self.records, metric)]

    @property
    def columns(self) -> tuple[str, ...]:
        """The metrics a table shows (all of them are in :meth:`summary` and the JSON)."""
        if self.attack is None:
            return self.metrics
        shown = ("attack_auc", "attack_advantage", "attack_tpr_at_1fpr", "attack_precision")
        return (self.metrics[0], *(m for m in shown if m in self.metrics))

    def to_json(self) -> dict[str, Any]:
        return json_safe({
            "method": self.spec.method,
            "dataset": self.records[0].dataset if self.records else self.spec.dataset,
            "task": self.task, "model": self.model, "params": self.records[0].config.get("params") if self.records
            else self.spec.params,
            "run_id": self.run_id,
            **({"attack": self.attack} if self.attack is not None else {}),
            "results": [{k: row[k] for k in self.JSON_KEYS} for row in self.summary()],
        })


class Experiment:
    """Runs an :class:`ExperimentSpec` (module docstring)."""

    def __init__(self, spec: ExperimentSpec, store: ResultsStore | None = None, progress: ProgressHook | None = None):
        self.progress = progress or (lambda name, done, total: None)
        self.method, self.task = spec.build(self.progress)
        self.task.check_evaluable()
        self.attack = spec.build_attack()
        self.spec = spec
        self.store = store
        self.run_id = uuid.uuid4().hex[:12]

    def _select(self, data: Any, eps: float | None, eps_index: int, base: Any) -> Selection | None:
        """Release parameters chosen on trial 0's validation score; the selection holds the chosen
        candidate's release (trial 0's).  None when nothing is chosen."""
        space = self.task.release_search(eps)
        if not self.spec.tune or not space:
            return None
        seed = self.spec.seed
        tdata = self.task.trial_data(data, seed)
        shared = self.task.labels(tdata, seed, eps_index)

        def evaluate(i: int, values: dict[str, Any]) -> tuple[float, Released]:
            released = self.task.release(tdata, eps, seed, eps_index, self.method.with_params(**values), i, shared)
            return self.task.evaluate(tdata, released, base, seed, eps_index).validation, released


        candidates = [dict(zip(space, values)) for values in itertools.product(*space.values())]
        return select_on_validation(candidates, evaluate, self.task.validation_metric, self.progress,
                                    f"choosing {', '.join(space)} at ε={eps}")

    def run(self) -> ExperimentResult:
        spec, task = self.spec, self.task
        data = task.load()
        base = task.base_hyperparameters()
        records: list[TrialRecord] = []
        reports: dict[float | None, PrivacyReport] = {}
        label = f"{spec.method} on {getattr(data, 'name', None) or spec.dataset}"
        total, done = len(spec.epsilons) * spec.trials, 0
        noisy = [e for e in spec.epsilons if e is not None]
        for eps in spec.epsilons:
            k = 0 if eps is None else noisy.index(eps)
            selection = self._select(data, eps, k, base)
            chosen = selection.chosen if selection else {}
            method = self.method.with_params(**chosen) if chosen else self.method
            first = selection.release if selection else None
            hp = base
            if spec.tune:
                tdata = task.trial_data(data, spec.seed)
                first = first or task.release(tdata, eps, spec.seed, k, method)
                hp = task.tune(tdata, first, eps, k, base)
            for t in range(spec.trials):
                self.progress(label, done, total)
                start = time.perf_counter()
                trial_seed = spec.seed + t
                tdata = task.trial_data(data, trial_seed)
                released = first if t == 0 and first is not None else task.release(tdata, eps, trial_seed, k, method)
                report = released.report
                if selection:
                    report = PrivacyReport([g.with_note(selection.note(eps)) for g in report.guarantees])
                evaluation = task.evaluate(tdata, released, hp, trial_seed, k)
                attacked = self._attack(tdata, released, evaluation, hp, trial_seed, eps, k)
                reports[eps] = report
                record = TrialRecord(
                    run_id=self.run_id, method=spec.method,
                    dataset=getattr(tdata[0] if isinstance(tdata, tuple) else tdata, "name", None) or spec.dataset,
                    model=task.model_name(), mechanism=released.mechanism, epsilon=eps, epsilon_y=spec.epsilon_y,
                    trial=t, seed=None if spec.secure else trial_seed,
                    config={
                        "task": task.name, "params": method.params.to_dict(),
                        "hyperparameters": hp.to_dict() if hp is not None else None, "tuned": spec.tune,
                        "release_options": chosen, "selection_releases": selection.candidates if selection else 0,
                        "selection": [{"values": v, "score": s} for v, s in selection.scores] if selection else [],
                        "secure": spec.secure, "release": released.details, **task.record_config(released),
                        "normalization": getattr(data, "normalization", None) if not isinstance(data, tuple)
                        else None,
                        **({"attack": attacked} if attacked is not None else {}),
                    },
                    metrics=evaluation.metrics, guarantee=report.to_dict(), wall_time=time.perf_counter() - start,
                    version=__version__,
                )
                records.append(record)
                if self.store is not None:
                    self.store.add(record)
                done += 1
        self.progress(label, total, total)
        metrics, attack = task.metrics, None
        if self.attack is not None:
            metrics = (*task.metrics, *(m for m in self.attack.metrics if m not in task.metrics))
            attack = {"name": self.attack.name, "params": self.attack.params.to_dict(),
                      "threat_model": records[-1].config["attack"]["threat_model"] if records else {}}
        return ExperimentResult(spec, self.run_id, records, reports, task.name, metrics, task.model_name(), attack)

    def _attack(self, tdata: Any, released: Released, evaluation: Any, hp: Any, trial_seed: int,
                eps: float | None, eps_index: int) -> dict[str, Any] | None:
        """Run the spec's attack against the trial's target (its metrics join the trial's); the
        attacker's randomness is its own stream of the trial and ε.  Returns what the trial records."""
        if self.attack is None:
            return None
        target = self.task.attack_target(tdata, released, evaluation, hp, trial_seed, eps, eps_index)
        if self.task.evaluates_attack(self.attack):
            threat, details = self.attack.threat_model(target), {}
        else:
            result = self.attack.run(target, derive_seed(trial_seed, 7, eps_index))
            evaluation.metrics.update(result.metrics)
            threat, details = result.threat_model, result.details
        return {"name": self.attack.name, "params": self.attack.params.to_dict(), "threat_model": threat.to_dict(),
                "details": details}


def run_experiment(spec: ExperimentSpec, store: ResultsStore | None = None,
                   progress: ProgressHook | None = None) -> ExperimentResult:
    """Run ``spec`` through the pipeline (module docstring); trials go to ``store`` when given.

    Returns:
        The :class:`ExperimentResult`: every trial record, the report of each ε, the summary.
    """
    return Experiment(spec, store, progress).run()


__all__ = ["DEFAULT_EPSILON", "Experiment", "ExperimentResult", "ExperimentSpec", "run_experiment"]
