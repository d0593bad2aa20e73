"""The speed-ups of the autoencoders change no number: a CVGAE / VGAE trained with the CSR GCN
layers, the cached edge keys, the sorted non-edge search and ``index_select`` equals, bit for bit,
the same model with PyG's GCNConv and the adjacency term as it was."""

import pytest
import torch
from torch_geometric.nn import GCNConv

from privgraph.data import sensitive_sbm_graph
from privgraph.methods.ppcvgae.embedding import EmbeddingConfig, build_autoencoder, standardize, train_embedding
from privgraph.methods.ppcvgae.privacy import flip_candidate
from privgraph.nn import cvgae
from privgraph.nn.gcn import CachedGCNConv


def _reference_non_edges(edge_index, num_nodes, count, keys=None):
    """The sampler as it was: keys sorted on every call, candidates searched in drawn order."""
    keys = torch.sort(edge_index[0] * num_nodes + edge_index[1]).values
    cand = torch.randint(0, num_nodes * num_nodes, (int(count * 1.2) + 16,))
    pos = torch.searchsorted(keys, cand).clamp(max=max(keys.numel() - 1, 0))
    is_edge = keys[pos] == cand
    cand = cand[~is_edge & (cand // num_nodes != cand % num_nodes)][:count]
    return torch.stack([cand // num_nodes, cand % num_nodes])


def _reference_adjacency_nll(self, h, edge_index, num_nodes):
    """The adjacency term as it was: ``h[src]`` indexing, the sampler re-sorting the keys."""
    src, dst = edge_index
    pos = torch.nn.functional.logsigmoid((h[src] * h[dst]).sum(-1)).mean()
    neg_index = _reference_non_edges(edge_index, num_nodes, src.numel())
    neg = torch.nn.functional.logsigmoid(-(h[neg_index[0]] * h[neg_index[1]]).sum(-1)).mean()
    return -(pos + neg)


def _with_pyg_layers(model):
    """The same model (same weights) with every CachedGCNConv replaced by PyG's GCNConv(cached=True)."""
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, CachedGCNConv):
                layer = GCNConv(child.in_channels, child.out_channels, cached=True)
                layer.load_state_dict(child.state_dict())
                setattr(module, name, layer)
    return model


def test_sorted_search_finds_the_same_non_edges():
    d = sensitive_sbm_graph(seed=0)
    keys = cvgae.edge_keys(d.edge_index, d.num_nodes)
    for seed in range(3):
        torch.manual_seed(seed)
        ours = cvgae.sample_non_edges(d.edge_index, d.num_nodes, 3000, keys)
        torch.manual_seed(seed)
        assert torch.equal(ours, _reference_non_edges(d.edge_index, d.num_nodes, 3000))


@pytest.fixture
def one_thread():
    """Bit-for-bit equality holds for the same reduction order: one torch thread (numba's kernels, run
    earlier in the same worker, can reset torch's thread count)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("kind", ["a", "b", "vgae"])
def test_training_equals_the_pyg_computation(monkeypatch, kind, one_thread):
    d = sensitive_sbm_graph(seed=2)
    candidate = None if kind == "vgae" else flip_candidate(d.sens, d.private_mask)
    config = EmbeddingConfig(epochs=15, encoder_penalty=1.0)
    ours = build_autoencoder(kind, d.x.shape[1], config, seed=4)
    reference = _with_pyg_layers(build_autoencoder(kind, d.x.shape[1], config, seed=4))
    train_embedding(ours, d, candidate, config, seed=4)
    monkeypatch.setattr(cvgae._AdjacencyNLL, "__call__", _reference_adjacency_nll)
    train_embedding(reference, d, candidate, config, seed=4)
    x = standardize(d.x)
    with torch.no_grad():
        ours_z, reference_z = ours.encode(x, d.sens, d.edge_index)[0], reference.encode(x, d.sens, d.edge_index)[0]
        # to float32 rounding over the training (the CPU's kernels may sum PyG's propagation in another order)
        torch.testing.assert_close(ours_z, reference_z, rtol=1e-4, atol=1e-5)
