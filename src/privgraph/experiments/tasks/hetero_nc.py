"""The ``hetero-nc`` task: node classification on a heterogeneous graph's target type (HeteDP §V-B),
with metapath2vec's classifier and the metapath graphs of HeteDP's HAN."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData

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
    (:meth:`~privgraph.methods.hetedp.baselines.MetaPath2VecParams.fit_classifier`) fitted on the
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
    from sklearn.metrics import f1_score  # on use: keeps the run's start light

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
        rel = self.privatize(tdata, method.hetero_nc_release(target), eps, trial_seed, eps_index, candidate)
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
            tdata,
            method,
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
        from privgraph.methods.hetedp.baselines import metapath2vec_node_embeddings
        from privgraph.methods.hetedp.nc import EpochEmbeddings, classify_epochs

        model, target = self.method.hetero_nc_model(), self.hetero_task.node_type
        y = tdata[target].y
        if isinstance(released.payload, EpochEmbeddings):  # nc_model="link-vgae"
            p = self.method.params
            masks = _nc_masks(tdata, target, trial_seed, self.spec.split)
            metrics, val_score = classify_epochs(released.payload, y, masks, p.nc_selection, p.nc_embedding, trial_seed)
            return Evaluation(metrics, val_score)
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
            return Evaluation(_f1(y[test], predicted), val_acc, z)
        masks = _nc_masks(tdata, target, trial_seed, self.spec.split)
        trained, result = self._train_classifier(tdata, released.payload, masks, hp, trial_seed)
        return Evaluation(_f1(y[masks[2]], result.test_predictions), result.val_accuracy, trained)

    def _train_classifier(
        self, data: HeteroData, x: Tensor | None, masks: tuple[Tensor, Tensor, Tensor], hp: Any, seed: int
    ) -> tuple[tuple[Any, dict[str, Tensor], dict[Any, Tensor]], Any]:
        """The task's classifier (HAN over the dataset's metapaths on the target type's features ``x``,
        the clean ones when None; RGCN or HGT end to end) trained on ``data`` with the split ``masks``
        from ``seed``: ((model, inputs, relations), the training result)."""
        from privgraph.data.hetero import node_inputs
        from privgraph.nn.hetero import HANClassifier, HGTClassifier, RGCNClassifier
        from privgraph.progress import counts_only
        from privgraph.train import train_node_classifier

        kind, target = self.method.hetero_nc_model(), self.hetero_task.node_type
        y = data[target].y
        classes = int(y.max()) + 1
        if kind == "han":
            graph = metapath_graph(data, self.key, seed)
            x = graph[target].x.float() if x is None else x
            torch.manual_seed(seed)
            model = HANClassifier(x.shape[1], hp.hidden, classes, graph.metadata(), target)
            inputs, edges = {target: x}, graph.edge_index_dict
        else:
            torch.manual_seed(seed)
            inputs = node_inputs(data, seed=seed)
            cls = RGCNClassifier if kind == "rgcn" else HGTClassifier
            model = cls({t: v.shape[1] for t, v in inputs.items()}, hp.hidden, classes, data.metadata(), target)
            edges = data.edge_index_dict
        train, val, test = masks
        result = train_node_classifier(
            model, inputs, edges, y, y, train, val, test, lr=0.005, weight_decay=1e-3, epochs=hp.epochs, patience=None,
            progress=counts_only(self.progress), task=f"training {kind}",  # on the experimenter's graph: no loss shown
        )  # fmt: skip
        return (model, inputs, edges), result

    # ---------------------------------------------------------------- attacks
    def check_attack(self, attack):
        """Node classifiers (HAN, RGCN, HGT) answer membership and link attacks on the target type;
        metapath2vec's embeddings link stealing only (:mod:`privgraph.attacks.hetero`)."""
        kind, task = self.method.hetero_nc_model(), self.hetero_task
        super().check_attack(attack)
        if kind == "link-vgae":
            raise ValueError(
                "nc_model='link-vgae' classifies the link model's embeddings epoch by epoch (no one model "
                "answers queries): attack HeteDP's link model with --task lp (link-score, link-stealing)"
            )
        if attack.name == "link-score":
            raise ValueError(
                f"link-score reads a link predictor's score of a pair; the hetero-nc task's target is a node "
                f"classifier ({kind}): use link-stealing here, or --task lp for a link model"
            )
        if kind == "metapath2vec" and attack.needs_model:
            raise ValueError(
                f"{attack.name} queries a model's inference API; metapath2vec releases fixed embeddings "
                "(attack them with link-stealing)"
            )
        if attack.family == "link" and task.node_type not in (task.edge_type[0], task.edge_type[2]):
            raise ValueError(
                f"the protected relation {task.edge_type} does not touch the classified type {task.node_type!r}: "
                "a node classifier's posteriors say nothing pairwise about it"
            )

    def attack_target(self, tdata, released, evaluation, hp, trial_seed, eps, eps_index):
        """The trained classifier as the attacks query it (:func:`~privgraph.attacks.hetero.classifier_target`):
        posteriors of the target type over the server's graph, the truth the target type's view (its split,
        the protected relation through its metapath); its ``shadow`` releases (HeteDP: the target type's
        features at the same ε, from the attacker's seed) and trains the same classifier on the attacker's
        graph: its target-type nodes with every node of the other types and their relations.  metapath2vec:
        its embeddings of the target type (an embedding release)."""
        from privgraph.api import privatize
        from privgraph.attacks.hetero import classifier_target, guarantee_words, target_type_view
        from privgraph.attacks.target import embedding_target
        from privgraph.mechanisms import derive_seed, make_generator

        kind, task, target = self.method.hetero_nc_model(), self.hetero_task, self.hetero_task.node_type
        masks = _nc_masks(tdata, target, trial_seed, self.spec.split)
        truth = target_type_view(tdata, target, task.edge_type, masks)
        guarantee = guarantee_words(released.report)
        utility = {"micro_f1": evaluation.metrics["micro_f1"]}
        if kind == "metapath2vec":
            out = embedding_target(self.spec.method, truth, evaluation.model, None, utility)
            out.answers = f"metapath2vec's embeddings of the {target} nodes, walked over the input graph: {guarantee}"
            return out
        answers = (
            f"{'HAN over the metapath graphs' if kind == 'han' else kind.upper() + ' over the relations'} of the "
            f"input graph (the graph and labels are not protected), on the {target} features "
            + ("of the release" if kind == "han" and eps is not None else "as given")
            + f": {guarantee}"
        )
        method = self.method

        def shadow(aux: Data, seed: int):
            sub = tdata.subgraph({target: aux.node_id})
            aux_masks = (aux.train_mask, aux.val_mask, aux.test_mask)
            x = None
            if kind == "han" and eps is not None:
                rng = make_generator(derive_seed(seed, 1))
                x = privatize(sub, method.hetero_nc_release(target), epsilon=eps, rng=rng).data[target].x
            trained, result = self._train_classifier(sub, x, aux_masks, hp, derive_seed(seed, 4))
            view = target_type_view(sub, target, task.edge_type, aux_masks)
            return classifier_target(
                self.spec.method, view, *trained, target, answers, utility={"accuracy": result.test_accuracy}
            )

        model, inputs, edges = evaluation.model
        return classifier_target(self.spec.method, truth, model, inputs, edges, target, answers, shadow, utility)
