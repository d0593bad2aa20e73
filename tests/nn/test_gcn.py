"""CachedGCNConv: PyG's cached GCNConv with the propagation as edge-order CSR matrices — the same
numbers to float32 rounding (forward and backward; bit for bit where the CPU's sparse kernels sum in PyG's
order, which AVX-512 builds do not), on graphs with duplicate edges, self-loops and isolated
nodes (one thread, as every test: tests/conftest.py), and PyG's own layer where it does not apply."""

import pytest
import torch
from torch_geometric.nn import GCNConv

from privgraph.data import sensitive_sbm_graph
from privgraph.nn.gcn import CachedGCNConv


def close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def _graphs():
    g = torch.Generator().manual_seed(0)
    messy = torch.randint(0, 60, (2, 400), generator=g)  # duplicates and self-loops; nodes 60-69 isolated
    return [(sensitive_sbm_graph(seed=0).edge_index, None), (messy, 70)]


@pytest.mark.parametrize("channels", [(1, 32), (17, 32), (32, 16), (33, 2)])
def test_same_outputs_and_gradients_as_pyg(channels):
    for edge_index, n in _graphs():
        n = n or int(edge_index.max()) + 1
        torch.manual_seed(1)
        reference = GCNConv(*channels, cached=True)
        torch.manual_seed(1)
        fast = CachedGCNConv(*channels)
        x = torch.randn(n, channels[0])
        for _ in range(2):  # the first call caches the graph, the second uses the cache
            xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
            ya, yb = reference(xa, edge_index), fast(xb, edge_index)
            weight = torch.randn_like(ya)
            (ya * weight).sum().backward()
            (yb * weight).sum().backward()
            close(ya, yb)  # to float32 rounding: the CPU's kernels (AVX2, AVX-512) may sum in another order
            close(xa.grad, xb.grad)
            for pa, pb in zip(reference.parameters(), fast.parameters()):
                close(pa.grad, pb.grad)


def test_edge_weights_use_pyg_and_reset_clears_the_cache():
    edge_index = sensitive_sbm_graph(seed=0).edge_index
    n = int(edge_index.max()) + 1
    torch.manual_seed(2)
    reference = GCNConv(4, 3, cached=True)
    torch.manual_seed(2)
    fast = CachedGCNConv(4, 3)
    x, w = torch.randn(n, 4), torch.rand(edge_index.shape[1])
    assert torch.equal(reference(x, edge_index, w), fast(x, edge_index, w))
    fast(x, edge_index)
    assert fast._csr is not None
    fast.reset_parameters()
    assert fast._csr is None
