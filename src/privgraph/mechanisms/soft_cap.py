"""Soft-capped aggregation and its Propose-Test-Release test: node-level DP on every input graph
(docs/methods/gap.md, "Node level"; after Kasiviswanathan, Nissim,
Raskhodnikova & Smith, TCC 2013, and Blocki, Blum, Datta & Sheffet, ITCS 2013: local sensitivity plus a
private test).

Public D ≥ 1 and Λ > 1; d_u the degree of u in the cleaned simple graph (:func:`clean_simple_graph`):

* sender weight a(d) = min(1, √(D/d)); hop sum F_G(X)_w = Σ_{u∈N(w)} a(d_u) x_u (:func:`soft_capped_sum`);
* γ(d) = 1 − √(1 − 1/d); h(d) = 1[d ≥ D]·γ(max(d, D+1)) (h(D) = γ(D+1), not 0); Γ(G) = Σ_u h(d_u);
  LS(G) = √D (1 + Γ(G)) bounds ‖F_G(X) − F_{G−v}(X)‖ over unit rows X (Lemma 1);
* Γ_k(G) = Σ_{u: d_u+k ≥ D} γ(max(d_u − k, D+1)) + k γ(D+1) bounds Γ within node distance k (Lemma 2);
  k*(G) = min{k ≥ 0: Γ_k(G) > Λ − 1} is 1-Lipschitz, and k* ≥ 1 ⇒ LS ≤ Λ√D (Lemma 3).

The test releases one bit, pass ⇔ k* + Z > T_t = ln(1/(2δ_t))/ε_t with Z ~ Lap(1/ε_t): ε_t-DP (k* is
1-Lipschitz) and P[pass | k* = 0] = δ_t exactly.  Γ_k is summed exactly in integer fixed point (S = 2⁶⁰,
γ̂(d) = S − isqrt(⌊S²(d−1)/d⌋), a monotone upper bound of S·γ(d)), grouped by degree value, so k* is
invariant under node order and exact ties are decided exactly (floats break them).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import torch
from torch import Tensor
from torch_geometric.utils import coalesce, remove_self_loops

from privgraph.mechanisms.aggregation import neighbour_sum, perturbed_aggregation
from privgraph.mechanisms.randomness import RandomSource, laplace
from privgraph.progress import ProgressHook

SCALE = 1 << 60  # S: the fixed point of γ̂


def clean_simple_graph(edge_index: Tensor, num_nodes: int) -> Tensor:
    """The simple undirected graph of ``edge_index``, unconditionally: self-loops dropped, every edge in both
    directions, duplicates merged (each step commutes with deleting a node, so G − v cleans to clean(G) − v)."""
    ei, _ = remove_self_loops(edge_index.long())
    ei = torch.cat([ei, ei.flip(0)], dim=1)
    return coalesce(ei, num_nodes=num_nodes)


def degrees(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Each node's degree in the cleaned simple graph ``edge_index`` (its count as a source)."""
    return torch.bincount(edge_index[0].cpu(), minlength=num_nodes)


def sender_weights(deg: Tensor, max_degree: int) -> Tensor:
    """a(d) = min(1, √(D/d)) per node (1 within the bound; float64)."""
    d = deg.to(torch.float64)
    return torch.sqrt(max_degree / d.clamp_min(1.0)).clamp_max(1.0)


def soft_capped_sum(x: Tensor, edge_index: Tensor, weights: Tensor) -> Tensor:
    """F_G(X)_w = Σ_{u → w} a(d_u) x_u: the weight on the **sender** u (a receiver-side weight has unbounded
    sensitivity); no self-loop (x⁰ is the self table)."""
    return neighbour_sum(x, edge_index, weights)


def soft_capped_aggregation(
    x: Tensor,
    edge_index: Tensor,
    weights: Tensor,
    *,
    hops: int,
    noise_std: float,
    rng: RandomSource | None,
    progress: ProgressHook | None = None,
    task: str = "aggregation hops",
) -> tuple[list[Tensor], list[Tensor]]:
    """x⁰ = normalize(x); x^k = normalize(F_G(x^{k−1}) + N(0, noise_std²)) for k = 1 … K (the noise on every
    row, drawn on the CPU from ``rng``).  Returns the tables [x⁰ … x^K] and the K noisy sums."""
    return perturbed_aggregation(x, edge_index, hops, noise_std, rng, progress, task, weights=weights)


def gamma(d: float) -> float:
    """γ(d) = 1 − √(1 − 1/d) in its stable form 1/(d(1 + √(1 − 1/d))) (float; for reference and Lemma 1)."""
    return 1.0 / (d * (1.0 + math.sqrt(1.0 - 1.0 / d)))


@lru_cache(maxsize=65536)
def gamma_fixed(d: int) -> int:
    """γ̂(d) = S − isqrt(⌊S²(d−1)/d⌋) ≥ S·γ(d), nonincreasing in d (integer fixed point, exact)."""
    if d < 1:
        raise ValueError(f"γ is defined for d ≥ 1, got {d}")
    return SCALE - math.isqrt(SCALE * SCALE * (d - 1) // d)


def threshold_fixed(lam: float) -> int:
    """⌊(Λ − 1)·S⌋ from the exact binary value of Λ."""
    if not lam > 1:
        raise ValueError(f"Λ must be > 1, got {lam}")
    return math.floor((Fraction(lam) - 1) * SCALE)


def degree_histogram(deg: Tensor) -> dict[int, int]:
    """{degree: number of nodes} (what Γ_k reads: the multiset of degrees, not their order)."""
    values, counts = torch.unique(deg.cpu().long(), return_counts=True)
    return {int(v): int(c) for v, c in zip(values.tolist(), counts.tolist(), strict=True)}


def gamma_k_fixed(hist: dict[int, int], max_degree: int, k: int) -> int:
    """S·Γ_k(G) in fixed point: Σ_{u: d_u + k ≥ D} γ̂(max(d_u − k, D + 1)) + k γ̂(D + 1)."""
    cap = gamma_fixed(max_degree + 1)
    total = k * cap
    for d, c in hist.items():
        if d + k >= max_degree:
            total += c * gamma_fixed(max(d - k, max_degree + 1))
    return total


def local_sensitivity(deg: Tensor, max_degree: int) -> float:
    """LS(G) = √D (1 + Γ(G)) (floats; Γ = Γ_0)."""
    return math.sqrt(max_degree) * (1.0 + gamma_k_fixed(degree_histogram(deg), max_degree, 0) / SCALE)


def distance_to_uncovered(deg: Tensor, max_degree: int, lam: float) -> int:
    """k*(G) = min{k ≥ 0: Γ_k(G) > Λ − 1}, exact (Γ_k is nondecreasing in k: bisection below the k at which
    k γ̂(D+1) alone passes the threshold)."""
    hist, limit = degree_histogram(deg), threshold_fixed(lam)
    lo, hi = 0, limit // gamma_fixed(max_degree + 1) + 1  # Γ_hi ≥ hi·γ̂(D+1) > limit
    while lo < hi:
        mid = (lo + hi) // 2
        if gamma_k_fixed(hist, max_degree, mid) > limit:
            hi = mid
        else:
            lo = mid + 1
    return lo


def test_threshold(test_epsilon: float, test_delta: float) -> float:
    """T_t = ln(1/(2δ_t))/ε_t (0 < δ_t < ½, ε_t > 0)."""
    if not (test_epsilon > 0 and math.isfinite(test_epsilon)):
        raise ValueError(f"the test's ε_t must be a finite number > 0, got {test_epsilon}")
    if not 0 < test_delta < 0.5:
        raise ValueError(f"the test's δ_t must be in (0, 1/2), got {test_delta}")
    return math.log(1.0 / (2.0 * test_delta)) / test_epsilon


def pass_probability(k_star: int, test_epsilon: float, test_delta: float) -> float:
    """P[k* + Z > T_t] for Z ~ Lap(1/ε_t): ½e^{−ε_t(T_t − k*)} below the threshold, else 1 − ½e^{−ε_t(k* − T_t)}."""
    gap = k_star - test_threshold(test_epsilon, test_delta)
    return 0.5 * math.exp(test_epsilon * gap) if gap <= 0 else 1.0 - 0.5 * math.exp(-test_epsilon * gap)


def ptr_test(k_star: int, test_epsilon: float, test_delta: float, rng: RandomSource) -> bool:
    """The released bit: k* + Z > T_t, Z ~ Lap(1/ε_t) in float64, one draw from the release's ``rng``."""
    t = test_threshold(test_epsilon, test_delta)
    z = float(laplace((1,), 1.0 / test_epsilon, rng)[0])
    return k_star + z > t


__all__ = [
    "SCALE",
    "clean_simple_graph",
    "degree_histogram",
    "degrees",
    "distance_to_uncovered",
    "gamma",
    "gamma_fixed",
    "gamma_k_fixed",
    "local_sensitivity",
    "pass_probability",
    "ptr_test",
    "sender_weights",
    "soft_capped_aggregation",
    "soft_capped_sum",
    "test_threshold",
    "threshold_fixed",
]
