"""LDPGen (Qin et al., CCS'17): a synthetic graph from noisy degree vectors.

Two rounds of link-LDP reports, ε/2 each (basic composition → ε-link-LDP per
adjacency list):

1. The server splits the nodes into k₀ random groups; node u reports its
   degree vector towards the groups, δ_u ∈ ℕ^{k₀}, plus Laplace(2/ε) per
   entry (one link changes one entry by 1: L1 sensitivity 1).
2. From round 1 the server picks k₁ and clusters the nodes by k-means on the
   row-normalised noisy vectors (structurally similar nodes together); each
   node reports its degree vector towards the k₁ clusters, again with
   Laplace(2/ε).
3. Synthesis: a Chung–Lu graph per pair of clusters (a, b): node u ∈ C_a has
   weight max(δ̃_u^b, 0), the expected number of links between the clusters
   is the average of the two sides' totals, and links are drawn with
   probability ∝ w_u w_v (Aiello et al. 2000) in O(links) time.

The Blink paper does not restate LDPGen's rule for the number of clusters;
we use k₁ = clip(round(d̄ ε / (2√2)), 2, k_max) — the most groups for which the
average per-group count d̄/k stays above the noise's standard deviation
(2√2/ε) — with d̄ the mean noisy degree of round 1.  k₀ = 2 by default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch_geometric.data import Data

from privgraph.accounting import TrustModel, Unit
from privgraph.data.validation import check_graph
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.graph import DegreeVectorReports, noisy_degree_vectors
from privgraph.mechanisms.randomness import integers, uniform
from privgraph.methods.base import (
    SPLIT_FIELDS,
    Method,
    MethodParams,
    Release,
    param,
    public_features,
    register_method,
)
from privgraph.progress import ProgressHook


def chung_lu_blocks(vectors: np.ndarray, clusters: np.ndarray, k: int, rng: RandomSource) -> np.ndarray:
    """Undirected links [2, m] (both directions) drawn block by block (see module docstring)."""
    w = np.clip(vectors, 0.0, None)
    members = [np.nonzero(clusters == a)[0] for a in range(k)]
    pairs = []
    for a in range(k):
        for b in range(a, k):
            if members[a].size == 0 or members[b].size == 0:
                continue
            wa, wb = w[members[a], b], w[members[b], a]
            sa, sb = wa.sum(), wb.sum()
            if sa <= 0 or sb <= 0:
                continue
            expected = 0.5 * sa if a == b else 0.5 * (sa + sb)
            m = int(torch.poisson(torch.tensor([expected]), generator=_torch_gen(rng)).item())
            if m == 0:
                continue
            u = members[a][np.searchsorted(np.cumsum(wa) / sa, uniform((m,), rng).numpy()).clip(0, wa.size - 1)]
            v = members[b][np.searchsorted(np.cumsum(wb) / sb, uniform((m,), rng).numpy()).clip(0, wb.size - 1)]
            keep = u != v
            pairs.append(np.stack([np.minimum(u, v)[keep], np.maximum(u, v)[keep]]))
    if not pairs:
        return np.empty((2, 0), dtype=np.int64)
    und = np.unique(np.concatenate(pairs, axis=1), axis=1)  # drop multi-links
    return np.concatenate([und, und[::-1]], axis=1)


def _torch_gen(rng: RandomSource) -> torch.Generator:
    """A torch generator seeded from ``rng`` (for torch.poisson)."""
    g = torch.Generator()
    g.manual_seed(int(integers(2**62, (1,), rng)[0]))
    return g


@dataclass(frozen=True)
class LDPGenParams(MethodParams):
    """LDPGen's group counts: k₀ random groups in round 1, at most ``max_clusters`` k-means clusters in round 2."""

    initial_groups: int = param(2, "groups of the first round's degree vectors", bound=">= 1")
    max_clusters: int = param(64, "upper bound on the k-means clusters of the second round", bound=">= 2")


@register_method
class LDPGen(Method):
    """LDPGen (Qin et al., CCS'17; Blink paper §5.1, baseline (5)): a synthetic graph from two rounds of
    noisy degree vectors (module docstring).

    Releases the raw features and the Chung–Lu synthetic graph.  Privacy unit: one node's adjacency list,
    ε-link-LDP in the local model (ε/2 per round, basic composition); clustering and synthesis are
    post-processing."""

    trust_models = (TrustModel.LOCAL,)

    name = "ldpgen"
    description = "LDPGen: noisy degree vectors, k-means clustering, Chung–Lu synthesis"
    unit = Unit.ADJACENCY_LIST
    Params = LDPGenParams
    private = True
    simple_graph = True
    private_fields = ("edge_index",)
    public_fields = ("x", *SPLIT_FIELDS)
    needs_features = False  # x is public: copied as given, or absent

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The raw features with the synthetic undirected graph (both directions)."""
        from sklearn.cluster import KMeans  # on use: keeps the run's start light

        eps = self.check_epsilon_given(epsilon)
        n = data.num_nodes
        edge_index = check_graph(data.edge_index, n, undirected=True).edge_index
        half = eps / 2.0
        k0 = self.params.initial_groups
        groups0 = integers(k0, (n,), rng).numpy()
        round1 = noisy_degree_vectors(edge_index, groups0, k0, half, rng)
        mean_degree = max(float(round1.sum(1).mean()), 1.0)
        k1 = int(np.clip(round(mean_degree * half / math.sqrt(2.0)), 2, min(self.params.max_clusters, n)))
        features = np.clip(round1, 0.0, None)
        features /= np.maximum(features.sum(1, keepdims=True), 1e-12)
        seed = int(integers(2**31 - 1, (1,), rng)[0])
        clusters = KMeans(k1, n_init=4, random_state=seed).fit_predict(features)
        round2 = noisy_degree_vectors(edge_index, clusters, k1, half, rng)
        edges = chung_lu_blocks(round2, clusters, k1, rng)
        details = {"mechanism": self.name, "initial_groups": k0, "clusters": k1, "edges": int(edges.shape[1])}
        reports = DegreeVectorReports(round1, round2, groups0, clusters, half)
        return Release(
            public_features(data), reports.guarantee(), details, torch.from_numpy(edges).long(), reports=reports
        )
