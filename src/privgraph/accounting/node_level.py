"""Rényi-DP accounting of node-level DP-SGD (Daigavane, Madan, Sinha, Thakurta, Aggarwal & Jain 2021,
"Node-Level Differentially Private Graph Neural Networks", arXiv 2111.15521, Theorem 1).

One step: a batch of m of the N training nodes drawn uniformly without replacement, each node's loss
gradient clipped to norm C, N(0, (σΔ)²) noise added to their sum with Δ = 2(K+1)C.  In the K-degree-
bounded graph one node's data enters at most K+1 per-node loss terms (its own and its ≤ K
out-neighbours'), each of which moves by at most 2C, so if ρ of them are in the batch the sum moves by at
most 2ρC, and ρ ~ Hypergeometric(N, K+1, m).  Joint convexity of exp((α−1)·D_α) over the batch's
distribution then gives the RDP of one step

    RDP(α) = 1/(α−1) · log E_ρ[exp(α(α−1)·2ρ²C²/(σΔ)²)] = 1/(α−1) · log E_ρ[exp(α(α−1)ρ²/(2σ²(K+1)²))],

the paper's Theorem 1 and the GAP authors' ``GNNBasedNoisySGD`` (which both compute it with the noise
std σΔ).  T steps compose additively; (ε, δ) comes from :func:`~privgraph.accounting.rdp.rdp_to_epsilon`.
Computed here as a log-sum-exp over ρ = 0 … min(K+1, m) of the hypergeometric log-pmf, so large orders do
not overflow.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import special

from privgraph.accounting.rdp import RDP_ORDERS, rdp_to_epsilon
from privgraph.accounting.search import smallest_noise
from privgraph.accounting.validation import check_delta

ORDERS = np.array(RDP_ORDERS, dtype=np.float64)


def _check(num_nodes: int, batch_size: int, max_degree: int) -> None:
    if not (num_nodes >= 1 and 1 <= batch_size <= num_nodes):
        raise ValueError(f"need 1 <= batch_size <= num_nodes, got m={batch_size}, N={num_nodes}")
    if max_degree < 0:
        raise ValueError(f"max_degree K must be >= 0, got {max_degree}")


def node_level_rdp(noise_multiplier: float, num_nodes: int, batch_size: int, max_degree: int) -> np.ndarray:
    """RDP of one step at every order of :data:`ORDERS` (Theorem 1, module docstring); σ is the noise
    multiplier relative to the sensitivity Δ = 2(K+1)C (noise std σ·2(K+1)C)."""
    from scipy import stats  # on use: keeps the run's start light

    _check(num_nodes, batch_size, max_degree)
    if not noise_multiplier >= 0:
        raise ValueError(f"noise multiplier must be >= 0, got {noise_multiplier}")
    if noise_multiplier == 0:
        return np.full_like(ORDERS, np.inf)
    occurrences = min(max_degree + 1, num_nodes)  # a node's terms are among the N (K+1 > N: all of them)
    rho = np.arange(0, min(occurrences, batch_size) + 1, dtype=np.float64)
    log_pmf = stats.hypergeom(num_nodes, occurrences, batch_size).logpmf(rho)
    alpha = ORDERS[:, None]
    exponent = alpha * (alpha - 1) * rho[None, :] ** 2 / (2 * noise_multiplier**2 * (max_degree + 1) ** 2)
    return special.logsumexp(log_pmf[None, :] + exponent, axis=1) / (ORDERS - 1)


def node_level_epsilon(
    noise_multiplier: float, num_nodes: int, batch_size: int, max_degree: int, steps: int, delta: float
) -> float:
    """ε at δ of ``steps`` node-level DP-SGD steps (RDP composed additively, then converted)."""
    check_delta(delta)
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if steps == 0:
        return 0.0
    return rdp_to_epsilon(ORDERS, steps * node_level_rdp(noise_multiplier, num_nodes, batch_size, max_degree), delta)


@lru_cache(maxsize=256)
def node_level_noise_multiplier(
    epsilon: float, delta: float, num_nodes: int, batch_size: int, max_degree: int, steps: int
) -> float:
    """The smallest noise multiplier σ (relative to Δ = 2(K+1)C) whose T-step ε at δ is ≤ ``epsilon``."""
    check_delta(delta)
    _check(num_nodes, batch_size, max_degree)
    return smallest_noise(
        lambda s: node_level_epsilon(s, num_nodes, batch_size, max_degree, steps, delta), float(epsilon)
    )


__all__ = ["ORDERS", "node_level_epsilon", "node_level_noise_multiplier", "node_level_rdp", "smallest_noise"]
