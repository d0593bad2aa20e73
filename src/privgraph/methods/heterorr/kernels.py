"""Compiled (numba) kernels of EdgeRR and its baselines.

Dendrogram layout.  Leaves are the graph's nodes ``0..n−1``; internal nodes are
``n..2n−2``.  The leaves are kept in an order (``order``/``pos``) in which every
subtree is a contiguous interval ``[lo, hi)`` of positions, so "is leaf ``w``
in subtree ``Y``" is one comparison.  Each internal node ``r`` stores its edge
counts between its two children, ``e_pub[r]`` and ``e_pri[r]``, and every node
its numbers of public-/private-eligible leaves (``cnt_pub``, ``cnt_pri``), so
``N_r = L_r·R_r`` is a product of two stored counts (eq. 10).

MCMC move (Clauset et al.; HeteroRR Fig. 5).  Pick a non-root internal node
``c`` with children ``a, b``, its parent ``r`` and sibling ``s``; replace
``((a, b), s)`` by ``((a, s), b)`` or ``((b, s), a)``.  Only ``c`` and ``r``
change: with ``x`` the child joining ``s``, their new counts follow from
``e_xs`` (``e_ys = e_r − e_xs``), counted by scanning the edges of the smaller
of ``x``/``s`` — time
proportional to the touched subtrees' edges, never the whole tree.  An
accepted move that needs ``x`` and ``s`` adjacent rotates the cheaper
pair of blocks (positions and intervals of the moved subtrees only).

Randomness comes from the keyed compiled Philox (:func:`philox_uniform`), so a
seed (or a key from the OS) fixes every draw.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from privgraph.mechanisms.prf import philox_uniform


@nb.njit(inline="always", cache=True)
def _loglik(e: float, n_pairs: float) -> float:
    """Maximised log-likelihood of one internal node, e·log p + (N−e)·log(1−p), p = e/N (0·log 0 = 0)."""
    if e <= 0.0 or e >= n_pairs:
        return 0.0
    p = e / n_pairs
    return e * math.log(p) + (n_pairs - e) * math.log1p(-p)


@nb.njit(inline="always", cache=True)
def _join(v, a, b, left, right, parent, lo, hi):
    """Make the adjacent subtrees a (first) and b (second) the children of internal node v."""
    left[v] = a
    right[v] = b
    parent[a] = v
    parent[b] = v
    lo[v] = lo[a]
    hi[v] = hi[b]


@nb.njit(cache=True)
def balanced_dendrogram(perm: np.ndarray):
    """A balanced dendrogram over the leaves in the order ``perm`` (pairs merged level by level).

    Returns ``(left, right, parent, lo, hi, order, pos, root)``.
    """
    n = perm.size
    size = 2 * n - 1
    left = np.full(size, -1, np.int64)
    right = np.full(size, -1, np.int64)
    parent = np.full(size, -1, np.int64)
    lo = np.zeros(size, np.int64)
    hi = np.zeros(size, np.int64)
    order = perm.copy()
    pos = np.empty(n, np.int64)
    for p in range(n):
        pos[perm[p]] = p
        lo[perm[p]] = p
        hi[perm[p]] = p + 1
    level = perm.copy()
    count = n
    nxt = n
    while count > 1:
        new_count = 0
        i = 0
        while i + 1 < count:
            _join(nxt, level[i], level[i + 1], left, right, parent, lo, hi)
            level[new_count] = nxt
            new_count += 1
            nxt += 1
            i += 2
        if i < count:
            level[new_count] = level[i]
            new_count += 1
        count = new_count
    return left, right, parent, lo, hi, order, pos, level[0]


@nb.njit(cache=True)
def subtree_counts(left, right, root, leaf_flag):
    """For every node, the number of flagged leaves below it (post-order, iterative)."""
    size = left.size
    n = leaf_flag.size
    cnt = np.zeros(size, np.int64)
    for v in range(n):
        cnt[v] = leaf_flag[v]
    stack = np.empty(size, np.int64)
    done = np.zeros(size, np.bool_)
    top = 0
    stack[0] = root
    while top >= 0:
        v = stack[top]
        if v < n:
            top -= 1
            continue
        if done[v]:
            cnt[v] = cnt[left[v]] + cnt[right[v]]
            top -= 1
            continue
        done[v] = True
        stack[top + 1] = left[v]
        stack[top + 2] = right[v]
        top += 2
    return cnt


@nb.njit(cache=True)
def edge_counts(src, dst, parent, lo, hi, pos, size):
    """``e[r]``: number of edges (u, v) whose lowest common ancestor is ``r`` (climb from u)."""
    e = np.zeros(size, np.int64)
    for t in range(src.size):
        u = src[t]
        pv = pos[dst[t]]
        r = parent[u]
        while not (lo[r] <= pv and pv < hi[r]):
            r = parent[r]
        e[r] += 1
    return e


@nb.njit(inline="always", cache=True)
def _between(x, y, order, lo, hi, indptr, indices, pos):
    """Edges between the (disjoint) subtrees x and y, scanning the smaller one."""
    if hi[x] - lo[x] > hi[y] - lo[y]:
        x, y = y, x
    ylo = lo[y]
    yhi = hi[y]
    count = 0
    for p in range(lo[x], hi[x]):
        u = order[p]
        for q in range(indptr[u], indptr[u + 1]):
            pw = pos[indices[q]]
            if ylo <= pw and pw < yhi:
                count += 1
    return count


@nb.njit(inline="always", cache=True)
def _shift_subtree(v, delta, n, left, right, lo, hi, stack):
    top = 0
    stack[0] = v
    while top >= 0:
        w = stack[top]
        top -= 1
        lo[w] += delta
        hi[w] += delta
        if w >= n:
            stack[top + 1] = left[w]
            stack[top + 2] = right[w]
            top += 2


@nb.njit(inline="always", cache=True)
def _rotate(pb, qb, n, left, right, lo, hi, order, pos, buf, stack):
    """Swap the adjacent blocks of subtrees pb (first) and qb (second) in the leaf order."""
    p0 = lo[pb]
    sp = hi[pb] - lo[pb]
    sq = hi[qb] - lo[qb]
    for t in range(sp + sq):
        buf[t] = order[p0 + t]
    for t in range(sq):
        order[p0 + t] = buf[sp + t]
    for t in range(sp):
        order[p0 + sq + t] = buf[t]
    for t in range(sp + sq):
        pos[order[p0 + t]] = p0 + t
    _shift_subtree(pb, sq, n, left, right, lo, hi, stack)
    _shift_subtree(qb, -sp, n, left, right, lo, hi, stack)


@nb.njit(inline="always", cache=True)
def _proposal(a, b, c, r, s, x, y, cnt, e, order, lo, hi, indptr, indices, pos):
    """New edge counts of c = (x, s) and r = (c, y) for one edge kind, and the log-likelihood change."""
    e_xs = _between(x, s, order, lo, hi, indptr, indices, pos)
    e_ys = e[r] - e_xs  # edges from s go to a or b
    new_c = e_xs
    new_r = e[c] + e_ys
    delta = (
        _loglik(new_c, float(cnt[x] * cnt[s]))
        + _loglik(new_r, float((cnt[x] + cnt[s]) * cnt[y]))
        - _loglik(e[c], float(cnt[a] * cnt[b]))
        - _loglik(e[r], float(cnt[c] * cnt[s]))
    )
    return new_c, new_r, delta


@nb.njit(cache=True)
def mcmc_steps(
    steps,
    counter0,
    key,
    stream,
    scale_pri,
    root,
    left,
    right,
    parent,
    lo,
    hi,
    order,
    pos,
    cnt_pub,
    cnt_pri,
    e_pub,
    e_pri,
    pub_ptr,
    pub_idx,
    pri_ptr,
    pri_idx,
    loglik,
):
    """Run ``steps`` Metropolis moves on the target exp(L_pub + scale_pri·L_pri).

    ``loglik`` (length 2) holds the current (L_pub, L_pri) and is updated in
    place; returns the number of accepted moves.
    """
    n = pos.size
    buf = np.empty(n, np.int64)
    stack = np.empty(2 * n + 2, np.int64)
    accepted = 0
    choices = 2 * (n - 2)
    for step in range(steps):
        ctr = 2 * (counter0 + step)
        k = int(philox_uniform(key, ctr, stream) * choices)
        if k >= choices:
            k = choices - 1
        c = n + (k >> 1)
        if c >= root:
            c += 1
        choice = k & 1
        r = parent[c]
        a = left[c]
        b = right[c]
        s = right[r] if left[r] == c else left[r]
        x = a if choice == 0 else b  # the new c = (x, s), the new r = (c, y): ((a, s), b) or ((b, s), a)
        y = b if choice == 0 else a
        ep_c, ep_r, d_pub = _proposal(a, b, c, r, s, x, y, cnt_pub, e_pub, order, lo, hi, pub_ptr, pub_idx, pos)
        eq_c, eq_r, d_pri = _proposal(a, b, c, r, s, x, y, cnt_pri, e_pri, order, lo, hi, pri_ptr, pri_idx, pos)
        log_ratio = d_pub + scale_pri * d_pri
        if log_ratio < 0.0 and math.log(philox_uniform(key, ctr + 1, stream)) >= log_ratio:
            continue
        accepted += 1
        loglik[0] += d_pub
        loglik[1] += d_pri
        # lay out x and s next to each other (y must not sit between them)
        b0 = x
        b1 = y
        b2 = s
        if lo[b0] > lo[b1]:
            b0, b1 = b1, b0
        if lo[b1] > lo[b2]:
            b1, b2 = b2, b1
        if lo[b0] > lo[b1]:
            b0, b1 = b1, b0
        if b1 == y:
            if (hi[b0] - lo[b0]) <= (hi[b2] - lo[b2]):
                _rotate(b0, y, n, left, right, lo, hi, order, pos, buf, stack)
            else:
                _rotate(y, b2, n, left, right, lo, hi, order, pos, buf, stack)
        first = x if lo[x] < lo[s] else s
        _join(c, first, s if first == x else x, left, right, parent, lo, hi)
        if lo[c] < lo[y]:
            left[r] = c
            right[r] = y
        else:
            left[r] = y
            right[r] = c
        parent[y] = r
        cnt_pub[c] = cnt_pub[x] + cnt_pub[s]
        cnt_pri[c] = cnt_pri[x] + cnt_pri[s]
        e_pub[c] = ep_c
        e_pri[c] = eq_c
        e_pub[r] = ep_r
        e_pri[r] = eq_r
    return accepted


@nb.njit(cache=True)
def total_loglik(left, right, cnt, e, n):
    """Σ_r e_r log p_r + (N_r − e_r) log(1 − p_r) over internal nodes (eq. 10–11)."""
    total = 0.0
    for r in range(n, left.size):
        total += _loglik(float(e[r]), float(cnt[left[r]] * cnt[right[r]]))
    return total


@nb.njit(inline="always", cache=True)
def _ensure(group, index, m):
    """Double both output buffers when position m is past their end."""
    if m < group.size:
        return group, index
    grown_g = np.empty(2 * group.size, np.int64)
    grown_i = np.empty(2 * group.size, np.int64)
    grown_g[:m] = group[:m]
    grown_i[:m] = index[:m]
    return grown_g, grown_i


@nb.njit(cache=True)
def bernoulli_positions(sizes, probs, key, stream, counter0):
    """Independent Bernoulli(probs[g]) over the items 0..sizes[g]−1 of every group g,
    by geometric skips (time proportional to the output, not to Σ sizes).

    Returns ``(group, index, counters_used)``.
    """
    expected = 0.0
    for g in range(sizes.size):
        expected += sizes[g] * min(max(probs[g], 0.0), 1.0)
    cap = int(expected * 1.1) + 1024
    group = np.empty(cap, np.int64)
    index = np.empty(cap, np.int64)
    m = 0
    counter = counter0
    for g in range(sizes.size):
        size = sizes[g]
        p = probs[g]
        if size <= 0 or p <= 0.0:
            continue
        if p >= 1.0:
            for i in range(size):
                group, index = _ensure(group, index, m)
                group[m] = g
                index[m] = i
                m += 1
            continue
        log_q = math.log1p(-p)
        i = -1.0
        while True:
            u = philox_uniform(key, counter, stream)
            counter += 1
            i += 1.0 + math.floor(math.log(u) / log_q)
            if i >= size:
                break
            group, index = _ensure(group, index, m)
            group[m] = g
            index[m] = np.int64(i)
            m += 1
    return group[:m], index[:m], counter - counter0
