"""The tasks' common ground: :class:`Released`, :class:`Evaluation`, :class:`EvaluationTask` and the
registry of tasks (:func:`register_task`, :data:`TASK_CLASSES`, :func:`task_for`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from privgraph.accounting import PrivacyReport
from privgraph.mechanisms import RandomSource, release_source
from privgraph.methods import LabelReports, Method, Task
from privgraph.progress import ProgressHook
from privgraph.release import PrivateRelease


@dataclass
class Released:
    """One release inside the pipeline: what evaluation reads (``payload``), its report and details."""

    payload: Any
    report: PrivacyReport
    details: dict[str, Any] = field(default_factory=dict)
    mechanism: str | None = None
    shared: Any = None  # what a selection's candidates share (the trial's label reports)
    # the release exactly as privgraph.privatize returns it for the same method, data, ε and stream
    # (None where a task releases nothing: the non-private baselines it trains end to end)
    release: PrivateRelease | None = None


@dataclass
class Evaluation:
    """A trial's metrics, the validation score that selection and tuning maximise, and the trained
    model (what an attack queries; None where the task trains none of its own)."""

    metrics: dict[str, float]
    validation: float
    model: Any = None


@dataclass(frozen=True)
class EvaluationTask:
    """Base of the tasks (module docstring).  ``spec`` is the pipeline's
    :class:`~privgraph.experiments.pipeline.ExperimentSpec`, ``method`` the registered method."""

    name: ClassVar[str] = ""
    metrics: ClassVar[tuple[str, ...]] = ()
    validation_metric: ClassVar[str] = "validation accuracy"
    # the spec's fields this task reads, beyond the common ones (others must stay at their defaults)
    reads: ClassVar[tuple[str, ...]] = ()
    training: ClassVar[type | None] = None  # the training hyperparameters' dataclass (--set), if any
    # the registry's graphs (privgraph.data.registry.GRAPHS) a --dataset name is looked up among, first first
    datasets: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: Any, method: Method, progress: ProgressHook):
        self.spec = spec
        self.method = method
        self.progress = progress
        self.notes: list[str] = []  # input-graph notes, added to every report

    @classmethod
    def accepts(cls, method: type[Method]) -> bool:
        raise NotImplementedError

    def validate(self) -> None:
        """Task-specific checks of the spec (before any work)."""

    # ------------------------------------------------------------------ data
    def load(self) -> Any:
        raise NotImplementedError

    def trial_data(self, data: Any, trial_seed: int) -> Any:
        return data

    # --------------------------------------------------------------- release
    def source(self, trial_seed: int, *stream: int) -> RandomSource:
        """The randomness of one release: the OS source with ``secure``, else a seeded stream."""
        return release_source(None if self.spec.secure else trial_seed, *stream)

    def release_stream(self, eps_index: int, candidate: int | None) -> tuple[int, ...]:
        """The stream of trial ``t``'s release at the ε of index ``eps_index`` (and of candidate ``candidate``
        of a selection)."""
        return (1, eps_index) if candidate is None else (1, eps_index, 1 + candidate)

    def privatize(
        self,
        data: Any,
        method: Method,
        eps: float | None,
        trial_seed: int,
        eps_index: int,
        candidate: int | None = None,
        **shared: Any,
    ) -> PrivateRelease:
        """The one release path (:func:`privgraph.api.release` of the :class:`~privgraph.ReleaseRequest` the spec
        asks for): the OS source with ``secure``, else the trial seed's stream of this ε (and candidate);
        ``shared``: what the task shares between releases (:class:`~privgraph.request.Shared`: label reports, a
        model trained once per trial)."""
        from privgraph.api import release
        from privgraph.request import ReleaseRequest, Shared

        seed = None if self.spec.secure else trial_seed
        stream = () if seed is None else self.release_stream(eps_index, candidate)
        request = ReleaseRequest.build(
            method, epsilon=eps, seed=seed, stream=stream, progress=self.progress, shared=Shared(**shared)
        )
        return release(data, request)

    def released(self, rel: PrivateRelease, payload: Any, mechanism: str | None = None, shared: Any = None) -> Released:
        """What evaluation reads from ``rel``, with the run's report: ``rel``'s, plus the task's notes (what
        reading the input changed) on its first guarantee; ``rel`` itself is left as released."""
        guarantees = list(rel.report.guarantees)
        for note in self.notes:
            guarantees[0] = guarantees[0].with_note(note)
        return Released(payload, PrivacyReport(guarantees), rel.details, mechanism, shared, rel)

    def release(
        self,
        tdata: Any,
        eps: float | None,
        trial_seed: int,
        eps_index: int,
        method: Method,
        candidate: int | None = None,
        shared: Any = None,
    ) -> Released:
        raise NotImplementedError

    def labels(self, tdata: Any, trial_seed: int, eps_index: int) -> LabelReports | None:
        """The trial's label reports, drawn once per trial and ε and shared by a selection's candidates
        (label LDP, node classification only); None here."""
        return None

    def release_search(self, eps: float | None) -> dict[str, list[Any]]:
        """Release parameters ``--tune`` may choose (those the user did not give); the spec's
        ``search_space`` replaces a release parameter's candidate values."""
        return {
            k: list(self.spec.search_space.get(k, v))
            for k, v in self.method.release_search.items()
            if k not in self.spec.params
        }

    def tunes_hyperparameters(self) -> bool:
        """Whether :meth:`tune` searches the task model's hyperparameters."""
        return False

    def check_evaluable(self) -> None:
        """What evaluation needs beyond a release (e.g. labels in the user's graph); before any work."""

    # ------------------------------------------------------------ evaluation
    def base_hyperparameters(self) -> Any:
        if self.training is None:
            if self.spec.hyperparameters:
                raise ValueError(
                    f"{self.spec.method} does not take --set: it trains no model of the task's own (its "
                    "settings are method parameters, --param)"
                )
            return None
        return self.training().update(**self.spec.hyperparameters)

    def evaluate(self, tdata: Any, released: Released, hp: Any, trial_seed: int, eps_index: int) -> Evaluation:
        raise NotImplementedError

    def tune(self, tdata: Any, released: Released, eps: float | None, eps_index: int, base: Any) -> Any:
        """Hyperparameters chosen on validation over ``released`` (trial 0's); default: none to tune."""
        return base

    def model_name(self) -> str:
        raise NotImplementedError

    def record_config(self, released: Released) -> dict[str, Any]:
        return {}

    # ---------------------------------------------------------------- attacks
    def check_attack(self, attack: Any) -> None:
        """Refuse, before any work, an attack this task's targets cannot answer."""
        raise ValueError(f"the {self.name} task trains no target that {attack.name} could query")

    def attack_target(
        self,
        tdata: Any,
        released: Released,
        evaluation: Evaluation,
        hp: Any,
        trial_seed: int,
        eps: float | None,
        eps_index: int,
    ) -> Any:
        """The trial's :class:`~privgraph.attacks.Target`: the model the task trained on ``released``."""
        raise NotImplementedError

    def evaluates_attack(self, attack: Any) -> bool:
        """Whether :meth:`evaluate` already runs ``attack`` (its metrics are in every evaluation)."""
        return False


TASK_CLASSES: dict[str, type[EvaluationTask]] = {}  # filled by register_task, in the order the package imports them
TASK_ALIASES = {"nc": {True: "hetero-nc", False: "nc"}}  # `--task nc` on a heterogeneous method


def register_task(cls: type[EvaluationTask]) -> type[EvaluationTask]:
    """Class decorator: ``cls`` is the evaluation task named ``cls.name``."""
    if cls.name in TASK_CLASSES:
        raise ValueError(f"task {cls.name!r} is registered twice")
    TASK_CLASSES[cls.name] = cls
    return cls


def task_for(method: type[Method], name: str | None) -> type[EvaluationTask]:
    """The evaluation task ``name`` (or the method's default) for ``method``; clear error when it does not apply."""
    if name is None:
        name = (
            "hetero-nc"
            if method.heterogeneous
            else {Task.EMBEDDING: "attribute", Task.NODE_CLASSIFICATION: "nc"}.get(method.task, "lp")
        )
    name = TASK_ALIASES.get(name, {}).get(method.heterogeneous, name)
    if name not in TASK_CLASSES:
        raise ValueError(f"unknown task {name!r}; choose from nc, lp, attribute")
    cls = TASK_CLASSES[name]
    if not cls.accepts(method):
        usable = [n for n, c in TASK_CLASSES.items() if c.accepts(method)]
        raise ValueError(
            f"{method.name} is a {method.task.value} method on "
            f"{'HeteroData' if method.heterogeneous else 'Data'}: task {name!r} does not apply "
            f"(its tasks: {', '.join(usable)})"
        )
    return cls
