"""The ``hetero-nc`` task: node classification on a heterogeneous graph's target type (HeteDP §V-B),
with metapath2vec's classifier and the metapath graphs of HeteDP's HAN."""

from __future__ import annotations

from typing import Any

import torch
from sklearn.metrics import f1_score
from torch import Tensor
from torch_geometric.data import HeteroData

from privgraph.accounting import PrivacyReport, Unit, unprotected
from privgraph.data.hetero import metapath_graph
from privgraph.data.hetero_splits import HETERO_NC_SPLITS
from privgraph.data.hetero_splits import hetero_node_masks as _nc_masks  # the hetero-nc split (tests spy on it here)
from privgraph.data.hetero_splits import labelled_node_masks as _labelled_split
from privgraph.experiments.tasks.base import Evaluation, Released, register_task
from privgraph.experiments.tasks.hetero import _HeteroTask, _noted_last
from privgraph.methods import Method


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


def _f1(truth: Tensor, predicted: Tensor) -> dict[str, float]:
    return {
        "micro_f1": float(f1_score(truth, predicted, average="micro")),
        "macro_f1": float(f1_score(truth, predicted, average="macro")),
    }


@register_task
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
        link_vgae = self.method.hetero_nc_model() == "link-vgae"
        self.method.check_hetero_task(self.name, self.spec.split)
        if (
            link_vgae
            and self.spec.input is None
            and self.hetero_task.node_type not in (self.hetero_task.edge_type[0], self.hetero_task.edge_type[2])
        ):
            raise ValueError(
                f"nc_model='link-vgae' classifies the link model's embeddings, but {self.spec.dataset}'s "
                f"target type is not an endpoint of its protected relation {self.hetero_task.edge_type}"
            )

    def model_name(self):
        return "nc"

    def record_config(self, released):
        return {"split": self.spec.split}

    def release(self, tdata, eps, trial_seed, eps_index, method, candidate=None, shared=None):
        """What the task's model reads, released by ``privatize`` (:meth:`Method.hetero_nc_release`): the
        target type's noisy features for the HAN, the link release's per-epoch embeddings for
        ``link-vgae``, the input as it is for the baselines (trained end to end in :meth:`evaluate`)."""
        model = method.hetero_nc_model()
        if model == "link-vgae":
            return self._link_embeddings(tdata, eps, trial_seed, eps_index, method, candidate)
        if model == "han" and eps is None:  # HeteDP without noise: the HAN reads the clean features
            return Released(None, PrivacyReport([unprotected(Unit.NODE_FEATURES, "HeteDP without noise")]))
        target = self.hetero_task.node_type
        rel = self.privatize(method.hetero_nc_release(target), tdata, eps, trial_seed, eps_index, candidate)
        if model != "han":
            return self.released(rel, None)
        released = self.released(rel, rel.data[target].x, "gaussian")
        released.report.guarantees[0] = released.report.guarantees[0].with_note(
            "metapath graph and labels are not protected"
        )
        released.details = {"features": rel.details}
        return released

    def _link_embeddings(
        self,
        tdata: HeteroData,
        eps: float | None,
        trial_seed: int,
        eps_index: int,
        method: Method,
        candidate: int | None,
    ) -> Released:
        """``nc_model="link-vgae"``: HeteDP's release (``privatize``) trained on every edge of the
        protected relation (messages as its ``topology`` says), recording the target type's embeddings
        after each DP-SGD epoch (:class:`~privgraph.methods.hetedp.nc.EpochEmbeddings`)."""
        from privgraph.methods.hetedp.nc import EpochEmbeddings

        task = self.hetero_task
        method, count_note = self.link_method(method, tdata[task.edge_type].edge_index)
        p = method.params
        recorded = EpochEmbeddings(task.node_type)
        replace = method.nc_input_replacement(tdata, self.key, task.node_type, self.spec.split, trial_seed)
        rel = self.privatize(
            method,
            tdata,
            eps,
            trial_seed,
            eps_index,
            candidate,
            training_seed=trial_seed,
            on_epoch=recorded.record,
            replace_inputs=replace,
        )
        released = self.released(rel, recorded, "gaussian" if eps is not None else None)
        note = "node labels and the split are not protected (public in this setting)"
        noted = _noted_last(released.report.guarantees, count_note)
        released.report = PrivacyReport([g.with_note(note) for g in noted])
        selection = (
            "validation micro-F1"
            if p.nc_selection == "validation"
            else "best TEST micro-F1 over the epochs: the paper's optimistic selection (reads the test labels; "
            "not an estimate)"
        )
        released.details = {
            **rel.details,
            "nc": {
                "model": "link-vgae: logistic regression on the link model's embeddings "
                "(the authors' topologyDP_nc.py)",
                "embedding": p.nc_embedding,
                "epoch_selection": selection,
            },
        }
        return released

    def evaluate(self, tdata, released, hp, trial_seed, eps_index):
        from privgraph.data.hetero import node_inputs
        from privgraph.methods.hetedp.baselines import metapath2vec_node_embeddings
        from privgraph.methods.hetedp.nc import EpochEmbeddings, classify_epochs
        from privgraph.nn.hetero import HANClassifier, HGTClassifier, RGCNClassifier
        from privgraph.train import train_node_classifier

        model, target = self.method.hetero_nc_model(), self.hetero_task.node_type
        y = tdata[target].y
        if isinstance(released.payload, EpochEmbeddings):  # nc_model="link-vgae"
            p = self.method.params
            masks = _nc_masks(tdata, target, trial_seed, self.spec.split)
            metrics, val_score = classify_epochs(released.payload, y, masks, p.nc_selection, p.nc_embedding, trial_seed)
            return Evaluation(metrics, val_score)
        classes = int(y.max()) + 1
        if model == "metapath2vec":
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
        if model == "han":
            graph = metapath_graph(tdata, self.key, trial_seed)
            x = graph[target].x.float() if released.payload is None else released.payload
            torch.manual_seed(trial_seed)
            model = HANClassifier(x.shape[1], hp.hidden, classes, graph.metadata(), target)
            inputs, edges = {target: x}, graph.edge_index_dict
        else:
            torch.manual_seed(trial_seed)
            inputs = node_inputs(tdata, seed=trial_seed)
            cls = RGCNClassifier if model == "rgcn" else HGTClassifier
            model = cls({t: v.shape[1] for t, v in inputs.items()}, hp.hidden, classes, tdata.metadata(), target)
            edges = tdata.edge_index_dict
        result = train_node_classifier(
            model, inputs, edges, y, y, train, val, test, lr=0.005, weight_decay=1e-3, epochs=hp.epochs, patience=None
        )
        return Evaluation(_f1(y[test], result.test_predictions), result.val_accuracy)
