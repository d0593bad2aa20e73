import pytest
import torch

from privgraph.nn import KProp, NodeClassifier


def toy_graph():
    # path 0-1-2-3 plus edge 1-3 and a self-loop on 2 (KProp must ignore it)
    und = [(0, 1), (1, 2), (2, 3), (1, 3)]
    src = [a for a, b in und] + [b for a, b in und] + [2]
    dst = [b for a, b in und] + [a for a, b in und] + [2]
    return torch.tensor([src, dst])


def dense_adj(n=4):
    A = torch.zeros(n, n, dtype=torch.float64)
    for a, b in [(0, 1), (1, 2), (2, 3), (1, 3)]:
        A[a, b] = A[b, a] = 1
    return A


@pytest.mark.parametrize("steps", [1, 2, 3, 5])
@pytest.mark.parametrize("aggregator", ["gcn", "mean", "add"])
def test_kprop_equals_k_step_normalized_propagation(steps, aggregator):
    A = dense_adj()
    deg = A.sum(1)
    if aggregator == "gcn":
        P = A / torch.sqrt(deg[:, None] * deg[None, :])
    elif aggregator == "mean":
        P = A / deg[:, None]
    else:
        P = A
    x = torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    expected = torch.linalg.matrix_power(P, steps) @ x
    out = KProp(steps, aggregator)(x, toy_graph())
    assert torch.allclose(out, expected, atol=1e-10)


def test_kprop_zero_steps_is_identity_and_cache_tracks_input():
    x = torch.randn(4, 2)
    assert torch.equal(KProp(0)(x, toy_graph()), x)
    layer = KProp(2, "mean")
    a = layer(x, toy_graph())
    b = layer(x + 1, toy_graph())
    assert not torch.allclose(a, b)


def test_kprop_rejects_bad_arguments():
    with pytest.raises(ValueError):
        KProp(-1)
    with pytest.raises(ValueError):
        KProp(2, "max")


@pytest.mark.parametrize("model", ["gcn", "sage", "gat", "mlp"])
@pytest.mark.parametrize("k", [0, 2])
def test_models_output_logits(model, k):
    net = NodeClassifier(model, 3, 8, 5, dropout=0.5, kprop_steps=k)
    out = net(torch.randn(4, 3), toy_graph())
    assert out.shape == (4, 5)
    assert (net.kprop is not None) == (k > 0)
    net = net.double()  # nn.Module's own machinery (.to/.double) must keep working
    assert net(torch.randn(4, 3, dtype=torch.float64), toy_graph()).dtype == torch.float64


@pytest.mark.parametrize("aggregator", ["gcn", "mean", "add"])
def test_column_blocks_equal_whole_matrix_propagation_value_for_value(aggregator):
    """KProp propagates a block of columns at a time (memory); the result equals the whole matrix's to float32
    rounding (bit for bit on AVX2; AVX-512 kernels vectorise another number of columns)."""
    from torch_geometric.utils import erdos_renyi_graph

    from privgraph.nn.kprop import _propagate, normalized_adjacency, propagate_columns

    torch.manual_seed(0)
    n, d = 400, 37
    edge_index = erdos_renyi_graph(n, 0.03)
    x = torch.rand(n, d)
    adj = normalized_adjacency(edge_index, n, aggregator)
    for steps in (1, 4):
        whole = _propagate(adj, x, steps)
        for block in (1, 8, 36):
            torch.testing.assert_close(propagate_columns(adj, x, steps, block=block), whole, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(KProp(3, aggregator)(x, edge_index), _propagate(adj, x, 3), rtol=1e-5, atol=1e-6)
