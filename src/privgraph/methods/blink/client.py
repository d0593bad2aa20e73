"""Blink, node side: ε-link-LDP reports (Blink paper, Algorithm 1).

Node v_i spends ε_d = s·ε on its degree (Laplace, sensitivity 1) and
ε_a = (1 − s)·ε on its adjacency list (randomized response flipping each bit
with probability 1/(1 + e^{ε_a})).  Guarantee: ε-link-LDP per adjacency list
(basic composition, Theorem 4.1).

The mechanism itself — keyed-PRF randomized response with a Laplace degree, its
reports and the :class:`~privgraph.mechanisms.graph.LinkReports` protocol they
implement — lives in :mod:`privgraph.mechanisms.graph`; this module validates
the graph and re-exports it under Blink's names.
"""

from __future__ import annotations

import torch

from privgraph.data.validation import check_graph
from privgraph.mechanisms import RandomSource, check_epsilon
from privgraph.mechanisms.graph import (
    RandomizedResponseReports,
    check_degree_share,
    flip_probability,
)

LinkLDPReports = RandomizedResponseReports  # Blink's name for the reports

__all__ = ["LinkLDPReports", "check_degree_share", "flip_probability", "link_ldp"]


def link_ldp(
    edge_index: torch.Tensor, num_nodes: int, epsilon: float, degree_share: float, rng: RandomSource
) -> LinkLDPReports:
    """Algorithm 1 for every node at once, on a simple undirected graph (validated: a duplicated
    edge would count twice in the degree and double its sensitivity, so duplicates are refused)."""
    epsilon, degree_share = check_epsilon(epsilon), check_degree_share(degree_share)
    edge_index = check_graph(edge_index, num_nodes, undirected=True).edge_index
    src, dst = edge_index.cpu().numpy().astype("int64", copy=False)  # a view of the validated edges
    return RandomizedResponseReports.from_edges(src, dst, num_nodes, epsilon, degree_share, rng, symmetric=True)
