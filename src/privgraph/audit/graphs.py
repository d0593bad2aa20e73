"""The small synthetic graphs a method is audited on by default.

Small, because the audit releases the whole graph thousands of times; with
one feature in [0, 1], because the tightest neighbouring feature vectors are
the domain's extreme points and every extra coordinate spreads the budget;
with every annotation a method may read: labels and a split, a private-edge
mask (half the edges), public nodes for FeatureRR's importance model, and a
binary sensitive attribute with its private nodes (PPCVGAE).
"""

from __future__ import annotations

import torch
from torch_geometric.data import Data, HeteroData

from privgraph.data.annotations import mark_private_edges
from privgraph.data.synthetic import hetero_sbm_graph, sensitive_sbm_graph

HETERO_EDGE_TYPE = ("paper", "to", "author")  # HeteDP's protected relation on the default graph


def audit_graph(seed: int = 0, num_nodes: int = 24, num_features: int = 1) -> Data:
    """A two-class SBM (mean degree 4) with ``num_features`` features min–max scaled into [0, 1]."""
    data = sensitive_sbm_graph(
        num_nodes=num_nodes, num_features=max(2, num_features), planted_features=1, avg_degree=4.0, seed=seed
    )
    x = data.x[:, :num_features]  # the first column carries the planted attribute
    lo, hi = x.min(0).values, x.max(0).values
    data.x = ((x - lo) / (hi - lo).clamp_min(1e-12)).clamp(0.0, 1.0)
    data.feature_domain = (0.0, 1.0)
    return annotate(data, seed)


def annotate(data: Data, seed: int = 0) -> Data:
    """The annotations the audited methods read, where the graph lacks them: half the edges marked
    private (seeded), and the last quarter of the training nodes public (FeatureRR's importance model
    reads their raw features, every class among them; the audited node is the first training node, never
    public)."""
    if not isinstance(data, Data):
        return data
    if getattr(data, "private_edge_mask", None) is None:
        mark_private_edges(data, 0.5, seed=seed)
    train = getattr(data, "train_mask", None)
    if getattr(data, "public_node_mask", None) is None and train is not None and int(train.sum()) > 1:
        index = train.nonzero().flatten()
        public = torch.zeros(data.num_nodes, dtype=torch.bool)
        public[index[-max(1, index.numel() // 4) :]] = True
        y = getattr(data, "y", None)
        if y is not None:  # every class among them (the importance model is a classifier)
            for c in torch.unique(y[index[1:]]):
                public[index[1:][y[index[1:]] == c][-1]] = True
        public[index[0]] = False
        data.public_node_mask = public
    return data


def audit_hetero_graph(seed: int = 0) -> HeteroData:
    """A small ACM-like graph: 20 papers, 12 authors, 3 subjects, 2 features."""
    return hetero_sbm_graph(num_papers=20, num_authors=12, num_subjects=3, num_classes=2, num_features=2, seed=seed)


def _undirected_graph(pairs: list[tuple[int, int]], num_nodes: int, seed: int) -> Data:
    """An undirected graph (both directions of each pair) with two classes, a random feature and a split that
    makes every node a training node (the node-level audits' hub graphs: only the structure matters)."""
    edges = torch.tensor(pairs, dtype=torch.long).t()
    gen = torch.Generator().manual_seed(seed)
    ones = torch.ones(num_nodes, dtype=torch.bool)
    return Data(
        x=torch.rand(num_nodes, 1, generator=gen),
        edge_index=torch.cat([edges, edges.flip(0)], dim=1),
        y=torch.arange(num_nodes) % 2,
        num_nodes=num_nodes,
        train_mask=ones,
        val_mask=ones.clone(),
        test_mask=ones.clone(),
    )


def hub_within_bound(bound: int, seed: int = 0) -> Data:
    """Node 0 (the hub) joined to ``bound`` spokes 1 … D, every spoke joined to the same D − 1 further nodes:
    every degree is exactly D (the hub's, the spokes', the shared nodes'), so the graph and the graph without
    the hub are inside the bounded-degree domain, and removing the hub moves D rows — the worst case Δ = √D."""
    spokes = list(range(1, bound + 1))
    shared = list(range(bound + 1, 2 * bound))
    pairs = [(0, s) for s in spokes] + [(s, t) for s in spokes for t in shared]
    return _undirected_graph(pairs, 2 * bound, seed)


def hub_above_bound(bound: int, spokes: int, seed: int = 0) -> Data:
    """Node 0 (the hub) joined to ``spokes`` spokes, each with ``bound`` leaves of its own: every spoke has
    degree D + 1, above the bound, and the graph without the hub is within it (the freed-slot cascade's
    adversarial pair: a projection onto degree ≤ D keeps every leaf edge without the hub, and must drop one
    edge of every spoke with it).  Spoke i is node 1 + i, its leaves 1 + spokes + i·D … ."""
    pairs = [(0, 1 + i) for i in range(spokes)]
    pairs += [(1 + i, 1 + spokes + i * bound + j) for i in range(spokes) for j in range(bound)]
    return _undirected_graph(pairs, 1 + spokes * (bound + 1), seed)
