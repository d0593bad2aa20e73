"""Blink: link local differential privacy for GNNs (Zhu et al., "Blink: Link Local Differential Privacy in
Graph Neural Networks via Bayesian Estimation", CCS 2023): the client's reports, the server's β-model MLE and
posterior, and the Hard, Soft and Hybrid graphs."""

from privgraph.methods.blink.client import LinkLDPReports, flip_probability, link_ldp
from privgraph.methods.blink.server import (
    BetaMLE,
    EstimatedGraph,
    beta_mle,
    clip_degrees,
    evidence_rows,
    expected_degrees,
    hard_graph,
    hybrid_graph,
    pairs_above,
    posterior_from_bits,
    posterior_logit,
    posterior_norm,
    thresholded_graph,
)

__all__ = [
    "BetaMLE",
    "EstimatedGraph",
    "LinkLDPReports",
    "beta_mle",
    "evidence_rows",
    "clip_degrees",
    "expected_degrees",
    "flip_probability",
    "hard_graph",
    "hybrid_graph",
    "pairs_above",
    "link_ldp",
    "posterior_from_bits",
    "posterior_logit",
    "posterior_norm",
    "thresholded_graph",
]
