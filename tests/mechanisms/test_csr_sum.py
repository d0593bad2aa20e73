"""The CSR aggregation kernel (privgraph.mechanisms.csr_sum) against a dense reference, and its callers (GAP in
memory and out of core, KProp, node-DP-SGD's aggregate) against the gather-and-``index_add_`` path they
replaced.  The kernel sums a row in another order (and multiplies a weight with a fused multiply-add), so the
comparisons are to float32 rounding, not bit for bit; the seeded noise must be the same draw."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import remove_self_loops

from privgraph.data.outofcore import NodeTable, csr_from_edge_index, propagate
from privgraph.mechanisms import make_generator
from privgraph.mechanisms.aggregation import neighbour_sum, noisy_neighbour_sum, perturbed_aggregation
from privgraph.mechanisms.csr_sum import csr_adjacency, csr_block_sum, csr_sum
from privgraph.mechanisms.randomness import randn
from privgraph.methods.node_dpsgd import aggregate
from privgraph.nn.kprop import KProp

F32 = {"rtol": 1e-5, "atol": 1e-5}  # float32 rounding of sums of a few dozen unit-size terms


def old_sum(x, edge_index, weights=None):
    """The replaced path: gather x[src] (times the sender weight), then index_add_ into the targets."""
    msg = x[edge_index[0]]
    if weights is not None:
        msg = msg * weights.to(x.dtype)[edge_index[0]][:, None]
    return torch.zeros_like(x).index_add_(0, edge_index[1], msg)


def dense_sum(x, edge_index, sender=None, edge=None):
    """Aᵀx from a dense float64 matrix: A[v, u] = Σ over the edges u → v of their weights."""
    n = x.shape[0]
    a = torch.zeros(n, n, dtype=torch.float64)
    w = torch.ones(edge_index.shape[1], dtype=torch.float64)
    if sender is not None:
        w = w * sender.double()[edge_index[0]]
    if edge is not None:
        w = w * edge.double()
    a.index_put_((edge_index[1], edge_index[0]), w, accumulate=True)
    return (a @ x.double()).to(x.dtype)


def random_graph(seed, n, m, isolated=0):
    """m random edges among the first n − ``isolated`` nodes (repeats and self-loops left in)."""
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, max(n - isolated, 1), (2, m), generator=g)
    dup = ei[:, : m // 4]  # a quarter of the edges twice
    return torch.cat([ei, dup], 1), torch.rand(n, 6, generator=g) - 0.5, g


@pytest.mark.parametrize("seed", range(4))
def test_kernel_equals_dense_reference_with_weights_duplicates_isolated_nodes(seed):
    n = 30 + 7 * seed
    ei, x, g = random_graph(seed, n, 120, isolated=5)
    sender, edge = torch.rand(n, generator=g, dtype=torch.float64), torch.rand(ei.shape[1], generator=g)
    for s, e in ((None, None), (sender, None), (None, edge), (sender, edge)):
        adj = csr_adjacency(ei, n, sender_weights=s, edge_weights=e)
        with torch.sparse.check_sparse_tensor_invariants():  # a well-formed CSR
            torch.sparse_csr_tensor(adj.crow_indices(), adj.col_indices(), adj.values(), adj.shape)
        got = csr_sum(adj, x)
        torch.testing.assert_close(got, dense_sum(x, ei, s, e), **F32)
        assert torch.equal(got[n - 5 :], torch.zeros(5, 6))  # isolated nodes (no in-edges): exactly 0
    torch.testing.assert_close(csr_sum(csr_adjacency(ei, n), x.double()), dense_sum(x.double(), ei))  # float64


def test_kernel_on_empty_graphs():
    x = torch.rand(4, 3)
    empty = torch.zeros(2, 0, dtype=torch.long)
    assert torch.equal(neighbour_sum(x, empty), torch.zeros(4, 3))
    assert torch.equal(neighbour_sum(torch.zeros(0, 3), empty), torch.zeros(0, 3))
    block = csr_block_sum(np.array([5, 5, 5]), np.zeros(0, np.int64), x)  # two rows without entries
    assert torch.equal(block, torch.zeros(2, 3))


def test_block_sum_equals_dense_reference_rows():
    ei, x, _ = random_graph(7, 40, 200)
    adj = csr_adjacency(ei, 40)
    ptr, idx = adj.crow_indices().numpy(), adj.col_indices().numpy().astype(np.int32)
    values = np.random.default_rng(0).random(idx.shape[0]).astype(np.float32)
    rows = torch.repeat_interleave(torch.arange(40), adj.crow_indices().diff())
    csr_edges = torch.stack([torch.from_numpy(idx).long(), rows])
    whole = dense_sum(x, csr_edges, edge=torch.from_numpy(values))
    block = csr_block_sum(ptr[10:26], idx[ptr[10] : ptr[25]], x, values[ptr[10] : ptr[25]])  # rows 10 … 24
    torch.testing.assert_close(block, whole[10:25], **F32)


def test_gradient_flows_through_the_kernel():
    ei, x, _ = random_graph(3, 20, 60)
    x = x.double().requires_grad_()
    assert torch.autograd.gradcheck(lambda h: neighbour_sum(h, ei), (x,))


@pytest.mark.parametrize("weighted", [False, True])
def test_gap_hops_equal_the_old_path_and_draw_the_same_noise(weighted):
    ei, x, g = random_graph(11, 60, 400)
    w = torch.rand(60, generator=g, dtype=torch.float64) if weighted else None
    torch.testing.assert_close(neighbour_sum(x, ei, w), old_sum(x, ei, w), **F32)
    # the noisy hop: the same sum and exactly the draw it made before (the noise is drawn apart from the sum)
    noise = randn((60, 6), make_generator(5), torch.float32) * 0.7
    torch.testing.assert_close(noisy_neighbour_sum(x, ei, 0.7, make_generator(5), w), old_sum(x, ei, w) + noise, **F32)
    tables, sums = perturbed_aggregation(x, ei, 3, 0.7, make_generator(9), weights=w)
    rng, ref = make_generator(9), [F.normalize(x, dim=-1)]  # Algorithm 1 on the old path, the same seed
    for k in range(3):
        s = old_sum(ref[-1], ei, w) + randn((60, 6), rng, torch.float32) * 0.7
        torch.testing.assert_close(sums[k], s, **F32)
        ref.append(F.normalize(s, dim=-1))
        torch.testing.assert_close(tables[k + 1], ref[-1], **F32)


@pytest.mark.parametrize("norm", ["sum", "gcn", "mean"])
def test_out_of_core_propagate_equals_the_old_path(tmp_path, norm):
    ei, x, _ = random_graph(13, 80, 500)
    ei, _ = remove_self_loops(ei)
    ei = torch.unique(ei, dim=1)  # the out-of-core CSR drops repeats and self-loops
    graph = csr_from_edge_index(ei, 80, tmp_path / "g")
    table = NodeTable.from_tensor(tmp_path / "x.f32", x, col_block=4)
    out = propagate(graph, table, NodeTable.create(tmp_path / "o.f32", 80, 6, 4), norm, 0.3, make_generator(2), 64)
    deg = torch.bincount(ei[1], minlength=80).float()
    inv = torch.where(deg > 0, 1 / deg.clamp_min(1), torch.zeros(()))
    src_scale = inv.sqrt() if norm == "gcn" else None
    dst_scale = {"sum": None, "gcn": inv.sqrt(), "mean": inv}[norm]
    ref = old_sum(x, ei, src_scale)
    ref = ref if dst_scale is None else ref * dst_scale[:, None]
    # the noise: drawn per row block (≤ 64 edges) and column block (4 columns), as before; here recomputed
    rng, noise = make_generator(2), torch.zeros(80, 6)
    ptr = graph.indptr
    bounds = [0]
    while bounds[-1] < 80:
        nxt = int(np.searchsorted(ptr, ptr[bounds[-1]] + 64, side="right")) - 1
        bounds.append(min(80, max(nxt, bounds[-1] + 1)))
    for c0, c1 in ((0, 4), (4, 6)):
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            noise[a:b, c0:c1] = randn((b - a, c1 - c0), rng, torch.float32) * 0.3
    torch.testing.assert_close(out.to_tensor(), ref + noise, **F32)


@pytest.mark.parametrize("aggregator", ["gcn", "mean", "add"])
def test_kprop_equals_the_old_coalesced_coo_path(aggregator):
    ei, x, _ = random_graph(17, 50, 300)
    clean, _ = remove_self_loops(ei)
    if aggregator == "gcn":
        clean, weight = gcn_norm(clean, None, 50, add_self_loops=False)
    else:
        weight = torch.ones(clean.shape[1])
        if aggregator == "mean":
            weight = weight / torch.bincount(clean[1], minlength=50).clamp_min(1)[clean[1]].float()
    old = torch.sparse_coo_tensor(clean.flip(0), weight, (50, 50)).coalesce()  # the replaced construction
    ref = x
    for _ in range(3):
        ref = torch.sparse.mm(old, ref)
    torch.testing.assert_close(KProp(3, aggregator, cached=False)(x, ei), ref, **F32)


@pytest.mark.parametrize(("conv", "aggregation"), [("gcn", "sum"), ("sage", "mean"), ("gin", "sum")])
def test_node_dpsgd_aggregate_equals_the_old_scatter(conv, aggregation):
    ei, x, _ = random_graph(19, 40, 200)
    src, dst = ei
    if conv == "gcn":
        loops = torch.arange(40)
        src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
    w = torch.ones(src.shape[0])
    if aggregation == "mean":
        w = w / torch.zeros(40).index_add_(0, dst, w).clamp_min(1)[dst]
    agg = torch.zeros_like(x).index_add_(0, dst, x[src] * w[:, None])
    ref = torch.cat([x, agg], 1) if conv == "sage" else agg
    torch.testing.assert_close(aggregate(x, ei, conv, aggregation), ref, **F32)


def test_the_off_cpu_build_equals_the_counting_sort():
    """Off the CPU the matrix is built by torch's sort (``_by_target_torch``): run here on CPU tensors, it
    gives the counting sort's CSR (the same columns, the merged weights to float64 rounding)."""
    from privgraph.mechanisms.csr_sum import _by_target, _by_target_torch

    ei, _, g = random_graph(23, 50, 300, isolated=4)
    w = torch.rand(ei.shape[1], generator=g, dtype=torch.float64)
    crow, col, val = _by_target_torch(ei[0], ei[1], w, 50)
    ref = _by_target(ei[0].numpy(), ei[1].numpy(), w.numpy(), 50)
    assert np.array_equal(crow.numpy(), ref[0]) and np.array_equal(col.numpy(), ref[1])
    np.testing.assert_allclose(val.numpy(), ref[2], rtol=1e-12)


def test_out_of_core_batch_gcn_layer_equals_the_old_gather(tmp_path):
    """BatchGCN.conv (LPGNN out of core, a GCN layer on a batch of targets) against the gather of lin(h) and
    ``index_add_`` it replaced, and its gradient."""
    from torch_geometric.nn import GCNConv

    from privgraph.methods.outofcore import BatchGCN

    ei, x, _ = random_graph(29, 60, 400)
    ei, _ = remove_self_loops(ei)
    graph = csr_from_edge_index(torch.unique(ei, dim=1), 60, tmp_path / "g")
    batch = BatchGCN(graph, NodeTable.from_tensor(tmp_path / "x.f32", x))
    targets = np.array([3, 17, 18, 40, 59])
    uniq, adj = batch.hop(targets)
    torch.manual_seed(0)
    layer = GCNConv(6, 4)
    h = torch.from_numpy(x.numpy()[uniq]).requires_grad_()
    pos, src = graph.neighbours(targets)  # the old path
    pos, src = np.concatenate([pos, np.arange(5)]), np.concatenate([src, targets])
    inv = np.searchsorted(uniq, src)
    w = torch.from_numpy(batch.dhat[src] * batch.dhat[targets[pos]])
    old = torch.zeros(5, 4).index_add_(0, torch.from_numpy(pos), layer.lin(h)[torch.from_numpy(inv)] * w[:, None])
    new = BatchGCN.conv(layer, h, (uniq, adj))
    torch.testing.assert_close(new, old + layer.bias, **F32)
    (g_new,) = torch.autograd.grad(new.sum(), h)
    (g_old,) = torch.autograd.grad((old + layer.bias).sum(), h)
    torch.testing.assert_close(g_new, g_old, **F32)
