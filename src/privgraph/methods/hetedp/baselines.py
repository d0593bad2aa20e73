"""HeteDP's non-private heterogeneous baselines (§V): metapath2vec (PyG)
embeddings, and link prediction by RGCN / HGT trained end to end (dot product
of the endpoint embeddings, uniform negatives, message passing over the
training edges only) or by metapath2vec's dot product.  The experiment loop is
:mod:`privgraph.experiments.tasks`."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from privgraph.data.hetero import EdgeType, HeteroTask, node_inputs
from privgraph.nn.hetero import HGTClassifier, RGCNClassifier
from privgraph.train.link_prediction import split_auc

LINK_BASELINES = ("rgcn", "hgt", "metapath2vec")


def metapath2vec_embeddings(edge_index_dict: dict[EdgeType, Tensor], metapath: Sequence[EdgeType],
                            num_nodes_dict: dict[str, int], seed: int, epochs: int = 10) -> dict[str, Tensor]:
    """PyG's MetaPath2Vec, walks from the metapath's first type.  Our graphs have a few thousand
    start nodes (PyG's AMiner example: 1.7M), so small batches (32) and lr 0.05 give ~10³ steps
    in 10 epochs; 5 epochs of 128 (~10² steps) left the embeddings at chance level."""
    from torch_geometric.nn import MetaPath2Vec

    torch.manual_seed(seed)
    model = MetaPath2Vec(edge_index_dict, embedding_dim=64, metapath=list(metapath), walk_length=20,
                         context_size=5, walks_per_node=5, num_negative_samples=5, num_nodes_dict=num_nodes_dict,
                         sparse=True)
    loader = model.loader(batch_size=32, shuffle=True)
    opt = torch.optim.SparseAdam(list(model.parameters()), lr=0.05)
    for _ in range(epochs):
        for pos, neg in loader:
            opt.zero_grad()
            model.loss(pos, neg).backward()
            opt.step()
    with torch.no_grad():
        return {t: model(t).detach() for t in {et[0] for et in metapath}}


def train_link_baseline(method: str, data: HeteroData, task: HeteroTask,
                        splits: tuple[HeteroData, HeteroData, HeteroData], seed: int, hidden: int = 64,
                        epochs: int = 100) -> tuple[float, float]:
    """Link prediction of ``task.edge_type`` by ``method`` (one of :data:`LINK_BASELINES`) on the
    ``splits`` (train, val, test) of :func:`~privgraph.data.hetero.link_split`; returns the
    (validation, test) ROC-AUC.  RGCN / HGT: ``epochs`` of full-batch training, the test AUC
    of the epoch with the best validation AUC; metapath2vec: embeddings over the training edges
    of the relation and its reverse (``hidden`` and ``epochs`` unused)."""
    if method not in LINK_BASELINES:
        raise ValueError(f"unknown link-prediction baseline {method!r}; choose from {LINK_BASELINES}")
    train, val, test = splits
    src, _, dst = task.edge_type
    if method == "metapath2vec":
        z = metapath2vec_embeddings(train.edge_index_dict, [task.edge_type, task.reverse],
                                    {t: data[t].num_nodes for t in data.node_types}, seed)

        def dot(pairs: Tensor) -> Tensor:
            return (z[src][pairs[0]] * z[dst][pairs[1]]).sum(-1)

        return split_auc(val, task.edge_type, dot), split_auc(test, task.edge_type, dot)
    torch.manual_seed(seed)
    inputs = node_inputs(data, seed=seed)
    cls = RGCNClassifier if method == "rgcn" else HGTClassifier
    model = cls({t: v.shape[1] for t, v in inputs.items()}, hidden, 1, data.metadata(), src)
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=1e-3)
    positives = train[task.edge_type].edge_label_index
    g = torch.Generator().manual_seed(seed)

    def scores(split, pairs):
        h = model.embed(inputs, split.edge_index_dict)
        return (h[src][pairs[0]] * h[dst][pairs[1]]).sum(-1)

    best = (-1.0, 0.0)
    for _ in range(epochs):
        model.train()
        neg = torch.stack([torch.randint(0, data[src].num_nodes, (positives.shape[1],), generator=g),
                           torch.randint(0, data[dst].num_nodes, (positives.shape[1],), generator=g)])
        pairs = torch.cat([positives, neg], dim=1)
        labels = torch.cat([torch.ones(positives.shape[1]), torch.zeros(neg.shape[1])])
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(scores(train, pairs), labels).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            v = split_auc(val, task.edge_type, lambda p: scores(val, p))
            if v > best[0]:
                best = (v, split_auc(test, task.edge_type, lambda p: scores(test, p)))
    return best
