"""Compiled (numba) loops that build the out-of-core CSR (:func:`privgraph.data.outofcore.csr_from_edge_chunks`).

* :func:`place_sources` — pass 2 of the counting sort: each edge's source written at its target's next free slot;
* :func:`sort_dedup_rows` — each row's sources sorted in place (insertion sort on short rows, numba's quicksort on
  long ones), its self-loop and repeats dropped, and the rows compacted to the front of the same array.

Both work in the one placement array (4 or 8 bytes per edge): no n·m key, no global sort, no copy of a block.
"""

from __future__ import annotations

import numba as nb
import numpy as np

SHORT_ROW = 16  # rows up to this long are insertion-sorted (avg. degree 10 here), longer ones by quicksort


@nb.njit(cache=True)
def place_sources(src: np.ndarray, dst: np.ndarray, fill: np.ndarray, indptr: np.ndarray, placed: np.ndarray) -> int:
    """``placed[fill[t]] = s`` then ``fill[t] += 1`` for each edge s → t in order; 0, or −1 if a target or a
    source lies outside [0, n), −2 if a row overflows its ``indptr`` slot (the chunks changed between passes).
    Nothing is written past the edge found wrong."""
    n = fill.shape[0]
    for i in range(src.shape[0]):
        t = dst[i]
        s = src[i]
        if t < 0 or t >= n or s < 0 or s >= n:
            return -1
        p = fill[t]
        if p >= indptr[t + 1]:
            return -2
        placed[p] = s
        fill[t] = p + 1
    return 0


@nb.njit(cache=True)
def sort_dedup_rows(indptr: np.ndarray, indices: np.ndarray, new_ptr: np.ndarray) -> int:
    """Row v is ``indices[indptr[v] : indptr[v+1]]``: sort it, drop v itself and the repeats, and write what is
    left from position ``new_ptr[v]`` on (never past ``indptr[v]``, so rows not yet read stay intact); sets
    ``new_ptr[v + 1]`` and returns the number of entries kept (``new_ptr[n]``)."""
    n = indptr.shape[0] - 1
    w = 0
    new_ptr[0] = 0
    for v in range(n):
        a = indptr[v]
        b = indptr[v + 1]
        if b - a <= SHORT_ROW:
            for j in range(a + 1, b):  # insertion sort
                x = indices[j]
                k = j - 1
                while k >= a and indices[k] > x:
                    indices[k + 1] = indices[k]
                    k -= 1
                indices[k + 1] = x
        else:
            indices[a:b].sort()
        last = -1
        for j in range(a, b):
            c = indices[j]
            if c != last and c != v:
                indices[w] = c
                w += 1
            last = c
        new_ptr[v + 1] = w
    return w
