"""Blink: link local differential privacy for GNNs (work in progress: client,
β-model MLE, posterior, Hard and Hybrid graphs)."""

from privgraph.methods.blink.client import LinkLDPReports, check_simple_undirected, flip_probability, link_ldp
from privgraph.methods.blink.server import (
    BetaMLE,
    EstimatedGraph,
    beta_mle,
    candidate_pairs,
    clip_degrees,
    expected_degrees,
    hard_graph,
    hybrid_graph,
    posterior_from_bits,
    posterior_logit,
    posterior_norm,
)

__all__ = [
    "BetaMLE",
    "EstimatedGraph",
    "LinkLDPReports",
    "beta_mle",
    "candidate_pairs",
    "check_simple_undirected",
    "clip_degrees",
    "expected_degrees",
    "flip_probability",
    "hard_graph",
    "hybrid_graph",
    "link_ldp",
    "posterior_from_bits",
    "posterior_logit",
    "posterior_norm",
]
