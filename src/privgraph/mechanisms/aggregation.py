"""GAP's aggregation perturbation (Sajadmanesh et al., USENIX Security 2023, Algorithm 1, "PMA"): K hops, each
the neighbour sum Aᵀx^{k−1} of row-normalised embeddings plus Gaussian noise N(0, σ²Δ²), normalised again —
x⁰ = normalize(x), x^k = normalize(Aᵀx^{k−1} + N(0, σ²Δ²I)).  One hop's sum moves by at most Δ between
neighbouring graphs (every row of x^{k−1} is a unit vector): Δ = √2 for one undirected link, √D for one node
of a graph with out-degrees ≤ D.  The K hops of noise σΔ are together one Gaussian of noise multiplier σ/√K
(adaptive composition of Gaussians, exact): :meth:`AggregationPerturbation.calibrated` finds σ for (ε, δ) with
the analytic Gaussian, and :meth:`~AggregationPerturbation.guarantee` states the (ε, δ) of the K hops alone.

Also here: the authors' degree bounding (``BoundOutDegree``, :func:`bound_out_degree`), which is no
node-level DP above the bound (:mod:`privgraph.methods.node_domain`), and :class:`AggregationRelease`, what
an audit observes of the K hops."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.search import least_satisfying
from privgraph.mechanisms.base import check_delta
from privgraph.mechanisms.csr_sum import csr_adjacency, csr_sum
from privgraph.mechanisms.gaussian import analytic_gaussian_sigma, gaussian_delta
from privgraph.mechanisms.randomness import RandomSource, rand, randn
from privgraph.progress import ProgressHook


def bound_out_degree(edge_index: Tensor, num_nodes: int, max_degree: int, rng: RandomSource) -> Tensor:
    """At most ``max_degree`` out-edges per source node, chosen uniformly without replacement (a
    random priority per edge from ``rng``; each source keeps its ``max_degree`` lowest): the authors'
    ``BoundOutDegree``, so that one node's embedding enters at most D neighbour sums.

    Not node-level DP on a graph above the bound (``over_bound="sample"`` claims ε = ∞ there): removing a node
    v frees a slot at each in-neighbour u of v whose out-degree exceeds D, and u then keeps another edge u → w,
    so the sums of as many nodes w as v has such in-neighbours move — the freed-slot cascade that √D does not
    bound (:mod:`privgraph.methods.node_domain`)."""
    if edge_index.shape[1] == 0:
        return edge_index
    priority = rand((edge_index.shape[1],), rng, torch.float64).to(edge_index.device)
    order = torch.argsort(priority)
    order = order[torch.argsort(edge_index[0, order], stable=True)]  # by source, random within a source
    src = edge_index[0, order]
    start = torch.zeros(num_nodes + 1, dtype=torch.long, device=src.device)
    start[1:] = torch.cumsum(torch.bincount(src, minlength=num_nodes), 0)
    rank = torch.arange(src.numel(), device=src.device) - start[src]
    return edge_index[:, order[rank < max_degree]]


def neighbour_sum(x: Tensor, edge_index: Tensor, weights: Tensor | None = None) -> Tensor:
    """Aᵀx: row v is Σ of x_u over the edges u → v (one CSR product, :mod:`~privgraph.mechanisms.csr_sum`;
    equal to the gather-and-scatter to float32 rounding); ``weights``: one per node, on the sender
    (Σ a_u x_u, GAP-NDP's soft cap), folded into the CSR values."""
    return csr_sum(_adjacency(x, edge_index, weights), x)


def _adjacency(x: Tensor, edge_index: Tensor | None, weights: Tensor | None) -> Tensor:
    """Aᵀ with the sender ``weights`` as values, in ``x``'s dtype and on its device."""
    assert edge_index is not None
    return csr_adjacency(edge_index.to(x.device), x.shape[0], sender_weights=weights, dtype=x.dtype)


def noisy_neighbour_sum(
    x: Tensor,
    edge_index: Tensor | None,
    noise_std: float,
    rng: RandomSource | None,
    weights: Tensor | None = None,
    adjacency: Tensor | None = None,
) -> Tensor:
    """One hop of Algorithm 1 before normalisation: Aᵀx (sender ``weights``) + N(0, noise_std²) per entry, the
    noise drawn on the CPU from ``rng`` (none when ``noise_std`` = 0); ``adjacency``: Aᵀ already built (the
    CSR of :func:`~privgraph.mechanisms.csr_sum.csr_adjacency`, weights folded in), instead of the edges."""
    s = csr_sum(adjacency if adjacency is not None else _adjacency(x, edge_index, weights), x)
    if noise_std > 0:
        if rng is None:
            raise ValueError("the aggregation noise needs an explicit random source")
        s = s + (randn(tuple(s.shape), rng, s.dtype) * noise_std).to(s.device)
    return s


def perturbed_aggregation(
    x: Tensor,
    edge_index: Tensor,
    hops: int,
    noise_std: float,
    rng: RandomSource | None,
    progress: ProgressHook | None = None,
    task: str = "aggregation hops",
    weights: Tensor | None = None,
) -> tuple[list[Tensor], list[Tensor]]:
    """Algorithm 1 (PMA): x⁰ = normalize(x); x^k = normalize(Aᵀx^{k−1} + N(0, noise_std²)) for
    k = 1 … K (:func:`noisy_neighbour_sum`; ``weights``: sender weights; Aᵀ built once, as CSR).  Returns the
    tables [x⁰ … x^K] and the K noisy sums; ``progress(task, k, K)`` after each hop."""
    tables, sums = [F.normalize(x, dim=-1)], []
    adj = _adjacency(x, edge_index, weights) if hops else None
    for k in range(hops):
        sums.append(noisy_neighbour_sum(tables[-1], None, noise_std, rng, adjacency=adj))
        tables.append(F.normalize(sums[-1], dim=-1))
        if progress is not None:
            progress(task, k + 1, hops)
    return tables, sums


def composed_gaussian_epsilon(noise_multiplier: float, delta: float, hops: int) -> float:
    """The exact ε at ``delta`` of ``hops`` Gaussians of noise multiplier σ (one Gaussian of sensitivity √K at
    noise σ: :func:`~privgraph.mechanisms.gaussian.gaussian_delta` inverted in ε, which it decreases)."""
    delta = check_delta(delta)
    if hops == 0:
        return 0.0
    if not noise_multiplier > 0:
        return math.inf
    sens = math.sqrt(hops)

    def excess(eps: float) -> float:
        return gaussian_delta(noise_multiplier, eps, sens) - delta

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
    return least_satisfying(lambda eps: excess(eps) <= 0, 0.0, hi, tol=1e-12)  # rounded up: never below ε


@dataclass(frozen=True)
class AggregationPerturbation:
    """Algorithm 1 with K = ``hops`` hops of noise std σΔ (σ = ``noise_multiplier``, Δ = ``sensitivity``, one
    hop's ℓ₂ sensitivity for the ``unit``); σ = 0: the exact aggregates, no guarantee."""

    hops: int
    noise_multiplier: float
    sensitivity: float
    unit: str = Unit.EDGE

    @classmethod
    def calibrated(
        cls, epsilon: float, delta: float, hops: int, sensitivity: float, unit: str = Unit.EDGE
    ) -> AggregationPerturbation:
        """The smallest σ for which the K hops are (ε, δ)-DP: the analytic Gaussian (Balle & Wang 2018) of
        sensitivity √K (the authors: autodp's ``ComposeGaussian`` of ``ExactGaussianMechanism``); K = 0: σ = 0."""
        sigma = analytic_gaussian_sigma(epsilon, delta, math.sqrt(hops)) if hops else 0.0
        return cls(hops, sigma, sensitivity, unit)

    @property
    def noise_std(self) -> float:
        """σΔ: the standard deviation of each entry's noise."""
        return self.noise_multiplier * self.sensitivity

    def aggregate(
        self,
        x: Tensor,
        edge_index: Tensor,
        rng: RandomSource | None,
        progress: ProgressHook | None = None,
        task: str = "aggregation hops",
    ) -> tuple[list[Tensor], list[Tensor]]:
        """The tables [x⁰ … x^K] and the K noisy sums (:func:`perturbed_aggregation`)."""
        return perturbed_aggregation(x, edge_index, self.hops, self.noise_std, rng, progress, task)

    def guarantee(self, delta: float) -> PrivacyGuarantee:
        """(ε, δ) of the K hops alone at ``delta`` (:func:`composed_gaussian_epsilon`; ε = ∞ without noise),
        per the unit whose change moves one hop's sum by at most Δ."""
        eps = composed_gaussian_epsilon(self.noise_multiplier, delta, self.hops)
        return PrivacyGuarantee(
            self.unit,
            TrustModel.CENTRAL,
            eps,
            delta if math.isfinite(eps) else 0.0,
            f"aggregation perturbation (K={self.hops} Gaussian hops, noise multiplier σ={self.noise_multiplier:.4g}, "
            f"Δ={self.sensitivity:.4g})",
            (
                "each hop: the neighbour sum of unit-norm rows plus N(0, σ²Δ²) per entry, then row-normalised; one "
                "unit moves one hop's sum by at most Δ in ℓ₂; K hops are one Gaussian of noise multiplier σ/√K "
                "(exact, analytic Gaussian)",
            ),
        )


@dataclass
class AggregationRelease:
    """The aggregation module alone on given embeddings (the DP part of GAP-EDP): the tables, the K noisy
    sums before normalisation, the graph aggregated over and the guarantee — what :mod:`privgraph.audit`
    observes (a white-box release step, as its DP-SGD audit observes one step)."""

    tables: list[Tensor]
    sums: list[Tensor]
    edge_index: Tensor
    guarantee: PrivacyGuarantee
    passed: bool | None = None  # GAP-NDP's PTR bit (released); None: no test


__all__ = [
    "AggregationPerturbation",
    "AggregationRelease",
    "bound_out_degree",
    "composed_gaussian_epsilon",
    "neighbour_sum",
    "noisy_neighbour_sum",
    "perturbed_aggregation",
]
