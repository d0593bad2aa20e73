"""The ``hetero-nc`` task: node classification on a heterogeneous graph's target type (HeteDP §V-B),
with metapath2vec's classifier and the metapath graphs of HeteDP's HAN."""

from __future__ import annotations

import copy
from typing import Any

import torch
from sklearn.metrics import f1_score
from torch import Tensor
from torch_geometric.data import HeteroData

from privgraph.accounting import PrivacyReport, Unit, unprotected
from privgraph.data.hetero_splits import HETERO_NC_SPLITS
from privgraph.data.hetero_splits import hetero_node_masks as _nc_masks  # the hetero-nc split (tests spy on it here)
from privgraph.data.hetero_splits import labelled_node_masks as _labelled_split
from privgraph.experiments.tasks.base import Evaluation, Released, register_task
from privgraph.experiments.tasks.hetero import _HeteroTask, _noted_last
from privgraph.mechanisms import derive_seed
from privgraph.methods import Method

METAPATH_MAX_SAMPLE = 30  # AddMetaPaths' per-step neighbour cap (dense metapaths such as APVPA)


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
        from privgraph.methods.hetedp.features import privatize_features

        model = method.hetero_nc_model()
        if model == "link-vgae":
            return self._link_embeddings(tdata, eps, trial_seed, eps_index, method, candidate)
        if model != "han":  # the baselines: nothing released
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
            graph = _metapath_graph(tdata, self.key, trial_seed)
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
