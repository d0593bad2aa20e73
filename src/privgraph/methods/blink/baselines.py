"""Link-LDP baselines of the Blink paper that use randomized response only.

* RR: every node spends all of ε on randomized response over its adjacency
  list (δ = 0, no degree); node i aggregates from every j it reported
  (Ã_ij = 1) — a directed noisy graph.
* SymRR: the same reports, but each pair {i, j}, i < j, is decided by the
  report of one endpoint (Ã_ij of the lower index), giving an undirected graph.

Guarantee: ε-link-LDP per adjacency list.  Their output has Θ(n²/(1+e^ε))
edges, so they are built by scanning all pairs in row blocks (O(n²) time,
memory proportional to the output) and refuse graphs above ``max_nodes``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from privgraph.mechanisms import RandomSource
from privgraph.methods.base import Hyperparameters, Method, Release
from privgraph.methods.blink.client import LinkLDPReports, link_ldp


def reported_pairs(reports: LinkLDPReports, upper_only: bool, block: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j) with Ã_ij = 1 (``upper_only``: only i < j), by row blocks."""
    n = reports.num_nodes
    rows, cols = [], []
    for s in range(0, n, block):
        i = np.repeat(np.arange(s, min(s + block, n)), n)
        j = np.tile(np.arange(n), min(block, n - s))
        if upper_only:
            keep = i < j
            i, j = i[keep], j[keep]
        ones = reports.bits(i, j)
        rows.append(i[ones])
        cols.append(j[ones])
    return np.concatenate(rows), np.concatenate(cols)


class RandomizedResponseGraph(Method):
    name = "rr"
    description = "RR: randomized response on adjacency lists, used as the graph"
    private = True
    symmetric = False
    max_nodes = 50_000

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, hp: Hyperparameters, options: dict[str, Any]
    ) -> Release:
        eps = self.check_epsilon_given(epsilon, self.name)
        if data.num_nodes > self.max_nodes:
            raise ValueError(f"{self.name} builds a graph with Θ(n²/(1+e^ε)) edges; refusing n = {data.num_nodes} "
                             f"> {self.max_nodes}")
        reports = link_ldp(data.edge_index, data.num_nodes, eps, 0.0, rng)
        i, j = reported_pairs(reports, upper_only=self.symmetric)
        if self.symmetric:
            src, dst = np.concatenate([i, j]), np.concatenate([j, i])
        else:
            src, dst = j, i  # node i aggregates from the nodes it reported
        edge_index = torch.from_numpy(np.stack([src, dst])).long()
        details = {"mechanism": self.name, "edges": int(edge_index.shape[1])}
        return Release(data.x.to(torch.float32), reports.guarantee().with_note(
            "δ = 0: the whole budget goes to randomized response, no degree is sent"), details, edge_index)


class SymmetricRandomizedResponseGraph(RandomizedResponseGraph):
    name = "symrr"
    description = "SymRR: each pair decided by its lower-index endpoint's randomized response"
    symmetric = True
