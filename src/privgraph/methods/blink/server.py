"""Blink, server side: β-model prior, Bayesian posterior and the estimated graphs
(Blink paper, Algorithms 2–3, §4.2.3), in memory linear in n plus the output.

* :func:`beta_mle` — the fixed-point iteration of Chatterjee et al. (2011)
  (Algorithm 2) on the clipped noisy degrees, run until the largest change
  of β falls below ``tol`` (not a fixed count).  The sums
  E_i(β) = Σ_{j≠i} σ(β_i + β_j) are computed exactly in row blocks for
  n ≤ ``exact_limit``; above, β_j is binned (with a first-order correction
  inside each bin) and E is evaluated on a grid and interpolated — relative
  error below 1e-5 for the default 4096 bins (tested against the exact sum).
* :func:`posterior_logit` — Algorithm 3's posterior in closed form:
  logit P_ij = β_i + β_j + (s − 1)·2ε_a for evidence state s = Ã_ij + Ã_ji.
* :func:`hard_graph`, :func:`hybrid_graph` — output-sensitive: P_ij > t holds
  iff β_i + β_j > logit(t) − (s − 1)·2ε_a, so candidate pairs come from the
  sorted β (two pointers) and only they are visited.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import torch

from privgraph.methods.blink import kernels, shards
from privgraph.methods.blink.client import LinkLDPReports
from privgraph.methods.blink.kernels import sigmoid as _sigmoid
from privgraph.methods.blink.kernels import split_rows

# ------------------------------------------------------------ blocks of rows
T = TypeVar("T")


class BlockRunner(Protocol):
    """Where the server's blocks of rows run: :class:`LocalRunner` (this process, one block) or
    :class:`~privgraph.methods.blink.distributed.RayRunner` (Ray tasks).  ``parts``: how many blocks to
    cut; ``share``: a value every task reads (Ray: put in the object store once); ``map``: ``fn(*block,
    *shared)`` for each block, results in block order (the reduce is the caller's, in that order)."""

    parts: int
    reports_only: bool  # the tasks run elsewhere: they get the reports (:mod:`~privgraph.methods.blink.shards`)

    def share(self, value: Any) -> Any: ...

    def map(self, fn: Callable[..., T], blocks: Iterable[tuple], *shared: Any) -> list[T]: ...


class LocalRunner:
    """The single-process server: one block, in this process."""

    parts = 1
    reports_only = False  # the clients' keys and edges stay in this process: their reports are read lazily

    def share(self, value: Any) -> Any:
        return value

    def map(self, fn: Callable[..., T], blocks: Iterable[tuple], *shared: Any) -> list[T]:
        return [fn(*block, *shared) for block in blocks]


LOCAL = LocalRunner()


# ----------------------------------------------------------------- β-model MLE
EXACT_BLOCK = 2048  # rows of the exact E_i per step (and the alignment of a runner's blocks)


def _expected_degrees_exact(
    beta: np.ndarray, lo: int = 0, hi: int | None = None, block: int = EXACT_BLOCK
) -> np.ndarray:
    """E_i = Σ_{j≠i} σ(β_i + β_j) for rows [lo, hi), exact, O(block·n) memory."""
    hi = beta.size if hi is None else hi
    out = np.empty(hi - lo)
    for s in range(lo, hi, block):
        b = beta[s : min(s + block, hi)]
        out[s - lo : s - lo + b.size] = _sigmoid(b[:, None] + beta[None, :]).sum(1) - _sigmoid(2 * b)
    return out


def _exact_rows(lo: int, hi: int, beta: np.ndarray) -> np.ndarray:
    """:func:`_expected_degrees_exact` of rows [lo, hi) (a block's task)."""
    return _expected_degrees_exact(beta, lo, hi)


def _binned_table(beta: np.ndarray, bins: int = 4096, grid: int = 4096) -> tuple[np.ndarray, np.ndarray] | None:
    """Bin β_j (first-order Taylor correction per bin) and evaluate log Σ_j σ(x + β_j) on a grid of x:
    ``(xs, log_total)``; None when all β are equal."""
    lo, hi = float(beta.min()), float(beta.max())
    if hi - lo < 1e-12:
        return None
    edges = np.linspace(lo, hi, bins + 1)
    which = np.clip(np.searchsorted(edges, beta, side="right") - 1, 0, bins - 1)
    centers = 0.5 * (edges[:-1] + edges[1:])
    counts = np.bincount(which, minlength=bins).astype(np.float64)
    offsets = np.bincount(which, weights=beta - centers[which], minlength=bins)
    xs = np.linspace(lo, hi, grid)
    total = np.empty(grid)
    for s in range(0, grid, 256):
        z = xs[s : s + 256, None] + centers[None, :]
        sig = _sigmoid(z)
        total[s : s + 256] = (sig * counts).sum(1) + (sig * (1 - sig) * offsets).sum(1)
    return xs, np.log(total)


def _binned_rows(beta_rows: np.ndarray, table: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Approximate E_i of the given rows: interpolate log E linearly on the table's grid."""
    xs, log_total = table
    return np.exp(np.interp(beta_rows, xs, log_total)) - _sigmoid(2 * beta_rows)


def _expected_degrees_binned(beta: np.ndarray, bins: int = 4096, grid: int = 4096) -> np.ndarray:
    """Approximate E_i: bin β_j (first-order Taylor correction per bin), evaluate
    on a grid of β_i values, interpolate log E linearly."""
    table = _binned_table(beta, bins, grid)
    return (beta.size - 1) * _sigmoid(2 * beta) if table is None else _binned_rows(beta, table)


def expected_degrees(beta: np.ndarray, exact_limit: int = 20_000, runner: BlockRunner = LOCAL) -> np.ndarray:
    """Σ_{j≠i} σ(β_i + β_j) for every i (exact up to ``exact_limit`` nodes), in the ``runner``'s blocks of
    rows (the binned table is made here, once, and shared): the same values however the rows are cut."""
    beta = np.asarray(beta, dtype=np.float64)
    n = beta.size
    ranges = split_rows(n, runner.parts, EXACT_BLOCK)
    if n <= exact_limit:
        parts = runner.map(_exact_rows, ranges, runner.share(beta))
    else:
        table = _binned_table(beta)
        if table is None:
            return (n - 1) * _sigmoid(2 * beta)
        parts = runner.map(_binned_rows, [(beta[lo:hi],) for lo, hi in ranges], runner.share(table))
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts)


@dataclass
class BetaMLE:
    beta: np.ndarray
    iterations: int
    converged: bool
    max_change: float
    exact: bool


BETA_LIMIT = 50.0  # |β_i| beyond this: P_ij within e^-50 of 0 or 1; the iteration has diverged


def beta_mle(
    degrees: np.ndarray | torch.Tensor,
    tol: float = 1e-8,
    max_iter: int = 10_000,
    exact_limit: int = 20_000,
    memory: int = 5,
    runner: BlockRunner = LOCAL,
    on_iteration: Callable[[int, float], None] | None = None,
) -> BetaMLE:
    """Algorithm 2: the fixed point of φ_d(β)_i = log d_i − log Σ_{j≠i} 1/(e^{−β_j} + e^{β_i})
    = log d_i + β_i − log E_i(β), from β = 0, until max |φ(β) − β| < ``tol``.

    The plain iteration β ← φ(β) needs about a thousand steps on sparse graphs;
    it is accelerated by Anderson mixing over the last ``memory`` iterates
    (Walker & Ni 2011), which leaves the fixed point — and the convergence
    test on it — unchanged (``memory=0`` gives the plain iteration).  Degrees
    must lie in (0, n − 1) (Algorithm 3 clips them to [1, n − 2]).  The sums E_i(β) run in the
    ``runner``'s blocks of rows (the map); the mixing step runs here (the reduce): the iterates are the
    same for every runner.  ``on_iteration(it, change)``: called after every iteration (progress; reads
    only the noisy degrees).
    """
    d = np.asarray(degrees, dtype=np.float64)
    n = d.size
    if n < 3:
        raise ValueError("the β-model needs at least 3 nodes")
    if not np.all(np.isfinite(d)) or d.min() <= 0 or d.max() >= n - 1:
        raise ValueError("degrees must be finite and inside (0, n − 1); clip them to [1, n − 2] first")
    log_d = np.log(d)

    def phi(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):  # E_i → 0 when the iteration diverges: caught below
            return log_d + x - np.log(expected_degrees(x, exact_limit, runner))

    beta = np.zeros(n)
    # the last ``memory`` differences of g and of f = g − β, oldest first (rows; shifted in place)
    diff_g, diff_f = np.empty((memory, n)), np.empty((memory, n))
    filled = 0
    last_g = last_f = None
    change = math.inf
    for it in range(1, max_iter + 1):
        g = phi(beta)
        if not np.abs(g).max() <= BETA_LIMIT:  # also NaN
            # no finite MLE: the degree sequence lies on the boundary of the β-model's polytope (frequent
            # on small graphs, where many noisy degrees clip to 1 or n − 2); stop at the last finite
            # iterate, clipped, and say it did not converge
            return BetaMLE(np.clip(beta, -BETA_LIMIT, BETA_LIMIT), it, False, change, n <= exact_limit)
        f = g - beta
        change = float(np.abs(f).max())
        if on_iteration is not None:
            on_iteration(it, change)
        if change < tol:
            return BetaMLE(g, it, True, change, n <= exact_limit)
        if memory and last_f is not None:
            if filled == memory:
                diff_g[:-1], diff_f[:-1] = diff_g[1:].copy(), diff_f[1:].copy()
            else:
                filled += 1
            diff_g[filled - 1], diff_f[filled - 1] = g - last_g, f - last_f
            try:
                # (n, k) C-ordered as the stacked history was: the same BLAS calls, bit-identical iterates
                gamma, *_ = np.linalg.lstsq(np.ascontiguousarray(diff_f[:filled].T), f, rcond=None)
                candidate = g - np.ascontiguousarray(diff_g[:filled].T) @ gamma
            except np.linalg.LinAlgError:  # a degenerate history (small graphs): take the plain step
                candidate = g
            beta = candidate if np.all(np.isfinite(candidate)) else g
        else:
            beta = g
        last_g, last_f = g, f
    return BetaMLE(beta, max_iter, False, change, n <= exact_limit)


def clip_degrees(noisy_degrees: torch.Tensor | np.ndarray, n: int) -> np.ndarray:
    """Algorithm 3, line 4: clip to [1, n − 2]."""
    d = np.asarray(noisy_degrees, dtype=np.float64)
    if np.isnan(d).any():
        raise ValueError("noisy degrees are missing (degree_share = 0): Blink's prior needs degree_share > 0")
    return np.clip(d, 1.0, n - 2.0)


# ------------------------------------------------------------------ posterior
def posterior_logit(beta_sum: np.ndarray, state: np.ndarray, epsilon_a: float) -> np.ndarray:
    """logit P_ij for evidence state s ∈ {0, 1, 2} (number of reported ones).

    With p = p_flip, q/q' = ((1−p)/p)^{2s−2} = e^{(s−1)·2ε_a}, so Algorithm 3's
    P = qp/(qp + q'(1−p)) has logit β_i + β_j + (s − 1)·2ε_a.
    """
    return beta_sum + (np.asarray(state, dtype=np.float64) - 1.0) * 2.0 * epsilon_a


def posterior_from_bits(prior: np.ndarray, bit_ij: np.ndarray, bit_ji: np.ndarray, p_flip: float) -> np.ndarray:
    """Algorithm 3, lines 7–9, literally (used to test the closed form)."""
    ones = bit_ij.astype(int) + bit_ji.astype(int)
    q = np.choose(ones, [p_flip**2, p_flip * (1 - p_flip), (1 - p_flip) ** 2])
    q0 = np.choose(ones, [(1 - p_flip) ** 2, p_flip * (1 - p_flip), p_flip**2])
    return q * prior / (q * prior + q0 * (1 - prior))


# --------------------------------------------------- output-sensitive graphs
@dataclass
class EstimatedGraph:
    """An undirected estimated graph: both directions of each kept pair."""

    edge_index: torch.Tensor  # [2, 2k]
    edge_weight: torch.Tensor | None  # [2k] posterior weights (Hybrid/Soft), None for Hard
    visited_pairs: int  # candidate pairs evaluated (the cost of the output-sensitive path)
    threshold: float = 0.0  # the posterior-logit threshold the kept pairs pass


def _symmetric(i: np.ndarray, j: np.ndarray, w: np.ndarray | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Both directions of the pairs (i, j): ``[[i, j], [j, i]]`` and ``[w, w]`` (float32), written into
    their outputs (no stacked or concatenated copies)."""
    k = i.size
    ei = torch.empty((2, 2 * k), dtype=torch.long)
    out = ei.numpy()
    out[0, :k], out[0, k:], out[1, :k], out[1, k:] = i, j, j, i
    if w is None:
        return ei, None
    ew = torch.empty(2 * k, dtype=torch.float32)
    ew[:k] = torch.from_numpy(np.asarray(w, np.float64))  # float64 → float32, rounded as .float() rounds
    ew[k:] = ew[:k]
    return ei, ew


def state_bounds(logit_threshold: float, epsilon_a: float) -> np.ndarray:
    """β-sum bounds per evidence state t: logit P > τ ⟺ β_i + β_j > τ − (t − 1)·2ε_a."""
    return logit_threshold - (np.arange(3) - 1.0) * 2.0 * epsilon_a


class BandScan:
    """The reports in sorted-β order for one β (:class:`~privgraph.methods.blink.kernels.SortedBand`), cut
    into the ``runner``'s blocks of sorted rows of about equal work (pairs in the band β_i + β_j > −2ε_a,
    plus edges) and shared once; every pass (Hard, Hybrid's rounds, the posterior mass, truncated Soft)
    maps over these blocks and puts their outputs back in the order of one pass over all rows.  For a
    ``reports_only`` runner the band (keys, edges) stays here and each pass maps over the reports' bits of
    its window instead (:func:`~privgraph.methods.blink.shards.report_shards`, cut per pass)."""

    def __init__(self, reports: LinkLDPReports, beta: np.ndarray, runner: BlockRunner = LOCAL):
        keys, indptr, indices, p_flip, stream = reports.kernel_args()
        band = kernels.SortedBand.build(beta, keys, indptr, indices, p_flip, stream, reports.is_symmetric())
        n = beta.size
        self.runner, self.b = runner, band.b
        self.band: kernels.SortedBand | None = None
        if runner.reports_only:  # the band (keys, edges) stays here; each pass ships its reports' bits
            self.band, self.public = band, runner.share((band.order, band.b))
            return
        work = None
        if runner.parts > 1:
            start, _ = band.starts(-2.0 * reports.epsilon_adjacency)
            work = np.maximum(n - np.maximum(start, np.arange(1, n + 1)), 0) + np.diff(band.ptr) + 1
        ranges = split_rows(n, runner.parts, 1, work)
        self.blocks = [(runner.share(band.rows(lo, hi)),) for lo, hi in ranges]
        self.shared = runner.share(band.shared())

    def collect(self, low: np.ndarray, high: np.ndarray, expected: float) -> tuple:
        """``(i, j, states, visited)``: :func:`~privgraph.methods.blink.kernels.collect_band`'s output."""
        lower = float(np.min(low))
        start = np.searchsorted(self.b, lower - self.b, side="right")
        total = int(np.maximum(self.b.size - np.maximum(start, np.arange(1, self.b.size + 1)), 0).sum())
        per_visit = expected / max(total, 1)
        if self.band is not None:
            blocks = shards.report_shards(self.band, lower=lower, upper=float(np.max(high)), blocks=self.runner.parts)
            return kernels.interleave(self.runner.map(shards.shard_collect, blocks, self.public, low, high, per_visit))
        parts = self.runner.map(kernels.block_collect, self.blocks, self.shared, low, high, per_visit)
        return kernels.interleave(parts)

    def excess(self, epsilon_a: float, lower: float) -> tuple[float, int]:
        """Σ (P_ij − p_ij) over pairs with β-sum > ``lower`` (rows' sums added in sorted-β order), and the
        pairs visited."""
        if self.band is not None:
            blocks = shards.report_shards(self.band, lower=lower, upper=math.inf, blocks=self.runner.parts)
            parts = self.runner.map(shards.shard_excess, blocks, self.public, 2.0 * epsilon_a)
        else:
            parts = self.runner.map(kernels.block_excess, self.blocks, self.shared, 2.0 * epsilon_a, lower)
        rows = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
        return float(rows.sum()), sum(p[1] for p in parts)


def pairs_above(
    reports: LinkLDPReports,
    beta: np.ndarray,
    logit_threshold: float,
    below: float = math.inf,
    expected: _ExpectedPassing | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Pairs i < j with ``logit_threshold`` < logit P_ij ≤ ``below``, visiting only
    pairs with β_i + β_j > τ − 2ε_a (compiled, :func:`kernels.collect_band`)."""
    i, j, _, visited = _pairs_with_states(reports, beta, logit_threshold, below, expected)
    return i, j, visited


def _pairs_with_states(
    reports: LinkLDPReports,
    beta: np.ndarray,
    logit_threshold: float,
    below: float = math.inf,
    expected: _ExpectedPassing | None = None,
    scan: BandScan | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`pairs_above` with each pair's evidence state (uint8), which the kernel has evaluated."""
    eps_a, p_flip = reports.epsilon_adjacency, reports.p_flip
    high = state_bounds(below, eps_a) if math.isfinite(below) else np.full(3, math.inf)
    expected = expected or _ExpectedPassing(beta, eps_a, p_flip)
    count = expected(logit_threshold) - (expected(below) if math.isfinite(below) else 0.0)
    scan = scan or BandScan(reports, beta)
    return scan.collect(state_bounds(logit_threshold, eps_a), high, count)


def hard_graph(reports: LinkLDPReports, beta: np.ndarray, runner: BlockRunner = LOCAL) -> EstimatedGraph:
    """Blink-Hard: keep (i, j) iff P_ij > 0.5, i.e. logit P_ij > 0 (in the ``runner``'s blocks of rows)."""
    i, j, _, visited = _pairs_with_states(reports, beta, 0.0, scan=BandScan(reports, beta, runner))
    ei, _ = _symmetric(i, j, None)
    return EstimatedGraph(ei, None, visited, 0.0)


def thresholded_graph(
    reports: LinkLDPReports,
    beta: np.ndarray,
    min_probability: float,
    runner: BlockRunner = LOCAL,
    scan: BandScan | None = None,
) -> EstimatedGraph:
    """All pairs with P_ij > ``min_probability``, weighted by P_ij (the truncated Soft graph)."""
    if not 0.0 < min_probability < 1.0:
        raise ValueError(f"min_probability must lie in (0, 1), got {min_probability}")
    tau = math.log(min_probability) - math.log1p(-min_probability)
    scan = scan or BandScan(reports, beta, runner)
    i, j, states, visited = _pairs_with_states(reports, beta, tau, scan=scan)
    ei, ew = _symmetric(i, j, _sigmoid(posterior_logit(beta[i] + beta[j], states, reports.epsilon_adjacency)))
    return EstimatedGraph(ei, ew, visited, tau)


NORM_BLOCK = 1024  # rows of the exact ‖P‖ per step (and the alignment of a runner's blocks)


def _exact_norm_rows(lo: int, hi: int, shared: tuple, block: int = NORM_BLOCK) -> list[float]:
    """Σ_j P_ij (j ≠ i) of rows [lo, hi), one sum per step of ``block`` rows."""
    beta, keys, indptr, indices, p_flip, stream, eps_a = shared
    n, sums = beta.size, []
    for s in range(lo, hi, block):
        rows = np.arange(s, min(s + block, hi))
        states = kernels.evidence_rows(rows, n, keys, indptr, indices, p_flip, np.uint64(stream))
        logit = beta[rows, None] + beta[None, :] + (states - 1.0) * 2.0 * eps_a
        p = _sigmoid(logit)
        p[np.arange(rows.size), rows] = 0.0
        sums.append(float(p.sum()))
    return sums


def posterior_norm(
    reports: LinkLDPReports,
    beta: np.ndarray,
    exact_limit: int = 20_000,
    block: int = NORM_BLOCK,
    runner: BlockRunner = LOCAL,
    scan: BandScan | None = None,
) -> tuple[float, bool]:
    """‖P‖_{1,1} = Σ_{i≠j} P_ij (both directions).  Returns ``(value, exact)``.

    Exact for n ≤ ``exact_limit`` (all pairs evaluated in row blocks, O(n²)
    time, O(block·n) memory).  Above, an estimate that is unbiased under the
    β-model: pairs that can carry evidence above the prior's scale
    (β_i + β_j > −2ε_a) are evaluated exactly and every other pair contributes
    its prior p_ij (E[P_ij] = p_ij: the posterior is a martingale), whose
    total is known: Σ_{i<j} p_ij = ½ Σ_i E_i(β).  Either way the sums run in the ``runner``'s blocks of
    rows and are added here in row order: the same value for every runner.
    """
    n, eps_a = reports.num_nodes, reports.epsilon_adjacency
    if n <= exact_limit:
        beta, args = np.asarray(beta, np.float64), reports.kernel_args()
        fn: Callable[..., list[float]] = _exact_norm_rows
        if runner.reports_only:  # the tasks get every node's report, not its key and edges
            fn, shared = shards.exact_norm_rows, runner.share((beta, shards.reported_matrix(args), eps_a))
        else:
            shared = runner.share((beta, *args, eps_a))
        total = 0.0
        for sums in runner.map(fn, split_rows(n, runner.parts, block), shared, block):
            for x in sums:
                total += x
        return total, True
    prior_total = 0.5 * float(expected_degrees(beta, runner=runner).sum())
    excess, _ = (scan or BandScan(reports, beta, runner)).excess(eps_a, -2.0 * eps_a)
    return 2.0 * (prior_total + excess), False


def evidence_rows(reports: LinkLDPReports, rows: np.ndarray) -> np.ndarray:
    """uint8 [len(rows), n]: the evidence states of whole rows (0 on the diagonal)."""
    keys, indptr, indices, p_flip, stream = reports.kernel_args()
    return kernels.evidence_rows(
        np.asarray(rows, np.int64), reports.num_nodes, keys, indptr, indices, p_flip, np.uint64(stream)
    )


class _ExpectedPassing:
    """Expected number of pairs with logit P > τ under the β-model (binned β),
    as a function of τ: used only to size buffers and to choose where Hybrid's
    exact search starts.  The binning is done once; each τ costs O(bins²)."""

    def __init__(self, beta: np.ndarray, epsilon_a: float, p_flip: float, bins: int = 1024):
        bins = max(1, min(bins, beta.size))  # no more bins than nodes: 1024² bins were most of a small release
        counts, edges = np.histogram(beta, bins=bins)
        centers = 0.5 * (edges[:-1] + edges[1:])
        pairs = np.outer(counts, counts).astype(np.float64)
        pairs[np.diag_indices(bins)] = counts * (counts - 1) / 2.0
        pairs = np.triu(pairs)
        self.sums = centers[:, None] + centers[None, :]
        prior, q = _sigmoid(self.sums), p_flip
        self.weights = [
            pairs * (prior * q * q + (1 - prior) * (1 - q) ** 2),
            pairs * (2 * q * (1 - q)),
            pairs * (prior * (1 - q) ** 2 + (1 - prior) * q * q),
        ]
        self.epsilon_a = epsilon_a

    def __call__(self, tau: float) -> float:
        bounds = state_bounds(tau, self.epsilon_a)
        return float(sum(self.weights[t][self.sums > bounds[t]].sum() for t in range(3)))


def hybrid_graph(
    reports: LinkLDPReports,
    beta: np.ndarray,
    exact_limit: int = 20_000,
    max_visits: int = 10**11,
    runner: BlockRunner = LOCAL,
) -> EstimatedGraph:
    """Blink-Hybrid: keep the top ⌊‖P‖_{1,1}⌋ entries of P (⌊·/2⌋ symmetric
    pairs; ties broken by pair index), weighted by P.

    The logit threshold τ is first placed where the β-model expects 1.25× the
    needed number of pairs to pass, then lowered (τ ← τ − step, step doubling)
    until at least that many really pass; each round visits only the band of
    β-sums newly admitted.  ``max_visits`` bounds the candidate pairs visited.  The passes run in the
    ``runner``'s blocks of rows; the threshold search and the top-k selection run here (the same graph
    for every runner).
    """
    scan = BandScan(reports, beta, runner) if reports.num_nodes > exact_limit else None
    norm, _ = posterior_norm(reports, beta, exact_limit, runner=runner, scan=scan)
    k = int(math.floor(norm)) // 2
    if k == 0:
        return EstimatedGraph(torch.empty((2, 0), dtype=torch.long), torch.empty(0), 0, math.inf)
    eps_a, n = reports.epsilon_adjacency, reports.num_nodes
    lo_tau, hi_tau = float(2 * beta.min()) - 2 * eps_a - 1.0, float(2 * beta.max()) + 2 * eps_a + 1.0
    target = 1.25 * k + 100
    expected = _ExpectedPassing(beta, eps_a, reports.p_flip)
    a, b = lo_tau, hi_tau  # bisection on the (monotone) expected count
    for _ in range(60):
        mid = 0.5 * (a + b)
        a, b = (mid, b) if expected(mid) >= target else (a, mid)
    tau, previous, step = a, math.inf, 1.0
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    visited = 0
    while True:
        cost = kernels.band_size(beta, tau - 2 * eps_a) - (
            kernels.band_size(beta, previous - 2 * eps_a) if math.isfinite(previous) else 0
        )
        if visited + cost > max_visits:
            raise RuntimeError(f"Blink-Hybrid would visit more than max_visits={max_visits} candidate pairs")
        scan = scan or BandScan(reports, beta, runner)
        i, j, states, v = _pairs_with_states(reports, beta, tau, previous, expected, scan)
        found.append((i, j, states))
        del i, j, states
        visited += v
        if sum(x[0].size for x in found) >= k or tau < lo_tau:
            break
        previous, tau, step = tau, tau - step, 2 * step
    del scan  # the sorted-β rows (on Ray: the blocks in the object store) are no longer needed
    i, j, states = _joined(found)
    # ≥ k pairs pass τ and every other pair does not, so the top k are among them;
    # sorted by logit descending, ties by pair index
    logit = beta[i]
    logit += beta[j]
    logit += _state_offsets(eps_a)[states]  # posterior_logit(β_i + β_j, s, ε_a), the same floats
    del states
    order = _top_k(i, j, n, logit, k)
    i, j, logit = i[order], j[order], logit[order]
    del order
    ei, ew = _symmetric(i, j, _sigmoid(logit))
    return EstimatedGraph(ei, ew, visited, float(logit[-1]) if logit.size else tau)


def _joined(found: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """Hybrid's rounds' pairs ``(i, j, states)`` one after another; each round released once copied (one
    round: its own arrays)."""
    if len(found) == 1:
        return found.pop()
    total = sum(x[0].size for x in found)
    out = tuple(np.empty(total, a.dtype) for a in found[0])
    at = 0
    while found:
        part = found.pop(0)
        for o, a in zip(out, part):
            o[at : at + a.size] = a
        at += part[0].size
        del part
    return out


def _state_offsets(epsilon_a: float) -> np.ndarray:
    """(s − 1)·2ε_a for s = 0, 1, 2: :func:`posterior_logit`'s term, computed as it computes it."""
    return (np.arange(3, dtype=np.float64) - 1.0) * 2.0 * epsilon_a


def _top_k(i: np.ndarray, j: np.ndarray, n: int, logit: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest ``logit``, ties by pair index i·n + j, in that order: what
    ``np.lexsort((i * n + j, -logit))[:k]`` gives (pair indices are distinct, so the order is total), with
    the sort on the k selected only (a partition finds the k-th largest logit)."""
    m = logit.size
    if k < m:
        kth = np.partition(logit, m - k)[m - k]  # the k-th largest
        above = np.flatnonzero(logit > kth)
        ties = np.flatnonzero(logit == kth)
        ties = ties[np.argsort(i[ties] * n + j[ties], kind="stable")[: k - above.size]]
        chosen = np.concatenate([above, ties])
        del above, ties
    else:
        chosen = np.arange(m)
    return chosen[np.lexsort((i[chosen] * n + j[chosen], -logit[chosen]))[:k]]
