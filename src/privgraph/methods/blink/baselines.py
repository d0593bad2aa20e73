"""Link-LDP baselines of the Blink paper (§5.1) built on per-entry reports.

* RR: every node spends all of ε on randomized response over its adjacency
  list (degree share s = 0, no degree); node i aggregates from every j it reported
  (Ã_ij = 1) — a directed noisy graph.
* SymRR (Imola et al. 2021): the same reports, but each pair {i, j}, i < j,
  is decided by the report of one endpoint (Ã_ij of the lower index),
  giving an undirected graph.
* DPRR (Hidano & Murakami 2022): degree-preserving RR.  Node i sends a
  Laplace degree d̃_i (ε_d = sε) and its RR list (ε_a = (1 − s)ε); each
  reported one is kept with probability q_i = d̃_i / (d̃_i(1 − 2p) + (n − 1)p)
  (p = flip probability), so the expected number kept equals d̃_i — an
  unbiased degree (post-processing of public values, server's randomness).
* L-DpGCN (the Blink paper's LDP variant of DpGCN, Wu et al. 2022): node i
  adds Laplace(1/ε) to each of its n − 1 adjacency entries (L1 sensitivity 1);
  the server estimates the number of links by the sum of all noisy entries
  (unbiased for 2|E|), adds the two reports of each pair (Ã_ij + Ã_ji, i < j:
  twice the signal, √2 times the noise) and keeps the top half-that-many pairs
  as undirected links — the Blink authors' server (Blink_GNN,
  src/ldpgcn/server.py), which the paper's numbers come from.  (The paper
  writes ‖Ã‖_{1,1}; with absolute values that is ≈ n²/ε, i.e. every entry
  would be kept, so the signed sum is what the method means.)

Guarantee of each: ε-link-LDP per adjacency list.  They read Θ(n²) report
entries, so they scan all pairs in row blocks (O(n²) time, memory
proportional to the output) and refuse graphs above ``max_nodes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from torch_geometric.data import Data

from privgraph.accounting import TrustModel, Unit
from privgraph.data.validation import check_graph
from privgraph.mechanisms import RandomSource, check_epsilon, graph
from privgraph.mechanisms.randomness import uniform
from privgraph.methods.base import (
    SPLIT_FIELDS,
    Method,
    MethodParams,
    Release,
    param,
    public_features,
    register_method,
)
from privgraph.methods.blink.client import LinkLDPReports, link_ldp
from privgraph.progress import ProgressHook


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


def _directed(i: np.ndarray, j: np.ndarray) -> torch.Tensor:
    """Node i aggregates from the nodes j its report names: messages j → i."""
    return torch.from_numpy(np.stack([j, i])).long()


class _AllPairsBaseline(Method):
    """Shared settings of the per-entry link-LDP baselines (module docstring): ε-link-LDP per adjacency
    list, local model; features and labels are used as they are; graphs above ``max_nodes`` are refused."""

    trust_models = (TrustModel.LOCAL,)

    unit = Unit.ADJACENCY_LIST
    private = True
    simple_graph = True
    private_fields = ("edge_index",)
    public_fields = ("x", *SPLIT_FIELDS)
    needs_features = False  # x is public: copied as given, or absent
    max_nodes = 50_000

    def checked_epsilon(self, data: Data, epsilon: float | None) -> float:
        """ε validated, and the graph small enough for an all-pairs scan."""
        eps = self.check_epsilon_given(epsilon)
        if data.num_nodes > self.max_nodes:
            raise ValueError(
                f"{self.name} reads Θ(n²) report entries; refusing n = {data.num_nodes} > {self.max_nodes}"
            )
        return eps


@register_method
class RandomizedResponseGraph(_AllPairsBaseline):
    """RR (Blink paper §5.1, baseline (1)): the randomized-response adjacency lists used as the graph.

    All of ε goes to randomized response (Algorithm 1 with degree share s = 0, no degree): ε-link-LDP per adjacency
    list, local model.  Releases the raw features and the directed noisy graph (i aggregates from every j
    it reported), without calibration."""

    name = "rr"
    description = "RR: randomized response on adjacency lists, used as the graph"
    symmetric = False

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The raw features with the reported (noisy) edges: directed for RR, symmetrised for SymRR."""
        eps = self.checked_epsilon(data, epsilon)
        reports = link_ldp(data.edge_index, data.num_nodes, eps, 0.0, rng)
        i, j = reported_pairs(reports, upper_only=self.symmetric)
        if self.symmetric:
            edge_index = torch.from_numpy(np.stack([np.concatenate([i, j]), np.concatenate([j, i])])).long()
        else:
            edge_index = _directed(i, j)
        details = {"mechanism": self.name, "edges": int(edge_index.shape[1])}
        return Release(
            public_features(data),
            reports.guarantee().with_note(
                "degree share 0: the whole budget goes to randomized response, no degree is sent"
            ),
            details,
            edge_index,
            reports=reports,
        )


@register_method
class SymmetricRandomizedResponseGraph(RandomizedResponseGraph):
    """SymRR (Imola et al. 2021; Blink paper §5.1, baseline (6)): the same reports, one per pair.

    Each pair {i, j} is decided by one endpoint's randomized-response bit, giving an undirected graph;
    ε-link-LDP per adjacency list, local model.  The paper has the higher-index endpoint report (the lower
    triangle); using the lower-index one instead is the same mechanism up to relabelling."""

    name = "symrr"
    description = "SymRR: each pair decided by its lower-index endpoint's randomized response"
    symmetric = True


@dataclass(frozen=True)
class DegreeShareParams(MethodParams):
    """DPRR's degree_share s: ε_d = sε on the Laplace degree, ε_a = (1 − s)ε on randomized response."""

    renamed: ClassVar[dict[str, tuple[str, str]]] = {
        "delta": (
            "degree_share",
            "`delta` is now `degree_share` (the share of ε spent on the degree); DP's δ is 0 here: DPRR is "
            "pure ε-link-LDP",
        )
    }

    degree_share: float | None = param(
        None, "share s of ε spent on the Laplace degree (default 0.1)", bound="in (0, 1)"
    )


@register_method
class DegreePreservingRR(_AllPairsBaseline):
    """DPRR (Hidano & Murakami 2022; Blink paper §5.1, baseline (4)): degree-preserving randomized response.

    Nodes send Blink's reports (Algorithm 1: Laplace degree and RR list); the server keeps each reported
    one with probability q_i (module docstring) so that the expected kept degree is the noisy degree.
    ε-link-LDP per adjacency list, local model; the sampling is post-processing."""

    name = "dprr"
    description = "DPRR: randomized response + Laplace degree, reported ones sampled to the noisy degree"
    Params = DegreeShareParams

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The raw features with the sampled reported edges (directed: i aggregates from its kept j)."""
        eps = self.checked_epsilon(data, epsilon)
        degree_share = 0.1 if self.params.degree_share is None else self.params.degree_share
        n = data.num_nodes
        reports = link_ldp(data.edge_index, n, eps, degree_share, rng)
        i, j = reported_pairs(reports, upper_only=False)
        p = reports.p_flip
        d = reports.noisy_degrees.numpy().clip(0.0, n - 1.0)
        q = np.clip(d / (d * (1.0 - 2.0 * p) + (n - 1.0) * p), 0.0, 1.0)
        keep = uniform((i.size,), rng).numpy() < q[i]
        i, j = i[keep], j[keep]
        details = {
            "mechanism": self.name,
            "degree_share": degree_share,
            "edges": int(i.size),
            "reported_ones": int(keep.size),
        }
        return Release(
            public_features(data),
            reports.guarantee().with_note("sampling the reported ones to the noisy degree is post-processing"),
            details,
            _directed(i, j),
            reports=reports,
        )


class LaplaceAdjacencyReports(graph.LaplaceAdjacencyReports):
    """L-DpGCN's reports (:class:`privgraph.mechanisms.graph.LaplaceAdjacencyReports`), collected from a
    validated graph."""

    @classmethod
    def collect(
        cls, edge_index: torch.Tensor, num_nodes: int, epsilon: float, rng: RandomSource
    ) -> LaplaceAdjacencyReports:
        epsilon = check_epsilon(epsilon)
        src, dst = check_graph(edge_index, num_nodes, undirected=True).edge_index.cpu().numpy()
        return cls.from_edges(src, dst, num_nodes, epsilon, rng)


@register_method
class LaplaceDpGCN(_AllPairsBaseline):
    """L-DpGCN (Blink paper §5.1, baseline (2)): the LDP variant of DpGCN (Wu et al. 2022).

    Each node adds Laplace(1/ε) to each entry of its adjacency list; the server keeps the top estimated-|E|
    entries (module docstring).  ε-link-LDP per adjacency list, local model; the top-m selection is
    post-processing."""

    name = "ldpgcn"
    description = "L-DpGCN: Laplace noise on every adjacency entry, top estimated-|E| entries kept"

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The raw features with the top estimated-number-of-links pairs by Ã_ij + Ã_ji as undirected edges."""
        eps = self.checked_epsilon(data, epsilon)
        n = data.num_nodes
        reports = LaplaceAdjacencyReports.collect(data.edge_index, n, eps, rng)
        block = max(1, (1 << 21) // n)
        total = 0.0  # pass 1: the server's estimate of the number of links, Σ_{i≠j} Ã_ij ≈ 2|E|
        for s in range(0, n, block):
            _, values = reports.rows(s, s + block)
            total += float(values[np.isfinite(values)].sum())
        m = int(min(max(round(total / 2), 0), n * (n - 1) // 2))  # undirected pairs to keep
        pool_v, pool_k = np.empty(0), np.empty(0, dtype=np.int64)
        for s in range(0, n, block) if m else ():  # pass 2: running top-m pairs i < j of Ã + Ãᵀ
            rows, values = reports.pair_sums(s, s + block)
            values[np.arange(n)[None, :] <= rows[:, None]] = -np.inf
            pool_v = np.concatenate([pool_v, values.ravel()])
            pool_k = np.concatenate([pool_k, (rows[:, None] * n + np.arange(n)[None, :]).ravel()])
            if pool_v.size > m:
                part = np.argpartition(-pool_v, m - 1)[:m]
                pool_v, pool_k = pool_v[part], pool_k[part]
        keys = pool_k[np.isfinite(pool_v)]
        i, j = keys // n, keys % n
        i, j = np.concatenate([i, j]), np.concatenate([j, i])
        details = {"mechanism": self.name, "estimated_links": m, "edges": int(i.size)}
        return Release(public_features(data), reports.guarantee(), details, _directed(i, j), reports=reports)
