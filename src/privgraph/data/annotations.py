"""Privacy annotations of a graph (design notes, "Data flow").

* ``data.private_edge_mask`` — bool per column of ``edge_index``: the edge is
  private (E_pri); the others are public (E_pub).  Symmetric: both directions
  of an undirected edge carry the same flag.
* ``data.private_node_mask`` — the private-eligible nodes V̄ (the nodes that
  may hold private edges).  It is *public* knowledge by declaration; by
  default every node is eligible.  Every private edge must join two
  eligible nodes.
* ``data.public_node_mask`` — nodes whose raw features and labels are public
  (FeatureRR learns its importance scores on them); their features enjoy no
  protection.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data

from privgraph.data.validation import check_graph
from privgraph.mechanisms import RandomSource, make_generator
from privgraph.mechanisms.randomness import uniform


def _undirected_ids(edge_index: torch.Tensor, num_nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For each column, the id of its undirected pair, and the sorted unique pair ids."""
    src, dst = edge_index
    lo, hi = torch.minimum(src, dst), torch.maximum(src, dst)
    pair = lo * num_nodes + hi
    return pair, torch.unique(pair)


def check_private_ratio(ratio: float) -> float:
    """The private-edge ratio ρ must lie in [0, 1]."""
    ratio = float(ratio)
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"the private-edge ratio ρ must lie in [0, 1], got {ratio}")
    return ratio


def check_public_fraction(fraction: float) -> float:
    """The share of training nodes declared public must lie in (0, 1]."""
    fraction = float(fraction)
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"the public-node fraction must lie in (0, 1], got {fraction}")
    return fraction


def mark_private_edges(data: Data, ratio: float, seed: int | None = 0, rng: RandomSource | None = None) -> Data:
    """Mark a uniformly random fraction ``ratio`` of the undirected edges private
    (both directions alike), by seed; sets ``data.private_edge_mask`` and, if
    absent, ``data.private_node_mask`` (all nodes).  Returns ``data``."""
    ratio = check_private_ratio(ratio)
    rng = rng if rng is not None else make_generator(seed)
    pair, unique = _undirected_ids(data.edge_index, data.num_nodes)
    count = int(round(ratio * unique.numel()))
    chosen = unique[torch.argsort(uniform((unique.numel(),), rng))[:count]]
    data.private_edge_mask = torch.isin(pair, chosen)
    if getattr(data, "private_node_mask", None) is None:
        data.private_node_mask = torch.ones(data.num_nodes, dtype=torch.bool)
    data.private_ratio = ratio
    return data


def split_edges(data: Data) -> tuple[torch.Tensor, torch.Tensor]:
    """``(public edge_index, private edge_index)`` of an annotated graph, validated: simple,
    undirected, both directions of an edge flagged alike (:func:`~privgraph.data.check_graph`;
    duplicates are refused, not merged), private edges between private-eligible nodes."""
    mask = getattr(data, "private_edge_mask", None)
    if mask is None:
        raise ValueError(
            "the graph has no private-edge annotation: mark edges private first "
            "(privgraph.data.mark_private_edges, or --private-ratio on the command line)"
        )
    checked = check_graph(data.edge_index, data.num_nodes, undirected=True, private_edge_mask=mask)
    edge_index, mask = checked.edge_index, checked.private_edge_mask
    eligible = private_nodes(data)
    ei = edge_index[:, mask]
    if ei.numel() and not bool((eligible[ei[0]] & eligible[ei[1]]).all()):
        raise ValueError("a private edge joins a node outside private_node_mask (the private-eligible nodes V̄)")
    return edge_index[:, ~mask], ei


def private_nodes(data: Data) -> torch.Tensor:
    """The private-eligible node mask V̄ (default: all nodes)."""
    mask = getattr(data, "private_node_mask", None)
    if mask is None:
        return torch.ones(data.num_nodes, dtype=torch.bool)
    mask = torch.as_tensor(mask, dtype=torch.bool)
    if mask.shape != (data.num_nodes,):
        raise ValueError(f"private_node_mask must have one entry per node, got shape {tuple(mask.shape)}")
    return mask


def sample_public_nodes(train_mask: torch.Tensor, fraction: float, seed: int | None = 0) -> torch.Tensor:
    """A seeded random ``fraction`` of the training nodes (at least one), as a node mask."""
    fraction = check_public_fraction(fraction)
    train = train_mask.nonzero().flatten()
    gen = np.random.default_rng(seed)
    count = max(1, int(round(fraction * train.numel())))
    chosen = train[torch.from_numpy(gen.permutation(train.numel())[:count])]
    mask = torch.zeros(train_mask.numel(), dtype=torch.bool)
    mask[chosen] = True
    return mask


def mark_public_nodes(data: Data, fraction: float, seed: int | None = 0) -> Data:
    """Declare a seeded random ``fraction`` of the training nodes public (``data.public_node_mask``)."""
    data.public_node_mask = sample_public_nodes(data.train_mask, fraction, seed)
    return data
