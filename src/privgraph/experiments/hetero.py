"""Heterogeneous-graph experiments (HeteDP, §V): node classification (micro-/
macro-F1 on the dataset's target type) and link prediction (ROC-AUC on its
target relation), for HeteDP and the non-private baselines RGCN, HGT and
metapath2vec.

* **NC, HeteDP**: the target type's features are clipped and perturbed once
  (ε_f = ε, :mod:`privgraph.methods.hetedp.features`); a HAN layer over the
  dataset's metapaths (eq. 7–13) and a linear layer are trained on them.
  The graph and the labels are not protected (stated in the report).
* **LP, HeteDP**: the features the encoder reads (endpoint types and the
  sources of its relations) perturbed with ε_f, the RGCN-VGAE trained by
  DP-SGD with ε_s on the training edges
  (:mod:`privgraph.methods.hetedp.topology`,
  :mod:`privgraph.train.link_prediction`); ε = ε_f + ε_s.  ``topology``:
  ``"edge"`` (messages over the other relations: edge-level DP), ``"node"``
  (no messages: edge-level DP) or ``"message-passing"`` (the paper's: also
  over the protected relation's training edges; ε then covers one example's
  loss term, not an edge).
  Without ``feature_share`` the share ε_f/ε is chosen on trial 0's
  validation AUC among {0.1, 0.3, 0.5, 0.7, 0.9} (the bi-level search: the
  share fixed, the model trained, the best kept); those candidate releases
  are real spending, stated in the report.  Featureless endpoint types get
  fixed random inputs and the whole ε goes to the edges.
* **Baselines** (:mod:`privgraph.methods.hetedp.baselines`): RGCN / HGT
  trained end to end (NC: cross-entropy; LP: dot product of the endpoint
  embeddings, uniform negatives, message passing over the training edges
  only), metapath2vec (PyG) embeddings with a logistic regression (NC) or
  their dot product (LP).

Trial ``t`` uses seed ``seed + t`` (HGB validation split, link split, model
initialisation) and, unless ``secure`` (the OS source), for its noise: every
release — each trial, each ε, each candidate share of the search — draws
from its own stream (:func:`~privgraph.mechanisms.release_source`), so no two
releases of the same data share a draw.
"""

from __future__ import annotations

import copy
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from torch import Tensor
from torch_geometric.data import HeteroData
from torch_geometric.transforms import AddMetaPaths

from privgraph import __version__
from privgraph.accounting import PrivacyGuarantee, PrivacyReport, Unit, unprotected
from privgraph.data.hetero import METAPATHS, TASKS, HeteroTask, link_split, load_hetero, node_inputs
from privgraph.experiments.runner import ExperimentResult
from privgraph.experiments.selection import select_on_validation
from privgraph.experiments.store import ResultsStore, TrialRecord
from privgraph.experiments.summary import summarize
from privgraph.mechanisms import SECURE_NOTE, RandomSource, check_delta, check_epsilon, release_source
from privgraph.methods.heterorr.edges import check_share
from privgraph.methods.hetedp.features import check_clip_bound, privatize_features
from privgraph.methods.hetedp.baselines import metapath2vec_embeddings, train_link_baseline
from privgraph.methods.hetedp.method import link_release
from privgraph.methods.hetedp.topology import check_topology
from privgraph.nn.hetero import HANClassifier, HGTClassifier, RGCNClassifier
from privgraph.progress import ProgressHook
from privgraph.train import train_node_classifier
from privgraph.train.dpsgd import DPSGDConfig
from privgraph.train.link_prediction import link_scores, split_auc

HETERO_METHODS = ("hetedp", "rgcn", "hgt", "metapath2vec")
TASK_METRICS = {"nc": ("micro_f1", "macro_f1"), "lp": ("roc_auc",)}
SHARE_GRID = (0.1, 0.3, 0.5, 0.7, 0.9)
METAPATH_MAX_SAMPLE = 30  # AddMetaPaths' per-step neighbour cap (dense metapaths such as APVPA)


@dataclass
class HeteroSpec:
    method: str = "hetedp"
    dataset: str = "sbm"
    task: str = "nc"
    epsilons: list[float] = field(default_factory=list)  # empty: non-private
    delta: float = 1e-5
    trials: int = 3
    seed: int = 0
    feature_share: float | None = None  # ε_f / ε for LP; None: bi-level search
    topology: str = "edge"  # LP: edge | node | message-passing (what DP-SGD's ε covers, methods.hetedp.topology)
    clip: float = 1.0  # C_f, feature L2 bound
    epochs: int = 100
    hidden: int = 64
    dpsgd: dict[str, Any] = field(default_factory=dict)  # DPSGDConfig overrides
    data_root: str | None = None
    secure: bool = False  # noise (features, DP-SGD) from the OS source instead of the trial's seed

    def source(self, seed: int, *stream: int) -> RandomSource:
        """The randomness of one release (trial seed, then ε index and candidate index)."""
        return release_source(None if self.secure else seed, *stream)

    def validate(self) -> None:
        if self.method not in HETERO_METHODS:
            raise ValueError(f"unknown heterogeneous method {self.method!r}; choose from {HETERO_METHODS}")
        if self.task not in TASK_METRICS:
            raise ValueError(f"task must be 'nc' (node classification) or 'lp' (link prediction), got {self.task!r}")
        if self.dataset.lower() not in TASKS:
            raise ValueError(f"unknown heterogeneous dataset {self.dataset!r}; choose from {sorted(TASKS)}")
        if self.task == "nc" and TASKS[self.dataset.lower()].node_type is None:
            raise ValueError(f"{self.dataset} has no node labels: use --task lp")
        if self.task == "nc" and self.dataset.lower() == "imdb":
            raise ValueError("HGB IMDB's labels are multi-label; use --dataset imdb-magnn for node classification")
        if self.epsilons and self.method != "hetedp":
            raise ValueError(f"{self.method} is a non-private baseline: drop --epsilon")
        self.epsilons = [check_epsilon(e) for e in self.epsilons]
        check_delta(self.delta)
        check_clip_bound(self.clip)
        if self.feature_share is not None:
            check_share(self.feature_share, "feature_share (ε_f/ε)")
        check_topology(self.topology)
        if self.trials < 1 or self.epochs < 1:
            raise ValueError("trials and epochs must be >= 1")
        DPSGDConfig(**self.dpsgd)


class HeteroResult(ExperimentResult):
    """Trials of a :class:`HeteroSpec`: one summary row per metric of its task and ε."""

    JSON_KEYS = ("epsilon", "metric", "mean", "std", "ci95", "trials", "release_options", "privacy")

    def summary(self) -> list[dict[str, Any]]:
        return [row for m in TASK_METRICS[self.spec.task] for row in summarize(self.records, m)]

    def json_header(self) -> dict[str, Any]:
        return {"task": self.spec.task}


# --------------------------------------------------------------------------- helpers
def _nc_masks(data: HeteroData, target: str, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    store = data[target]
    if "val_mask" in store:
        return store.train_mask, store.val_mask, store.test_mask
    if "train_mask" not in store:  # synthetic graphs: a seeded 50/25/25 split
        from privgraph.data.splits import stratified_split
        from torch_geometric.data import Data

        d = stratified_split(Data(y=store.y, num_nodes=store.num_nodes), 0.5, 0.25, seed=seed)
        return d.train_mask, d.val_mask, d.test_mask
    g = torch.Generator().manual_seed(seed)  # HGB: 20 % of the training nodes validate
    train_idx = store.train_mask.nonzero().flatten()
    train_idx = train_idx[torch.randperm(train_idx.numel(), generator=g)]
    cut = train_idx.numel() // 5
    val, train = torch.zeros_like(store.train_mask), torch.zeros_like(store.train_mask)
    val[train_idx[:cut]], train[train_idx[cut:]] = True, True
    return train, val, store.test_mask


def _metapath_graph(data: HeteroData, name: str) -> HeteroData:
    paths = list(METAPATHS[name].values())
    data = copy.copy(data)
    for et in data.edge_types:
        data[et].edge_index = data[et].edge_index.contiguous()
    return AddMetaPaths(paths, drop_orig_edge_types=True, drop_unconnected_node_types=True,
                        max_sample=METAPATH_MAX_SAMPLE)(data)


def _f1(truth: Tensor, predicted: Tensor) -> dict[str, float]:
    return {"micro_f1": float(f1_score(truth, predicted, average="micro")),
            "macro_f1": float(f1_score(truth, predicted, average="macro"))}


# --------------------------------------------------------------------------- NC
def _node_classification(spec: HeteroSpec, data: HeteroData, eps: float | None, seed: int, rng: RandomSource
                         ) -> tuple[dict[str, float], list[PrivacyGuarantee], dict[str, Any]]:
    name = spec.dataset.lower()
    target = TASKS[name].node_type
    y = data[target].y
    train, val, test = _nc_masks(data, target, seed)
    classes = int(y.max()) + 1
    details: dict[str, Any] = {}
    if spec.method == "metapath2vec":
        path = list(METAPATHS[name].values())[0]
        num_nodes = {t: data[t].num_nodes for t in data.node_types}
        z = metapath2vec_embeddings(data.edge_index_dict, path, num_nodes, seed)[target]
        clf = LogisticRegression(max_iter=3000).fit(z[train].numpy(), y[train].numpy())
        predicted = torch.from_numpy(clf.predict(z[test].numpy()))
        return _f1(y[test], predicted), [unprotected(Unit.NODE_FEATURES, "metapath2vec")], details
    if spec.method == "hetedp":
        graph = _metapath_graph(data, name)
        x = graph[target].x.float()
        guarantees = [unprotected(Unit.NODE_FEATURES, "HeteDP without noise")]
        if eps is not None:
            release = privatize_features(data, eps, spec.delta, spec.clip, rng, node_types=[target])
            x = release.x[target]
            guarantees = [release.guarantee.with_note("metapath graph and labels are not protected")]
            details["features"] = release.details
        torch.manual_seed(seed)
        model = HANClassifier(x.shape[1], spec.hidden, classes, graph.metadata(), target)
        inputs, edges = {target: x}, graph.edge_index_dict
    else:
        torch.manual_seed(seed)
        inputs = node_inputs(data, seed=seed)
        cls = RGCNClassifier if spec.method == "rgcn" else HGTClassifier
        model = cls({t: v.shape[1] for t, v in inputs.items()}, spec.hidden, classes, data.metadata(), target)
        edges, guarantees = data.edge_index_dict, [unprotected(Unit.NODE_FEATURES, spec.method)]
    result = train_node_classifier(model, inputs, edges, y, y, train, val, test, lr=0.005, weight_decay=1e-3,
                                   epochs=spec.epochs, patience=None)
    details["val_accuracy"] = result.val_accuracy
    return _f1(y[test], result.test_predictions), guarantees, details


# --------------------------------------------------------------------------- LP
def _lp_hetedp(spec: HeteroSpec, data: HeteroData, task: HeteroTask, splits, eps: float | None, share: float,
               seed: int, rng: RandomSource) -> tuple[float, float, list[PrivacyGuarantee], dict[str, Any]]:
    """One release on the training split (:func:`~privgraph.methods.hetedp.method.link_release`),
    scored on the validation and test splits."""
    train, val, test = splits
    link = link_release(data, task.edge_type, task.reverse, train[task.edge_type].edge_label_index,
                        train.edge_index_dict, eps, share, spec.topology, spec.clip, spec.delta,
                        DPSGDConfig(**spec.dpsgd), rng, seed)

    def score(pairs: Tensor) -> Tensor:
        return link_scores(link.result.model, link.inputs, task.edge_type, pairs)

    return (split_auc(val, task.edge_type, score), split_auc(test, task.edge_type, score), link.guarantees,
            link.details)


# --------------------------------------------------------------------------- run
def run_hetero_experiment(spec: HeteroSpec, store: ResultsStore | None = None,
                          progress: ProgressHook | None = None) -> HeteroResult:
    spec.validate()
    progress = progress or (lambda task, done, total: None)
    run_id = uuid.uuid4().hex[:12]
    name = spec.dataset.lower()
    data = load_hetero(name, spec.data_root, seed=spec.seed)
    task = TASKS[name]
    records, reports = [], {}
    settings: list[float | None] = list(spec.epsilons) or [None]
    total, done = len(settings) * spec.trials, 0
    for k, eps in enumerate(settings):
        share, selection, chosen = spec.feature_share, None, {}
        if spec.task == "lp" and spec.method == "hetedp" and eps is not None and share is None:
            splits = link_split(data, task, seed=spec.seed)  # trial 0's split

            def evaluate(i: int, values: dict[str, Any]):  # each candidate: a release with its own randomness
                out = _lp_hetedp(spec, data, task, splits, eps, values["feature_share"], spec.seed,
                                 spec.source(spec.seed, k, 1 + i))
                return out[0], out

            selection = select_on_validation([{"feature_share": s} for s in SHARE_GRID], evaluate,
                                             "validation AUC", progress, f"choosing ε_f/ε at ε={eps}")
            share = selection.chosen["feature_share"]
            chosen = {"feature_share": share,
                      "selection_val_auc": {v["feature_share"]: score for v, score in selection.scores}}
        for t in range(spec.trials):
            progress(f"{spec.method} {spec.task} on {name}", done, total)
            start, seed = time.perf_counter(), spec.seed + t
            if spec.task == "nc":
                metrics, guarantees, details = _node_classification(spec, data, eps, seed, spec.source(seed, k, 0))
            else:
                splits = link_split(data, task, seed=seed)
                if spec.method == "hetedp" and t == 0 and selection:  # trained during the selection
                    val_auc, auc, guarantees, details = selection.release
                elif spec.method == "hetedp":
                    val_auc, auc, guarantees, details = _lp_hetedp(spec, data, task, splits, eps, share or 0.5, seed,
                                                                   spec.source(seed, k, 0))
                else:
                    val_auc, auc = train_link_baseline(spec.method, data, task, splits, seed, spec.hidden,
                                                       spec.epochs)
                    guarantees, details = [unprotected(Unit.NODE_FEATURES, spec.method)], {}
                metrics = {"roc_auc": auc, "val_roc_auc": val_auc}
            if selection:
                guarantees = [g.with_note(selection.note(eps)) for g in guarantees]
            if spec.secure and eps is not None:
                guarantees = [g.with_note(SECURE_NOTE) for g in guarantees]
            report = PrivacyReport(guarantees)
            reports[eps] = report
            record = TrialRecord(
                run_id=run_id, method=spec.method, dataset=getattr(data, "name", name), model=spec.task,
                mechanism="gaussian" if eps is not None else None, epsilon=eps, epsilon_y=None, trial=t, seed=seed,
                config={"task": spec.task, "delta": spec.delta, "clip": spec.clip, "epochs": spec.epochs,
                        "secure": spec.secure,
                        "release_options": chosen, "details": details},
                metrics=metrics, guarantee=report.to_dict(), wall_time=time.perf_counter() - start,
                version=__version__)
            records.append(record)
            if store is not None:
                store.add(record)
            done += 1
    progress(f"{spec.method} {spec.task} on {name}", total, total)
    return HeteroResult(spec, run_id, records, reports)
