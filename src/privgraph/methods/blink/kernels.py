"""Compiled (numba) loops over node pairs for the Blink server.

The reports' bits are evaluated on demand from each node's Philox key (see
:mod:`privgraph.methods.blink.client`); these kernels do the same arithmetic
as :func:`privgraph.mechanisms.prf.prf_uniform` — a test checks bit-for-bit
equality — but without allocating a temporary per pair, so the server can
scan 10⁹–10¹⁰ candidate pairs on a laptop.

* :func:`evidence_rows` — the evidence states (0, 1, 2) of whole rows.
* :func:`collect_band` — every pair i < j whose posterior logit
  β_i + β_j + (s − 1)·2ε_a passes a threshold, visiting only pairs whose
  β-sum lies in a band (sorted β, two pointers): Hard, Hybrid and the
  truncated Soft graph all come from it.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from privgraph.mechanisms.prf import philox_bits53 as _bits  # its 53 bits, for integer comparisons
from privgraph.mechanisms.prf import philox_uniform as _prf  # compiled Philox, same values as prf_uniform
from privgraph.mechanisms.prf import uniform_below_bits


@nb.njit(inline="always", cache=True)
def _is_edge(indptr: np.ndarray, indices: np.ndarray, i: np.int64, j: np.int64) -> bool:
    lo = indptr[i]
    hi = indptr[i + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        v = indices[mid]
        if v < j:
            lo = mid + 1
        elif v > j:
            hi = mid
        else:
            return True
    return False


@nb.njit(inline="always", cache=True)
def _bit(keys, indptr, indices, p_flip, stream, i, j) -> np.int64:
    flip = _prf(keys[i], j, stream) < p_flip
    return np.int64(_is_edge(indptr, indices, i, j) != flip)


def prf_uniform_compiled(keys: np.ndarray, counters: np.ndarray, stream: int) -> np.ndarray:
    """Vectorised wrapper (for the equality test with the numpy PRF)."""
    return _prf_many(np.asarray(keys, np.uint64), np.asarray(counters, np.int64), np.uint64(stream))


@nb.njit(cache=True)
def _prf_many(keys, counters, stream):
    out = np.empty(keys.size)
    for t in range(keys.size):
        out[t] = _prf(keys[t], counters[t], stream)
    return out


def prf_bits_compiled(keys: np.ndarray, counters: np.ndarray, stream: int) -> np.ndarray:
    """The 53 Philox bits behind :func:`prf_uniform_compiled` (for the integer-threshold test)."""
    return _bits_many(np.asarray(keys, np.uint64), np.asarray(counters, np.int64), np.uint64(stream))


@nb.njit(cache=True)
def _bits_many(keys, counters, stream):
    out = np.empty(keys.size, np.uint64)
    for t in range(keys.size):
        out[t] = _bits(keys[t], counters[t], stream)
    return out


@nb.njit(parallel=True, cache=True)
def evidence_rows(rows, n, keys, indptr, indices, p_flip, stream):
    """uint8 [len(rows), n]: Ã_ij + Ã_ji for each listed row i (0 on the diagonal)."""
    out = np.zeros((rows.size, n), dtype=np.uint8)
    for r in nb.prange(rows.size):
        i = rows[r]
        for j in range(n):
            if j != i:
                out[r, j] = _bit(keys, indptr, indices, p_flip, stream, i, j) + _bit(
                    keys, indptr, indices, p_flip, stream, j, i
                )
    return out


@nb.njit(inline="always", cache=True)
def _pair_state(keys, indptr, indices, p_flip, stream, symmetric, i, j, key_j, s, low, high) -> np.int64:
    """The evidence state t of pair (i, j) with β-sum ``s`` if it is emitted (low[t] < s ≤ high[t]),
    else −1.  Bits are evaluated lazily, only when they matter; j's bit reads j's key ``key_j`` (from
    the β-sorted copy: sequential in the partner loop) and, when the true edges are ``symmetric``,
    A_ji = A_ij (no lookup in j's row, a cache miss per pair on large graphs)."""
    in0 = s > low[0] and s <= high[0]
    in1 = s > low[1] and s <= high[1]
    in2 = s > low[2] and s <= high[2]
    if not (in0 or in1 or in2):
        return -1
    edge = _is_edge(indptr, indices, i, j)
    b1 = np.int64(edge != (_prf(keys[i], j, stream) < p_flip))
    if b1 == 0 and not (in0 or in1):
        return -1
    if b1 == 1 and not (in1 or in2):
        return -1
    if not symmetric:
        edge = _is_edge(indptr, indices, j, i)
    t = b1 + np.int64(edge != (_prf(key_j, i, stream) < p_flip))
    if (in0 and t == 0) or (in1 and t == 1) or (in2 and t == 2):
        return t
    return -1


_CHUNKS = 64  # rows are dealt to chunks round-robin: neighbouring sorted rows cost alike
_BLOCK = 256  # partners whose flips are drawn in one vectorised loop


@nb.njit(inline="always", cache=True)
def _first_above(b, base, bound, lo, hi):
    """First x in [lo, hi) with base + b[x] > bound (hi if none); b sorted, so the test is monotone."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if base + b[mid] > bound:
            hi = mid
        else:
            lo = mid + 1
    return lo


@nb.njit(cache=True)
def _sorted_neighbour_positions(order, indptr, indices):
    """Per node i (CSR rows as ``indptr``), the sorted-β positions of its neighbours, ascending."""
    n = order.size
    pos = np.empty(n, np.int64)
    for a in range(n):
        pos[order[a]] = a
    out = np.empty(indices.size, np.int64)
    for i in range(n):
        lo, hi = indptr[i], indptr[i + 1]
        for e in range(lo, hi):
            out[e] = pos[indices[e]]
        out[lo:hi] = np.sort(out[lo:hi])
    return out


@nb.njit(parallel=True, cache=True)
def _band_collect(
    order, b, start, cap, keys, sorted_keys, indptr, indices, nbr_pos, symmetric, p_flip, flip_below, stream, low, high
):
    """One pass: chunk c handles sorted rows c, c + C, c + 2C, …; it writes up to
    ``cap`` pairs (and their evidence states) and counts all (a count above ``cap`` means: rerun bigger).

    Row a's partners x (ascending, so β-sums ascend) split in two.  Where the β-sum is at most
    min(low[0], low[1], high[2]) only evidence state 2 can pass, so Ã_ij must be 1: node i's flips of a
    whole block of partners are drawn in a branch-free (vectorised) loop as integer Philox bits
    (flip ⟺ bits < ``flip_below``, :func:`~privgraph.mechanisms.prf.uniform_below_bits`), and
    Ã_ij = flip XOR edge, the edges read from i's neighbours' sorted positions ``nbr_pos`` in
    step; only pairs with Ã_ij = 1 draw Ã_ji, from ``sorted_keys[x]`` (read in order) and, for
    ``symmetric`` edges, the same edge bit.  Where nothing can pass (β-sum in (high[2],
    min(low[0], low[1])]) is skipped; the rest goes to :func:`_pair_state` pair by pair.  Every
    pair is decided as :func:`_pair_state` decides it, in the order of x: the output is that of
    the plain loop."""
    n = b.size
    out_i = np.empty((_CHUNKS, cap), np.int64)
    out_j = np.empty((_CHUNKS, cap), np.int64)
    out_t = np.empty((_CHUNKS, cap), np.uint8)
    counts = np.zeros(_CHUNKS, np.int64)
    only2 = min(low[0], low[1], high[2])  # below: states 0 and 1 are out of their windows
    none_below = min(low[0], low[1])  # in (high[2], none_below]: no state in its window
    for c in nb.prange(_CHUNKS):
        m = 0
        draws = np.empty(_BLOCK, np.uint64)
        for a in range(c, n, _CHUNKS):
            i = order[a]
            ki = keys[i]
            x0 = max(start[a], a + 1)
            x_fast = _first_above(b, b[a], only2, x0, n)  # [x0, x_fast): state 2 only
            x_rest = _first_above(b, b[a], none_below, x_fast, n)  # [x_fast, x_rest): nothing passes
            e, e_end = indptr[i], indptr[i + 1]
            while e < e_end and nbr_pos[e] < x0:
                e += 1
            for s0 in range(x0, x_fast, _BLOCK):
                size = min(_BLOCK, x_fast - s0)
                for t in range(size):  # branch-free: vectorised
                    draws[t] = _bits(ki, order[s0 + t], stream)
                for t in range(size):
                    x = s0 + t
                    edge = False
                    if e < e_end and nbr_pos[e] == x:
                        edge = True
                        e += 1
                    if (draws[t] < flip_below) != edge:  # Ã_ij = 1: state 2 iff Ã_ji = 1, if in its window
                        s = b[a] + b[x]
                        if s > low[2] and s <= high[2]:
                            j = order[x]
                            edge_ji = edge if symmetric else _is_edge(indptr, indices, j, i)
                            if (_bits(sorted_keys[x], i, stream) < flip_below) != edge_ji:
                                if m < cap:
                                    out_i[c, m] = min(i, j)
                                    out_j[c, m] = max(i, j)
                                    out_t[c, m] = 2
                                m += 1
            for x in range(x_rest, n):
                j = order[x]
                state = _pair_state(
                    keys, indptr, indices, p_flip, stream, symmetric, i, j, sorted_keys[x], b[a] + b[x], low, high
                )
                if state >= 0:
                    if m < cap:
                        out_i[c, m] = min(i, j)
                        out_j[c, m] = max(i, j)
                        out_t[c, m] = state
                    m += 1
        counts[c] = m
    return out_i, out_j, out_t, counts


@nb.njit(inline="always", cache=True)
def _sigmoid(z: float) -> float:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


@nb.njit(parallel=True, cache=True)
def _band_excess(order, b, start, keys, indptr, indices, p_flip, stream, two_eps_a):
    n = b.size
    sums = np.zeros(_CHUNKS)
    for c in nb.prange(_CHUNKS):
        acc = 0.0
        for a in range(c, n, _CHUNKS):
            i = order[a]
            for x in range(max(start[a], a + 1), n):
                j = order[x]
                s = b[a] + b[x]
                t = _bit(keys, indptr, indices, p_flip, stream, i, j) + _bit(
                    keys, indptr, indices, p_flip, stream, j, i
                )
                acc += _sigmoid(s + (t - 1) * two_eps_a) - _sigmoid(s)
        sums[c] = acc
    return sums.sum()


def band_posterior_excess(
    beta: np.ndarray,
    keys: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    p_flip: float,
    stream: int,
    epsilon_a: float,
    lower: float,
) -> tuple[float, int]:
    """Σ over pairs i < j with β_i + β_j > ``lower`` of (P_ij − p_ij): posterior minus prior."""
    order, b, start, visited = _band(beta, lower)
    total = _band_excess(
        order, b, start, keys, indptr, indices, np.float64(p_flip), np.uint64(stream), np.float64(2.0 * epsilon_a)
    )
    return float(total), visited


def _band(beta: np.ndarray, lower: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Sorted β and, per sorted position a, the first partner position with
    b[a] + b[x] > ``lower``; plus the number of such pairs i < j."""
    order = np.argsort(beta, kind="stable")
    b = np.ascontiguousarray(beta[order], dtype=np.float64)
    start = np.searchsorted(b, lower - b, side="right").astype(np.int64)
    visited = int(np.maximum(b.size - np.maximum(start, np.arange(1, b.size + 1)), 0).sum())
    return order, b, start, visited


def band_size(beta: np.ndarray, lower: float) -> int:
    """Number of pairs i < j with β_i + β_j > ``lower`` (O(n log n))."""
    return _band(beta, lower)[3]


def collect_band(
    beta: np.ndarray,
    keys: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    p_flip: float,
    stream: int,
    low: np.ndarray,
    high: np.ndarray,
    expected: float | None = None,
    symmetric: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Pairs i < j whose evidence state t satisfies low[t] < β_i + β_j ≤ high[t].

    Visits only pairs with β-sum > min(low) (a contiguous range of the sorted β
    for each node) in one compiled, parallel pass whose buffers are sized from
    ``expected`` (a second pass runs only if they overflow); returns
    ``(i, j, states, visited)`` with i < j, each pair once, and its evidence state (uint8).
    ``symmetric``: the edges (CSR ``indptr, indices``) are undirected, so A_ji is read as A_ij.
    """
    order, b, start, visited = _band(beta, float(np.min(low)))
    args = (
        keys,
        np.ascontiguousarray(keys[order]),
        indptr,
        indices,
        _sorted_neighbour_positions(order, indptr, indices),
        bool(symmetric),
        np.float64(p_flip),
        np.uint64(uniform_below_bits(p_flip)),
        np.uint64(stream),
        np.asarray(low, np.float64),
        np.asarray(high, np.float64),
    )
    cap = int(1.5 * (expected or 0) / _CHUNKS) + 1024
    out_i, out_j, out_t, counts = _band_collect(order, b, start, cap, *args)
    if counts.max() > cap:
        cap = int(counts.max())
        out_i, out_j, out_t, counts = _band_collect(order, b, start, cap, *args)
    take = np.arange(cap)[None, :] < counts[:, None]
    return out_i[take], out_j[take], out_t[take], visited
