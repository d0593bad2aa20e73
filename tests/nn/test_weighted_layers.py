import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv

from privgraph.nn import NodeClassifier
from privgraph.nn.weighted import WeightedGATConv, WeightedSAGEConv

torch.manual_seed(0)
N = 5
EI = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4, 0, 4], [1, 0, 2, 1, 3, 2, 4, 3, 4, 0]])
W = torch.rand(EI.shape[1]) + 0.05
X = torch.randn(N, 3)


def dense_p():
    P = torch.zeros(N, N)
    P[EI[1], EI[0]] = W  # row = target i, column = source j
    return P


def test_gcn_with_edge_weight_is_eq_20():
    conv = GCNConv(3, 4)
    P_hat = dense_p() + torch.eye(N)
    deg = P_hat.sum(1)
    expected = (P_hat / torch.sqrt(deg[:, None] * deg[None, :])) @ conv.lin(X) + conv.bias
    assert torch.allclose(conv(X, EI, W), expected, atol=1e-5)


def test_weighted_sage_is_eq_22():
    conv = WeightedSAGEConv(3, 4)
    P = dense_p()
    expected = conv.lin_root(X) + conv.lin_neigh((P @ X) / P.sum(1, keepdim=True))
    assert torch.allclose(conv(X, EI, W), expected, atol=1e-5)


def test_weighted_gat_is_eq_24():
    conv = WeightedGATConv(3, 4, heads=2)
    P_hat = dense_p() + torch.eye(N)
    h = conv.lin(X).view(N, 2, 4)
    outs = []
    for k in range(2):
        s = (h[:, k] * conv.att_src[0, k]).sum(-1)
        d = (h[:, k] * conv.att_dst[0, k]).sum(-1)
        e = F.leaky_relu(d[:, None] + s[None, :], 0.2)
        a = P_hat * torch.exp(e)
        a = a / a.sum(1, keepdim=True)
        outs.append(a @ h[:, k])
    expected = torch.cat(outs, dim=1) + conv.bias
    assert torch.allclose(conv(X, EI, W), expected, atol=1e-5)


def test_unit_weights_reduce_to_unweighted_mean():
    conv = WeightedSAGEConv(3, 4)
    A = torch.zeros(N, N)
    A[EI[1], EI[0]] = 1.0
    expected = conv.lin_root(X) + conv.lin_neigh((A @ X) / A.sum(1, keepdim=True))
    assert torch.allclose(conv(X, EI), expected, atol=1e-5)


def test_node_classifier_accepts_edge_weights():
    for model in ("gcn", "sage", "gat"):
        net = NodeClassifier(model, 3, 8, 2, weighted=True)
        out = net(X, EI, W)
        assert out.shape == (N, 2)
        # the weights matter
        assert not torch.allclose(out, net(X, EI, torch.ones_like(W)))


def _dense_case(n=40, seed=0):
    from privgraph.nn.dense import BlockwiseAdjacency

    g = torch.Generator().manual_seed(seed)
    w = torch.rand(n, n, generator=g, dtype=torch.float64)
    w = torch.triu(w, 1)
    w = w + w.T  # symmetric, zero diagonal

    class Matrix(BlockwiseAdjacency):
        def __init__(self):
            self.num_nodes, self.block = n, 7  # uneven blocks on purpose

        def rows(self, start, stop):
            return w[start:stop]

    i, j = torch.triu_indices(n, n, 1)
    edge_index = torch.cat([torch.stack([i, j]), torch.stack([j, i])], 1)
    return Matrix(), edge_index, w[edge_index[0], edge_index[1]], torch.randn(n, 5, generator=g, dtype=torch.float64)


def test_dense_layers_equal_the_weighted_sparse_layers_on_the_complete_graph():
    from torch_geometric.nn import GCNConv

    from privgraph.nn.dense import BlockwiseGCNConv, BlockwiseSAGEConv

    op, edge_index, weight, x = _dense_case()
    torch.manual_seed(0)
    dense = BlockwiseGCNConv(5, 3).double()
    sparse = GCNConv(5, 3).double()
    sparse.lin.weight.data.copy_(dense.lin.weight.data)
    sparse.bias.data.copy_(torch.randn(3, dtype=torch.float64))
    dense.bias.data.copy_(sparse.bias.data)
    assert torch.allclose(dense(x, op), sparse(x, edge_index, weight), atol=1e-10)
    dsage = BlockwiseSAGEConv(5, 3).double()
    ssage = WeightedSAGEConv(5, 3).double()
    ssage.load_state_dict(dsage.state_dict())
    assert torch.allclose(dsage(x, op), ssage(x, edge_index, weight), atol=1e-10)


def test_blockwise_propagation_gradient():
    from privgraph.nn.dense import propagate

    op, _, _, x = _dense_case(n=15, seed=1)
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda h: propagate(op, h), (x,))


def test_blockwise_rows_are_kept_only_under_the_memory_limit():
    op, _, _, x = _dense_case(n=20, seed=2)
    calls = []
    rows = op.rows
    op.rows = lambda s, e: calls.append((s, e)) or rows(s, e)
    blocks = len(range(0, 20, op.block))
    op.max_cached_bytes = 0  # recomputed on every use
    uncached = [op.matmul(x), op.matmul(x)]
    assert len(calls) == 2 * blocks and not hasattr(op, "_blocks")
    calls.clear()
    op.max_cached_bytes = 4 * 20 * 20  # kept after the first pass
    cached = [op.matmul(x), op.matmul(x), op.degree()]
    assert len(calls) == blocks
    assert torch.equal(cached[0], uncached[0]) and torch.equal(cached[1], uncached[1])
    assert torch.allclose(cached[2], op.to_dense().sum(1))
