"""HeteDP's non-private heterogeneous baselines (§V): metapath2vec (PyG)
embeddings, and link prediction by RGCN / HGT trained end to end (dot product
of the endpoint embeddings, uniform negatives, message passing over the
training edges only) or by metapath2vec's dot product; and their registered methods
(``rgcn``, ``hgt``, ``metapath2vec``: the release is the input, stated as unprotected).  The experiment loop is
:mod:`privgraph.experiments.tasks`; ``benchmarks/m2v_selection.py`` scores the choices of
:data:`M2V_METAPATHS` and :data:`M2V_NC_EPOCHS` on validation."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from privgraph.accounting import PrivacyReport, Unit, unprotected
from privgraph.data.hetero import METAPATHS, VARIANTS, EdgeType, HeteroTask, node_inputs
from privgraph.device import current_device, to_device
from privgraph.mechanisms import RandomSource
from privgraph.methods.base import HeteroMethod, MethodParams, Task, param, register_method
from privgraph.methods.hetedp.checks import check_hetero
from privgraph.methods.hetedp.nc import CLASSIFIERS, fit_embedding_classifier
from privgraph.methods.request_view import RequestView
from privgraph.nn.hetero import HGTClassifier, RGCNClassifier
from privgraph.release import PrivateRelease, input_fields
from privgraph.train.link_prediction import split_auc

LINK_BASELINES = ("rgcn", "hgt", "metapath2vec")

# metapath2vec embeds along ONE metapath (Dong et al. 2017, §3); for node classification it is
# the one named here, else the dataset's first in METAPATHS.  DBLP: author–paper–venue–paper–author,
# Dong et al.'s own metapath for authors (APVPA; MAGNN's DBLP calls venues "conference"); the
# co-author path APA, METAPATHS' first, leaves MAGNN-DBLP's authors near chance (28–35 % micro-F1,
# 4 classes): most of its papers have one listed author, so A–P–A walks rarely leave their start.
# ACM and IMDB: the candidate with the best validation micro-F1 on seed 0
# (`python benchmarks/m2v_selection.py acm|imdb-magnn`, docs/methods/hetedp.md).
M2V_METAPATHS: dict[str, str] = {"dblp-magnn": "APCPA", "dblp": "APVPA", "acm": "PSP", "imdb-magnn": "MAM"}
M2V_METAPATHS.update({key: M2V_METAPATHS[v.base] for key, v in VARIANTS.items() if v.base in M2V_METAPATHS})
# Node classification trains 5 epochs (~600 steps of 32 on DBLP): on MAGNN-DBLP along APCPA, seed 0,
# the validation micro-F1 peaked at epoch 4 of 6 (76.25, 87.50, 89.25, 89.75, 87.75, 87.25 %:
# `python benchmarks/m2v_selection.py dblp-magnn --epochs 6`, 3 min) and a 10-epoch trial
# costs ~8 min on a loaded core; link prediction keeps 10.
M2V_NC_EPOCHS = 5


@dataclass(frozen=True)
class WalkSettings:
    """metapath2vec's walks and skip-gram (Dong et al. 2017, §3 and §4: "the number of walks per node
    w: 1000; the walk length l: 100; the vector dimension d: 128; the neighborhood size k: 7").  Ours
    by default, for CPU time: d = 64, walks of length 20, windows of 5 nodes (PyG's ``context_size``:
    each window's first node against the 4 after it), 5 walks per start node and epoch, 5 negative
    walks per positive.  The ``metapath2vec`` method's parameters set the first four."""

    embedding_dim: int = 64
    walk_length: int = 20
    context_size: int = 5
    walks_per_node: int = 5
    num_negative_samples: int = 5

    def __post_init__(self) -> None:
        for name in ("embedding_dim", "walk_length", "context_size", "walks_per_node", "num_negative_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"metapath2vec's {name} must be >= 1, got {getattr(self, name)}")
        if self.context_size < 2 or self.context_size > self.walk_length + 1:
            raise ValueError(
                f"metapath2vec's context_size must be in [2, walk_length + 1] = [2, "
                f"{self.walk_length + 1}], got {self.context_size}"
            )


def metapath2vec_embeddings(
    edge_index_dict: dict[EdgeType, Tensor],
    metapath: Sequence[EdgeType],
    num_nodes_dict: dict[str, int],
    seed: int,
    epochs: int = 10,
    walks: WalkSettings | None = None,
    on_epoch: Callable[[int, Callable[[str], Tensor]], None] | None = None,
) -> dict[str, Tensor]:
    """PyG's MetaPath2Vec, walks from the metapath's first type (``walks``: :class:`WalkSettings`,
    default ours); ``on_epoch(epoch, embed)`` after each epoch (1-based; ``embed(type)`` gives that
    type's current embeddings).  Our graphs have a few thousand start nodes (PyG's AMiner example:
    1.7M), so small batches (32) and lr 0.05 give ~10³ steps in 10 epochs; 5 epochs of 128 (~10² steps)
    left the embeddings at chance level."""
    from torch_geometric.nn import MetaPath2Vec

    w = WalkSettings() if walks is None else walks
    torch.manual_seed(seed)
    model = MetaPath2Vec(
        edge_index_dict,
        embedding_dim=w.embedding_dim,
        metapath=list(metapath),
        walk_length=w.walk_length,
        context_size=w.context_size,
        walks_per_node=w.walks_per_node,
        num_negative_samples=w.num_negative_samples,
        num_nodes_dict=num_nodes_dict,
        sparse=True,
    )
    loader = model.loader(batch_size=32, shuffle=True)
    opt = torch.optim.SparseAdam(list(model.parameters()), lr=0.05)
    for epoch in range(1, epochs + 1):
        for pos, neg in loader:
            opt.zero_grad()
            model.loss(pos, neg).backward()
            opt.step()
        if on_epoch is not None:
            with torch.no_grad():
                on_epoch(epoch, lambda t: model(t).detach())
    with torch.no_grad():
        return {t: model(t).detach() for t in {et[0] for et in metapath}}


def metapath2vec_metapath(dataset: str) -> list[EdgeType]:
    """The metapath metapath2vec walks for node classification on ``dataset`` (:data:`M2V_METAPATHS`)."""
    paths = METAPATHS[dataset]
    return paths[M2V_METAPATHS[dataset]] if dataset in M2V_METAPATHS else next(iter(paths.values()))


def metapath2vec_node_embeddings(
    data: HeteroData,
    dataset: str,
    target: str,
    seed: int,
    metapath: Sequence[EdgeType] | None = None,
    walks: WalkSettings | None = None,
) -> Tensor:
    """``target``'s metapath2vec embeddings for node classification on ``dataset``: walks along
    ``metapath`` (default :func:`metapath2vec_metapath`), :data:`M2V_NC_EPOCHS` epochs, ``walks``
    (default :class:`WalkSettings`'s)."""
    path = metapath2vec_metapath(dataset) if metapath is None else metapath
    sizes = {t: data[t].num_nodes for t in data.node_types}
    return metapath2vec_embeddings(data.edge_index_dict, path, sizes, seed, epochs=M2V_NC_EPOCHS, walks=walks)[target]


def train_link_baseline(
    method: str,
    data: HeteroData,
    task: HeteroTask,
    splits: tuple[HeteroData, HeteroData, HeteroData],
    seed: int,
    hidden: int = 64,
    epochs: int = 100,
    walks: WalkSettings | None = None,
) -> tuple[float, float, dict[str, Tensor]]:
    """Link prediction of ``task.edge_type`` by ``method`` (one of :data:`LINK_BASELINES`) on the
    ``splits`` (train, val, test) of :func:`~privgraph.data.hetero.link_split`; returns the
    (validation, test) ROC-AUC and the embeddings (on the CPU) of the relation's two endpoint types that
    score a pair by their inner product (what an attack queries).  RGCN / HGT: ``epochs`` of
    full-batch training, the test AUC of the epoch with the best validation AUC and that epoch's
    embeddings over the training graph; metapath2vec: embeddings over the training edges of the
    relation and its reverse, ``walks`` (:class:`WalkSettings`; ``hidden`` and ``epochs`` unused)."""
    if method not in LINK_BASELINES:
        raise ValueError(f"unknown link-prediction baseline {method!r}; choose from {LINK_BASELINES}")
    train, val, test = splits
    src, _, dst = task.edge_type
    if method == "metapath2vec":
        z = metapath2vec_embeddings(
            train.edge_index_dict,
            [task.edge_type, task.reverse],
            {t: data[t].num_nodes for t in data.node_types},
            seed,
            walks=walks,
        )

        def dot(pairs: Tensor) -> Tensor:
            return (z[src][pairs[0]] * z[dst][pairs[1]]).sum(-1)

        kept = {t: z[t] for t in (src, dst)}
        return split_auc(val, task.edge_type, dot), split_auc(test, task.edge_type, dot), kept
    torch.manual_seed(seed)
    device = current_device()
    inputs = to_device(node_inputs(data, seed=seed), device)
    cls = RGCNClassifier if method == "rgcn" else HGTClassifier
    model = cls({t: v.shape[1] for t, v in inputs.items()}, hidden, 1, data.metadata(), src).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=1e-3)
    positives = train[task.edge_type].edge_label_index.to(device)
    g = torch.Generator().manual_seed(seed)  # the negatives are drawn on the CPU: the same on every device
    graphs = {id(s): to_device(s.edge_index_dict, device) for s in splits}

    def scores(split, pairs):
        h = model.embed(inputs, graphs[id(split)])
        pairs = pairs.to(device)
        return (h[src][pairs[0]] * h[dst][pairs[1]]).sum(-1)

    best: tuple[float, float, dict[str, Tensor]] = (-1.0, 0.0, {})
    for _ in range(epochs):
        model.train()
        neg = torch.stack(
            [
                torch.randint(0, data[src].num_nodes, (positives.shape[1],), generator=g),
                torch.randint(0, data[dst].num_nodes, (positives.shape[1],), generator=g),
            ]
        ).to(device)
        pairs = torch.cat([positives, neg], dim=1)
        labels = torch.cat([torch.ones(positives.shape[1]), torch.zeros(neg.shape[1])]).to(device)
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(scores(train, pairs), labels).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            v = split_auc(val, task.edge_type, lambda p: scores(val, p).cpu())
            if v > best[0]:
                h = model.embed(inputs, graphs[id(train)])
                kept = {t: h[t].cpu() for t in (src, dst)}
                best = (v, split_auc(test, task.edge_type, lambda p: scores(test, p).cpu()), kept)
    return best


# ------------------------------------------------------------------ the registered baselines


class _HeteroBaseline(HeteroMethod):
    """A non-private heterogeneous baseline: nothing is privatized, the release is the input."""

    task = Task.LINK_PREDICTION
    private_fields = ()
    public_fields = ("everything",)
    nc_model = ""  # the hetero-nc task's model: rgcn, hgt (end to end) or metapath2vec (embeddings + classifier)

    def hetero_nc_model(self) -> str:
        """What the hetero-nc task trains (:attr:`nc_model`)."""
        return self.nc_model

    def walks(self) -> Any:
        """The walk settings of link prediction's baseline (metapath2vec's); None here."""
        return None

    def train_link_baseline(
        self, data: HeteroData, task: Any, splits: Any, seed: int, hidden: int, epochs: int
    ) -> tuple[float, float, dict[str, Tensor]]:
        """The lp task's (validation, test) ROC-AUC of this baseline and its embeddings of the relation's
        endpoint types (:func:`~privgraph.methods.hetedp.baselines.train_link_baseline`)."""
        return train_link_baseline(self.name, data, task, splits, seed, hidden, epochs, walks=self.walks())

    def privatize(self, data: Any, request: RequestView, rng: RandomSource) -> PrivateRelease:
        """The input graph as it is, in a :class:`~privgraph.release.PrivateRelease` stating no protection."""
        data = check_hetero(self.name, data)
        guarantee = unprotected(
            Unit.NODE_FEATURES,
            f"{self.name} (non-private baseline)",
            "nothing is privatized: the release is the input graph, trained on as it is",
        )
        fields_ = {name: "written in clear (non-private baseline)" for name in input_fields(data)}
        return PrivateRelease(
            self.name, self.params.to_dict(), None, data.clone(), PrivacyReport([guarantee]), fields_, {}
        )


@register_method
class RGCN(_HeteroBaseline):
    """RGCN (Schlichtkrull et al.), a non-private baseline of HeteDP's §V-A: the input, unprotected."""

    name = "rgcn"
    description = "RGCN (Schlichtkrull et al.): relational GCN, non-private heterogeneous baseline"
    nc_model = "rgcn"


@register_method
class HGT(_HeteroBaseline):
    """HGT (Hu et al.), a non-private baseline of HeteDP's §V-A: the input, unprotected."""

    name = "hgt"
    description = "HGT (Hu et al.): heterogeneous graph transformer, non-private baseline"
    nc_model = "hgt"


@dataclass(frozen=True)
class MetaPath2VecParams(MethodParams):
    """metapath2vec's walk and skip-gram settings (Dong et al. 2017, §4: d = 128, 1,000 walks of length
    100 per node, neighbourhood 7); the defaults are ours, for CPU time
    (:class:`~privgraph.methods.hetedp.baselines.WalkSettings`).  Node classification only: the
    classifier trained on the embeddings (``classifier``) and on which nodes (``train_share``); the
    embeddings do not depend on either (they depend on the trial seed and the walk settings only)."""

    embedding_dim: int = param(64, "embedding dimension d")
    walk_length: int = param(20, "length of each walk (steps along the repeated metapath)")
    context_size: int = param(5, "skip-gram window (nodes per positive sample, PyG's context_size)")
    walks_per_node: int = param(5, "walks started from each node of the metapath's first type, per epoch")
    classifier: str = param(
        "logistic",
        "node classification's classifier on the embeddings: logistic "
        "(scikit-learn LogisticRegression(max_iter=3000)) or svm (LinearSVC(dual=False, "
        "max_iter=10000, random_state=0): the linear SVM of MAGNN's evaluation of embeddings)",
    )
    train_share: float | None = param(
        None,
        "node classification: train the classifier on this random share s "
        "of the labelled target nodes, 0 < s < 1 (MAGNN's protocol: 20-80 %), "
        "validate on min(0.05, (1 - s)/2) of them, test on the rest; default: the "
        "task's split",
    )

    # class attributes, not parameters (no annotation): the classifiers, and with train_share s the
    # validation share's cap (min(this, (1 - s)/2) of the labelled nodes validate; the test keeps the rest)
    CLASSIFIERS = CLASSIFIERS
    VALIDATION_SHARE = 0.05

    def validate(self) -> None:
        WalkSettings(**self._walk_values())  # raises ValueError on a bad value
        if self.classifier not in self.CLASSIFIERS:
            raise ValueError(
                f"metapath2vec's classifier must be one of {self.CLASSIFIERS} (logistic: "
                f"LogisticRegression; svm: LinearSVC), got {self.classifier!r}"
            )
        s = self.train_share
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s < 1):
            raise ValueError(
                f"metapath2vec's train_share must be a number in (0, 1) (the share of the labelled "
                f"nodes that trains the classifier) or None (the task's split), got {s!r}"
            )

    def _walk_values(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("classifier", "train_share")}

    def walks(self) -> Any:
        """These settings as :class:`~privgraph.methods.hetedp.baselines.WalkSettings`."""
        return WalkSettings(**self._walk_values())

    def validation_share(self) -> float | None:
        """With ``train_share`` s: the share of the labelled nodes that validates,
        ``VALIDATION_SHARE`` (0.05) or (1 − s)/2 where that is smaller (the test keeps the rest,
        1 − s − that); None without ``train_share``."""
        s = self.train_share
        return None if s is None else min(self.VALIDATION_SHARE, (1 - s) / 2)

    def fit_classifier(self, x: Any, y: Any) -> Any:
        """The ``classifier`` fitted on ``(x, y)``
        (:func:`~privgraph.methods.hetedp.nc.fit_embedding_classifier`)."""
        return fit_embedding_classifier(x, y, self.classifier)


@register_method
class MetaPath2Vec(_HeteroBaseline):
    """metapath2vec (Dong et al.), a non-private baseline of HeteDP's §V-A: the input, unprotected."""

    name = "metapath2vec"
    description = "metapath2vec (Dong et al.): random-walk embeddings along a metapath, non-private baseline"
    Params = MetaPath2VecParams
    nc_model = "metapath2vec"

    def check_hetero_task(self, task: str, split: str) -> None:
        """The classifier's parameters belong to node classification; ``train_share`` draws its own split."""
        p = self.params
        if task == "hetero-nc" and p.train_share is not None and split != "random":
            raise ValueError(
                f"metapath2vec's train_share draws its own random split of the labelled nodes: "
                f"leave split at its default (got split={split!r})"
            )
        if task == "lp" and (p.classifier != "logistic" or p.train_share is not None):
            raise ValueError(
                "metapath2vec's classifier and train_share are node-classification parameters (link "
                "prediction scores the embeddings' inner products): leave them at their defaults"
            )

    def walks(self) -> Any:
        """The walk settings (:meth:`MetaPath2VecParams.walks`)."""
        return self.params.walks()
