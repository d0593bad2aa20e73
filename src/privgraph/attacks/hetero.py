"""Targets on a heterogeneous graph (HeteDP, RGCN, HGT, metapath2vec), as the attacks query them.

The attacks read a homogeneous view of what the heterogeneous target answers about:

* **a node classifier** (the ``hetero-nc`` task: HeteDP's HAN on the released target-type features,
  RGCN, HGT): the inference API answers the posteriors of the dataset's target type (ACM: papers),
  the other types' inputs and every relation held by the server (:class:`TypeModel`).  The view
  (:func:`target_type_view`) has the target type's nodes, features, labels and split (the
  membership attacks' members and non-members), and as secret links the protected relation seen
  from the target type (:func:`relation_pairs`): its own edges when it joins two target-type nodes,
  else its metapath t → s → t (ACM: paper–author–paper, two papers linked iff they share an author
  by the protected relation).  A classifier answers only target-type posteriors, so the relation's
  own pairs (a paper and an author) cannot be scored; its metapath is what HAN reads (its PAP
  graph) and what a two-layer RGCN/HGT propagates over (paper → author → paper), so link stealing
  (close posteriors) and LinkTeller (influence of one paper's features on another's prediction)
  are sound on it.  LinkTeller's influence also flows along the other metapaths (PSP): those pairs
  are its false positives, as two-hop pairs are on a homogeneous graph.
* **a link predictor** (the ``lp`` task: HeteDP's DP-SGD link model, RGCN/HGT/metapath2vec trained
  for link prediction): the protected relation itself (:func:`relation_view`): a bipartite view of
  its two endpoint types, the secret links its training edges (DP-SGD's examples), the held-out
  validation/test edges neither candidates nor non-links, non-links drawn among the pairs of one
  node of each type.  The target answers the model's embeddings of both types (link stealing by
  their distance) and its own score of a pair (``link-score``: the inner product it predicts with).
* **metapath2vec's embeddings** for node classification: an embedding release of the target type,
  attacked by link stealing on the same metapath view.

Every target states which graph answers and the guarantee of what answers (``answers``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor, nn
from torch_geometric.data import Data, HeteroData

from privgraph.accounting import PrivacyReport
from privgraph.attacks.base import Target
from privgraph.data.hetero import EdgeType
from privgraph.device import to_device


def relation_pairs(data: HeteroData, node_type: str, edge_type: EdgeType) -> Tensor:
    """The links among ``node_type``'s nodes that the relation ``edge_type`` makes, both directions,
    no self-loops: its own edges when it joins two ``node_type`` nodes; else (one endpoint of type
    ``node_type``, the other s) the metapath ``node_type`` → s → ``node_type``: u ~ v iff they share
    a neighbour by the relation (every such pair, not a sample)."""
    src, _, dst = edge_type
    ei = data[edge_type].edge_index
    n = data[node_type].num_nodes
    if src == dst == node_type:
        rows, cols = ei.numpy()
    elif node_type in (src, dst):
        mine, other = (ei[0], ei[1]) if src == node_type else (ei[1], ei[0])
        m = data[dst if src == node_type else src].num_nodes
        a = sp.csr_matrix((np.ones(mine.numel()), (mine.numpy(), other.numpy())), shape=(n, m))
        a.data[:] = 1.0  # repeated edges count once
        shared = (a @ a.T).tocoo()
        rows, cols = shared.row, shared.col
    else:
        raise ValueError(
            f"the protected relation {edge_type} does not touch the classified type {node_type!r}: a node "
            "classifier's posteriors say nothing pairwise about it"
        )
    keep = rows != cols
    pairs = np.unique(np.sort(np.stack([rows[keep], cols[keep]]), axis=0), axis=1)
    both = np.concatenate([pairs, pairs[::-1]], axis=1)
    return torch.from_numpy(np.ascontiguousarray(both)).long()


def target_type_view(
    data: HeteroData, node_type: str, edge_type: EdgeType, masks: Sequence[Tensor] | None = None
) -> Data:
    """The auditor's truth for a target that answers about ``node_type``'s nodes: their features
    and labels, the split ``masks`` (train, val, test: the members are the training nodes), as
    ``edge_index`` the secret links :func:`relation_pairs`, and ``node_id`` (each node's index in
    ``data``: what an attacker's subgraph of the view maps back to)."""
    store = data[node_type]
    n = store.num_nodes
    view = Data(edge_index=relation_pairs(data, node_type, edge_type), num_nodes=n, node_id=torch.arange(n))
    for name in ("x", "y"):
        if name in store:
            view[name] = store[name]
    if masks is not None:
        view.train_mask, view.val_mask, view.test_mask = masks
    return view


def relation_view(data: HeteroData, edge_type: EdgeType, secret: Tensor) -> Data:
    """The auditor's truth for a link predictor of ``edge_type``: the relation's two endpoint types
    as one node set (the source type's nodes first, then the destination type's: ``bipartite`` = the
    number of source nodes; one set when both are the same type), ``edge_index`` every edge of the
    relation in ``data`` (both directions), ``private_edge_mask`` the edges in ``secret`` [2, E]
    (the model's training edges: the secret links); the others (held-out edges) are neither
    candidates nor non-links."""
    src, _, dst = edge_type
    offset = 0 if src == dst else data[src].num_nodes
    n = offset + data[dst].num_nodes if src != dst else data[src].num_nodes
    ei = data[edge_type].edge_index
    u, v = ei[0], ei[1] + offset
    codes = torch.minimum(u, v) * n + torch.maximum(u, v)
    secret_codes = torch.minimum(secret[0], secret[1] + offset) * n + torch.maximum(secret[0], secret[1] + offset)
    private = torch.isin(codes, secret_codes)
    view = Data(
        edge_index=torch.cat([torch.stack([u, v]), torch.stack([v, u])], dim=1),
        private_edge_mask=torch.cat([private, private]),
        num_nodes=n,
    )
    if src != dst:
        view.bipartite = offset
    return view


class TypeModel(nn.Module):
    """A heterogeneous classifier queried as the attacks query a node classifier: ``node_type``'s
    features in (the query), its nodes' outputs out; the other types' inputs and every relation are
    the server's (fixed).  ``graph`` is unused: the server's relations answer."""

    def __init__(self, model: nn.Module, inputs: dict[str, Tensor], edges: dict[Any, Tensor], node_type: str):
        super().__init__()
        self.model, self.node_type = model, node_type
        device = next(model.parameters()).device
        self.inputs = to_device({t: x for t, x in inputs.items() if t != node_type}, device)
        self.edges = to_device(edges, device)

    def forward(self, x: Tensor, graph: Any = None) -> Tensor:
        return self.model({**self.inputs, self.node_type: x}, self.edges)

    def embed(self, x: Tensor, graph: Any = None) -> Tensor:
        return self.model.embed({**self.inputs, self.node_type: x}, self.edges)[self.node_type]


def guarantee_words(report: PrivacyReport) -> str:
    """The guarantees of what answers, in words (each with its notes)."""
    return "; ".join(
        g.describe() + "".join(f" ({note})" for note in getattr(g, "notes", ())) for g in report.guarantees
    )


def classifier_target(
    method: str,
    truth: Data,
    model: nn.Module,
    inputs: dict[str, Tensor],
    edges: dict[Any, Tensor],
    node_type: str,
    answers: str,
    shadow: Callable[[Data, int], Target] | None = None,
    utility: dict[str, float] | None = None,
) -> Target:
    """The :class:`Target` of a heterogeneous node classifier (HAN, RGCN, HGT) on ``truth``
    (:func:`target_type_view`): its posteriors of ``node_type``'s nodes for query features of that
    type (``inputs[node_type]`` by default), over the server's ``edges``."""
    return Target(
        method=method,
        truth=truth,
        model=TypeModel(model, inputs, edges, node_type),
        x=inputs[node_type],
        answers=answers,
        shadow=shadow,
        utility=dict(utility or {}),
    )


def inner_product_score(embeddings: Tensor) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A link predictor's score of pairs (u, v): the inner product of the two nodes' embeddings."""
    z = embeddings.detach().double().cpu()

    def score(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return (z[torch.from_numpy(u)] * z[torch.from_numpy(v)]).sum(-1).numpy()

    return score


def link_model_target(
    method: str,
    truth: Data,
    embeddings: dict[str, Tensor],
    edge_type: EdgeType,
    answers: str,
    utility: dict[str, float] | None = None,
) -> Target:
    """The :class:`Target` of a link predictor of ``edge_type`` on ``truth`` (:func:`relation_view`):
    the embeddings of both endpoint types (in the view's order) and its score, their inner product."""
    src, _, dst = edge_type
    z = embeddings[src] if src == dst else torch.cat([embeddings[src], embeddings[dst]])
    return Target(
        method=method,
        truth=truth,
        embeddings=z.detach().cpu(),
        answers=answers,
        pair_score=inner_product_score(z),
        utility=dict(utility or {}),
    )


__all__ = [
    "TypeModel",
    "classifier_target",
    "guarantee_words",
    "inner_product_score",
    "link_model_target",
    "relation_pairs",
    "relation_view",
    "target_type_view",
]
