"""Blink as a node-classification method: link-LDP reports → posterior → graph → GNN."""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Data

from privgraph.mechanisms import RandomSource
from privgraph.methods.base import Hyperparameters, Method, Release
from privgraph.methods.blink.client import link_ldp
from privgraph.methods.blink.server import beta_mle, clip_degrees, hard_graph, hybrid_graph

VARIANTS = ("hard", "hybrid")
DEFAULT_DEGREE_SHARE = 0.1


class Blink(Method):
    """Blink-Hard / Blink-Hybrid (Soft is not implemented yet).

    Options: ``variant`` (``hard`` or ``hybrid``), ``delta`` (the share δ of
    ε spent on the degree; default 0.1).  Node features and labels are
    used as they are: Blink protects links only.
    """

    name = "blink"
    description = "Blink: link LDP (randomized response + Laplace degree), Bayesian denoising"
    private = True

    def __init__(self, variant: str = "hard"):
        if variant not in VARIANTS:
            raise ValueError(f"Blink variant must be one of {VARIANTS}, got {variant!r}")
        self.variant = variant
        self.weighted = variant != "hard"

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, hp: Hyperparameters, options: dict[str, Any]
    ) -> Release:
        eps = self.check_epsilon_given(epsilon, self.name)
        delta = options.get("delta")
        delta = DEFAULT_DEGREE_SHARE if delta is None else float(delta)
        reports = link_ldp(data.edge_index, data.num_nodes, eps, delta, rng)
        fit = beta_mle(clip_degrees(reports.noisy_degrees, data.num_nodes), tol=1e-6)
        graph = hard_graph(reports, fit.beta) if self.variant == "hard" else hybrid_graph(reports, fit.beta)
        guarantee = reports.guarantee().with_note(
            "node features and labels are not protected (Blink's setting: only links are private)"
        )
        details = {"mechanism": f"blink-{self.variant}", "variant": self.variant, "delta": delta,
                   "mle_iterations": fit.iterations, "mle_converged": fit.converged,
                   "edges": int(graph.edge_index.shape[1]), "visited_pairs": graph.visited_pairs}
        return Release(data.x.to(torch.float32), guarantee, details, graph.edge_index, graph.edge_weight)
