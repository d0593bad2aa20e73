"""Out-of-core tables and chunked aggregation (privgraph.data.outofcore) against the in-memory operations."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import coalesce, remove_self_loops

from privgraph.data.outofcore import (
    CSRGraph,
    NodeTable,
    OutOfCoreGraph,
    csr_from_edge_chunks,
    normalize_rows,
    propagate,
    synthetic_graph,
)
from privgraph.data.synthetic import sbm_graph
from privgraph.mechanisms import make_generator
from privgraph.methods.gap import neighbour_sum, perturbed_aggregation


def test_table_round_trips_rows_columns_and_gathers(tmp_path):
    x = torch.randn(37, 11)
    t = NodeTable.from_tensor(tmp_path / "x.f32", x, col_block=4)
    assert t.blocks() == [(0, 4), (4, 8), (8, 11)]
    assert torch.equal(t.to_tensor(), x)
    assert np.array_equal(t.read_rows(5, 9), x[5:9].numpy())
    assert np.array_equal(t.read_cols(4, 8), x[:, 4:8].numpy())
    idx = np.array([30, 2, 2, 36, 0])
    assert np.array_equal(t.gather(idx), x[idx].numpy())
    t.write_rows(10, np.ones((3, 11), np.float32))  # a write after a gather is seen by the next gather
    assert np.array_equal(t.gather(np.array([11])), np.ones((1, 11), np.float32))
    mask = np.zeros(37, bool)
    mask[[3, 20, 36]] = True
    assert np.array_equal(t.select(mask), t.to_tensor().numpy()[mask])
    sub = t.subset(mask, tmp_path / "sub.f32")
    assert sub.shape == (3, 11) and sub.col_block == t.col_block
    assert np.array_equal(sub.to_tensor().numpy(), t.select(mask))
    assert np.array_equal(t.subset(np.zeros(37, bool), tmp_path / "none.f32").to_tensor().numpy(), np.empty((0, 11)))
    with pytest.raises(IndexError):
        t.write_rows(36, np.zeros((2, 11), np.float32))


def test_csr_drops_repeats_and_self_loops_and_matches_chunking(tmp_path):
    src = np.array([0, 1, 1, 2, 2, 3, 0, 3])
    dst = np.array([1, 0, 0, 2, 3, 2, 1, 0])  # 1→0 and 0→1 twice, a self-loop 2→2
    one = csr_from_edge_chunks(lambda: iter([(src, dst)]), 4, tmp_path / "a")
    two = csr_from_edge_chunks(lambda: iter([(src[:3], dst[:3]), (src[3:], dst[3:])]), 4, tmp_path / "b")
    ref, _ = remove_self_loops(coalesce(torch.from_numpy(np.stack([src, dst])), num_nodes=4))
    for g in (one, two):
        ei = g.edge_index()
        assert torch.equal(coalesce(ei, num_nodes=4), ref)
    assert np.array_equal(np.asarray(one.indptr), np.asarray(two.indptr))
    loaded = CSRGraph.load(tmp_path / "a")
    assert np.array_equal(np.asarray(loaded.indices), np.asarray(one.indices))


@pytest.fixture
def sbm():
    return sbm_graph(num_nodes=300, num_features=24, seed=3)


def test_chunked_sum_equals_the_sparse_product(sbm, tmp_path):
    """Aᵀx over row blocks (≤ 50 edges) and column blocks (5 columns): GAP's neighbour_sum to float32
    rounding (1e-5 relative; the sums are taken in a different order)."""
    g = OutOfCoreGraph.from_data(sbm, tmp_path, col_block=5)
    out = NodeTable.create(tmp_path / "o.f32", *g.x.shape, col_block=5)
    propagate(g.graph, g.x, out, "sum", block_edges=50)
    ref = neighbour_sum(sbm.x, sbm.edge_index)
    torch.testing.assert_close(out.to_tensor(), ref, rtol=1e-5, atol=1e-5)


def test_chunked_gcn_norm_equals_kprop_operator(sbm, tmp_path):
    g = OutOfCoreGraph.from_data(sbm, tmp_path, col_block=7)
    out = NodeTable.create(tmp_path / "o.f32", *g.x.shape, col_block=7)
    propagate(g.graph, g.x, out, "gcn", block_edges=64)
    (s, d), w = gcn_norm(sbm.edge_index, None, sbm.num_nodes, add_self_loops=False)
    ref = torch.zeros_like(sbm.x).index_add_(0, d, sbm.x[s] * w[:, None])
    torch.testing.assert_close(out.to_tensor(), ref, rtol=1e-5, atol=1e-6)


def test_noisy_hops_have_gaps_noise_scale(sbm, tmp_path):
    """The noise of a chunked hop is N(0, std²) per entry: the residual against the exact sum has that std."""
    g = OutOfCoreGraph.from_data(sbm, tmp_path, col_block=6)
    out = NodeTable.create(tmp_path / "o.f32", *g.x.shape, col_block=6)
    propagate(g.graph, g.x, out, "sum", noise_std=2.0, rng=make_generator(0), block_edges=100)
    resid = out.to_tensor() - neighbour_sum(sbm.x, sbm.edge_index)
    assert abs(float(resid.std()) - 2.0) < 0.05 and abs(float(resid.mean())) < 0.05
    with pytest.raises(ValueError, match="random source"):
        propagate(g.graph, g.x, out, "sum", noise_std=1.0)


def test_noiseless_hop_tables_equal_perturbed_aggregation(sbm, tmp_path):
    g = OutOfCoreGraph.from_data(sbm, tmp_path)
    tables = [normalize_rows(g.x, NodeTable.create(tmp_path / "t0.f32", *g.x.shape))]
    for k in (1, 2):
        tables.append(
            normalize_rows(propagate(g.graph, tables[-1], NodeTable.create(tmp_path / f"t{k}.f32", *g.x.shape)))
        )
    ref, _ = perturbed_aggregation(sbm.x, sbm.edge_index, 2, 0.0, None)
    for t, r in zip(tables, ref, strict=True):
        torch.testing.assert_close(t.to_tensor(), r, rtol=1e-5, atol=1e-6)
    assert torch.allclose(F.normalize(tables[1].to_tensor(), dim=-1), tables[1].to_tensor(), atol=1e-6)


def test_synthetic_graph_is_symmetric_simple_and_planted(tmp_path):
    g = synthetic_graph(4000, 40000, 16, num_classes=4, homophily=0.9, seed=1, directory=tmp_path, chunk=3000)
    ei = g.graph.edge_index()
    assert 0.99 * 40000 < ei.shape[1] <= 40000
    assert torch.equal(coalesce(ei.flip(0), num_nodes=4000), coalesce(ei, num_nodes=4000))
    assert not bool((ei[0] == ei[1]).any())
    same = (g.y[ei[0].numpy()] == g.y[ei[1].numpy()]).mean()
    assert 0.88 < same < 0.95  # 0.9 + 0.1 / 4 of the uniform draws
    x = g.x.to_tensor().numpy()
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert np.abs(x[g.y == 0].mean(0) - x[g.y == 1].mean(0)).max() > 0.15
    again = synthetic_graph(4000, 40000, 16, num_classes=4, homophily=0.9, seed=1, directory=tmp_path / "b", chunk=3000)
    assert torch.equal(again.graph.edge_index(), ei)
    assert np.isclose(g.train_mask.mean(), 0.1, atol=0.02)
