"""The ``attribute`` task: embeddings that hide a sensitive attribute (PPCVGAE §6)."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from torch import Tensor
from torch_geometric.data import Data

from privgraph.data.registry import SENSITIVE, get_dataset
from privgraph.experiments.tasks.base import Evaluation, EvaluationTask, Released, register_task
from privgraph.mechanisms import derive_seed
from privgraph.methods import Task


@register_task
class AttributeInference(EvaluationTask):
    """Embeddings that hide a sensitive attribute (PPCVGAE §6): per trial (seed ``seed + t``: the
    private nodes, the 50/30/20 split and the model's initialisation) the method's model is trained
    once and released per ε (noise from the stream of that ε) and without noise for ``None``; metrics:
    utility (node classification on the test split) and the attribute attack on the private nodes,
    with the case's classifier — GCN on (A, Z, s_Q) for case a, MLP on Z for case b."""

    name = "attribute"
    metrics = ("utility_accuracy", "utility_f1", "attack_accuracy", "attack_f1", "attack_auc")
    reads = ("case", "balance", "synthetic")
    datasets = (SENSITIVE,)
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

        if self.spec.input is None:
            get_dataset(self.spec.dataset, *self.datasets)
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
        rel = self.privatize(method, tdata, eps, trial_seed, eps_index, candidate, trained=self._trained[key])
        return self.released(rel, rel.data, "gaussian" if eps is not None else None)

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
            a = attack.run(self.embedding_target(tdata, released, u.accuracy), trial_seed, self.progress)
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
