"""The CSR builder (privgraph.data.outofcore.csr_from_edge_chunks: each row sorted on its own)
against the builder it replaced, kept verbatim as ``benchmarks/csr_build.py``'s ``csr_unique_reference``: the
same ``indptr`` and ``indices`` (dtype and values) and the same ``.npy`` bytes, on random graphs with repeats,
self-loops, isolated nodes, hubs longer than the insertion-sort cut-off, chunks cut in the middle of a row,
empty chunks, the reference's row blocks small enough to leave some empty, and a graph without edges."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from privgraph.data.csr_kernels import SHORT_ROW
from privgraph.data.outofcore import csr_from_edge_chunks, synthetic_edges

REPO = Path(__file__).resolve().parents[2]


def _reference():
    spec = importlib.util.spec_from_file_location("csr_build", REPO / "benchmarks" / "csr_build.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(REPO / "benchmarks"))  # its ``from command_timing import ...``
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return module.csr_unique_reference


csr_unique_reference = _reference()


def _chunked(src: np.ndarray, dst: np.ndarray, cuts: list[int]):
    """The edges in chunks cut at ``cuts`` (repeated cuts: empty chunks)."""
    bounds = [0, *cuts, src.shape[0]]
    return lambda: iter([(src[a:b], dst[a:b]) for a, b in zip(bounds[:-1], bounds[1:])])


def _assert_identical(new, old, new_dir: Path, old_dir: Path):
    for name in ("indptr", "indices"):
        a, b = np.asarray(getattr(new, name)), np.asarray(getattr(old, name))
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), name
        assert (new_dir / f"{name}.npy").read_bytes() == (old_dir / f"{name}.npy").read_bytes(), name


def _random_edges(rng: np.random.Generator, n: int, m: int, hub: bool) -> tuple[np.ndarray, np.ndarray]:
    src, dst = rng.integers(0, n, m), rng.integers(0, max(1, n // 2), m)  # targets ≥ n/2: isolated rows
    loops = rng.random(m) < 0.1
    src[loops] = dst[loops]  # self-loops
    rep = rng.integers(0, m, m // 4)
    src, dst = np.concatenate([src, src[rep]]), np.concatenate([dst, dst[rep]])  # repeats
    if hub:  # a row far longer than the insertion sort's, with repeats and its self-loop
        k = 8 * SHORT_ROW
        src, dst = np.concatenate([src, rng.integers(0, n, k), [0, 0]]), np.concatenate([dst, np.zeros(k + 2, int)])
    order = rng.permutation(src.shape[0])
    return src[order], dst[order]


@pytest.mark.parametrize(
    ("n", "m", "hub"), [(1, 5, False), (2, 40, False), (7, 200, True), (50, 30, False), (300, 3000, True)]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_per_row_sort_is_bit_identical_to_the_global_unique(tmp_path, n, m, hub, seed):
    rng = np.random.default_rng([seed, n, m])
    src, dst = _random_edges(rng, n, m, hub)
    total = src.shape[0]
    cuts = sorted(int(c) for c in rng.integers(0, total + 1, 3))
    cuts += [cuts[-1]]  # an empty chunk; chunks cut anywhere, so a row's edges span several
    chunks = _chunked(src, dst, cuts)
    for block_edges in (2**24, 3):  # the reference in one block, and in blocks of a few edges (some empty rows)
        old_dir, new_dir = tmp_path / f"old{block_edges}", tmp_path / f"new{block_edges}"
        old = csr_unique_reference(chunks, n, old_dir, block_edges=block_edges)
        new = csr_from_edge_chunks(chunks, n, new_dir)
        _assert_identical(new, old, new_dir, old_dir)
    assert new.num_edges < total and not (new.in_degrees()[max(1, n // 2) :] > 0).any()  # repeats dropped, rows empty
    local, s = new.rows(0, n)
    assert not (local == s).any()


def test_synthetic_edges_and_a_graph_without_edges_are_identical(tmp_path):
    chunks = synthetic_edges(num_nodes=5000, num_edges=60000, num_classes=4, homophily=0.8, seed=2, chunk=7001)
    old = csr_unique_reference(chunks, 5000, tmp_path / "o", block_edges=10000)
    new = csr_from_edge_chunks(chunks, 5000, tmp_path / "n")
    _assert_identical(new, old, tmp_path / "n", tmp_path / "o")
    none = _chunked(np.zeros(0, np.int64), np.zeros(0, np.int64), [0])
    old = csr_unique_reference(none, 4, tmp_path / "o0")
    new = csr_from_edge_chunks(none, 4, tmp_path / "n0")
    _assert_identical(new, old, tmp_path / "n0", tmp_path / "o0")
    assert new.num_edges == 0 and new.num_nodes == 4


def test_bad_edges_and_chunks_that_change_between_passes_are_refused(tmp_path):
    src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])
    for s, d in ((src, np.array([1, 3, 0])), (np.array([0, 3, 2]), dst), (src, np.array([1, -1, 0]))):
        with pytest.raises(ValueError, match="outside"):
            csr_from_edge_chunks(lambda s=s, d=d: iter([(s, d)]), 3, tmp_path / "bad")
    for more, word in ((True, "more"), (False, "fewer")):
        second = (np.append(src, 1), np.append(dst, 2)) if more else (src[:2], dst[:2])
        passes = iter([[(src, dst)], [second]])
        with pytest.raises(ValueError, match=word):
            csr_from_edge_chunks(lambda p=passes: iter(next(p)), 3, tmp_path / "changed")
