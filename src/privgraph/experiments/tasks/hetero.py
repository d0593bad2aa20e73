"""What the heterogeneous tasks (``hetero-nc``, ``lp``) share: the dataset's task, the training
hyperparameters of their models, HeteDP's public edge count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor

from privgraph.data.registry import HETEROGENEOUS, dataset_names, get_dataset
from privgraph.experiments.tasks.base import EvaluationTask
from privgraph.methods import Method
from privgraph.methods.base import Settings


@dataclass(frozen=True)
class HeteroTraining(Settings):
    """Training hyperparameters of the heterogeneous tasks' models (HAN, RGCN, HGT)."""

    epochs: int = 100
    hidden: int = 64

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.hidden < 1:
            raise ValueError("epochs and hidden must be >= 1")


class _HeteroTask(EvaluationTask):
    """Shared by the heterogeneous tasks: the dataset's task (target type and relation, HeteDP §V)."""

    training = HeteroTraining
    datasets = (HETEROGENEOUS,)

    @classmethod
    def accepts(cls, method):
        return method.heterogeneous

    def validate(self):
        if self.spec.input is not None:
            return
        task = self.hetero_task  # refuses an unknown dataset, with the names of those it knows
        given = sorted({"edge_type", "reverse"} & set(self.spec.params))
        if given:
            raise ValueError(
                f"the dataset's task sets {', '.join(given)} ({self.spec.dataset} predicts "
                f"{task.edge_type}): drop --param {given[0]}"
            )

    @property
    def key(self) -> str:
        """The registered heterogeneous dataset's key (``--input``: the given name)."""
        return (
            self.spec.dataset.lower()
            if self.spec.input is not None
            else get_dataset(self.spec.dataset, *self.datasets).key
        )

    @property
    def hetero_task(self):
        """The dataset's task (target type, protected relation); the evaluation needs one, so ``run`` and
        ``attack`` on the user's own graph stop here with the way to release it instead."""
        if self.spec.input is not None:
            raise ValueError(
                f"privgraph run evaluates {self.method.name} on the heterogeneous datasets it knows "
                f"({', '.join(dataset_names(HETEROGENEOUS))}), not on --input: release your own "
                f"graph with privgraph release {self.method.name} --input FILE"
            )
        return get_dataset(self.key, *self.datasets).hetero

    def model_name(self):
        return self.name

    def load(self):
        from privgraph.data.hetero import load_hetero

        return (
            self.spec.input
            if self.spec.input is not None
            else load_hetero(self.key, self.spec.data_root, seed=self.spec.seed)
        )

    def release_stream(self, eps_index, candidate):
        return (eps_index, 0) if candidate is None else (eps_index, 1 + candidate)

    def check_attack(self, attack: Any) -> None:
        """What no heterogeneous target answers (the tasks refine it, :mod:`privgraph.attacks.hetero`)."""
        if attack.needs_sensitive:
            raise ValueError(
                f"{attack.name} infers a sensitive attribute: the heterogeneous datasets carry none (use a "
                "dataset with one: german, credit, recidivism, planted)"
            )

    def link_method(self, method: Method, examples: Tensor) -> tuple[Method, str | None]:
        """HeteDP as the task releases it: the dataset's relation (``edge_type``, ``reverse``) and DP-SGD's
        public ``edge_count`` N — as given, or (the tasks run on named datasets, public and split from a
        public seed) the split's number of training edges, with the note that says so.  A release of the
        user's own graph never reads N from the data (it refuses without)."""
        task, p = self.hetero_task, method.params
        changes: dict[str, Any] = {"edge_type": task.edge_type, "reverse": task.reverse}
        note = None
        if p.edge_count is None:
            changes["edge_count"] = n = int(examples.shape[1])
            note = (
                f"DP-SGD's sampling is planned for N = {n}, the number of training edges of this public "
                f"benchmark split ({self.spec.dataset}); on a private graph give edge_count (the release "
                "refuses without it)"
            )
        return method.with_params(**changes), note


def _noted_last(guarantees: list[Any], note: str | None) -> list[Any]:
    """``guarantees`` with ``note`` on the last one (a link release's DP-SGD guarantee)."""
    return guarantees if note is None or not guarantees else [*guarantees[:-1], guarantees[-1].with_note(note)]
