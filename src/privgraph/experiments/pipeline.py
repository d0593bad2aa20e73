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
  did not give (Blink's degree share `degree_share`, HeteDP's ε_f/ε) are chosen first on
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

``privgraph run`` loops over :meth:`Experiment.prepare` (one ε's choices) and
:meth:`Experiment.run_trial`; ``privgraph sweep``
(:mod:`privgraph.experiments.sweep`) runs the same two calls, one trial per
Ray task, so a sweep's trial is the trial ``run`` makes for that setting.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from privgraph.accounting import PrivacyReport, check_epsilons
from privgraph.device import device_name, on_device, resolve_device
from privgraph.experiments.memory import peak_rss_mib, reset_peak_rss
from privgraph.experiments.selection import Selection, select_on_validation
from privgraph.experiments.store import ResultsStore, TrialRecord
from privgraph.experiments.summary import summarize
from privgraph.experiments.tasks import EvaluationTask, Released, task_for
from privgraph.mechanisms import derive_seed
from privgraph.methods import METHODS, Method, get_method, method_class
from privgraph.progress import ProgressHook
from privgraph.release import DIAGNOSTICS_WITHHELD, json_safe
from privgraph.version import __version__

DEFAULT_EPSILON = 1.0  # a private method's ε when none is given (not for methods where ε is optional)


@dataclass
class ExperimentSpec:
    """One setting grid of one method (module docstring).

    Args:
        method: a registered method (:data:`privgraph.methods.METHODS`): its name, or its ``Params`` object or a
            built method (kept as the name and the parameters that differ from their defaults).
        dataset: a dataset the loaders know, or ``sbm`` (synthetic); ignored with ``input``.
        epsilons: the ε values (one setting each); ``None`` is the method without noise where ε is
            optional (PPCVGAE); empty: ``[1.0]`` for a private method, none otherwise.
        params: the method's parameters (its ``Params`` fields).
        task: ``nc``, ``lp`` or ``attribute`` (default: the method's own; heterogeneous methods: ``nc``).
        trials: the number of trials; trial ``t`` is seeded by ``seed + t``.
        seed: the first trial's seed.
        hyperparameters: the task model's training settings (``--set``).
        tune: choose release parameters and hyperparameters on validation.
        tune_budget: hyperparameter configurations tried by ``tune`` (the defaults, then distinct random
            points of the search space; at least the space's size makes it a full grid search).
        search_space: the values ``tune`` tries per hyperparameter (a paper's grid), replacing
            :data:`~privgraph.methods.SEARCH_SPACE`'s for the names given; names the method does not tune
            by default (e.g. ``hidden``) are added to the search.  A name in the method's
            ``release_search`` replaces that release parameter's candidates (every combination is a
            candidate release).
        secure: draw every noise from the OS source (nothing recorded can regenerate it).
        model: node classification's model (gcn, sage, gat, mlp).
        label_epsilon: node classification's label ε (LPGNN's label LDP).
        split: node classification's split, ``random`` or ``public`` (heterogeneous graphs: ``random``, the
            dataset's own, or ``hetedp``, the HeteDP authors' 20/10/70).
        private_ratio: mark this fraction of the edges private (edge-level methods).
        case: the attribute task's threat model (a or b).
        balance: the attribute task's class balancing of the attack.
        data_root: the raw-data folder (default ``$PRIVGRAPH_DATA``).
        synthetic: settings of the synthetic graph.
        input: the user's own graph (a ``Data``/``HeteroData``) instead of a dataset; a labelled ``Data`` without a
            split gets the seeded 50/25/25 split of ``seed`` (:func:`~privgraph.data.add_missing_split`, as
            :func:`~privgraph.data.read_graph` and ``privgraph run --input``), the same in every trial.
        input_id: the identity of ``input`` in a results store (part of the configuration hash): compare
            and sweep on the user's own graph draw a fresh random one per call (:func:`new_input_id`), never a
            function of the data, so the store holds nothing computed from the graph's content, and its
            trials never mix with another graph's; empty: a run on ``input`` stores no configuration hash.
        attack: an attack (:data:`privgraph.attacks.ATTACKS`) run against every trial's target —
            the model trained on the release, or the released embedding; its metrics join the
            trial's (``privgraph attack``).
        attack_params: the attack's parameters.
        device: where the trials train and post-process (``cpu``, ``cuda``, ``cuda:N``, ``mps``; default
            ``$PRIVGRAPH_DEVICE``, else the CPU; :mod:`privgraph.device`).  Not part of a setting's
            identity: the noise does not depend on it, and each trial records the device it ran on.
        diagnostics: keep each release's details (data-dependent diagnostics: exact counts, clipping rates,
            within-bound bits) in the trial records and the store (``--diagnostics``: the curator's own copy);
            by default a record holds what a release may publish.  Not part of a setting's identity.
    """

    method: str  # a Params object or a built method is turned into its name and params (__post_init__)
    dataset: str = "sbm"
    epsilons: list[float | None] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    task: str | None = None
    trials: int = 10
    seed: int = 0
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    tune: bool = False
    tune_budget: int = 20
    search_space: dict[str, list[Any]] = field(default_factory=dict)
    secure: bool = False
    model: str | None = None
    label_epsilon: float | None = None
    split: str = "random"
    private_ratio: float | None = None
    case: str | None = None
    balance: bool = False
    data_root: str | None = None
    synthetic: dict[str, Any] = field(default_factory=dict)
    input: Any = None
    input_id: str = ""
    attack: str | None = None
    attack_params: dict[str, Any] = field(default_factory=dict)
    device: str | None = None
    diagnostics: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.method, str):  # a Params object or a built method: its name and non-default values
            from privgraph.request import method_name_and_params

            name, values = method_name_and_params(self.method)
            self.method, self.params = name, {**values, **self.params}

    def build(self, progress: ProgressHook | None = None) -> tuple[Method, EvaluationTask]:
        """The method and the task, after every check (bad input raises ``ValueError`` before any work)."""
        cls = method_class(self.method)
        params = dict(self.params)
        takes_case = any(f.name == "case" for f in dataclasses.fields(cls.Params))
        if self.case is not None and "case" not in params and takes_case:
            params["case"] = self.case  # --case alone is the user's choice (the method's default is not one)
        method = get_method(self.method, **params)
        task = task_for(cls, self.task)(self, method, progress or (lambda name, done, total: None))
        self._check_fields(task)
        if self.trials < 1:
            raise ValueError("trials must be >= 1")
        if self.tune_budget < 1:
            raise ValueError("tune_budget must be >= 1")
        if self.search_space:
            if not self.tune:
                raise ValueError("search_space is given but tune is off")
            release = set(method.release_search)  # release parameters --tune chooses: their candidate values
            if not task.tunes_hyperparameters() and any(n not in release for n in self.search_space):
                raise ValueError(
                    f"search_space: the {task.name} task does not search hyperparameters"
                    + (f" (release parameters {self.method} chooses: {', '.join(sorted(release))})" if release else "")
                )
            known = {f.name for f in dataclasses.fields(task.training)} if task.training else set()
            for name, values in self.search_space.items():
                if name in release and name in self.params:
                    raise ValueError(f"search_space: {name!r} is fixed by the method's parameters")
                if name not in known and name not in release:
                    raise ValueError(
                        f"search_space: {name!r} is not a hyperparameter of the {task.name} task"
                        + (f" (known: {', '.join(sorted(known))})" if known else "")
                    )
                if not isinstance(values, (list, tuple)) or not values:
                    raise ValueError(f"search_space: {name!r} needs a non-empty list of values")
        self.epsilons = self._epsilons(method)
        task.validate()
        task.base_hyperparameters()
        attack = self.build_attack()
        if attack is not None:
            task.check_attack(attack)
        if self.tune and not task.tunes_hyperparameters() and not any(task.release_search(e) for e in self.epsilons):
            raise ValueError(
                f"{self.method} ({task.name} task) does not take --tune: nothing is chosen on validation "
                "here (give its parameters with --param)"
            )
        return method, task

    def validate(self) -> None:
        resolve_device(self.device)
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
        checked = check_epsilons(self.method, method.private, method.epsilon_optional, self.epsilons)
        if method.private and not checked:
            return [None] if method.epsilon_optional else [DEFAULT_EPSILON]
        return checked

    def setting_index(self, eps: float | None) -> int:
        """The index of ``eps``'s setting among the noisy ones, enumerated once (each ε is given once, so
        it names one setting: its randomness streams and its config hash); 0 without noise."""
        noisy = [e for e in self.epsilons if e is not None]
        return 0 if eps is None else dict(zip(noisy, range(len(noisy))))[eps]

    def _check_fields(self, task: EvaluationTask) -> None:
        """Fields that only some tasks read must stay at their defaults for the others."""
        optional = ("model", "label_epsilon", "split", "private_ratio", "case", "balance", "synthetic")
        defaults = {f.name: _default(f) for f in dataclasses.fields(self) if f.name in optional}
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

    JSON_KEYS = (
        "epsilon_spent",
        "epsilon",
        "releases",
        "label_epsilon",
        "metric",
        "mean",
        "std",
        "ci95",
        "trials",
        "mechanism",
        "model",
        "hyperparameters",
        "release_options",
        "tuned",
        "privacy",
    )

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
        return json_safe(
            {
                "method": self.spec.method,
                "dataset": self.records[0].dataset if self.records else self.spec.dataset,
                "task": self.task,
                "model": self.model,
                "params": self.records[0].config.get("params") if self.records else self.spec.params,
                "run_id": self.run_id,
                **({"attack": self.attack} if self.attack is not None else {}),
                "results": [{k: row[k] for k in self.JSON_KEYS} for row in self.summary()],
            }
        )


@dataclass
class TunedSetting:
    """What trial 0 of a tuned setting chose (its record's ``release_options``, ``hyperparameters`` and
    ``selection``): the other trials of the setting run with it."""

    release_options: dict[str, Any]
    hyperparameters: dict[str, Any] | None
    scores: list[tuple[dict[str, Any], float]]

    @classmethod
    def from_record(cls, record: TrialRecord) -> TunedSetting:
        """Read from a stored record (renamed method parameters re-keyed: ``MethodParams.rekey``)."""
        c = record.config
        rekey = METHODS[record.method].Params.rekey if record.method in METHODS else dict
        return cls(
            rekey(dict(c.get("release_options") or {})),
            c.get("hyperparameters"),
            [(rekey(dict(s["values"])), s["score"]) for s in c.get("selection") or []],
        )


@dataclass
class Setting:
    """One ε of a run, ready for its trials: the method with the chosen release parameters, the task
    model's hyperparameters, the selection (its cost goes into every guarantee) and trial 0's release
    when the choice made it (``None`` otherwise: trial 0 releases like the others)."""

    epsilon: float | None
    eps_index: int
    method: Method
    hyperparameters: Any
    selection: Selection | None
    first: Released | None


# The spec's fields that do not change a trial's result: where the data lies, how many trials run,
# the user's own graph (not hashable; its runs get no configuration hash).
_NOT_HASHED = ("data_root", "trials", "input", "epsilons", "device", "diagnostics")
HASHED_AS = {"label_epsilon": "epsilon_y"}  # renamed fields, hashed under the name their stored settings have


def _default(f: dataclasses.Field) -> Any:
    """A field's default (``MISSING`` for a required one)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def new_input_id() -> str:
    """A fresh identity for the user's own graph in a results store (:attr:`ExperimentSpec.input_id`): random,
    so that nothing derived from the graph's content is stored."""
    import secrets

    return "input-" + secrets.token_hex(8)


def config_hash(spec: ExperimentSpec, eps: float | None, eps_index: int = 0) -> str:
    """A setting's identity: the SHA-256 (16 hex digits) of the spec's fields that change a trial's
    result (those left at their defaults are left out, so a field added later keeps old hashes), with
    ``eps`` and its index among the spec's ε (the release stream depends on it).  Trial
    ``t`` of the setting is identified by (hash, ``seed + t``); the sweep skips those in the store."""
    fields = {
        f.name: getattr(spec, f.name)
        for f in dataclasses.fields(spec)
        if f.name not in _NOT_HASHED and getattr(spec, f.name) != _default(f)
    }
    for new, old in HASHED_AS.items():  # a renamed field keeps its old name here: stored settings still resume
        if new in fields:
            fields[old] = fields.pop(new)
    fields.update(epsilon=eps, eps_index=eps_index)
    text = json.dumps(json_safe(fields), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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
        return select_on_validation(
            candidates, evaluate, self.task.validation_metric, self.progress, f"choosing {', '.join(space)} at ε={eps}"
        )

    def prepare(self, data: Any, eps: float | None, tuned: TunedSetting | None = None) -> Setting:
        """One ε's setting: the release parameters and hyperparameters chosen on validation (with
        ``tune``), or those given in ``tuned`` (what trial 0 of the setting chose and recorded, so that a
        sweep runs trials 1… in other workers without choosing again)."""
        with on_device(self.spec.device):
            return self._prepare(data, eps, tuned)

    def _prepare(self, data: Any, eps: float | None, tuned: TunedSetting | None) -> Setting:
        spec, task = self.spec, self.task
        k = spec.setting_index(eps)
        base = task.base_hyperparameters()
        if tuned is not None:
            method = self.method.with_params(**tuned.release_options) if tuned.release_options else self.method
            hp = base if tuned.hyperparameters is None else type(base)(**tuned.hyperparameters)
            selection = (
                Selection(dict(tuned.release_options), [(dict(v), s) for v, s in tuned.scores], None)
                if tuned.scores
                else None
            )
            return Setting(eps, k, method, hp, selection, None)
        selection = self._select(data, eps, k, base)
        chosen = selection.chosen if selection else {}
        method = self.method.with_params(**chosen) if chosen else self.method
        first = selection.release if selection else None
        hp = base
        if spec.tune:
            tdata = task.trial_data(data, spec.seed)
            first = first or task.release(tdata, eps, spec.seed, k, method)
            hp = task.tune(tdata, first, eps, k, base)
        return Setting(eps, k, method, hp, selection, first)

    def run_trial(self, data: Any, setting: Setting, t: int) -> TrialRecord:
        """Trial ``t`` of ``setting`` (seed ``seed + t``); trial 0 is the setting's chosen release."""
        return self._trial(data, setting, t)[0]

    def _trial(self, data: Any, setting: Setting, t: int) -> tuple[TrialRecord, PrivacyReport]:
        with on_device(self.spec.device) as device:
            return self._trial_on(data, setting, t, device_name(device))

    def _trial_on(self, data: Any, setting: Setting, t: int, device: str) -> tuple[TrialRecord, PrivacyReport]:
        spec, task, eps, k = self.spec, self.task, setting.epsilon, setting.eps_index
        reset_peak_rss()  # the trial's own peak RSS where the kernel allows it (privgraph.experiments.memory)
        start = time.perf_counter()
        trial_seed = spec.seed + t
        tdata = task.trial_data(data, trial_seed)
        first = setting.first
        released = first if t == 0 and first is not None else task.release(tdata, eps, trial_seed, k, setting.method)
        report = released.report
        selection, hp = setting.selection, setting.hyperparameters
        if selection:
            report = PrivacyReport([selection.spent(g, eps) for g in report.guarantees])
        evaluation = task.evaluate(tdata, released, hp, trial_seed, k)
        attacked = self._attack(tdata, released, evaluation, hp, trial_seed, eps, k)
        record = TrialRecord(
            run_id=self.run_id,
            method=spec.method,
            dataset=getattr(tdata[0] if isinstance(tdata, tuple) else tdata, "name", None) or spec.dataset,
            model=task.model_name(),
            mechanism=released.mechanism,
            epsilon=eps,
            label_epsilon=spec.label_epsilon,
            trial=t,
            seed=None if spec.secure else trial_seed,
            config={
                "task": task.name,
                "params": setting.method.params.to_dict(),
                "hyperparameters": hp.to_dict() if hp is not None else None,
                "tuned": spec.tune,
                "release_options": selection.chosen if selection else {},
                "selection_releases": selection.candidates if selection else 0,
                "selection": [{"values": v, "score": s} for v, s in selection.scores] if selection else [],
                "secure": spec.secure,
                "device": device,
                "release": released.details if spec.diagnostics else DIAGNOSTICS_WITHHELD,  # curator-only
                **task.record_config(released),
                "normalization": getattr(data, "normalization", None) if not isinstance(data, tuple) else None,
                **({"attack": attacked} if attacked is not None else {}),
            },
            metrics=evaluation.metrics,
            guarantee=report.to_dict(),
            wall_time=time.perf_counter() - start,
            version=__version__,
            config_hash=self.config_hash(eps),
            peak_rss_mib=peak_rss_mib(),
        )
        return record, report

    def config_hash(self, eps: float | None) -> str | None:
        """The identity of ``eps``'s setting (:func:`config_hash`); None for the user's own graph without an
        ``input_id``."""
        if self.spec.input is not None and not self.spec.input_id:
            return None
        return config_hash(self.spec, eps, self.spec.setting_index(eps))

    def run(self) -> ExperimentResult:
        spec, task = self.spec, self.task
        data = task.load()
        records: list[TrialRecord] = []
        reports: dict[float | None, PrivacyReport] = {}
        label = f"{spec.method} on {getattr(data, 'name', None) or spec.dataset}"
        total, done = len(spec.epsilons) * spec.trials, 0
        for eps in spec.epsilons:
            setting = self.prepare(data, eps)
            for t in range(spec.trials):
                self.progress(label, done, total)
                record, reports[eps] = self._trial(data, setting, t)
                records.append(record)
                if self.store is not None:
                    self.store.add(record)
                done += 1
        self.progress(label, total, total)
        return self.result(records, reports)

    def result(self, records: list[TrialRecord], reports: dict[float | None, PrivacyReport]) -> ExperimentResult:
        """The run's result: its records, reports and summary columns."""
        task = self.task
        metrics, attack = task.metrics, None
        if self.attack is not None:
            metrics = (*task.metrics, *(m for m in self.attack.metrics if m not in task.metrics))
            attack = {
                "name": self.attack.name,
                "params": self.attack.params.to_dict(),
                "threat_model": records[-1].config["attack"]["threat_model"] if records else {},
            }
        return ExperimentResult(self.spec, self.run_id, records, reports, task.name, metrics, task.model_name(), attack)

    def _attack(
        self,
        tdata: Any,
        released: Released,
        evaluation: Any,
        hp: Any,
        trial_seed: int,
        eps: float | None,
        eps_index: int,
    ) -> dict[str, Any] | None:
        """Run the spec's attack against the trial's target (its metrics join the trial's); the
        attacker's randomness is its own stream of the trial and ε.  Returns what the trial records."""
        if self.attack is None:
            return None
        target = self.task.attack_target(tdata, released, evaluation, hp, trial_seed, eps, eps_index)
        if self.task.evaluates_attack(self.attack):
            threat, details = self.attack.threat_model(target), {}
        else:
            result = self.attack.run(target, derive_seed(trial_seed, 7, eps_index), self.progress)
            evaluation.metrics.update(result.metrics)
            threat, details = result.threat_model, result.details
        return {
            "name": self.attack.name,
            "params": self.attack.params.to_dict(),
            "threat_model": threat.to_dict(),
            "details": details,
        }


def run_experiment(
    spec: ExperimentSpec, store: ResultsStore | None = None, progress: ProgressHook | None = None
) -> ExperimentResult:
    """Run ``spec`` through the pipeline (module docstring); trials go to ``store`` when given.

    Returns:
        The run's :class:`ExperimentResult`: every trial record, the report of each ε, the summary.
    """
    return Experiment(spec, store, progress).run()


__all__ = [
    "DEFAULT_EPSILON",
    "Experiment",
    "ExperimentResult",
    "ExperimentSpec",
    "Setting",
    "TunedSetting",
    "config_hash",
    "new_input_id",
    "run_experiment",
]
