"""The evaluation tasks of the experiment pipeline: each gives its data, its split, its
release and its evaluation; :mod:`privgraph.experiments.pipeline` runs the one trial loop.

=============== ============================ ============================================
task            methods                      metrics (headline first)
=============== ============================ ============================================
``nc``          node-classification methods  ``accuracy`` (test), on the method's model
                on a ``Data``                (GCN/SAGE/GAT/MLP, LPGNN's KProp)
``attribute``   embedding methods (PPCVGAE,  ``utility_accuracy``/``utility_f1`` (node
                VGAE, DP-GCN)                classification on the embedding) and
                                             ``attack_accuracy``/``attack_f1`` (attribute
                                             inference on the private nodes), PPCVGAE §6
``hetero-nc``   HeteDP's features, RGCN,     ``micro_f1``, ``macro_f1`` on the dataset's
                HGT, metapath2vec            target type (HeteDP §V)
``lp``          HeteDP, RGCN, HGT,           ``roc_auc`` on the dataset's target relation
                metapath2vec
=============== ============================ ============================================

A task's ``release`` is one privacy-spending act (its randomness from its own
stream, :meth:`EvaluationTask.source`); ``evaluate`` is post-processing of it
(training the task's model, scoring).  ``release_search`` names the release
parameters that ``--tune`` may choose on validation (each candidate is a new
release, and the pipeline states the cost).  The randomness streams are
those of the former per-system runners, so seeded results are unchanged.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.metrics import f1_score
from torch import Tensor
from torch_geometric.data import Data, HeteroData

from privgraph.accounting import PrivacyReport, Unit, unprotected
from privgraph.data.hetero_splits import HETERO_NC_SPLITS
from privgraph.data.hetero_splits import hetero_node_masks as _nc_masks  # the hetero-nc split (tests spy on it here)
from privgraph.data.hetero_splits import labelled_node_masks as _labelled_split
from privgraph.mechanisms import SECURE_NOTE, RandomSource, derive_seed, release_source
from privgraph.methods import SEARCH_SPACE, Hyperparameters, LabelReports, Method, Task, report_labels
from privgraph.methods.base import Settings
from privgraph.nn import MODELS
from privgraph.progress import ProgressHook

SHARE_GRID = (0.1, 0.3, 0.5, 0.7, 0.9)  # HeteDP's ε_f/ε candidates (bi-level search)
METAPATH_MAX_SAMPLE = 30  # AddMetaPaths' per-step neighbour cap (dense metapaths such as APVPA)


@dataclass
class Released:
    """One release inside the pipeline: what evaluation reads (``payload``), its report and details."""

    payload: Any
    report: PrivacyReport
    details: dict[str, Any] = field(default_factory=dict)
    mechanism: str | None = None
    shared: Any = None  # what a selection's candidates share (the trial's label reports)


@dataclass
class Evaluation:
    """A trial's metrics, the validation score that selection and tuning maximise, and the trained
    model (what an attack queries; None where the task trains none of its own)."""

    metrics: dict[str, float]
    validation: float
    model: Any = None


@dataclass(frozen=True)
class HeteroTraining(Settings):
    """Training hyperparameters of the heterogeneous tasks' models (HAN, RGCN, HGT)."""

    epochs: int = 100
    hidden: int = 64

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.hidden < 1:
            raise ValueError("epochs and hidden must be >= 1")


class EvaluationTask:
    """Base of the tasks (module docstring).  ``spec`` is the pipeline's
    :class:`~privgraph.experiments.pipeline.ExperimentSpec`, ``method`` the registered method."""

    name: ClassVar[str] = ""
    metrics: ClassVar[tuple[str, ...]] = ()
    validation_metric: ClassVar[str] = "validation accuracy"
    # the spec's fields this task reads, beyond the common ones (others must stay at their defaults)
    reads: ClassVar[tuple[str, ...]] = ()
    training: ClassVar[type | None] = None  # the training hyperparameters' dataclass (--set), if any

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

    def finish_report(self, report: PrivacyReport, eps: float | None) -> PrivacyReport:
        if self.spec.secure and eps is not None:
            report.guarantees = [g.with_note(SECURE_NOTE) for g in report.guarantees]
        for note in self.notes:
            report.guarantees[0] = report.guarantees[0].with_note(note)
        return report

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
        raise ValueError(
            f"attacks run against node-classification and embedding methods on a Data; "
            f"{self.spec.method} ({self.name} task) is not supported yet"
        )

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


def _data_dataset(name: str) -> Any:
    """The registered dataset ``name`` among those read as a ``Data``: homogeneous graphs first, then
    graphs with a sensitive attribute (``sbm`` is the homogeneous one, ``planted`` the other)."""
    from privgraph.data.registry import HOMOGENEOUS, SENSITIVE, get_dataset

    return get_dataset(name, HOMOGENEOUS, SENSITIVE)


# ============================================================================ node classification
class NodeClassification(EvaluationTask):
    """Node classification on a ``Data``: the method's release, then its classifier
    (:meth:`Method.fit`); LPGNN's label LDP with ``epsilon_y``; hyperparameters tuned on the
    validation accuracy of trial 0's release (label privacy: on the denoised noisy labels)."""

    name = "nc"
    metrics = ("accuracy",)
    reads = ("model", "epsilon_y", "split", "private_ratio", "synthetic")
    training = Hyperparameters

    @classmethod
    def accepts(cls, method):
        return method.task == Task.NODE_CLASSIFICATION and not method.heterogeneous

    def validate(self):
        from privgraph.data.annotations import check_private_ratio
        from privgraph.mechanisms import check_epsilon

        spec = self.spec
        if spec.model is not None and spec.model not in MODELS:
            raise ValueError(f"unknown model {spec.model!r}; choose from {MODELS}")
        if spec.epsilon_y is not None:
            check_epsilon(spec.epsilon_y, "epsilon_y")
        if spec.split not in ("random", "public"):
            raise ValueError(f"split must be 'random' or 'public', got {spec.split!r}")
        if spec.private_ratio is not None:
            check_private_ratio(spec.private_ratio)
        if spec.input is None:
            _data_dataset(spec.dataset)
        marked = spec.input is not None and "private_edge_mask" in spec.input
        if self.method.needs_private_edges and spec.private_ratio is None and not marked:
            raise ValueError(
                f"method {spec.method!r} protects private edges: say which with --private-ratio ρ "
                "(a seeded random fraction of the edges is marked private)"
                + (", or mark them in the input (--private-column, --private-edges)" if spec.input is not None else "")
            )

    def model_name(self):
        return self.spec.model or self.method.default_model

    def tunes_hyperparameters(self):
        return True

    def check_evaluable(self):
        if self.spec.input is not None and "y" not in self.spec.input:
            raise ValueError("the input graph has no labels: node classification needs them (--labels FILE)")
        if self.spec.input is not None and self.method.needs_features and "x" not in self.spec.input:
            raise ValueError(f"{self.spec.method} reads the node features: the input graph has none (--features FILE)")

    def load(self):
        from privgraph.data import load, load_sensitive, mark_private_edges, validate_graph
        from privgraph.data.registry import SENSITIVE

        spec = self.spec
        if spec.input is not None:
            data = spec.input
        elif (info := _data_dataset(spec.dataset)).graph == SENSITIVE:
            data = load_sensitive(info.key, root=spec.data_root, seed=spec.seed, **spec.synthetic)
        else:
            data = load(info.key, root=spec.data_root, split=spec.split, seed=spec.seed, **spec.synthetic)
        if spec.private_ratio is not None:
            mark_private_edges(data, spec.private_ratio, seed=derive_seed(spec.seed, 5))
        simple = self.method.simple_graph
        data, notes = validate_graph(data, undirected=simple, self_loops=not simple)
        self.notes = [f"input graph: {n}" for n in notes]
        return data

    def trial_data(self, data, trial_seed):
        from privgraph.data import stratified_split

        if self.spec.split == "public" or (self.spec.input is not None and ("train_mask" in data or "y" not in data)):
            return data  # the input's own split; without labels a release needs none
        return stratified_split(copy.copy(data), seed=trial_seed)  # shallow: new masks, shared features

    def labels(self, tdata: Data, trial_seed: int, eps_index: int) -> LabelReports | None:
        """The trial's label reports (one collection per trial and ε), or None without label privacy."""
        if self.spec.epsilon_y is None:
            return None
        return report_labels(tdata, self.spec.epsilon_y, self.source(trial_seed, 2, eps_index))

    def release(self, tdata, eps, trial_seed, eps_index, method, candidate=None, shared=None):
        rel = method.release(
            tdata, eps, self.source(trial_seed, *self.release_stream(eps_index, candidate)), self.progress
        )
        labels = shared if shared is not None else self.labels(tdata, trial_seed, eps_index)
        report = PrivacyReport([rel.guarantee] + list(rel.extra_guarantees) + ([labels.guarantee()] if labels else []))
        return Released(rel, self.finish_report(report, eps), rel.details, rel.details.get("mechanism"), labels)

    def evaluate(self, tdata, released, hp, trial_seed, eps_index):
        result = self.method.fit(
            released.payload, tdata, self.model_name(), hp, derive_seed(trial_seed, 4, eps_index), released.shared
        )
        return Evaluation(
            {
                "accuracy": result.test_accuracy,
                "val_accuracy": result.val_accuracy,
                "train_accuracy": result.train_accuracy,
                "best_epoch": result.best_epoch,
                "epochs_run": result.epochs_run,
                "train_seconds": result.seconds,
            },
            result.val_accuracy,
            result.model,
        )

    def search_configs(self, base: Hyperparameters, eps_index: int, labels: bool) -> list[Hyperparameters]:
        """The defaults plus up to ``tune_budget − 1`` distinct random points of the grid (the spec's
        ``search_space`` replaces :data:`SEARCH_SPACE`'s values and adds names)."""
        space = {**SEARCH_SPACE, **self.spec.search_space}
        names = list(
            dict.fromkeys(
                [
                    *self.method.tunable,
                    *(["label_steps"] if labels else []),
                    *(n for n in self.spec.search_space if n not in self.method.release_search),
                ]
            )
        )
        grid = list(itertools.product(*(space[n] for n in names)))
        order = np.random.default_rng(derive_seed(self.spec.seed, 3, eps_index)).permutation(len(grid))
        configs = [base]
        for i in order:
            if len(configs) >= self.spec.tune_budget:  # checked first: a budget of 1 is the defaults alone
                break
            hp = base.update(**dict(zip(names, grid[i])))
            if hp not in configs:
                configs.append(hp)
        return configs

    def tune(self, tdata, released, eps, eps_index, base):
        configs = self.search_configs(base, eps_index, released.shared is not None)
        best, best_val = base, -1.0
        for i, hp in enumerate(configs):
            self.progress(f"tuning ε={eps}", i, len(configs))
            val = self.evaluate(tdata, released, hp, self.spec.seed, eps_index).validation
            if val > best_val:
                best, best_val = hp, val
        self.progress(f"tuning ε={eps}", len(configs), len(configs))
        return best

    def record_config(self, released):
        return {"split": self.spec.split, "private_ratio": self.spec.private_ratio}

    def check_attack(self, attack):
        if attack.needs_graph and self.model_name() == "mlp" and not self.method.kprop_steps(Hyperparameters()):
            raise ValueError(
                f"{attack.name} measures how a node's output depends on other nodes through the graph; "
                f"{self.spec.method} with an MLP never uses one (the attack is at chance by "
                "construction): use link-stealing for what the features alone reveal"
            )
        if attack.needs_sensitive:
            if self.spec.input is not None:
                if "sens" not in self.spec.input:
                    raise ValueError(f"{attack.name} infers a sensitive attribute: the input graph has none (sens)")
            elif _data_dataset(self.spec.dataset).sensitive is None:
                from privgraph.data.registry import SENSITIVE, dataset_names

                raise ValueError(
                    f"{attack.name} infers a sensitive attribute: {self.spec.dataset} has none; use a "
                    f"dataset with one ({', '.join(dataset_names(SENSITIVE))}) or an --input graph "
                    "with sens"
                )

    def attack_target(self, tdata, released, evaluation, hp, trial_seed, eps, eps_index):
        """The trained classifier, queried over the graph the server holds; its ``shadow`` runs the same
        method, ε, model and hyperparameters (and label LDP) on an attacker's graph, from the attacker's
        own seeded randomness."""
        from privgraph.attacks import target_from_fit
        from privgraph.mechanisms import make_generator

        method, model = self.method, self.model_name()

        def shadow(aux: Data, seed: int):
            rel = method.release(aux, eps, make_generator(derive_seed(seed, 1)))
            labels = (
                None
                if self.spec.epsilon_y is None
                else report_labels(aux, self.spec.epsilon_y, make_generator(derive_seed(seed, 2)))
            )
            result = method.fit(rel, aux, model, hp, derive_seed(seed, 4), labels)
            return target_from_fit(method, rel, aux, result.model, eps, utility={"accuracy": result.test_accuracy})

        return target_from_fit(
            method, released.payload, tdata, evaluation.model, eps, shadow, {"accuracy": evaluation.metrics["accuracy"]}
        )


# ============================================================================ attribute inference
class AttributeInference(EvaluationTask):
    """Embeddings that hide a sensitive attribute (PPCVGAE §6): per trial (seed ``seed + t``: the
    private nodes, the 50/30/20 split and the model's initialisation) the method's model is trained
    once and released per ε (noise from the stream of that ε) and without noise for ``None``; metrics:
    utility (node classification on the test split) and the attribute attack on the private nodes,
    with the case's classifier — GCN on (A, Z, s_Q) for case a, MLP on Z for case b."""

    name = "attribute"
    metrics = ("utility_accuracy", "utility_f1", "attack_accuracy", "attack_f1", "attack_auc")
    reads = ("case", "balance", "synthetic")
    holdout_fraction: ClassVar[float] = 0.2  # share of the private nodes held out for tuning (with ``tune``)

    def __init__(self, spec, method, progress):
        super().__init__(spec, method, progress)
        # (trial seed, method parameters) -> trained model: one training per trial and candidate, all ε
        self._trained: dict[tuple[int, str], Any] = {}

    @property
    def validation_metric(self) -> str:  # type: ignore[override]
        if not self.spec.tune:
            return "validation accuracy"
        return (
            "the privacy-utility objective on validation: utility accuracy on the validation split minus the "
            f"attack's accuracy above the majority rate on {self.holdout_fraction:.0%} of the private nodes held "
            "out from the test (it reads those nodes' sensitive attribute, so the choice itself is not covered "
            "by the guarantee, like the weights trained on s)"
        )

    @classmethod
    def accepts(cls, method):
        return method.task == Task.EMBEDDING

    @property
    def case(self) -> str:
        return self.spec.case or getattr(self.method.params, "case", "a")

    def validate(self):
        from privgraph.attacks import check_case
        from privgraph.data.registry import SENSITIVE, get_dataset

        if self.spec.input is None:
            get_dataset(self.spec.dataset, SENSITIVE)
        check_case(self.case)
        own = getattr(self.method.params, "case", None)
        if self.spec.case is not None and own is not None and self.spec.case != own:
            raise ValueError(f"--case {self.spec.case} and the method's case={own} differ: give one")
        for eps in self.spec.epsilons:
            if eps is not None:
                self.method.check_release_epsilon(eps)
        if self.spec.secure and all(e is None for e in self.spec.epsilons):
            raise ValueError(
                f"--secure draws the release noise from the OS source, but without an epsilon "
                f"{self.spec.method} is released without noise (nothing to draw); give --epsilon or "
                "drop --secure"
            )

    def model_name(self):
        from privgraph.attacks import CASE_MODELS

        return CASE_MODELS[self.case]

    def load(self):
        from privgraph.data import load_sensitive

        spec = self.spec
        if spec.input is not None:
            return spec.input
        return load_sensitive(spec.dataset, root=spec.data_root, seed=spec.seed, **spec.synthetic)

    def trial_data(self, data, trial_seed):
        """The trial's private nodes and split; with ``tune`` also ``attack_val_mask``, a stratified
        share of the private nodes held out for the validation attack (never scored in the test)."""
        from privgraph.attacks.attribute import holdout_private_nodes
        from privgraph.data import split_sensitive

        tdata = split_sensitive(copy.copy(data), trial_seed)
        if self.spec.tune:
            tdata.attack_val_mask, _ = holdout_private_nodes(
                tdata.private_mask, tdata.sens, derive_seed(trial_seed, 8), self.holdout_fraction
            )
        return tdata

    def release_stream(self, eps_index, candidate):
        return (eps_index,) if candidate is None else (eps_index, 1 + candidate)

    def release(self, tdata, eps, trial_seed, eps_index, method, candidate=None, shared=None):
        key = (trial_seed, repr(sorted(method.params.to_dict().items())))
        if key not in self._trained:  # trials × ε (× candidates): kept for the run (small autoencoders)
            self._trained[key] = method.train(tdata, trial_seed, self.progress)
        rng = None if eps is None else self.source(trial_seed, *self.release_stream(eps_index, candidate))
        rel = method.release_trained(self._trained[key], tdata, eps, rng)
        return Released(
            rel,
            self.finish_report(PrivacyReport([rel.guarantee]), eps),
            rel.details,
            "gaussian" if eps is not None else None,
        )

    def evaluate(self, tdata, released, hp, trial_seed, eps_index):
        from privgraph.attacks import AttributeAttack, utility

        z = released.payload.z
        u = utility(
            self.case,
            z,
            tdata.edge_index,
            tdata.y,
            tdata.sens,
            tdata.private_mask,
            tdata.train_mask,
            tdata.val_mask,
            tdata.test_mask,
            trial_seed,
        )
        metrics = {"utility_accuracy": u.accuracy, "utility_f1": u.f1, "utility_val_accuracy": u.val_accuracy}
        if "attack_val_mask" not in tdata:
            attack = AttributeAttack(representation="embeddings", case=self.case, balance=self.spec.balance)
            a = attack.run(self.embedding_target(tdata, released, u.accuracy), trial_seed)
            return Evaluation(
                {**metrics, **a.metrics, "attack_val_accuracy": a.details["attacker_val_accuracy"]}, u.val_accuracy
            )
        return self._evaluate_held_out(tdata, z, metrics, trial_seed)

    def _evaluate_held_out(self, tdata: Data, z: Tensor, metrics: dict[str, float], trial_seed: int) -> Evaluation:
        """With ``tune``: the attack (trained on the public nodes as always) is scored on the held-out private
        nodes for validation and on the other private nodes for the test; the validation score is the
        privacy-utility objective of :attr:`validation_metric`, utility − max(0, attack − majority)."""
        from privgraph.attacks.attribute import attribute_inference_on
        from privgraph.attacks.metrics import attack_metrics

        held = tdata.attack_val_mask
        test, val = attribute_inference_on(
            self.case,
            z,
            tdata.edge_index,
            tdata.sens.long(),
            tdata.private_mask,
            trial_seed,
            self.spec.balance,
            [tdata.private_mask & ~held, held],
        )
        majority = float(max(val.truth.mean(), 1 - val.truth.mean()))
        advantage = max(0.0, val.accuracy - majority)
        objective = metrics["utility_val_accuracy"] - advantage
        metrics.update(attack_metrics(test.scores, test.truth, test.predicted))
        metrics.update(
            {
                "attack_f1": test.f1,
                "attack_val_accuracy": test.val_accuracy,
                "attack_heldout_accuracy": val.accuracy,
                "attack_heldout_majority": majority,
                "validation_objective": objective,
            }
        )
        return Evaluation(metrics, objective)

    def record_config(self, released):
        return {"case": self.case, "balance": self.spec.balance}

    def embedding_target(self, tdata: Data, released: Released, utility: float):
        from privgraph.attacks import embedding_target

        eps = released.report.guarantees[0].epsilon if released.mechanism else None
        return embedding_target(self.spec.method, tdata, released.payload.z, eps, {"utility_accuracy": utility})

    def check_attack(self, attack):
        if attack.name == "attribute" and self.spec.attack_params:
            raise ValueError(
                "the attribute task runs the attribute attack itself, on the released embeddings: "
                "set its threat model with --case and --balance, not attack parameters"
            )
        if attack.needs_model:
            raise ValueError(
                f"{attack.name} queries a model's inference API; {self.spec.method} releases fixed "
                "embeddings (attack them with attribute or link-stealing)"
            )

    def attack_target(self, tdata, released, evaluation, hp, trial_seed, eps, eps_index):
        return self.embedding_target(tdata, released, evaluation.metrics["utility_accuracy"])

    def evaluates_attack(self, attack):
        return attack.name == "attribute"  # evaluate runs it on the released embeddings (--case, --balance)


# ============================================================================ heterogeneous graphs
class _HeteroTask(EvaluationTask):
    """Shared by the heterogeneous tasks: the dataset's task (target type and relation, HeteDP §V)."""

    training = HeteroTraining

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
        from privgraph.data.registry import HETEROGENEOUS, get_dataset

        return (
            self.spec.dataset.lower()
            if self.spec.input is not None
            else get_dataset(self.spec.dataset, HETEROGENEOUS).key
        )

    @property
    def hetero_task(self):
        """The dataset's task (target type, protected relation); the evaluation needs one, so ``run`` and
        ``attack`` on the user's own graph stop here with the way to release it instead."""
        from privgraph.data.registry import HETEROGENEOUS, dataset_names, get_dataset

        if self.spec.input is not None:
            raise ValueError(
                f"privgraph run evaluates {self.method.name} on the heterogeneous datasets it knows "
                f"({', '.join(dataset_names(HETEROGENEOUS))}), not on --input: release your own "
                f"graph with privgraph release {self.method.name} --input FILE"
            )
        return get_dataset(self.key, HETEROGENEOUS).hetero

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

    def public_edge_count(self, params: Any, examples: Tensor) -> tuple[Any, str | None]:
        """HeteDP's ``edge_count`` (DP-SGD's public N): as given, or — the tasks run on named datasets,
        public and split from a public seed — the split's number of training edges, with the note that
        says so.  A release of the user's own graph never reads it from the data (it refuses without)."""
        if params.edge_count is not None:
            return params, None
        n = int(examples.shape[1])
        note = (
            f"DP-SGD's sampling is planned for N = {n}, the number of training edges of this public benchmark "
            f"split ({self.spec.dataset}); on a private graph give edge_count (the release refuses without it)"
        )
        return type(params).build(self.method.name, {**params.to_dict(), "edge_count": n}), note


def _noted_last(guarantees: list[Any], note: str | None) -> list[Any]:
    """``guarantees`` with ``note`` on the last one (a link release's DP-SGD guarantee)."""
    return guarantees if note is None or not guarantees else [*guarantees[:-1], guarantees[-1].with_note(note)]


def _m2v_classifier(
    z: Tensor, data: HeteroData, target: str, seed: int, split: str, params: Any
) -> tuple[Any, tuple[Tensor, Tensor, Tensor]]:
    """metapath2vec's node classifier on the embeddings ``z`` of ``target``: ``params.classifier``
    (:meth:`~privgraph.methods.hetedp.method.MetaPath2VecParams.fit_classifier`) fitted on the
    training nodes, and the (train, val, test) masks.  Without ``params.train_share`` the masks are
    the task's split (:func:`_nc_masks`); with a share s they are a random s / v / rest split of the
    labelled nodes from ``seed`` (MAGNN's evaluation protocol, with v =
    ``params.validation_share()`` validating)."""
    if params.train_share is None:
        masks = _nc_masks(data, target, seed, split)
    else:
        masks = _labelled_split(data, target, seed, train_ratio=params.train_share, val_ratio=params.validation_share())
    train, y = masks[0], data[target].y
    return params.fit_classifier(z[train].numpy(), y[train].numpy()), masks


def _metapath_graph(
    data: HeteroData, name: str, seed: int, paths: list[list[tuple[str, str, str]]] | None = None
) -> HeteroData:
    """The metapath graphs (``AddMetaPaths``, at most :data:`METAPATH_MAX_SAMPLE` neighbours per step,
    drawn from ``derive_seed(seed, 6)``; torch's global generator is restored) of the dataset
    ``name``'s target type (its registered ``metapaths``), or of ``paths``."""
    from torch_geometric.transforms import AddMetaPaths

    from privgraph.data.registry import HETEROGENEOUS, get_dataset

    if paths is None:
        paths = [list(path) for path in get_dataset(name, HETEROGENEOUS).metapaths.values()]
    data = copy.copy(data)
    for et in data.edge_types:
        data[et].edge_index = data[et].edge_index.contiguous()
    with torch.random.fork_rng():  # AddMetaPaths samples neighbours from torch's global generator
        torch.manual_seed(derive_seed(seed, 6))
        return AddMetaPaths(
            paths, drop_orig_edge_types=True, drop_unconnected_node_types=True, max_sample=METAPATH_MAX_SAMPLE
        )(data)


def _two_hop_paths(data: HeteroData, node_type: str) -> list[list[tuple[str, str, str]]]:
    """``node_type``'s metapaths t → s → t, one per neighbour type s ≠ t (the first relation each way):
    the first of the authors' metapaths of each of their types (``data/acm.py``, ``data/dblp.py``
    ``metapaths``; their longer ones are not built)."""
    out = []
    for s in dict.fromkeys(et[2] for et in data.edge_types if et[0] == node_type and et[2] != node_type):
        there = next(et for et in data.edge_types if et[0] == node_type and et[2] == s)
        back = next((et for et in data.edge_types if et[0] == s and et[2] == node_type), None)
        if back is not None:
            out.append([there, back])
    return out


def _f1(truth: Tensor, predicted: Tensor) -> dict[str, float]:
    return {
        "micro_f1": float(f1_score(truth, predicted, average="micro")),
        "macro_f1": float(f1_score(truth, predicted, average="macro")),
    }


class HeteroNodeClassification(_HeteroTask):
    """Node classification on the dataset's target type (HeteDP §V-B): for ``hetedp`` (and
    ``hetedp-features``) the target type's features clipped and perturbed once with ε (§IV-A), then a
    HAN over the dataset's metapaths (eq. 7–13); RGCN and HGT end to end; metapath2vec embeddings with
    a logistic regression or a linear SVM (its ``classifier``), trained on the split's training nodes or
    on a random share of the labelled ones (its ``train_share``; :func:`_m2v_classifier`).  The graph
    and the labels are not protected (stated).  ``split``: the dataset's own split (``random``, the
    default) or the HeteDP authors' random 20/10/70 node split (``hetedp``, a new one per trial seed;
    :func:`_nc_masks`).  ``hetedp`` with ``nc_model="link-vgae"``: HeteDP's link release (DP features,
    DP-SGD on the protected relation's edges) and a logistic regression on its embeddings of the
    target type, the epoch chosen on validation or, opt-in, by the paper's optimistic best test
    score (:mod:`privgraph.methods.hetedp.nc`, the authors' ``topologyDP_nc.py``)."""

    name = "hetero-nc"
    metrics = ("micro_f1", "macro_f1")
    reads = ("split",)

    def validate(self):
        super().validate()
        if self.spec.split not in HETERO_NC_SPLITS:
            raise ValueError(
                f"the hetero-nc task's split must be one of {HETERO_NC_SPLITS} (random: the dataset's "
                f"own split; hetedp: the HeteDP authors' 20/10/70), got {self.spec.split!r}"
            )
        if self.spec.input is None:
            if self.hetero_task.node_type is None:
                raise ValueError(f"{self.spec.dataset} has no node labels: use --task lp")
            if self.key == "imdb":
                raise ValueError("HGB IMDB's labels are multi-label; use --dataset imdb-magnn for node classification")
        link_vgae = self.method.name == "hetedp" and self.method.params.nc_model == "link-vgae"
        if self.method.name == "hetedp" and self.method.params.features == "none" and not link_vgae:
            raise ValueError(
                "features='none' is a link-prediction option (node classification releases the "
                "features themselves): use features='noisy', or nc_model='link-vgae'"
            )
        if (
            link_vgae
            and self.spec.input is None
            and self.hetero_task.node_type not in (self.hetero_task.edge_type[0], self.hetero_task.edge_type[2])
        ):
            raise ValueError(
                f"nc_model='link-vgae' classifies the link model's embeddings, but {self.spec.dataset}'s "
                f"target type is not an endpoint of its protected relation {self.hetero_task.edge_type}"
            )
        if (
            self.method.name == "metapath2vec"
            and self.method.params.train_share is not None
            and self.spec.split != "random"
        ):
            raise ValueError(
                f"metapath2vec's train_share draws its own random split of the labelled nodes: "
                f"leave split at its default (got split={self.spec.split!r})"
            )

    def model_name(self):
        return "nc"

    def record_config(self, released):
        return {"split": self.spec.split}

    def release(self, tdata, eps, trial_seed, eps_index, method, candidate=None, shared=None):
        from privgraph.methods.hetedp.features import privatize_features

        if method.name == "hetedp" and method.params.nc_model == "link-vgae":
            return self._link_embeddings(tdata, eps, trial_seed, eps_index, method, candidate)
        if method.name not in ("hetedp", "hetedp-features"):
            return Released(
                None, self.finish_report(PrivacyReport([unprotected(Unit.NODE_FEATURES, method.name)]), eps)
            )
        target = self.hetero_task.node_type
        if eps is None:
            return Released(None, PrivacyReport([unprotected(Unit.NODE_FEATURES, "HeteDP without noise")]))
        p = method.params
        rel = privatize_features(
            tdata,
            eps,
            p.delta,
            p.clip_bound,
            self.source(trial_seed, *self.release_stream(eps_index, candidate)),
            node_types=[target],
            calibration=p.calibration,
            feature_dim=p.feature_dim,
            projection_seed=p.projection_seed,
        )
        report = PrivacyReport([rel.guarantee.with_note("metapath graph and labels are not protected")])
        return Released(rel.x[target], self.finish_report(report, eps), {"features": rel.details}, "gaussian")

    def _link_embeddings(
        self,
        tdata: HeteroData,
        eps: float | None,
        trial_seed: int,
        eps_index: int,
        method: Method,
        candidate: int | None,
    ) -> Released:
        """``nc_model="link-vgae"``: HeteDP's link release trained on every edge of the protected
        relation (messages as its ``topology`` says), recording the target type's embeddings after
        each DP-SGD epoch (:class:`~privgraph.methods.hetedp.nc.EpochEmbeddings`)."""
        from privgraph.methods.hetedp.nc import EpochEmbeddings

        task = self.hetero_task
        examples = tdata[task.edge_type].edge_index
        p, count_note = self.public_edge_count(method.params, examples)
        recorded = EpochEmbeddings(task.node_type)
        rng = self.source(trial_seed, *self.release_stream(eps_index, candidate))
        replace = None if p.nc_inputs == "release" else self._featdp_inputs(tdata, trial_seed, p)
        link = p.link_release(
            tdata,
            task.edge_type,
            task.reverse,
            examples,
            tdata.edge_index_dict,
            eps,
            rng,
            trial_seed,
            self.progress,
            on_epoch=recorded.record,
            replace_inputs=replace,
        )
        note = "node labels and the split are not protected (public in this setting)"
        report = PrivacyReport([g.with_note(note) for g in _noted_last(link.guarantees, count_note)])
        selection = (
            "validation micro-F1"
            if p.nc_selection == "validation"
            else "best TEST micro-F1 over the epochs: the paper's optimistic selection (reads the test labels; "
            "not an estimate)"
        )
        details = {
            **link.details,
            "nc": {
                "model": "link-vgae: logistic regression on the link model's embeddings "
                "(the authors' topologyDP_nc.py)",
                "embedding": p.nc_embedding,
                "epoch_selection": selection,
            },
        }
        return Released(recorded, self.finish_report(report, eps), details, "gaussian" if eps is not None else None)

    def _featdp_inputs(self, tdata: HeteroData, trial_seed: int, params: Any) -> Any:
        """``nc_inputs="authors-han…"``: the authors' ``featDP.py`` as ``link_release``'s
        ``replace_inputs`` — per replaced type (every type the link model reads, or the classified one
        only) a HAN over its metapath graphs (the classified type: the dataset's metapaths, trained on
        the training labels of the task's split; the others: :func:`_two_hop_paths`, trained on
        :func:`~privgraph.methods.hetedp.nc.degree_bins` of their metapath degree on the authors'
        20 % training split from the trial seed; all nodes of a type with fewer than 10), noise of the
        paper's calibration at ε_f redrawn every epoch, the embedding of the clean input handed on
        (:func:`~privgraph.methods.hetedp.nc.featdp_embedding`; not DP, stated)."""
        from privgraph.data.hetero import hetedp_node_split
        from privgraph.methods.hetedp.features import paper_noise_std
        from privgraph.methods.hetedp.nc import ReplacedInputs, degree_bins, featdp_embedding, featdp_guarantee

        target = self.hetero_task.node_type
        y = tdata[target].y
        train = _nc_masks(tdata, target, trial_seed, self.spec.split)[0]
        classes = int(y.max()) + 1
        seed = derive_seed(trial_seed, 9)

        def replace(eps_f: float | None, clean: dict[str, Tensor]) -> ReplacedInputs:
            types = [target] if params.nc_inputs == "authors-han-target" else list(clean)
            sigma = 0.0 if eps_f is None else paper_noise_std(eps_f, params.delta)
            out, trained_on = {}, {}
            for t in types:
                if t == target:
                    graph, labels, mask = _metapath_graph(tdata, self.key, trial_seed), y, train
                    trained_on[t] = f"training labels ({int(train.sum())} nodes), metapaths {list(graph.edge_types)}"
                else:
                    graph = _metapath_graph(tdata, self.key, trial_seed, _two_hop_paths(tdata, t))
                    degree = sum(
                        torch.bincount(ei[1][ei[0] != ei[1]], minlength=clean[t].shape[0])
                        for ei in graph.edge_index_dict.values()
                    ) + len(graph.edge_types)
                    n = clean[t].shape[0]  # the authors' split needs >= 10 nodes (one validates); else all train
                    mask = hetedp_node_split(n, trial_seed)[0] if n >= 10 else torch.ones(n, dtype=torch.bool)
                    labels = degree_bins(degree, classes)
                    trained_on[t] = f"degree bins ({classes}), metapaths {list(graph.edge_types)}"
                out[t] = featdp_embedding(clean[t], graph, t, labels, mask, sigma, seed)
            details = {
                "nc_inputs": params.nc_inputs,
                "replaced": types,
                "noise_std": sigma,
                "han_trained_on": trained_on,
                "handed_on": "HAN embedding of the CLEAN inputs (featDP.py)",
            }
            return ReplacedInputs(out, featdp_guarantee(types, target, eps_f, params.delta, sigma), details)

        return replace

    def evaluate(self, tdata, released, hp, trial_seed, eps_index):
        from privgraph.data.hetero import node_inputs
        from privgraph.methods.hetedp.baselines import metapath2vec_node_embeddings
        from privgraph.methods.hetedp.nc import EpochEmbeddings, classify_epochs
        from privgraph.nn.hetero import HANClassifier, HGTClassifier, RGCNClassifier
        from privgraph.train import train_node_classifier

        method, target = self.method.name, self.hetero_task.node_type
        y = tdata[target].y
        if isinstance(released.payload, EpochEmbeddings):  # nc_model="link-vgae"
            p = self.method.params
            masks = _nc_masks(tdata, target, trial_seed, self.spec.split)
            metrics, val_score = classify_epochs(released.payload, y, masks, p.nc_selection, p.nc_embedding, trial_seed)
            return Evaluation(metrics, val_score)
        classes = int(y.max()) + 1
        if method == "metapath2vec":
            z = metapath2vec_node_embeddings(
                tdata,
                self.key,
                target,
                trial_seed,  # the dataset's metapath
                walks=self.method.params.walks(),
            )
            clf, (train, val, test) = _m2v_classifier(z, tdata, target, trial_seed, self.spec.split, self.method.params)
            predicted = torch.from_numpy(clf.predict(z[test].numpy()))
            val_acc = float((torch.from_numpy(clf.predict(z[val].numpy())) == y[val]).float().mean())
            return Evaluation(_f1(y[test], predicted), val_acc)
        train, val, test = _nc_masks(tdata, target, trial_seed, self.spec.split)
        if method in ("hetedp", "hetedp-features"):
            graph = _metapath_graph(tdata, self.key, trial_seed)
            x = graph[target].x.float() if released.payload is None else released.payload
            torch.manual_seed(trial_seed)
            model = HANClassifier(x.shape[1], hp.hidden, classes, graph.metadata(), target)
            inputs, edges = {target: x}, graph.edge_index_dict
        else:
            torch.manual_seed(trial_seed)
            inputs = node_inputs(tdata, seed=trial_seed)
            cls = RGCNClassifier if method == "rgcn" else HGTClassifier
            model = cls({t: v.shape[1] for t, v in inputs.items()}, hp.hidden, classes, tdata.metadata(), target)
            edges = tdata.edge_index_dict
        result = train_node_classifier(
            model, inputs, edges, y, y, train, val, test, lr=0.005, weight_decay=1e-3, epochs=hp.epochs, patience=None
        )
        return Evaluation(_f1(y[test], result.test_predictions), result.val_accuracy)


class LinkPrediction(_HeteroTask):
    """Link prediction on the dataset's target relation (HeteDP §V-C), a seeded disjoint link split
    per trial: HeteDP's release (:func:`~privgraph.methods.hetedp.method.link_release`: features with
    ε_f, DP-SGD with ε_s on the training edges) scored by ROC-AUC; RGCN/HGT/metapath2vec trained
    end to end.  With ``--tune`` and no ``feature_share`` given, ε_f/ε is chosen among
    :data:`SHARE_GRID` on trial 0's validation AUC (the cost is stated)."""

    name = "lp"
    metrics = ("roc_auc",)
    validation_metric = "validation AUC"

    @classmethod
    def accepts(cls, method):
        return method.heterogeneous and method.task == Task.LINK_PREDICTION

    def validate(self):
        from privgraph.methods.hetedp.nc import check_nc_defaults

        super().validate()
        p = self.method.params
        if (
            self.method.name == "hetedp"
            and self.spec.input is None
            and p.edge_type is not None
            and p.edge_type != self.hetero_task.edge_type
        ):
            raise ValueError(
                f"{self.spec.dataset}'s link task predicts {self.hetero_task.edge_type}: the pipeline "
                "sets edge_type from the dataset"
            )
        if self.method.name == "metapath2vec" and (p.classifier != "logistic" or p.train_share is not None):
            raise ValueError(
                "metapath2vec's classifier and train_share are node-classification parameters (link "
                "prediction scores the embeddings' inner products): leave them at their defaults"
            )
        if self.method.name == "hetedp":
            check_nc_defaults(p.nc_model, p.nc_selection, p.nc_embedding, p.nc_inputs, "link prediction")

    def model_name(self):
        return "lp"

    def trial_data(self, data, trial_seed):
        from privgraph.data.hetero import link_split

        return data, link_split(data, self.hetero_task, seed=trial_seed)

    def release_search(self, eps):
        if (
            self.method.name != "hetedp"
            or eps is None
            or "feature_share" in self.spec.params
            or self.method.params.features == "none"
        ):  # ε_f = 0: no split to choose
            return {}
        return {"feature_share": list(SHARE_GRID)}

    def release(self, tdata, eps, trial_seed, eps_index, method, candidate=None, shared=None):
        if method.name != "hetedp":
            return Released(
                None, self.finish_report(PrivacyReport([unprotected(Unit.NODE_FEATURES, method.name)]), eps)
            )
        data, (train, _, _) = tdata
        task = self.hetero_task
        examples = train[task.edge_type].edge_label_index
        p, count_note = self.public_edge_count(method.params, examples)
        rng = self.source(trial_seed, *self.release_stream(eps_index, candidate))
        link = p.link_release(
            data, task.edge_type, task.reverse, examples, train.edge_index_dict, eps, rng, trial_seed, self.progress
        )
        report = PrivacyReport(_noted_last(link.guarantees, count_note))
        return Released(link, self.finish_report(report, eps), link.details, "gaussian" if eps is not None else None)

    def evaluate(self, tdata, released, hp, trial_seed, eps_index):
        from privgraph.methods.hetedp.baselines import train_link_baseline
        from privgraph.train.link_prediction import link_scores, split_auc

        data, splits = tdata
        task = self.hetero_task
        if released.payload is None:
            walks = self.method.params.walks() if self.method.name == "metapath2vec" else None
            val_auc, auc = train_link_baseline(
                self.method.name, data, task, splits, trial_seed, hp.hidden, hp.epochs, walks=walks
            )
        else:
            link = released.payload

            def score(pairs: Tensor) -> Tensor:
                return link_scores(link.result.model, link.inputs, task.edge_type, pairs)

            val_auc, auc = split_auc(splits[1], task.edge_type, score), split_auc(splits[2], task.edge_type, score)
        return Evaluation({"roc_auc": auc, "val_roc_auc": val_auc}, val_auc)


TASK_CLASSES: dict[str, type[EvaluationTask]] = {
    t.name: t for t in (NodeClassification, AttributeInference, HeteroNodeClassification, LinkPrediction)
}
TASK_ALIASES = {"nc": {True: "hetero-nc", False: "nc"}}  # `--task nc` on a heterogeneous method


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


__all__ = [
    "AttributeInference",
    "EvaluationTask",
    "Evaluation",
    "HeteroNodeClassification",
    "HeteroTraining",
    "LinkPrediction",
    "NodeClassification",
    "Released",
    "SHARE_GRID",
    "TASK_CLASSES",
    "task_for",
]
