"""The pHRG model (HeteroRR §III-B, eq. 10–14; Algorithms 2–3) and its private MCMC.

A dendrogram over all nodes carries, at each internal node ``r``, the public and
private edge counts between its two subtrees and the numbers of
public-/private-eligible leaves below it.  The log-likelihood (eq. 11) is
``L_pub + L_pri`` with ``L = Σ_r e_r log p_r + (N_r − e_r) log(1 − p_r)``,
``p_r = e_r/N_r``.

Privacy (edge-level DP for the private edges, trusted curator):

* **Neighbouring graphs** differ in one private edge; the public edges and the
  set ``V̄`` of *private-eligible* nodes (the nodes that may hold private edges)
  are public.  The paper takes ``V̄`` = nodes with at least one private edge,
  which itself depends on the private edges (a neighbour can change ``V̄`` and
  every ``N̄_r``); here ``V̄`` is declared (default: all nodes), which keeps
  Lemma 4's premise (fixed ``N̄_r``) true.
* **Sensitivity** (Lemma 4): one private edge changes one ``e_r`` by 1, and
  ``N·χ(e/N)`` is convex in ``e``, so the largest change is at ``e ∈ {0, 1}``
  and grows with ``N``:  ``Δ_e = log N_max + (N_max − 1)·log(1 + 1/(N_max − 1))``
  with ``N_max = ⌊|V̄|²/4⌋`` (eq. 19; eq. 15 of the paper drops the exponent
  ``N_max − 1``, and its proof's "χ'' < 0" has the sign flipped — neither
  changes eq. 19).
* **Exponential mechanism**: the chain is Metropolis–Hastings on the target
  ``π(D) ∝ exp(L_pub(D)) · exp(ε₁/(2Δ_e) · L_pri(D))`` — ``exp(L_pub)`` is a base
  measure independent of the private edges, so ``π`` is the exponential
  mechanism with utility ``L_pri`` and is ε₁-DP.  The paper accepts private
  moves with ``ε₁/Δ_e`` (which gives 2ε₁) and accepts its public and private
  moves on ``L_pub`` and ``L_pri`` *separately*; a product of two kernels with
  different stationary laws has a stationary law of no exponential-mechanism
  form, so no DP statement follows for it.  Here every move accepts on the
  joint target (with one acceptance rule the paper's public and private
  half-steps are the same move, so the chain simply runs moves; each is
  π-invariant).  The guarantee holds for a sample from the chain's stationary
  distribution; a finite run approximates it (the log-likelihood trace is
  returned so mixing can be inspected).
* **CalculateNoisyProb** (Alg. 3, Xiao et al. KDD'14): every private edge is
  counted in exactly one released count — its LCA's ``ē_r`` or, inside a
  subtree whose noise would dominate (``1/(ε₂ L̄R̄) ≥ τ`` and
  ``1/(ε₂ M(M−1)) ≥ τ``, ``M`` its private-eligible leaves), that subtree's
  total — so Laplace(1/ε₂) per count is ε₂-DP.  Total: ε₁ + ε₂.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from privgraph.data.validation import check_graph
from privgraph.mechanisms import RandomSource, check_epsilon
from privgraph.mechanisms.prf import draw_key
from privgraph.mechanisms.randomness import laplace, uniform
from privgraph.methods.heterorr import kernels
from privgraph.progress import ProgressHook


def lemma4_sensitivity(num_private_nodes: int) -> float:
    """Δ_e of Lemma 4 (eq. 19) for |V̄| private-eligible nodes."""
    v = int(num_private_nodes)
    if v < 2:
        raise ValueError(f"the private part needs at least 2 private-eligible nodes, got {v}")
    n_max = (v * v) // 4  # |V̄|²/4 (even) or (|V̄|² − 1)/4 (odd)
    if n_max == 1:  # one pair at most per internal node: p ∈ {0, 1}, the likelihood is always 1
        return 0.0
    return math.log(n_max) + (n_max - 1) * math.log1p(1.0 / (n_max - 1))


def _csr(edge_index: torch.Tensor, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    src, dst = edge_index.numpy().astype(np.int64)
    order = np.lexsort((dst, src))
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.add.at(indptr, src + 1, 1)
    return np.cumsum(indptr), dst[order].astype(np.int64)


def _upper(edge_index: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The (u, v), u < v, columns: each undirected pair once when ``edge_index`` is checked."""
    src, dst = edge_index.numpy().astype(np.int64)
    keep = src < dst
    return src[keep], dst[keep]


def checked_edge_sets(
    num_nodes: int, public_edges: torch.Tensor, private_edges: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both edge sets simple and undirected (:func:`~privgraph.data.check_graph`, duplicates
    refused) and disjoint, so that the initial counts (:func:`_upper`) and the MCMC's CSR scans
    count each undirected pair exactly once: a duplicated private edge would move ``e_r`` by 2,
    and one listed in one direction only would be missed by one count and seen by the other."""
    public = check_graph(public_edges, num_nodes, undirected=True, what="public edges").edge_index.cpu()
    private = check_graph(private_edges, num_nodes, undirected=True, what="private edges").edge_index.cpu()
    both = torch.isin(private[0] * num_nodes + private[1], public[0] * num_nodes + public[1])
    if bool(both.any()):
        u, v = private[:, both][:, 0].tolist()
        raise ValueError(
            f"{int(both.sum()) // 2} edges are both public and private (e.g. ({u}, {v})); each edge is one or the other"
        )
    return public, private


@dataclass
class Dendrogram:
    """A pHRG dendrogram with its per-node counts (see :mod:`kernels` for the layout)."""

    num_nodes: int
    root: int
    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    order: np.ndarray
    pos: np.ndarray
    cnt_pub: np.ndarray
    cnt_pri: np.ndarray
    e_pub: np.ndarray
    e_pri: np.ndarray

    @classmethod
    def random(
        cls,
        num_nodes: int,
        public_edges: torch.Tensor,
        private_edges: torch.Tensor,
        private_nodes: np.ndarray,
        rng: RandomSource,
    ) -> Dendrogram:
        """A balanced dendrogram over a random leaf order (the MCMC's start D₀)."""
        n = int(num_nodes)
        if n < 3:
            raise ValueError(f"an HRG needs at least 3 nodes, got {n}")
        public_edges, private_edges = checked_edge_sets(n, public_edges, private_edges)
        perm = torch.argsort(uniform((n,), rng)).numpy().astype(np.int64)
        left, right, parent, lo, hi, order, pos, root = kernels.balanced_dendrogram(perm)
        has_pub = np.zeros(n, np.int64)
        has_pub[public_edges[0].numpy()] = 1
        cnt_pub = kernels.subtree_counts(left, right, root, has_pub)
        cnt_pri = kernels.subtree_counts(left, right, root, np.asarray(private_nodes, dtype=np.int64))
        size = 2 * n - 1
        e_pub = kernels.edge_counts(*_upper(public_edges), parent, lo, hi, pos, size)
        e_pri = kernels.edge_counts(*_upper(private_edges), parent, lo, hi, pos, size)
        return cls(n, int(root), left, right, parent, lo, hi, order, pos, cnt_pub, cnt_pri, e_pub, e_pri)

    def with_private_edges(self, public_edges: torch.Tensor, private_edges: torch.Tensor) -> Dendrogram:
        """This dendrogram with ``e_pri`` counted from ``private_edges`` (checked against ``public_edges``:
        :func:`checked_edge_sets`); the tree, the leaf counts and ``e_pub`` are unchanged."""
        _, private_edges = checked_edge_sets(self.num_nodes, public_edges, private_edges)
        size = 2 * self.num_nodes - 1
        e_pri = kernels.edge_counts(*_upper(private_edges), self.parent, self.lo, self.hi, self.pos, size)
        return replace(self, e_pri=e_pri)

    def log_likelihood(self) -> tuple[float, float]:
        """(L_pub, L_pri) from the stored counts (eq. 11)."""
        return (
            kernels.total_loglik(self.left, self.right, self.cnt_pub, self.e_pub, self.num_nodes),
            kernels.total_loglik(self.left, self.right, self.cnt_pri, self.e_pri, self.num_nodes),
        )

    def internal_nodes(self) -> np.ndarray:
        return np.arange(self.num_nodes, 2 * self.num_nodes - 1)

    def private_pairs(self) -> np.ndarray:
        """N̄_r = L̄_r·R̄_r per internal node (index r − n)."""
        r = self.internal_nodes()
        return self.cnt_pri[self.left[r]] * self.cnt_pri[self.right[r]]


class PHRGSampler:
    """Metropolis–Hastings over dendrograms on ``exp(L_pub + scale·L_pri)`` (module docstring)."""

    def __init__(
        self,
        num_nodes: int,
        public_edges: torch.Tensor,
        private_edges: torch.Tensor,
        private_nodes: np.ndarray,
        private_scale: float,
        rng: RandomSource,
    ):
        if not private_scale >= 0:
            raise ValueError(f"private_scale must be >= 0, got {private_scale}")
        self.scale = float(private_scale)
        public_edges, private_edges = checked_edge_sets(int(num_nodes), public_edges, private_edges)
        self.tree = Dendrogram.random(num_nodes, public_edges, private_edges, private_nodes, rng)
        self.pub_ptr, self.pub_idx = _csr(public_edges, num_nodes)
        self.pri_ptr, self.pri_idx = _csr(private_edges, num_nodes)
        self.key = draw_key(rng)
        self.loglik = np.array(self.tree.log_likelihood(), dtype=np.float64)
        self.steps_done = 0
        self.accepted = 0

    def run(
        self,
        steps: int,
        chunk: int = 1 << 16,
        progress: ProgressHook | None = None,
        trace_every: int | None = None,
        task: str = "pHRG MCMC",
    ) -> list[tuple[int, float, float]]:
        """Run ``steps`` moves; returns the (step, L_pub, L_pri) trace.  The compiled loop runs in chunks of
        at most ``chunk`` moves; ``progress(task, moves done, steps)`` is called between chunks (counts only:
        the chain's likelihood reads the private edges)."""
        t = self.tree
        trace = [(self.steps_done, float(self.loglik[0]), float(self.loglik[1]))]
        trace_every = trace_every or max(1, steps // 50)
        done = 0
        while done < steps:  # a chunk never crosses a trace point (the draws do not depend on the chunks)
            m = min(chunk, steps - done, trace_every - done % trace_every)
            self.accepted += kernels.mcmc_steps(
                m,
                self.steps_done,
                self.key,
                np.uint64(7),
                self.scale,
                t.root,
                t.left,
                t.right,
                t.parent,
                t.lo,
                t.hi,
                t.order,
                t.pos,
                t.cnt_pub,
                t.cnt_pri,
                t.e_pub,
                t.e_pri,
                self.pub_ptr,
                self.pub_idx,
                self.pri_ptr,
                self.pri_idx,
                self.loglik,
            )
            done += m
            self.steps_done += m
            if done % trace_every < m or done == steps:
                trace.append((self.steps_done, float(self.loglik[0]), float(self.loglik[1])))
            if progress is not None:
                progress(task, done, steps)
        return trace


def gelman_rubin(chains: np.ndarray) -> float:
    """Gelman–Rubin potential scale reduction R̂ of ``chains`` (m chains × k draws, m ≥ 2, k ≥ 2):
    √(((k − 1)/k·W + B/k)/W), W the mean within-chain variance, B/k the variance of the chain means.
    Near 1 when the chains agree; a chain still climbing from its start gives R̂ ≫ 1."""
    x = np.asarray(chains, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise ValueError(f"R̂ needs at least 2 chains of 2 draws, got shape {x.shape}")
    k = x.shape[1]
    w = float(x.var(axis=1, ddof=1).mean())
    b_over_k = float(x.mean(axis=1).var(ddof=1))
    if w == 0.0:
        return 1.0 if b_over_k == 0.0 else math.inf
    return math.sqrt(((k - 1) / k * w + b_over_k) / w)


PLATEAU_TOLERANCE = 1.0  # a second-half rise up to one standard deviation of the second half is a plateau
RHAT_BAR = 1.1  # Gelman–Rubin's usual bar, applied on top of the plateau test when there are ≥ 2 chains


def plateau_rise(target: np.ndarray) -> tuple[float, float]:
    """(rise, sd) of a log-target trace over its second half: the mean of its last quarter minus the
    mean of its third quarter, and the standard deviation of the second half (the trace's noise, the
    yardstick).  A chain still climbing from its start has rise ≈ 1.7·sd (a straight climb) or more;
    on a plateau the rise is noise around 0."""
    x = np.asarray(target, dtype=np.float64)
    half = x[x.size // 2 :]
    if half.size < 4:
        raise ValueError(f"the plateau test needs a trace of at least 8 points, got {x.size}")
    q = half.size // 2
    return float(half[q:].mean() - half[:q].mean()), float(half.std())


def plateau_reached(target: np.ndarray, tolerance: float = PLATEAU_TOLERANCE) -> bool:
    """The plateau criterion (docs/methods/heterorr.md, "Convergence"): rise ≤ tolerance·sd, see
    :func:`plateau_rise`.  A necessary sign of convergence, never a proof of it."""
    rise, sd = plateau_rise(target)
    return rise <= tolerance * sd


def check_noise_floor(floor: float) -> float:
    """κ of :func:`noisy_probabilities` must be a finite number ≥ 0."""
    floor = float(floor)
    if not (math.isfinite(floor) and floor >= 0.0):
        raise ValueError(f"noise_floor κ must be a finite number >= 0, got {floor}")
    return floor


def released_counts(tree: Dendrogram, epsilon: float, threshold: float = 0.02) -> tuple[np.ndarray, ...]:
    """Alg. 3's count vector before its noise, per internal node (index r − n):
    ``(counts, pairs, source, aggregated)``.

    Internal node i *releases* a count when ``source[i] == i``: its LCA count ``ē_r`` over ``N̄_r = L̄_r·R̄_r``
    pairs, or — at the top of a subtree whose noise would dominate (``1/(ε N̄_r) ≥ τ`` and ``1/(ε M(M−1)) ≥ τ``,
    M its private-eligible leaves) — the subtree's total over its ``M(M−1)/2`` pairs.  ``source[i]`` is the
    node whose count sets p̃ at i (the aggregated subtree's top inside one; −1: no private-eligible pair is
    split at i); ``aggregated`` marks the nodes of aggregated subtrees, tops included.

    Which nodes release, and over how many pairs, depends on the tree, ε, τ and the private-eligible leaves
    only; every private edge is in exactly one released count (its LCA's, or the total of the subtree its
    LCA is in), so on a fixed tree one private edge moves the released counts by exactly 1 in L1."""
    n = tree.num_nodes
    internal = tree.internal_nodes()
    pairs = tree.private_pairs().astype(np.float64)
    m = tree.cnt_pri[internal].astype(np.float64)
    with np.errstate(divide="ignore"):
        small = (1.0 / (epsilon * pairs) >= threshold) & (1.0 / (epsilon * m * (m - 1)) >= threshold)
    # subtree totals of private edges, children before parents (ids: children < parent is not guaranteed)
    sub_e = tree.e_pri.astype(np.float64).copy()
    sub_e[:n] = 0.0
    bfs = [tree.root]
    for v in bfs:
        for c in (tree.left[v], tree.right[v]):
            if c >= n:
                bfs.append(c)
    for v in reversed(bfs):
        for c in (tree.left[v], tree.right[v]):
            sub_e[v] += sub_e[c]
    counts, totals = np.zeros(n - 1), np.zeros(n - 1)
    source = np.full(n - 1, -1, dtype=np.int64)
    aggregated = np.zeros(n - 1, dtype=bool)
    for v in bfs:  # parents before children
        i, p = v - n, tree.parent[v]
        if p >= 0 and aggregated[p - n]:
            source[i], aggregated[i] = source[p - n], True
        elif small[i] and m[i] >= 2:
            counts[i], totals[i], source[i], aggregated[i] = sub_e[v], m[i] * (m[i] - 1) / 2.0, i, True
        elif pairs[i] > 0:
            counts[i], totals[i], source[i] = tree.e_pri[v], pairs[i], i
    return counts, totals, source, aggregated


def noisy_probabilities(
    tree: Dendrogram, epsilon: float, rng: RandomSource, threshold: float = 0.02, noise_floor: float = 0.0
) -> tuple[np.ndarray, dict]:
    """CalculateNoisyProb (Alg. 3): p̃_r per internal node (index r − n), ε-DP for the private edges
    *given the dendrogram*: Laplace(1/ε) on each count of :func:`released_counts` (L1 sensitivity 1).

    ``noise_floor`` κ (post-processing of the released counts, no privacy cost): a noisy count
    ẽ = e + Lap(1/ε) below κ/ε is set to 0 before p̃ = min(1, ẽ/N).  With κ = 0 (Alg. 3 as printed)
    a count whose true value is 0 still yields E[max(0, Lap(1/ε))] = 1/(2ε) edges; with κ it yields
    ½e^(−κ)(κ + 1)/ε (κ = 3: 0.10/ε)."""
    epsilon = check_epsilon(epsilon, "epsilon_e2")
    floor = check_noise_floor(noise_floor) / epsilon
    n = tree.num_nodes
    counts, totals, source, aggregated = released_counts(tree, epsilon, threshold)
    own = source == np.arange(n - 1)
    noise = laplace((n - 1,), 1.0 / epsilon, rng).numpy()  # one draw per internal node, used at most once
    noisy = counts + noise
    below = own & (noisy < floor)  # post-processing: the κ/ε floor (κ = 0: Alg. 3 as printed)
    floored = int((below & (noisy > 0.0)).sum())  # zeroed by the floor, not by the clamp at 0
    noisy[below] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        own_probs = np.where(own, np.minimum(1.0, np.maximum(0.0, noisy / totals)), 0.0)
    probs = np.where(source >= 0, own_probs[np.maximum(source, 0)], 0.0)
    return probs, {
        "noisy_counts": int(own.sum()),
        "aggregated_subtrees_nodes": int(aggregated.sum()),
        "floored_counts": floored,
    }


def sample_private_edges(tree: Dendrogram, probs: np.ndarray, rng: RandomSource) -> torch.Tensor:
    """Each pair of private-eligible leaves split at r is an edge with probability p̃_r
    (geometric skips: time proportional to the sampled edges).  Returns an undirected edge_index."""
    internal = tree.internal_nodes()
    in_order = tree.cnt_pri[tree.order] > 0  # private-eligible leaves, in leaf order
    prefix = np.concatenate([[0], np.cumsum(in_order)])  # eligible leaves before each position
    pri_order = tree.order[in_order]
    sizes = tree.private_pairs().astype(np.int64)
    group, index, _ = kernels.bernoulli_positions(sizes, probs.astype(np.float64), draw_key(rng), np.uint64(11), 0)
    r = internal[group]
    left, right = tree.left[r], tree.right[r]
    width = tree.cnt_pri[right]
    u = pri_order[prefix[tree.lo[left]] + index // width]
    v = pri_order[prefix[tree.lo[right]] + index % width]
    return both_directions(u, v)


def both_directions(u: np.ndarray, v: np.ndarray) -> torch.Tensor:
    """The undirected edge_index of the pairs (u_k, v_k): each pair in both directions."""
    return torch.from_numpy(np.stack([np.concatenate([u, v]), np.concatenate([v, u])])).long()
