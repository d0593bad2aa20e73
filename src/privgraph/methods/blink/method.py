"""Blink as a node-classification method: link-LDP reports → posterior → graph → GNN."""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Data

from privgraph.mechanisms import RandomSource
from privgraph.methods.base import Hyperparameters, Method, Release
from privgraph.methods.blink.client import link_ldp
from privgraph.methods.blink.server import beta_mle, clip_degrees, hard_graph, hybrid_graph
from privgraph.methods.blink.soft import soft_graph

VARIANTS = ("hard", "soft", "hybrid")
DEFAULT_DEGREE_SHARE = 0.1


class Blink(Method):
    """Blink-Hard / Blink-Soft / Blink-Hybrid (§4.2.3).

    Options: ``variant`` (``hard``, ``soft`` or ``hybrid``), ``delta`` (the
    share δ of ε spent on the degree; default 0.1), and for Soft
    ``soft_exact_limit`` (exact dense P up to this many nodes) and
    ``soft_min_probability`` (the truncation τ above it).  Node features and
    labels are used as they are: Blink protects links only.
    """

    name = "blink"
    description = "Blink: link LDP (randomized response + Laplace degree), Bayesian denoising"
    private = True
    simple_graph = True
    release_search = {"delta": [0.1, 0.3, 0.5, 0.7, 0.9]}  # the paper's grid (Appendix B.2)

    def __init__(self, variant: str = "hard", soft_exact_limit: int = 20_000, soft_min_probability: float = 1e-3):
        if variant not in VARIANTS:
            raise ValueError(f"Blink variant must be one of {VARIANTS}, got {variant!r}")
        if not 0.0 < soft_min_probability < 1.0:
            raise ValueError(f"soft_min_probability must lie in (0, 1), got {soft_min_probability}")
        self.variant = variant
        self.soft_exact_limit, self.soft_min_probability = int(soft_exact_limit), float(soft_min_probability)

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, hp: Hyperparameters, options: dict[str, Any]
    ) -> Release:
        eps = self.check_epsilon_given(epsilon, self.name)
        delta = options.get("delta")
        delta = DEFAULT_DEGREE_SHARE if delta is None else float(delta)
        reports = link_ldp(data.edge_index, data.num_nodes, eps, delta, rng)
        fit = beta_mle(clip_degrees(reports.noisy_degrees, data.num_nodes), tol=1e-6)
        details = {"mechanism": f"blink-{self.variant}", "variant": self.variant, "delta": delta,
                   "mle_iterations": fit.iterations, "mle_converged": fit.converged}
        adjacency = None
        if self.variant == "soft":
            soft = soft_graph(reports, fit.beta, self.soft_exact_limit, self.soft_min_probability)
            adjacency, graph = soft.adjacency, soft.graph
            details.update(soft.details)
        else:
            graph = hard_graph(reports, fit.beta) if self.variant == "hard" else hybrid_graph(reports, fit.beta)
        if graph is not None:
            details.update(edges=int(graph.edge_index.shape[1]), visited_pairs=graph.visited_pairs)
        guarantee = reports.guarantee().with_note(
            "node features and labels are not protected (Blink's setting: only links are private)"
        )
        if graph is None:
            return Release(data.x.to(torch.float32), guarantee, details, adjacency=adjacency)
        return Release(data.x.to(torch.float32), guarantee, details, graph.edge_index, graph.edge_weight)
