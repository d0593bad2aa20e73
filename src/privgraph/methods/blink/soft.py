"""Blink-Soft (Blink paper, §4.2.3, eq. 9): every pair weighted by its posterior P_ij.

* Exact (n ≤ ``exact_limit``): :class:`PosteriorAdjacency` gives P in row
  blocks, P_ij = σ(β_i + β_j + (s_ij − 1)·2ε_a), from the evidence states
  s_ij ∈ {0, 1, 2} (n² bytes: the reports as the server received them) and
  β; a float n × n matrix is never held, and the GNN propagates with
  :func:`privgraph.nn.dense.propagate`.
* Approximation (larger graphs): the truncated posterior P_τ, the pairs with
  P_ij > τ weighted by P_ij, found output-sensitively
  (:func:`~privgraph.methods.blink.server.thresholded_graph`).  The error is
  stated and returned: every row of (P − P_τ)·H is bounded by
  (Σ_j P_ij − Σ_j (P_τ)_ij)·max|H|, and the dropped mass ‖P − P_τ‖_{1,1}
  = ‖P‖_{1,1} − ‖P_τ‖_{1,1} is reported (exact when ‖P‖ is, else the
  unbiased estimate of :func:`~privgraph.methods.blink.server.posterior_norm`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from privgraph.methods.blink.client import LinkLDPReports
from privgraph.methods.blink.server import (
    LOCAL,
    BandScan,
    BlockRunner,
    EstimatedGraph,
    evidence_rows,
    posterior_norm,
    thresholded_graph,
)
from privgraph.nn.dense import BlockwiseAdjacency


class PosteriorAdjacency(BlockwiseAdjacency):
    """The posterior matrix P of Algorithm 3 as row blocks (see module docstring).  A release file
    holds its ``beta``, ``states`` and ``shift`` (``release_state``): P_ij = σ(β_i + β_j + shift[s_ij]), P_ii = 0."""

    release_name = "blink-posterior"

    def __init__(self, reports: LinkLDPReports, beta: np.ndarray, block: int = 1024):
        n = reports.num_nodes
        self.num_nodes, self.block = n, block
        self.beta = torch.as_tensor(np.asarray(beta), dtype=torch.float32)
        self.states = torch.empty((n, n), dtype=torch.uint8)
        for s in range(0, n, block):
            self.states[s : s + block] = torch.from_numpy(evidence_rows(reports, np.arange(s, min(s + block, n))))
        c = 2.0 * reports.epsilon_adjacency
        self.shift = torch.tensor([-c, 0.0, c], dtype=torch.float32)

    def rows(self, start: int, stop: int) -> torch.Tensor:
        logit = self.beta[start:stop, None] + self.beta[None, :] + self.shift[self.states[start:stop].long()]
        p = torch.sigmoid(logit)
        idx = torch.arange(start, stop, device=p.device)
        p[idx - start, idx] = 0.0
        return p


@dataclass
class SoftGraph:
    adjacency: PosteriorAdjacency | None  # exact path
    graph: EstimatedGraph | None  # truncated path
    details: dict[str, Any]


def soft_graph(
    reports: LinkLDPReports,
    beta: np.ndarray,
    exact_limit: int = 20_000,
    min_probability: float = 1e-3,
    runner: BlockRunner = LOCAL,
) -> SoftGraph:
    """Blink-Soft's weighted graph: exact for n ≤ ``exact_limit`` (in this process), else truncated at
    ``min_probability`` (its passes in the ``runner``'s blocks of rows)."""
    if reports.num_nodes <= exact_limit:
        return SoftGraph(PosteriorAdjacency(reports, beta), None, {"soft": "exact"})
    scan = BandScan(reports, beta, runner)
    graph = thresholded_graph(reports, beta, min_probability, scan=scan)
    norm, exact = posterior_norm(reports, beta, runner=runner, scan=scan)
    kept = float(graph.edge_weight.sum()) if graph.edge_weight is not None else 0.0
    details = {
        "soft": "truncated",
        "min_probability": min_probability,
        "posterior_mass": norm,
        "posterior_mass_exact": exact,
        "kept_mass": kept,
        "dropped_mass": max(norm - kept, 0.0),
        "dropped_fraction": max(norm - kept, 0.0) / norm if norm > 0 else 0.0,
    }
    return SoftGraph(None, graph, details)
