"""Edge-level releases for the private edges: EdgeRR, privHRG, EdgeRand, LapGraph.

All four are central mechanisms (trusted curator) protecting the presence of
one *private* edge: neighbouring graphs differ in one pair of private-eligible
nodes (``data.private_node_mask``, public), and the public edges are released
as they are (``G̃ = G_pub ∪ G̃_pri``).  privHRG is EdgeRR with every edge private.

* EdgeRR / privHRG — :mod:`privgraph.methods.heterorr.hrg`; ``structure="public"`` (EdgeRR's default):
  the dendrogram fitted on the public edges, the whole ε on the noisy counts; ``"private-mcmc"`` (the
  paper's, privHRG's default): ε₁ for the private MCMC, ε₂ for the noisy counts (``mcmc_share`` = ε₁/ε).
* EdgeRand (Wu et al., S&P'22) — randomized response on every private-eligible
  pair: kept with probability 1 − s, replaced by a fair coin with probability
  ``s = 2/(e^ε + 1)`` (flip probability 1/(e^ε + 1): likelihood ratio e^ε).
* LapGraph (Wu et al.) — the number of private edges with Laplace(1/ε₁),
  ``ε₁ = 0.01ε``, and Laplace(1/ε₂) on every pair's bit, ``ε₂ = 0.99ε``; the
  top-T̃ pairs are the private edges.  Sampled exactly without visiting every
  pair: non-edge values above a threshold are drawn by geometric skips with
  the tail probability and their conditional values, and the threshold is
  lowered band by band until T̃ candidates are known.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce

from privgraph.accounting import Budget, PrivacyGuarantee, TrustModel, Unit, check_share
from privgraph.accounting.guarantee import unprotected
from privgraph.accounting.ledger import Spend
from privgraph.data.annotations import private_nodes, split_edges
from privgraph.data.synthetic import unrank_lower_triangle
from privgraph.data.validation import check_graph
from privgraph.mechanisms import RandomSource, check_epsilon
from privgraph.mechanisms.prf import draw_key
from privgraph.mechanisms.randomness import laplace, uniform
from privgraph.methods.heterorr import kernels
from privgraph.methods.heterorr.hrg import (
    PLATEAU_TOLERANCE,
    RHAT_BAR,
    PHRGSampler,
    both_directions,
    check_noise_floor,
    gelman_rubin,
    lemma4_sensitivity,
    noisy_probabilities,
    plateau_reached,
    plateau_rise,
    sample_private_edges,
)
from privgraph.progress import ProgressHook

MAX_OUTPUT_EDGES = 50_000_000


MIN_DEFAULT_STEPS = 200_000  # a floor for small graphs (0.1 s of moves): their chains pass the criterion


def default_mcmc_steps(num_nodes: int) -> int:
    """The default MCMC length, fixed from the public n before the run: max(1000·n, 2·10⁵)."""
    return max(1000 * int(num_nodes), MIN_DEFAULT_STEPS)


def check_mcmc_steps(steps: int) -> int:
    steps = int(steps)
    if steps < 0:
        raise ValueError(f"mcmc_steps must be >= 0, got {steps}")
    return steps


def _guarantee(epsilon: float, mechanism: str, notes: tuple[str, ...]) -> PrivacyGuarantee:
    return PrivacyGuarantee(
        Unit.PRIVATE_EDGE,
        TrustModel.CENTRAL,
        epsilon,
        0.0,
        mechanism,
        notes
        + (
            "public edges are released as they are; the private-eligible node set is public",
            "compiled sampling draws from Philox-4x32-10 keyed by the random source (the OS "
            "source unless a seed is given): a statistical, not a cryptographic, PRF",
        ),
    )


def _merge(public: torch.Tensor, private: torch.Tensor, num_nodes: int) -> torch.Tensor:
    return coalesce(torch.cat([public, private], dim=1), num_nodes=num_nodes)


def _edge_sets(data: Data, all_private: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(public edges, private edges, private-eligible node mask); ``all_private``: every edge and node.
    The graph is validated (simple, undirected, flags symmetric; duplicates refused)."""
    if all_private:
        edges = check_graph(data.edge_index, data.num_nodes, undirected=True).edge_index
        return torch.empty((2, 0), dtype=torch.long), edges, torch.ones(data.num_nodes, dtype=torch.bool)
    public, private = split_edges(data)
    return public, private, private_nodes(data)


def check_chains(chains: int) -> int:
    chains = int(chains)
    if chains < 1:
        raise ValueError(f"mcmc_chains must be >= 1, got {chains}")
    return chains


CONVERGENCE_MODES = ("require", "waive")
STRUCTURES = ("public", "private-mcmc")  # where EdgeRR's dendrogram comes from (:func:`edge_rr`)


def check_convergence_mode(mode: str) -> str:
    if mode not in CONVERGENCE_MODES:
        raise ValueError(f"convergence must be one of {', '.join(CONVERGENCE_MODES)}, got {mode!r}")
    return mode


class ChainNotConverged(RuntimeError):
    """EdgeRR refused to release: its MCMC did not pass the convergence criterion, so the exponential
    mechanism's ε₁ (stated for the stationary distribution) is not claimed and nothing is released.

    The message carries no number from the private graph; :attr:`diagnostics` (curator-only: computed
    from the private likelihood trace, covered by no noise) holds the rises, spreads and R̂."""

    def __init__(self, message: str, diagnostics: dict[str, Any]):
        super().__init__(message)
        self.diagnostics = diagnostics


def mixing_diagnostics(traces: list[list[tuple[int, float, float]]], scale: float) -> dict[str, Any]:
    """Curator-only mixing diagnostics of the MCMC on the log target L_pub + scale·L_pri and the
    convergence decision (docs/methods/heterorr.md, "Convergence"): every chain's second half is a
    plateau (:func:`~privgraph.methods.heterorr.hrg.plateau_reached`: the mean of its last quarter at
    most ``PLATEAU_TOLERANCE`` second-half standard deviations above that of its third quarter) and,
    with ≥ 2 chains, Gelman–Rubin R̂ over the second halves is below ``RHAT_BAR``."""
    target = [np.array([lp + scale * lq for _, lp, lq in t]) for t in traces]
    halves = [x[len(x) // 2 :] for x in target]
    out: dict[str, Any] = {
        "mcmc_target_final": [float(x[-1]) for x in target],
        "mcmc_rise_second_half": [float(h[-1] - h[0]) for h in halves],
        "mcmc_sd_second_half": [float(h.std()) for h in halves],
    }
    long_enough = all(x.size >= 8 for x in target)
    if long_enough:
        out["mcmc_plateau_rise"] = [plateau_rise(x)[0] for x in target]
    converged = long_enough and all(plateau_reached(x) for x in target)
    k = min(h.size for h in halves)
    if len(halves) >= 2 and k >= 2:
        out["mcmc_rhat"] = gelman_rubin(np.stack([h[-k:] for h in halves]))
        converged = converged and out["mcmc_rhat"] < RHAT_BAR
    out["mcmc_converged"] = bool(converged)
    return out


def check_structure(structure: str) -> str:
    if structure not in STRUCTURES:
        raise ValueError(f"structure must be one of {', '.join(STRUCTURES)}, got {structure!r}")
    return structure


def edge_rr(
    data: Data,
    epsilon: float,
    rng: RandomSource,
    mcmc_share: float = 0.5,
    steps: int | None = None,
    threshold: float = 0.02,
    noise_floor: float = 0.0,
    chains: int = 1,
    all_private: bool = False,
    progress: ProgressHook | None = None,
    convergence: str = "require",
    structure: str = "public",
) -> tuple[torch.Tensor, PrivacyGuarantee, dict[str, Any]]:
    """EdgeRR (Alg. 2; ``all_private``: privHRG).  Returns the released graph, its guarantee and details.

    ``structure``: where the dendrogram comes from.

    * ``"public"`` (default): the MCMC runs on the public edges alone (target exp(L_pub); the
      private-eligible leaves, public, still mark which pairs the private counts cover) and never reads a
      private edge, so the dendrogram costs no privacy and need not converge (its fit only affects
      utility).  The whole ε_e goes to Alg. 3's counts on that fixed dendrogram
      (:func:`~privgraph.methods.heterorr.hrg.released_counts`): one private edge changes exactly one
      released count by 1 — L1 sensitivity 1 — so Laplace(1/ε_e) on each is ε_e-DP (the paper's
      Algorithm 3 uses the same Laplace(1/ε₂), stated for a dendrogram sampled privately with ε₁).
      ``mcmc_share`` and ``convergence`` do not apply.  With no public edge (privHRG) the chain has a flat
      target: the dendrogram is a random one, independent of the graph.
    * ``"private-mcmc"`` (the paper's Alg. 2): ε₁ = ``mcmc_share``·ε on the exponential mechanism over
      dendrograms (:class:`PHRGSampler`, on exp(L_pub + ε₁/(2Δ_e)·L_pri)), ε₂ = ε − ε₁ on the counts.
      ``convergence``: ``"require"`` (default) raises :class:`ChainNotConverged` — nothing released —
      unless the chains pass the convergence criterion (:func:`mixing_diagnostics`); ``"waive"`` releases
      whatever the chain reached with the guarantee ε = ∞ (no protection claimed for the private edges),
      the same guarantee whether or not the chain passed, so the public report carries no data-dependent
      bit.

    ``noise_floor`` κ: post-processing of Alg. 3's noisy counts (:func:`noisy_probabilities`).
    ``chains`` > 1 runs independent chains of the same length for the mixing diagnostics
    (:func:`mixing_diagnostics`); only chain 0, fixed in advance, is released, and the other chains run
    after the release is drawn, so the released graph of a seed does not depend on ``chains``."""
    structure = check_structure(structure)
    convergence = check_convergence_mode(convergence)
    epsilon = check_epsilon(epsilon, "epsilon_e")
    mcmc_share = check_share(mcmc_share, "mcmc_share (ε₁/ε)")
    noise_floor = check_noise_floor(noise_floor)
    chains = check_chains(chains)
    public, private, eligible = _edge_sets(data, all_private)
    n = data.num_nodes
    steps = check_mcmc_steps(steps if steps is not None else default_mcmc_steps(n))
    eligible_np = eligible.numpy().astype(np.int64)
    if structure == "public":  # the chain reads no private edge: ε₁ = 0, the target exp(L_pub)
        eps1, eps2, delta_e, scale = 0.0, epsilon, 1.0, 0.0
        chain_private = torch.empty((2, 0), dtype=torch.long)
    else:
        mcmc, counts = Budget(epsilon).split(mcmc_share, "mcmc_share (ε₁/ε)")
        eps1, eps2 = mcmc.epsilon, counts.epsilon
        delta_e = lemma4_sensitivity(int(eligible.sum()))
        scale = eps1 / (2.0 * delta_e) if delta_e > 0 else 0.0
        chain_private = private
    sampler = PHRGSampler(n, public, chain_private, eligible_np, scale, rng)
    name = "privHRG" if all_private else "EdgeRR"
    chain_task = f"{name} MCMC" + (" (the released chain)" if chains > 1 else "")
    trace = sampler.run(steps, progress=progress, task=chain_task)
    tree = sampler.tree.with_private_edges(public, private) if structure == "public" else sampler.tree
    probs, noisy = noisy_probabilities(tree, eps2, rng, threshold, noise_floor)
    sampled = sample_private_edges(tree, probs, rng)
    released = _merge(public, sampled, n)
    traces = [trace]
    for c in range(1, chains):  # diagnostics only, after the release: not released, not selected from
        diagnostic = PHRGSampler(n, public, chain_private, eligible_np, scale, rng)
        traces.append(diagnostic.run(steps, progress=progress, task=f"{name} MCMC (diagnostic chain {c + 1}/{chains})"))
    diagnostics = mixing_diagnostics(traces, scale)
    if structure == "private-mcmc" and convergence == "require" and not diagnostics["mcmc_converged"]:
        raise ChainNotConverged(
            f"{name}: the MCMC did not pass the convergence criterion after {steps} moves per chain "
            f"({chains} chain(s): every chain's second half a plateau — rise ≤ {PLATEAU_TOLERANCE:g}·sd — and, "
            f"with ≥ 2 chains, R̂ < {RHAT_BAR:g}), so ε₁ (stated for the stationary distribution) cannot be "
            "claimed and nothing was released. This outcome depends on the private edges: for the curator only, "
            "do not publish it. Fix a longer run in advance (--param mcmc_steps=…), fit the dendrogram on the "
            "public edges (--param structure=public: no convergence needed), or release with no guarantee for "
            "the private edges (--param convergence=waive: ε = ∞).",
            diagnostics,
        )
    floor_note = f"; counts below κ/ε₂ (κ = {noise_floor:g}) set to 0, post-processing" if noise_floor else ""
    if structure == "public":
        fit = (
            "the public edges only (and the public private-eligible node set)"
            if not all_private
            else "no edge at all (every edge is private: a flat target, so a random dendrogram independent of the "
            "graph)"
        )
        notes = (
            f"dendrogram fitted on {fit} by a {steps}-move MCMC that never reads a private edge: no privacy cost, "
            "and its convergence only affects utility (none is required)",
            f"Laplace(1/ε_e) on each of Algorithm 3's {noisy['noisy_counts']} disjoint private-edge counts of that "
            f"dendrogram, ε_e = {epsilon:g}: one private edge changes exactly one count by 1 (L1 sensitivity 1; "
            f"which counts are released depends on the dendrogram, τ and ε only){floor_note}",
        )
        stated, mechanism = epsilon, f"{name}, public dendrogram"
    else:
        mcmc_note = (
            f"ε₁ holds for a sample from the MCMC's stationary distribution; {steps} moves were run, a number "
            "fixed in advance, and the release was made only because the chain passed the convergence criterion "
            "(docs/methods/heterorr.md: a plateau of the log target, and R̂ < 1.1 with ≥ 2 chains) — a heuristic "
            "sign of stationarity, not a proof; a run that fails it is refused and publishes nothing (the "
            "acceptance count, the log-likelihood traces and the mixing diagnostics are curator-only: "
            "data-dependent, not covered by the guarantee)"
        )
        if convergence == "waive":
            mcmc_note = (
                f"NO GUARANTEE for the private edges (ε = ∞): convergence=waive released the state of a "
                f"{steps}-move MCMC without requiring the convergence criterion, and EdgeRR's ε₁ (an exponential "
                "mechanism) holds only for a sample from the chain's stationary distribution; the stated ε_e = "
                f"{epsilon:g} (ε₁ = {eps1:g} + ε₂ = {eps2:g}) is the budget the release would have had"
            )
        notes = (
            f"exponential mechanism over dendrograms with ε₁/(2Δ_e) = {scale:.3g} (ε₁ = {eps1:g}, Δ_e = "
            f"{delta_e:.4g} by Lemma 4, eq. 19); the paper's ε₁/Δ_e would give 2ε₁",
            mcmc_note,
            f"Laplace(1/ε₂) on the disjoint private-edge counts of the sampled dendrogram's internal nodes, ε₂ = "
            f"{eps2:g} (Alg. 3){floor_note}; how many there are depends on the private edges (curator-only)",
            "basic composition ε = ε₁ + ε₂",
        )
        stated = epsilon if convergence == "require" else math.inf
        mechanism = name if convergence == "require" else f"{name}, convergence waived: NOT DP"
    details = {
        "mechanism": name.lower(),
        "structure": structure,
        "epsilon_mcmc": eps1,
        "epsilon_probabilities": eps2,
        "sensitivity": delta_e,
        "mcmc_scale": scale,
        "noise_floor": noise_floor,
        "mcmc_steps": steps,
        "mcmc_chains": chains,
        "mcmc_accepted": sampler.accepted,
        "loglik_trace": [[s, lp, lq] for s, lp, lq in trace],
        "convergence": convergence,
        **diagnostics,
        "public_edges": int(public.shape[1] // 2),
        "private_edges": int(private.shape[1] // 2),
        "released_private_edges": int(sampled.shape[1] // 2),
        "edges": int(released.shape[1] // 2),
        **noisy,
    }
    return released, _guarantee(stated, mechanism, notes), details


def _pair_universe(data: Data, all_private: bool):
    """(public edges, private-eligible node ids, linear ids of the private edges in the V̄ lower triangle)."""
    public, private, eligible = _edge_sets(data, all_private)
    nodes = eligible.nonzero().flatten().numpy()
    if nodes.size < 2:
        raise ValueError("need at least 2 private-eligible nodes")
    index = np.full(data.num_nodes, -1, dtype=np.int64)
    index[nodes] = np.arange(nodes.size)
    a, b = index[private[0].numpy()], index[private[1].numpy()]
    i, j = np.maximum(a, b), np.minimum(a, b)
    keep = i > j
    linear = np.unique(i[keep] * (i[keep] - 1) // 2 + j[keep])
    return public, nodes, linear


def _pairs_to_edges(linear: np.ndarray, nodes: np.ndarray) -> torch.Tensor:
    i, j = unrank_lower_triangle(linear)
    return both_directions(nodes[i], nodes[j])


def edge_rand(
    data: Data, epsilon: float, rng: RandomSource, all_private: bool = False
) -> tuple[torch.Tensor, PrivacyGuarantee, dict[str, Any]]:
    """EdgeRand: each private-eligible pair's bit flipped with probability 1/(e^ε + 1)."""
    epsilon = check_epsilon(epsilon)
    public, nodes, edges = _pair_universe(data, all_private)
    m = nodes.size
    universe = m * (m - 1) // 2
    flip = math.exp(-epsilon) / (1.0 + math.exp(-epsilon))  # 1/(e^ε + 1), without overflow
    if universe * flip > MAX_OUTPUT_EDGES:
        raise ValueError(
            f"EdgeRand at ε={epsilon:g} on {m} private-eligible nodes would output ~{universe * flip:.3g} "
            f"edges (> {MAX_OUTPUT_EDGES:.0e}); use a larger ε or fewer private-eligible nodes"
        )
    _, flipped, _ = kernels.bernoulli_positions(
        np.array([universe], np.int64), np.array([flip]), draw_key(rng), np.uint64(31), 0
    )
    kept = np.setxor1d(edges, flipped, assume_unique=True)
    released = _merge(public, _pairs_to_edges(kept, nodes), data.num_nodes)
    notes = (
        f"randomized response on each of the {universe} private-eligible pairs, flip probability "
        f"1/(e^ε+1) = {flip:.4g} (likelihood ratio e^ε)",
    )
    details = {
        "mechanism": "edgerand",
        "pairs": int(universe),
        "flipped": int(flipped.size),
        "released_private_edges": int(kept.size),
        "edges": int(released.shape[1] // 2),
    }
    return released, _guarantee(epsilon, "EdgeRand", notes), details


def _laplace_inverse_survival(s: np.ndarray | float, eps: float):
    s = np.asarray(s, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(
            s <= 0.5, -np.log(2.0 * np.minimum(s, 0.5)) / eps, np.log(2.0 * (1.0 - np.maximum(s, 0.5))) / eps
        )


def lap_graph(
    data: Data, epsilon: float, rng: RandomSource, count_share: float = 0.01, all_private: bool = False
) -> tuple[torch.Tensor, PrivacyGuarantee, dict[str, Any]]:
    """LapGraph: top-T̃ pairs of A + Laplace(1/ε₂), T̃ = |E_pri| + Laplace(1/ε₁)."""
    epsilon = check_epsilon(epsilon)
    count_share = check_share(count_share, "count_share")
    count, values = Budget(epsilon).split(count_share, "count_share")
    eps1, eps2 = count.epsilon, values.epsilon
    public, nodes, edges = _pair_universe(data, all_private)
    m = nodes.size
    universe = m * (m - 1) // 2
    target = int(min(max(round(edges.size + float(laplace((1,), 1.0 / eps1, rng)[0])), 0), universe))
    if target > MAX_OUTPUT_EDGES:
        raise ValueError(f"LapGraph would keep {target} pairs (> {MAX_OUTPUT_EDGES:.0e})")
    edge_values = 1.0 + laplace((edges.size,), 1.0 / eps2, rng).numpy()
    cand_keys, cand_values = [np.empty(0, np.int64)], [np.empty(0)]  # non-edges drawn so far (disjoint)
    key = draw_key(rng)
    s_old, rounds = 0.0, 0  # survival probability of the current threshold (0: +∞)
    while True:
        rounds += 1
        s_new = min(1.0, (2.0**rounds) * (target + 64) / max(universe, 1)) if target else 0.0
        t_new = float(_laplace_inverse_survival(s_new, eps2)) if s_new < 1.0 else -math.inf
        band = (s_new - s_old) / (1.0 - s_old) if s_old < 1.0 else 0.0
        if band > 0:
            _, picks, _ = kernels.bernoulli_positions(
                np.array([universe], np.int64), np.array([min(band, 1.0)]), key, np.uint64(40 + rounds), 0
            )
            picks = np.setdiff1d(picks, np.concatenate([edges] + cand_keys), assume_unique=True)
            u = uniform((picks.size,), rng).numpy()
            values = _laplace_inverse_survival(s_old + u * (s_new - s_old), eps2)
            cand_keys.append(picks)
            cand_values.append(values)
        s_old = s_new
        known = sum(k.size for k in cand_keys) + int((edge_values >= t_new).sum())
        if known >= target or s_new >= 1.0:
            break
    keys = np.concatenate(cand_keys + [edges])
    values = np.concatenate(cand_values + [edge_values])
    top = keys[np.argsort(-values, kind="stable")[:target]] if target else np.empty(0, np.int64)
    released = _merge(public, _pairs_to_edges(np.sort(top), nodes), data.num_nodes)
    notes = (
        f"Laplace(1/ε₁) on the number of private edges (ε₁ = {eps1:g}) and Laplace(1/ε₂) on each of the "
        f"{universe} private-eligible pairs (ε₂ = {eps2:g}); top-T̃ kept; basic composition",
        "continuous noise sampled in floating point (Mironov 2012 caveat)",
    )
    details = {
        "mechanism": "lapgraph",
        "pairs": int(universe),
        "noisy_count": target,
        "bands": rounds,
        "released_private_edges": int(top.size),
        "edges": int(released.shape[1] // 2),
    }
    return released, _guarantee(epsilon, "LapGraph", notes), details


def public_edges(all_private: bool) -> list[PrivacyGuarantee]:
    """What a private-edge release writes of the plain edge unit: the public edges in clear, so ε = ∞ per edge
    (none when every edge is private: privHRG)."""
    if all_private:
        return []
    return [unprotected(Unit.EDGE, "public edges as given", "the public edges are released as they are")]


def public_edge_spend(all_private: bool) -> list[Spend]:
    """:func:`public_edges` as the ledger's declared spend (before the noise)."""
    return [Spend(g.unit, g.epsilon) for g in public_edges(all_private)]
