"""The ``lp`` task: link prediction on a heterogeneous graph's target relation (HeteDP §V-C)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from privgraph.accounting import PrivacyReport
from privgraph.data.hetero import EdgeType
from privgraph.experiments.tasks.base import Evaluation, register_task
from privgraph.experiments.tasks.hetero import _HeteroTask, _noted_last
from privgraph.methods import Task

SHARE_GRID = (0.1, 0.3, 0.5, 0.7, 0.9)  # HeteDP's ε_f/ε candidates (bi-level search)


@register_task
class LinkPrediction(_HeteroTask):
    """Link prediction on the dataset's target relation (HeteDP §V-C), a seeded disjoint link split
    per trial: HeteDP's release (:func:`~privgraph.methods.hetedp.link_release.link_release`: features with
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
        super().validate()
        p = self.method.params
        if (
            self.method.releases_link_model
            and self.spec.input is None
            and p.edge_type is not None
            and p.edge_type != self.hetero_task.edge_type
        ):
            raise ValueError(
                f"{self.spec.dataset}'s link task predicts {self.hetero_task.edge_type}: the pipeline "
                "sets edge_type from the dataset"
            )
        self.method.check_hetero_task(self.name, self.spec.split)

    def model_name(self):
        return "lp"

    def trial_data(self, data, trial_seed):
        from privgraph.data.hetero import link_split

        return data, link_split(data, self.hetero_task, seed=trial_seed)

    def release_search(self, eps):
        if (
            not self.method.releases_link_model
            or eps is None
            or "feature_share" in self.spec.params
            or self.method.params.features == "none"
        ):  # ε_f = 0: no split to choose
            return {}
        return {"feature_share": list(SHARE_GRID)}

    def release(self, tdata, eps, trial_seed, eps_index, method, candidate=None, shared=None):
        """The method's ``privatize`` on the trial's training graph (its message-passing edges; the
        protected relation's training edges are the examples); HeteDP's initialisation and batches from
        the trial seed.  The baselines release the input as it is and train end to end in :meth:`evaluate`."""
        data, (train, _, _) = tdata
        if not method.releases_link_model:
            return self.released(self.privatize(data, method, None, trial_seed, eps_index, candidate), None)
        method, count_note = self.link_method(method, train[self.hetero_task.edge_type].edge_label_index)
        rel = self.privatize(train, method, eps, trial_seed, eps_index, candidate, training_seed=trial_seed)
        released = self.released(rel, rel.trained, "gaussian" if eps is not None else None)
        released.report = PrivacyReport(_noted_last(released.report.guarantees, count_note))
        return released

    def evaluate(self, tdata, released, hp, trial_seed, eps_index):
        """ROC-AUC on the split's validation and test pairs; the evaluation's ``model`` is what an attack
        queries: the embeddings of the relation's two endpoint types (HeteDP: the link model's μ)."""
        from privgraph.train.link_prediction import link_scores, split_auc

        data, splits = tdata
        task = self.hetero_task
        if released.payload is None:
            val_auc, auc, embeddings = self.method.train_link_baseline(
                data, task, splits, trial_seed, hp.hidden, hp.epochs
            )
        else:
            link = released.payload

            def score(pairs: Tensor) -> Tensor:
                return link_scores(link.result.model, link.inputs, task.edge_type, pairs)

            val_auc, auc = split_auc(splits[1], task.edge_type, score), split_auc(splits[2], task.edge_type, score)
            embeddings = link_embeddings(link.result.model, link.inputs, task.edge_type)
        return Evaluation({"roc_auc": auc, "val_roc_auc": val_auc}, val_auc, embeddings)

    # ---------------------------------------------------------------- attacks
    def check_attack(self, attack):
        """The link predictor answers pair scores and embeddings of the protected relation's endpoints:
        link-score and link stealing (:mod:`privgraph.attacks.hetero`)."""
        super().check_attack(attack)
        if attack.family == "membership":
            raise ValueError(
                f"{attack.name} asks whether a node trained a classifier; the lp task's target is a link "
                "model, whose training examples are the protected relation's edges: attack them with "
                "link-score or link-stealing (or attack a node classifier with --task nc)"
            )
        if attack.needs_model:
            raise ValueError(
                f"{attack.name} perturbs the features of a node classifier's queries; the lp task's target "
                "answers pair scores and embeddings of the protected relation: use link-score or link-stealing"
            )

    def attack_target(self, tdata, released, evaluation, hp, trial_seed, eps, eps_index):
        """The link predictor (:func:`~privgraph.attacks.hetero.link_model_target`): its embeddings of the
        relation's endpoint types and its score (their inner product); the truth the relation's bipartite
        view, its training edges (DP-SGD's examples) secret, the held-out edges neither candidates nor
        non-links."""
        from privgraph.attacks.hetero import guarantee_words, link_model_target, relation_view

        data, (train, _, _) = tdata
        edge_type = self.hetero_task.edge_type
        truth = relation_view(data, edge_type, train[edge_type].edge_label_index)
        what = (
            "HeteDP's released link model (its μ and μ_u·μ_v, eq. 19)"
            if released.payload is not None
            else f"{self.method.name}'s link predictor (its embeddings and their inner product)"
        )
        answers = (
            f"{what} of {edge_type}, trained on the training edges over the training graph: "
            f"{guarantee_words(released.report)}"
        )
        return link_model_target(
            self.spec.method, truth, evaluation.model, edge_type, answers, {"roc_auc": evaluation.metrics["roc_auc"]}
        )


def link_embeddings(model: Any, inputs: Any, edge_type: EdgeType) -> dict[str, Tensor]:
    """HeteDP's link model's μ (eq. 18) of every node of the relation's two endpoint types (on the CPU)."""
    out = {}
    with torch.no_grad():
        for t in dict.fromkeys((edge_type[0], edge_type[2])):
            index = torch.arange(inputs.x[t].shape[0], device=inputs.x[t].device)
            out[t] = model(t, *inputs.rows(t, index))[0].cpu()
    return out
