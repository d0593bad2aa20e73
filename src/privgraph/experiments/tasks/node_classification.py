"""The ``nc`` task: node classification on a ``Data``."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import numpy as np
from torch_geometric.data import Data

from privgraph.accounting import PrivacyReport
from privgraph.data.registry import HOMOGENEOUS, SENSITIVE, dataset_names, get_dataset
from privgraph.experiments.tasks.base import Evaluation, EvaluationTask, register_task
from privgraph.mechanisms import derive_seed
from privgraph.methods import SEARCH_SPACE, Hyperparameters, LabelReports, Release, Task, report_labels
from privgraph.methods.base import fit_method
from privgraph.nn import MODELS


def _data_dataset(name: str) -> Any:
    """The registered dataset ``name`` among those read as a ``Data``: homogeneous graphs first, then
    graphs with a sensitive attribute (``sbm`` is the homogeneous one, ``planted`` the other)."""
    return get_dataset(name, *NodeClassification.datasets)


@register_task
class NodeClassification(EvaluationTask):
    """Node classification on a ``Data``: the method's release, then its classifier
    (:meth:`~privgraph.methods.base.Method.fit`); LPGNN's label LDP with ``label_epsilon``; hyperparameters tuned on the
    validation accuracy of trial 0's release (label privacy: on the denoised noisy labels)."""

    name = "nc"
    metrics = ("accuracy",)
    reads = ("model", "label_epsilon", "split", "private_ratio", "synthetic")
    datasets = (HOMOGENEOUS, SENSITIVE)
    training = Hyperparameters

    @classmethod
    def accepts(cls, method):
        return method.task == Task.NODE_CLASSIFICATION and not method.heterogeneous

    def validate(self):
        from privgraph.data.annotations import check_private_ratio
        from privgraph.input_rules import InputRequest
        from privgraph.mechanisms import check_epsilon

        spec = self.spec
        if spec.model is not None and spec.model not in MODELS:
            raise ValueError(f"unknown model {spec.model!r}; choose from {MODELS}")
        if spec.label_epsilon is not None:
            check_epsilon(spec.label_epsilon, "label_epsilon")
        if spec.split not in ("random", "public"):
            raise ValueError(f"split must be 'random' or 'public', got {spec.split!r}")
        if spec.private_ratio is not None:
            check_private_ratio(spec.private_ratio)
        if spec.input is None:
            _data_dataset(spec.dataset)
        marked = spec.input is not None and "private_edge_mask" in spec.input
        self.method.check_input(  # the method's rule (privgraph.input_rules): private edges marked or drawn
            InputRequest(
                user_input=spec.input is not None,
                private_edges=marked,
                private_ratio=spec.private_ratio,
                ratio_applies=True,
            )
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
        from privgraph.data import add_missing_split, load, load_sensitive, mark_private_edges
        from privgraph.data.validation import cleaned_for_release, input_graph_notes

        spec = self.spec
        split_note = None
        if spec.input is not None:
            data = spec.input
            if isinstance(data, Data):  # labels without a split: read_graph's rule (the CLI's input has it already)
                data = copy.copy(data)
                split_note = add_missing_split(data, spec.seed)
        elif (info := _data_dataset(spec.dataset)).graph == SENSITIVE:
            data = load_sensitive(info.key, root=spec.data_root, seed=spec.seed, **spec.synthetic)
        else:
            data = load(info.key, root=spec.data_root, split=spec.split, seed=spec.seed, **spec.synthetic)
        if spec.private_ratio is not None:
            mark_private_edges(data, spec.private_ratio, seed=derive_seed(spec.seed, 5))
        simple = self.method.simple_graph
        data, _, _ = cleaned_for_release(data, simple=simple)  # the release states its constant note itself
        self.notes = input_graph_notes([split_note] if split_note else [])  # whether a split was added: public
        return data

    def trial_data(self, data, trial_seed):
        from privgraph.data import stratified_split

        if self.spec.split == "public" or self.spec.input is not None:
            return data  # the input's own split (or the one load added); without labels a release needs none
        return stratified_split(copy.copy(data), seed=trial_seed)  # shallow: new masks, shared features

    def labels(self, tdata: Data, trial_seed: int, eps_index: int) -> LabelReports | None:
        """The trial's label reports (one collection per trial and ε), or None without label privacy."""
        if self.spec.label_epsilon is None:
            return None
        return report_labels(tdata, self.spec.label_epsilon, self.source(trial_seed, 2, eps_index))

    def release(self, tdata, eps, trial_seed, eps_index, method, candidate=None, shared=None):
        """The method's ``privatize`` on the trial's graph; the trial's label reports (collected once per
        trial and ε, shared by a selection's candidates) go into the release as collected."""
        labels = shared if shared is not None else self.labels(tdata, trial_seed, eps_index)
        method, count_note = self.train_count_method(method, tdata)
        rel = self.privatize(tdata, method, eps, trial_seed, eps_index, candidate, labels=labels)
        released = self.released(rel, Release.from_private(rel), rel.details.get("mechanism"), labels)
        if count_note is not None:
            released.report = PrivacyReport([g.with_note(count_note) for g in released.report.guarantees])
        return released

    def train_count_method(self, method, tdata: Data):
        """Node-level DP-SGD's public training-node count ``num_train`` (GAP-NDP, node-dpsgd) — as given, or
        (the tasks run on named datasets, public and split from a public seed) the split's count, with the note
        that says so.  A release of the user's own graph never reads it from the data (it refuses without)."""
        if getattr(method.params, "num_train", "unset") is not None or "train_mask" not in tdata:
            return method, None
        n = int(tdata.train_mask.sum())
        note = (
            f"DP-SGD is planned for num_train = {n}, the training-node count of this public benchmark split "
            f"({self.spec.dataset}); on a private graph give num_train (the release refuses without it)"
        )
        return method.with_params(num_train=n), note

    def evaluate(self, tdata, released, hp, trial_seed, eps_index):
        result = fit_method(
            self.method,
            released.payload,
            tdata,
            self.model_name(),
            hp,
            derive_seed(trial_seed, 4, eps_index),
            released.shared,
            self.progress,
        )
        metrics = {
            "accuracy": result.test_accuracy,
            "val_accuracy": result.val_accuracy,
            "train_accuracy": result.train_accuracy,
            "best_epoch": result.best_epoch,
            "epochs_run": result.epochs_run,
            "train_seconds": result.seconds,
        }
        state = getattr(released.payload, "model_state", None) or {}
        if "ptr_passed" in state:  # GAP-NDP's test bit: part of the release (its own ε_t), its mean is the pass rate
            metrics["ptr_passed"] = float(state["ptr_passed"])
        return Evaluation(metrics, result.val_accuracy, result.model)

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
                raise ValueError(
                    f"{attack.name} infers a sensitive attribute: {self.spec.dataset} has none; use a "
                    f"dataset with one ({', '.join(dataset_names(SENSITIVE))}) or an --input graph "
                    "with sens"
                )

    def attack_target(self, tdata, released, evaluation, hp, trial_seed, eps, eps_index):
        """The trained classifier, queried over the graph the server holds; its ``shadow`` runs the same
        method, ε, model and hyperparameters (and label LDP) on an attacker's graph, from the attacker's
        own seeded randomness."""
        from privgraph.api import release
        from privgraph.attacks import target_from_fit
        from privgraph.mechanisms import make_generator
        from privgraph.request import ReleaseRequest, Shared

        method, model = self.method, self.model_name()

        def shadow(aux: Data, seed: int):
            labels = (
                None
                if self.spec.label_epsilon is None
                else report_labels(aux, self.spec.label_epsilon, make_generator(derive_seed(seed, 2)))
            )
            built = self.train_count_method(method, aux)[0]
            rng = make_generator(derive_seed(seed, 1))
            request = ReleaseRequest.build(built, epsilon=eps, rng=rng, shared=Shared(labels=labels))
            rel = Release.from_private(release(aux, request))
            result = method.fit(rel, aux, model, hp, derive_seed(seed, 4), labels)
            return target_from_fit(method, rel, aux, result.model, eps, utility={"accuracy": result.test_accuracy})

        return target_from_fit(
            method, released.payload, tdata, evaluation.model, eps, shadow, {"accuracy": evaluation.metrics["accuracy"]}
        )
