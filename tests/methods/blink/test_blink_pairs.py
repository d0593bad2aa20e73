"""The band kernel (``kernels._band_collect``) against the kernel it replaced, kept verbatim in
benchmarks/blink_pairs.py (``old_band_collect``): the same pairs, states, order and chunk counts."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from privgraph.data.synthetic import sbm_edges
from privgraph.mechanisms import make_generator
from privgraph.mechanisms.prf import uniform_below_bits
from privgraph.methods.blink import beta_mle, clip_degrees, kernels, link_ldp
from privgraph.methods.blink.server import state_bounds

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(REPO / "benchmarks"))  # its command_timing helpers
    try:
        spec = importlib.util.spec_from_file_location("blink_pairs", REPO / "benchmarks" / "blink_pairs.py")
        module = sys.modules.setdefault("blink_pairs", importlib.util.module_from_spec(spec))
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return module


def _args(rep, beta, low, high, symmetric, lo, hi, cap):
    keys, indptr, indices, p_flip, stream = rep.kernel_args()
    band = kernels.SortedBand.build(beta, keys, indptr, indices, p_flip, stream, symmetric)
    order, b, sorted_keys, sym, g_ptr, g_nbr, p_flip, stream = band.shared()
    block = band.rows(lo, hi)
    start = np.searchsorted(b, float(np.min(low)) - b[lo:hi], side="right").astype(np.int64)
    head = (lo, hi, order, b, sorted_keys, start, block.ptr, block.nbr, sym, g_ptr, g_nbr, cap)
    return (*head, np.float64(p_flip), np.uint64(uniform_below_bits(p_flip)), np.uint64(stream), low, high)


@pytest.mark.parametrize("n,eps,seed", [(300, 4.0, 0), (900, 0.5, 1), (2000, 0.3, 2), (1500, 2.0, 3)])
def test_the_band_kernel_equals_the_kernel_it_replaced(bench, n, eps, seed):
    # small ε flips ~40% of the bits: a row then buffers more than a block of candidates (the flush inside
    # the row), and blocks of rows, finite windows (Hybrid's later rounds, cut at max(high)), the lookup
    # of A_ji (symmetric=False) and overflowing buffers (a small cap: counts go on) must all agree
    edges = sbm_edges([n // 3] * 3, 12.0 / n, 3.0 / n, np.random.default_rng(seed))
    n = 3 * (n // 3)
    rep = link_ldp(edges, n, eps, 0.2, make_generator(seed))
    fitted = beta_mle(clip_degrees(rep.noisy_degrees, n), tol=1e-6).beta
    noisy = np.random.default_rng(seed).normal(-2.0, 1.5, size=n)
    narrow = np.random.default_rng(seed).normal(-2.0, 0.1, size=n)  # most partners in one state-2 window
    checked, full = 0, (n // 64 + 1) * n  # full: a chunk's rows times n, no overflow
    for beta in (fitted, noisy, narrow):
        centred = 2 * float(np.median(beta)) + rep.epsilon_adjacency  # the median β-sum mid-window of state 2
        for tau, below in [(0.0, math.inf), (-4.0, math.inf), (-4.0, -2.5), (-1.0, 3.0), (centred, math.inf)]:
            low = state_bounds(tau, rep.epsilon_adjacency)
            high = state_bounds(below, rep.epsilon_adjacency) if math.isfinite(below) else np.full(3, math.inf)
            for symmetric in (True, False):
                for lo, hi, cap in [(0, n, full), (n // 3, n - 7, full), (0, n, 3)]:
                    args = _args(rep, beta, low, high, symmetric, lo, hi, cap)
                    old = bench.old_band_collect(*args)
                    new = kernels._band_collect(*args)
                    assert np.array_equal(old[3], new[3])  # chunk counts, past the cap too
                    take = np.arange(cap)[None, :] < np.minimum(old[3], cap)[:, None]
                    for a, b in zip(old[:3], new[:3]):
                        assert np.array_equal(a[take], b[take])
                    checked += int(old[3].sum())
    assert checked > 1000
