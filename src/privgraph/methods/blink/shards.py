"""Blink's reports as the server's remote tasks receive them (Blink paper, Algorithm 1's output; §4.2.3).

In one process the server reads each node's report lazily, from its secret PRF key and its true
adjacency list (:mod:`~privgraph.methods.blink.kernels`): both stay in the process that played the
clients.  A task of another process (:class:`~privgraph.methods.blink.distributed.RayRunner`) gets the
reports themselves, drawn here, in the driver, by the clients:

* :class:`ReportShard` — for a block of sorted-β rows and a window of β-sums (lower, upper], the two
  reported bits Ã_ij (i's report) and Ã_ji (j's) of every pair i < j the pass visits, packed 8 to a byte
  (each row from a byte boundary), with the rows' partner ranges.  :func:`report_shards` draws them block
  after block, for one pass: a pass's shards, 2 bits per pair in its window, exist only while their task
  runs (the runner bounds the tasks in flight).
* :func:`reported_matrix` — every node's whole report Ã (n × n bits, packed rows; ≤ 50 MB at the exact
  posterior's 20,000 nodes), for the exact ‖P‖.

The tasks (:func:`shard_collect`, :func:`shard_excess`, :func:`exact_norm_rows`) decide every pair as the
key-reading kernels decide it, in the same order: the output is theirs bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numba as nb
import numpy as np

from privgraph.mechanisms.prf import philox_uniform as _prf
from privgraph.methods.blink.kernels import (
    _CHUNKS,
    SortedBand,
    _first_above,
    _first_row,
    _in_row,
    _is_edge,
    _sigmoid,
    split_rows,
)
from privgraph.methods.blink.kernels import sigmoid as _sigmoid_np

SHARD_BYTES = 64 * 2**20  # a shard's packed bits at most (about): more blocks than workers on a wide band


@dataclass
class ReportShard:
    """Sorted rows [lo, hi) of one pass: row a's partners x in [x0[a − lo], x1[a − lo]), the bits Ã_ij
    (``ij``) and Ã_ji (``ji``) of pair (order[a], order[x]) at bit (off[a − lo]·8 + x − x0), and the pairs
    i < j with β-sum above the pass's lower bound (``visited``, what the key-reading pass counts)."""

    lo: int
    hi: int
    x0: np.ndarray
    x1: np.ndarray
    off: np.ndarray
    ij: np.ndarray
    ji: np.ndarray
    visited: int


@nb.njit(cache=True)
def _window_ends(b, x0, upper):
    """Per sorted row a, the first partner x ≥ x0[a] with b[a] + b[x] > ``upper`` (as the kernels add)."""
    out = np.empty(b.size, np.int64)
    for a in range(b.size):
        out[a] = _first_above(b, b[a], upper, x0[a], b.size)
    return out


@nb.njit(parallel=True, cache=True)
def _shard_bits(lo, x0, x1, off, order, sorted_keys, ptr, nbr, symmetric, g_ptr, g_nbr, p_flip, stream, ij, ji):
    """Algorithm 1's bits of rows [lo, lo + x0.size): Ã_ij = A_ij XOR (PRF(k_i, j) < p), Ã_ji likewise
    with j's key, written at each row's own bytes (so rows run in parallel)."""
    for r in nb.prange(x0.size):
        a = lo + r
        i = order[a]
        ki = sorted_keys[a]
        e, e_end = ptr[a], ptr[a + 1]
        while e < e_end and nbr[e] < x0[r]:
            e += 1
        base = off[r] * 8
        for x in range(x0[r], x1[r]):
            edge = False
            if e < e_end and nbr[e] == x:
                edge = True
                e += 1
            k = base + x - x0[r]
            mask = np.uint8(1 << (7 - (k & 7)))
            if edge != (_prf(ki, order[x], stream) < p_flip):
                ij[k >> 3] |= mask
            edge_ji = edge if symmetric else _in_row(g_nbr, g_ptr[x], g_ptr[x + 1], a)
            if edge_ji != (_prf(sorted_keys[x], i, stream) < p_flip):
                ji[k >> 3] |= mask


def report_shards(band: SortedBand, *, lower: float, upper: float, blocks: int) -> Iterator[tuple[ReportShard]]:
    """The clients' bits for one pass over the pairs with β-sum in (``lower``, ``upper``], in at least
    ``blocks`` blocks of sorted rows of about equal pairs (more where the shards would pass
    :data:`SHARD_BYTES`), drawn one block at a time as the runner asks."""
    n = band.b.size
    start = np.searchsorted(band.b, lower - band.b, side="right").astype(np.int64)
    x0 = np.maximum(start, np.arange(1, n + 1))
    x1 = _window_ends(band.b, x0, float(upper)) if math.isfinite(upper) else np.full(n, n, np.int64)
    pairs = x1 - x0
    blocks = max(blocks, math.ceil(int(pairs.sum()) / 4 / SHARD_BYTES))
    empty = np.zeros(1, np.int64)
    g_ptr, g_nbr = (empty, empty) if band.symmetric else (band.ptr, band.nbr)
    for lo, hi in split_rows(n, blocks, 1, pairs + 1):
        rx0, rx1 = x0[lo:hi], x1[lo:hi]
        off = np.zeros(hi - lo + 1, np.int64)
        np.cumsum((rx1 - rx0 + 7) // 8, out=off[1:])
        ij, ji = np.zeros(int(off[-1]), np.uint8), np.zeros(int(off[-1]), np.uint8)
        _shard_bits(
            lo, rx0, rx1, off, band.order, band.sorted_keys, band.ptr, band.nbr, band.symmetric, g_ptr, g_nbr,
            np.float64(band.p_flip), np.uint64(band.stream), ij, ji,
        )  # fmt: skip
        visited = int(np.maximum(n - x0[lo:hi], 0).sum())
        yield (ReportShard(lo, hi, rx0.copy(), rx1.copy(), off, ij, ji, visited),)


@nb.njit(inline="always", cache=True)
def _state(ij, ji, k) -> np.int64:
    """Ã_ij + Ã_ji of the pair at bit k."""
    shift = 7 - (k & 7)
    return np.int64((ij[k >> 3] >> shift) & 1) + np.int64((ji[k >> 3] >> shift) & 1)


@nb.njit(parallel=True, cache=True)
def _shard_collect(lo, hi, order, b, x0, x1, off, ij, ji, cap, low, high):
    """:func:`~privgraph.methods.blink.kernels._band_collect` on the reported bits: chunk c's rows
    a ≡ c (mod C) in order, partners ascending, pair (i, j) with state t kept iff low[t] < β-sum ≤ high[t]."""
    out_i = np.empty((_CHUNKS, cap), np.int64)
    out_j = np.empty((_CHUNKS, cap), np.int64)
    out_t = np.empty((_CHUNKS, cap), np.uint8)
    counts = np.zeros(_CHUNKS, np.int64)
    for c in nb.prange(_CHUNKS):
        m = 0
        for a in range(_first_row(c, lo), hi, _CHUNKS):
            r = a - lo
            i = order[a]
            base = off[r] * 8 - x0[r]
            for x in range(x0[r], x1[r]):
                s = b[a] + b[x]
                t = _state(ij, ji, base + x)
                if s > low[t] and s <= high[t]:
                    if m < cap:
                        j = order[x]
                        out_i[c, m] = min(i, j)
                        out_j[c, m] = max(i, j)
                        out_t[c, m] = t
                    m += 1
        counts[c] = m
    return out_i, out_j, out_t, counts


def shard_collect(
    shard: ReportShard, public: tuple, low: np.ndarray, high: np.ndarray, per_visit: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`~privgraph.methods.blink.kernels.block_collect` of a shard: ``(i, j, states, counts,
    visited)``; ``public`` = (order, sorted β)."""
    order, b = public
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    head = (shard.lo, shard.hi, order, b, shard.x0, shard.x1, shard.off, shard.ij, shard.ji)
    cap = int(1.5 * per_visit * shard.visited / _CHUNKS) + 1024
    out_i, out_j, out_t, counts = _shard_collect(*head, cap, low, high)
    if counts.max() > cap:
        cap = int(counts.max())
        out_i, out_j, out_t, counts = _shard_collect(*head, cap, low, high)
    take = np.arange(cap)[None, :] < counts[:, None]
    return out_i[take], out_j[take], out_t[take], counts, shard.visited


@nb.njit(parallel=True, cache=True)
def _shard_excess(lo, hi, b, x0, x1, off, ij, ji, two_eps_a):
    """:func:`~privgraph.methods.blink.kernels._band_excess` on the reported bits."""
    out = np.zeros(hi - lo)
    for c in nb.prange(_CHUNKS):
        for a in range(_first_row(c, lo), hi, _CHUNKS):
            r = a - lo
            base = off[r] * 8 - x0[r]
            acc = 0.0
            for x in range(x0[r], x1[r]):
                s = b[a] + b[x]
                t = _state(ij, ji, base + x)
                acc += _sigmoid(s + (t - 1) * two_eps_a) - _sigmoid(s)
            out[r] = acc
    return out


def shard_excess(shard: ReportShard, public: tuple, two_eps_a: float) -> tuple[np.ndarray, int]:
    """:func:`~privgraph.methods.blink.kernels.block_excess` of a shard (its window's upper bound ∞)."""
    _, b = public
    rows = _shard_excess(
        shard.lo, shard.hi, b, shard.x0, shard.x1, shard.off, shard.ij, shard.ji, np.float64(two_eps_a)
    )
    return rows, shard.visited


@nb.njit(parallel=True, cache=True)
def _reported_rows(n, keys, indptr, indices, p_flip, stream, out):
    for i in nb.prange(n):
        for j in range(n):
            if j != i and _is_edge(indptr, indices, i, j) != (_prf(keys[i], j, stream) < p_flip):
                out[i, j >> 3] |= np.uint8(1 << (7 - (j & 7)))


def reported_matrix(kernel_args: tuple) -> np.ndarray:
    """Every node's report Ã_i· (Algorithm 1, Ã_ii = 0) from the reports' ``kernel_args()`` (keys, CSR, p,
    stream) as packed rows: uint8 [n, ⌈n/8⌉] (big-endian bits, as :func:`numpy.packbits`)."""
    keys, indptr, indices, p_flip, stream = kernel_args
    n = indptr.size - 1
    out = np.zeros((n, (n + 7) // 8), np.uint8)
    _reported_rows(n, keys, indptr, indices, np.float64(p_flip), np.uint64(stream), out)
    return out


def exact_norm_rows(lo: int, hi: int, shared: tuple, block: int) -> list[float]:
    """Σ_j P_ij (j ≠ i) of rows [lo, hi) from the reported matrix, one sum per step of ``block`` rows:
    :func:`~privgraph.methods.blink.server._exact_norm_rows`' arithmetic, states Ã_ij + Ã_ji."""
    beta, reported, eps_a = shared
    n, sums = beta.size, []
    for s in range(lo, hi, block):
        e = min(s + block, hi)
        rows = np.arange(s, e)
        mine = np.unpackbits(reported[s:e], axis=1, count=n)
        first = s // 8
        theirs = np.unpackbits(reported[:, first : (e + 7) // 8], axis=1)[:, s - 8 * first : e - 8 * first]
        states = mine + theirs.T
        logit = beta[rows, None] + beta[None, :] + (states - 1.0) * 2.0 * eps_a
        p = _sigmoid_np(logit)
        p[np.arange(rows.size), rows] = 0.0
        sums.append(float(p.sum()))
    return sums
