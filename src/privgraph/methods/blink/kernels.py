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

from dataclasses import dataclass

import numba as nb
import numpy as np

from privgraph.mechanisms.prf import philox_bits53 as _bits  # its 53 bits, for integer comparisons
from privgraph.mechanisms.prf import philox_uniform as _prf  # compiled Philox, same values as prf_uniform
from privgraph.mechanisms.prf import uniform_below_bits


def split_rows(n: int, parts: int, align: int = 1, work: np.ndarray | None = None) -> list[tuple[int, int]]:
    """[0, n) cut into at most ``parts`` ranges [lo, hi) at multiples of ``align``, of about equal ``work``
    (per row; equal rows when None)."""
    if parts <= 1 or n <= align:
        return [(0, n)]
    total = np.cumsum(np.ones(n) if work is None else np.asarray(work, np.float64))
    cuts = np.searchsorted(total, total[-1] * np.arange(1, parts) / parts, side="right")
    cuts = np.unique(np.clip((cuts + align // 2) // align * align, 0, n))
    bounds = [0, *(int(c) for c in cuts if 0 < c < n), n]
    return list(zip(bounds[:-1], bounds[1:]))


def sigmoid(z: np.ndarray) -> np.ndarray:
    """σ(z) = ½(1 + tanh(z/2)) in numpy (the server's; the compiled loops use :func:`_sigmoid`)."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


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
def _in_row(nbr, lo, hi, x) -> bool:
    """Whether the sorted positions ``nbr[lo:hi]`` (ascending) hold ``x``: the edge test of the sorted rows."""
    while lo < hi:
        mid = (lo + hi) >> 1
        v = nbr[mid]
        if v < x:
            lo = mid + 1
        elif v > x:
            hi = mid
        else:
            return True
    return False


@nb.njit(inline="always", cache=True)
def _pair_state(ki, kj, i, j, a, x, nbr, e_lo, e_hi, symmetric, g_ptr, g_nbr, p_flip, stream, s, low, high) -> np.int64:
    """The evidence state t of pair (i, j) = (order[a], order[x]) with β-sum ``s`` if it is emitted
    (low[t] < s ≤ high[t]), else −1.  Bits are evaluated lazily, only when they matter; i's bit reads i's
    key ``ki`` and row ``nbr[e_lo:e_hi]`` (its neighbours' sorted positions), j's bit reads j's key ``kj``
    and, when the true edges are ``symmetric``, A_ji = A_ij (else j's row of the whole sorted CSR
    ``g_ptr, g_nbr``)."""
    in0 = s > low[0] and s <= high[0]
    in1 = s > low[1] and s <= high[1]
    in2 = s > low[2] and s <= high[2]
    if not (in0 or in1 or in2):
        return -1
    edge = _in_row(nbr, e_lo, e_hi, x)
    b1 = np.int64(edge != (_prf(ki, j, stream) < p_flip))
    if b1 == 0 and not (in0 or in1):
        return -1
    if b1 == 1 and not (in1 or in2):
        return -1
    if not symmetric:
        edge = _in_row(g_nbr, g_ptr[x], g_ptr[x + 1], a)
    t = b1 + np.int64(edge != (_prf(kj, i, stream) < p_flip))
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
def _sorted_csr(order, indptr, indices):
    """The true edges in sorted-β row order: row a lists node order[a]'s neighbours as their sorted-β
    positions, ascending (``ptr`` [n + 1], ``nbr`` [E])."""
    n = order.size
    pos = np.empty(n, np.int64)
    for a in range(n):
        pos[order[a]] = a
    ptr = np.empty(n + 1, np.int64)
    ptr[0] = 0
    for a in range(n):
        i = order[a]
        ptr[a + 1] = ptr[a] + indptr[i + 1] - indptr[i]
    nbr = np.empty(indices.size, np.int64)
    for a in range(n):
        i = order[a]
        lo, d = indptr[i], indptr[i + 1] - indptr[i]
        for k in range(d):
            nbr[ptr[a] + k] = pos[indices[lo + k]]
        nbr[ptr[a] : ptr[a + 1]] = np.sort(nbr[ptr[a] : ptr[a + 1]])
    return ptr, nbr


@nb.njit(inline="always", cache=True)
def _first_row(c, lo):
    """The first row a ≥ ``lo`` of chunk c (a ≡ c mod _CHUNKS)."""
    return lo + (c - lo) % _CHUNKS


@nb.njit(inline="always", cache=True)
def _flush(
    cand_x,
    cand_e,
    k,
    draws,
    i,
    a,
    b,
    order,
    sorted_keys,
    symmetric,
    g_ptr,
    g_nbr,
    fb,
    stream,
    low2,
    high2,
    out_i,
    out_j,
    out_t,
    c,
    m,
    cap,
):
    """The ``k`` candidates x of row a (Ã_ij = 1, where only state 2 can pass; ``cand_e``: A_ij) decided in
    the order of x: kept iff low2 < β-sum ≤ high2 and Ã_ji = 1, j's flips of i drawn in one branch-free
    (vectorised) loop, written to chunk c's row of ``out_*`` from position m on; returns the new m."""
    for q in range(k):  # branch-free: vectorised (a gather of j's keys, one counter i)
        draws[q] = _bits(sorted_keys[cand_x[q]], i, stream)
    for q in range(k):
        x = cand_x[q]
        s = b[a] + b[x]
        if s > low2 and s <= high2:
            edge_ji = cand_e[q] != 0 if symmetric else _in_row(g_nbr, g_ptr[x], g_ptr[x + 1], a)
            if (draws[q] < fb) != edge_ji:
                if m < cap:
                    j = order[x]
                    out_i[c, m] = min(i, j)
                    out_j[c, m] = max(i, j)
                    out_t[c, m] = 2
                m += 1
    return m


_LOW_BITS = np.uint64(0x0101010101010101)  # bit 0 of each byte of a word: the flags' Ã_ij


@nb.njit(parallel=True, cache=True)
def _band_collect(
    lo, hi, order, b, sorted_keys, start, ptr, nbr, symmetric, g_ptr, g_nbr, cap, p_flip, flip_below, stream, low, high
):
    """One pass over the sorted rows a in [``lo``, ``hi``) (a block; the whole range for one process):
    chunk c handles rows a ≡ c (mod C) in order; it writes up to ``cap`` pairs (and their evidence states)
    and counts all (a count above ``cap`` means: rerun bigger).  Row a's own arrays are local to the block:
    its partners start at ``start[a − lo]`` and its neighbours' sorted positions are
    ``nbr[ptr[a − lo]:ptr[a − lo + 1]]``; ``order``, ``b`` and ``sorted_keys`` cover all n nodes.

    Row a's partners x (ascending, so β-sums ascend) split in three.  Where the β-sum is at most
    min(low[0], low[1], high[2]) only evidence state 2 can pass, so Ã_ij must be 1.  There each pair costs
    one Philox evaluation and a byte: node i's flips of a block of partners are drawn in a branch-free
    (vectorised) loop as integer Philox bits into byte flags (flip ⟺ bits < ``flip_below``,
    :func:`~privgraph.mechanisms.prf.uniform_below_bits`); the block's true edges (i's neighbours' sorted
    positions, in step) then toggle their flags (bit 0: Ã_ij = flip XOR A_ij, bit 1: A_ij), and the
    flags are scanned eight to a word, so only words holding an Ã_ij = 1 are looked into.  The pairs with
    Ã_ij = 1 (a fraction ≈ p_flip) are buffered and decided by :func:`_flush`, which draws Ã_ji for a
    buffer at a time in one vectorised loop.  Where nothing can pass (β-sum in (high[2],
    min(low[0], low[1])]) is skipped, and so is every partner with β-sum above max(high) (no state is
    in its window: Hybrid's later rounds stop there); the rest goes to :func:`_pair_state` pair by pair.
    Every pair is decided as :func:`_pair_state` decides it, in the order of x: the output is that of the
    plain loop (and bit for bit that of the kernel before these changes: ``old_band_collect`` in
    benchmarks/blink_pairs.py, compared in the tests), and chunk c's output over a partition of the rows
    into blocks, concatenated in block order, is its output over all rows."""
    n = b.size
    out_i = np.empty((_CHUNKS, cap), np.int64)
    out_j = np.empty((_CHUNKS, cap), np.int64)
    out_t = np.empty((_CHUNKS, cap), np.uint8)
    counts = np.zeros(_CHUNKS, np.int64)
    only2 = min(low[0], low[1], high[2])  # below: states 0 and 1 are out of their windows
    none_below = min(low[0], low[1])  # in (high[2], none_below]: no state in its window
    above_all = max(high[0], high[1], high[2])  # above: no state in its window
    low2, high2 = low[2], high[2]
    for c in nb.prange(_CHUNKS):
        m = 0
        flags = np.zeros(_BLOCK, np.uint8)
        words = flags.view(np.uint64)
        draws = np.empty(2 * _BLOCK, np.uint64)
        cand_x = np.empty(2 * _BLOCK, np.int64)
        cand_e = np.empty(2 * _BLOCK, np.uint8)
        for a in range(_first_row(c, lo), hi, _CHUNKS):
            r = a - lo
            i = order[a]
            ki = sorted_keys[a]
            x0 = max(start[r], a + 1)
            x_fast = _first_above(b, b[a], only2, x0, n)  # [x0, x_fast): state 2 only
            x_rest = _first_above(b, b[a], none_below, x_fast, n)  # [x_fast, x_rest): nothing passes
            x_end = _first_above(b, b[a], above_all, x_rest, n)  # [x_end, n): nothing passes
            e, e_end = ptr[r], ptr[r + 1]
            while e < e_end and nbr[e] < x0:
                e += 1
            k = 0
            for s0 in range(x0, x_fast, _BLOCK):
                size = min(_BLOCK, x_fast - s0)
                for t in range(size):  # branch-free: vectorised
                    flags[t] = np.uint8(_bits(ki, order[s0 + t], stream) < flip_below)
                for t in range(size, (size + 7) & ~7):
                    flags[t] = 0
                while e < e_end and nbr[e] < s0 + size:
                    flags[nbr[e] - s0] ^= np.uint8(3)
                    e += 1
                for w in range((size + 7) >> 3):
                    if words[w] & _LOW_BITS:
                        for t in range(8 * w, 8 * w + 8):
                            if flags[t] & 1:
                                cand_x[k] = s0 + t
                                cand_e[k] = flags[t] >> 1
                                k += 1
                if k >= _BLOCK:  # the buffers hold two blocks: room for the next one
                    m = _flush(
                        cand_x, cand_e, k, draws, i, a, b, order, sorted_keys, symmetric, g_ptr, g_nbr,
                        flip_below, stream, low2, high2, out_i, out_j, out_t, c, m, cap,
                    )  # fmt: skip
                    k = 0
            if k > 0:
                m = _flush(
                    cand_x, cand_e, k, draws, i, a, b, order, sorted_keys, symmetric, g_ptr, g_nbr,
                    flip_below, stream, low2, high2, out_i, out_j, out_t, c, m, cap,
                )  # fmt: skip
            for x in range(x_rest, x_end):
                j = order[x]
                state = _pair_state(
                    ki,
                    sorted_keys[x],
                    i,
                    j,
                    a,
                    x,
                    nbr,
                    ptr[r],
                    ptr[r + 1],
                    symmetric,
                    g_ptr,
                    g_nbr,
                    p_flip,
                    stream,
                    b[a] + b[x],
                    low,
                    high,
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
def _band_excess(lo, hi, order, b, sorted_keys, start, ptr, nbr, symmetric, g_ptr, g_nbr, p_flip, stream, two_eps_a):
    """Per sorted row a in [``lo``, ``hi``) (block-local arrays as in :func:`_band_collect`): the sum over
    its partners x > a in the band of P_ij − p_ij."""
    n = b.size
    out = np.zeros(hi - lo)
    for c in nb.prange(_CHUNKS):
        for a in range(_first_row(c, lo), hi, _CHUNKS):
            r = a - lo
            i = order[a]
            ki = sorted_keys[a]
            acc = 0.0
            for x in range(max(start[r], a + 1), n):
                j = order[x]
                s = b[a] + b[x]
                edge = _in_row(nbr, ptr[r], ptr[r + 1], x)
                t = np.int64(edge != (_prf(ki, j, stream) < p_flip))
                if not symmetric:
                    edge = _in_row(g_nbr, g_ptr[x], g_ptr[x + 1], a)
                t += np.int64(edge != (_prf(sorted_keys[x], i, stream) < p_flip))
                acc += _sigmoid(s + (t - 1) * two_eps_a) - _sigmoid(s)
            out[r] = acc
    return out


@dataclass
class SortedBand:
    """The server's view of the reports for one β, in sorted-β row order (shared by Hard, Hybrid's rounds,
    the posterior mass and truncated Soft): ``order`` (argsort of β, stable), ``b`` = β[order], each sorted
    row's key ``sorted_keys`` and its neighbours' sorted positions (CSR ``ptr``, ``nbr``)."""

    order: np.ndarray
    b: np.ndarray
    sorted_keys: np.ndarray
    ptr: np.ndarray
    nbr: np.ndarray
    symmetric: bool
    p_flip: float
    stream: int

    @classmethod
    def build(
        cls,
        beta: np.ndarray,
        keys: np.ndarray,
        indptr: np.ndarray,
        indices: np.ndarray,
        p_flip: float,
        stream: int,
        symmetric: bool,
    ) -> SortedBand:
        order = np.argsort(beta, kind="stable")
        ptr, nbr = _sorted_csr(order, indptr, indices)
        b = np.ascontiguousarray(beta[order], dtype=np.float64)
        return cls(order, b, np.ascontiguousarray(keys[order]), ptr, nbr, bool(symmetric), float(p_flip), int(stream))

    def starts(self, lower: float, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, int]:
        """Per sorted row a in [lo, hi), the first partner position with b[a] + b[x] > ``lower``; plus the
        number of such pairs i < j those rows visit."""
        hi = self.b.size if hi is None else hi
        start = np.searchsorted(self.b, lower - self.b[lo:hi], side="right").astype(np.int64)
        rows = np.arange(lo + 1, hi + 1)
        visited = int(np.maximum(self.b.size - np.maximum(start, rows), 0).sum())
        return start, visited

    def rows(self, lo: int, hi: int) -> RowBlock:
        """Rows [lo, hi) with their own CSR (rebased): what a block's task needs beside the shared arrays."""
        p = self.ptr[lo : hi + 1]
        return RowBlock(lo, hi, p - p[0], self.nbr[p[0] : p[-1]])

    def shared(self) -> tuple:
        """The arrays every block reads (all n nodes), and the whole sorted CSR where the edges are not
        symmetric (A_ji is then looked up in j's row)."""
        empty = np.zeros(1, np.int64)
        g_ptr, g_nbr = (empty, empty) if self.symmetric else (self.ptr, self.nbr)
        return (self.order, self.b, self.sorted_keys, self.symmetric, g_ptr, g_nbr, self.p_flip, self.stream)


@dataclass
class RowBlock:
    """Sorted rows [lo, hi) and their neighbours' sorted positions (CSR ``ptr`` from 0, ``nbr``)."""

    lo: int
    hi: int
    ptr: np.ndarray
    nbr: np.ndarray


def block_collect(
    block: RowBlock, shared: tuple, low: np.ndarray, high: np.ndarray, per_visit: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`_band_collect` over one block of rows: ``(i, j, states, counts, visited)``, the pairs chunk
    after chunk (``counts[c]`` of chunk c); buffers sized for ``per_visit`` passing pairs per visited pair
    (a second pass runs only if they overflow)."""
    order, b, sorted_keys, symmetric, g_ptr, g_nbr, p_flip, stream = shared
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    start = np.searchsorted(b, float(np.min(low)) - b[block.lo : block.hi], side="right").astype(np.int64)
    visited = int(np.maximum(b.size - np.maximum(start, np.arange(block.lo + 1, block.hi + 1)), 0).sum())
    args = (symmetric, g_ptr, g_nbr)
    tail = (np.float64(p_flip), np.uint64(uniform_below_bits(p_flip)), np.uint64(stream), low, high)
    head = (block.lo, block.hi, order, b, sorted_keys, start, block.ptr, block.nbr)
    cap = int(1.5 * per_visit * visited / _CHUNKS) + 1024
    out_i, out_j, out_t, counts = _band_collect(*head, *args, cap, *tail)
    if counts.max() > cap:
        cap = int(counts.max())
        out_i, out_j, out_t, counts = _band_collect(*head, *args, cap, *tail)
    take = np.arange(cap)[None, :] < counts[:, None]
    return out_i[take], out_j[take], out_t[take], counts, visited


def block_excess(block: RowBlock, shared: tuple, two_eps_a: float, lower: float) -> tuple[np.ndarray, int]:
    """:func:`_band_excess` over one block of rows: per row, Σ (P_ij − p_ij) over its band; and the pairs
    visited."""
    order, b, sorted_keys, symmetric, g_ptr, g_nbr, p_flip, stream = shared
    start = np.searchsorted(b, lower - b[block.lo : block.hi], side="right").astype(np.int64)
    visited = int(np.maximum(b.size - np.maximum(start, np.arange(block.lo + 1, block.hi + 1)), 0).sum())
    rows = _band_excess(
        block.lo,
        block.hi,
        order,
        b,
        sorted_keys,
        start,
        block.ptr,
        block.nbr,
        symmetric,
        g_ptr,
        g_nbr,
        np.float64(p_flip),
        np.uint64(stream),
        np.float64(two_eps_a),
    )
    return rows, visited


def interleave(parts: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The blocks' :func:`block_collect` outputs (in block order) as one pass over all rows gives them: chunk
    c's pairs of every block, in block order, chunk after chunk; plus the pairs visited.  Written into three
    preallocated outputs, each block released (``parts[p] = None``; on Ray, its object in the store) once
    its pairs are copied: the reduce holds the blocks' results and one output, never a list of pieces and
    their concatenation."""
    visited = sum(p[4] for p in parts)
    if len(parts) == 1:
        i, j, t, _, _ = parts.pop()
        return i, j, t, visited
    counts = np.stack([np.asarray(p[3], np.int64) for p in parts])  # [blocks, chunks]
    flat = counts.T.ravel()  # chunk-major: chunk c of every block, then chunk c + 1
    starts = (np.cumsum(flat) - flat).reshape(counts.shape[::-1]).T  # where block p's chunk c goes
    total = int(flat.sum())
    out = (np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.uint8))
    for p in range(len(parts)):
        block, offset = parts[p], 0
        for c in range(counts.shape[1]):
            size, at = int(counts[p, c]), int(starts[p, c])
            for arr, src in zip(out, block[:3]):
                arr[at : at + size] = src[offset : offset + size]
            offset += size
        parts[p] = block = None
    return (*out, visited)


def band_posterior_excess(
    beta: np.ndarray,
    keys: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    p_flip: float,
    stream: int,
    epsilon_a: float,
    lower: float,
    symmetric: bool = False,
) -> tuple[float, int]:
    """Σ over pairs i < j with β_i + β_j > ``lower`` of (P_ij − p_ij): posterior minus prior (the rows'
    sums, added in sorted-β order)."""
    band = SortedBand.build(beta, keys, indptr, indices, p_flip, stream, symmetric)
    rows, visited = block_excess(band.rows(0, beta.size), band.shared(), 2.0 * epsilon_a, lower)
    return float(rows.sum()), visited


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
    band = SortedBand.build(beta, keys, indptr, indices, p_flip, stream, symmetric)
    total = band.starts(float(np.min(low)))[1]
    i, j, t, _, visited = block_collect(
        band.rows(0, beta.size), band.shared(), low, high, (expected or 0) / max(total, 1)
    )
    return i, j, t, visited
