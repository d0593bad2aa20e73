"""RR-AND: randomized response on each adjacency list, a pair kept where both endpoints report it.

Each node i sends its n − 1 adjacency bits through randomized response with ε (Blink, Algorithm 1 with degree
share s = 0: privgraph's :class:`~privgraph.mechanisms.graph.RandomizedResponseReports`); the server releases
{i, j} as an undirected link iff Ã_ij = Ã_ji = 1.  Guarantee: ε-link-LDP per adjacency list, local model (the
AND is post-processing of the reports).  All pairs scanned by blocks of rows: O(n²) time, so graphs above
``max_nodes`` are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch_geometric.data import Data

from privgraph.accounting import TrustModel, Unit
from privgraph.data import check_graph
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.graph import RandomizedResponseReports
from privgraph.methods import Method, MethodParams, Release, param
from privgraph.methods.base import SPLIT_FIELDS, public_features
from privgraph.progress import ProgressHook


def both_reported(reports: RandomizedResponseReports, n: int, block: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """The pairs i < j with Ã_ij = Ã_ji = 1, scanned by blocks of rows (memory O(block · n))."""
    rows, cols = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for start in range(0, n, block):
        i, j = np.nonzero(np.arange(start, min(start + block, n))[:, None] < np.arange(n)[None, :])
        i += start
        keep = reports.bits(i, j) & reports.bits(j, i)
        rows.append(i[keep])
        cols.append(j[keep])
    return np.concatenate(rows), np.concatenate(cols)


@dataclass(frozen=True)
class RRAndParams(MethodParams):
    max_nodes: int = param(5_000, "the largest graph scanned (all n² pairs are read)", bound=">= 1")


class RandomizedResponseAnd(Method):
    """RR-AND (module docstring): ε-link-LDP per adjacency list; features and labels copied as public."""

    name = "rr-and"
    description = "RR-AND: randomized response on adjacency lists, a pair kept where both endpoints report it"
    unit = Unit.ADJACENCY_LIST
    private = True
    trust_models = (TrustModel.LOCAL,)
    simple_graph = True
    needs_features = False
    private_fields = ("edge_index",)
    public_fields = ("x", *SPLIT_FIELDS)
    Params = RRAndParams

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The public features with the links both endpoints reported (undirected)."""
        eps = self.check_epsilon_given(epsilon)
        n = data.num_nodes
        if n > self.params.max_nodes:
            raise ValueError(f"{self.name} reads all n² pairs; refusing n = {n} > max_nodes = {self.params.max_nodes}")
        src, dst = check_graph(data.edge_index, n, undirected=True).edge_index.numpy()
        reports = RandomizedResponseReports.from_edges(src, dst, n, eps, 0.0, rng, symmetric=True)
        i, j = both_reported(reports, n)
        edge_index = torch.from_numpy(np.stack([np.concatenate([i, j]), np.concatenate([j, i])])).long()
        return Release(
            public_features(data),
            reports.guarantee().with_note("RR-AND: a pair is a link where both endpoints' reported bits are 1"),
            {"mechanism": self.name, "edges": int(edge_index.shape[1])},
            edge_index,
            reports=reports,
        )
