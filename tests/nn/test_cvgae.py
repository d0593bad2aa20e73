"""CVGAE models (PPCVGAE §4) and their training: shapes, the loss going down,
the Δν penalty shrinking the prior's dependence on s, the negative sampler."""

import pytest
import torch

from privgraph.data import sensitive_sbm_graph
from privgraph.methods.ppcvgae.embedding import EmbeddingConfig, build_autoencoder, standardize, train_embedding
from privgraph.methods.ppcvgae.privacy import flip_candidate, privacy_penalty
from privgraph.nn.cvgae import CVGAE, sample_non_edges


def _delta_nu(model, d, candidate):
    return float(privacy_penalty(lambda s: model.prior_mean(s, d.edge_index), d.sens, [candidate]).detach())


@pytest.mark.parametrize("case", ["a", "b"])
def test_cvgae_trains_and_the_penalty_shrinks_delta_nu(case):
    d = sensitive_sbm_graph(seed=0)
    candidate = flip_candidate(d.sens, d.private_mask)
    models = {}
    for name, weight in (("plain", 0.0), ("penalised", 100.0)):
        config = EmbeddingConfig(epochs=60, penalty=weight)
        models[name] = build_autoencoder(case, d.x.shape[1], config, seed=0)
        trace = train_embedding(models[name], d, candidate, config, seed=0)
        assert trace[-1]["loss"] < trace[0]["loss"]
    mu, logstd = models["plain"].encode(standardize(d.x), d.sens, d.edge_index)
    assert mu.shape == logstd.shape == (d.num_nodes, 16)
    assert _delta_nu(models["penalised"], d, candidate) < 0.01 * _delta_nu(models["plain"], d, candidate)


def test_vgae_baseline_trains_and_bad_settings_fail():
    d = sensitive_sbm_graph(seed=0)
    config = EmbeddingConfig(epochs=40)
    trace = train_embedding(build_autoencoder("vgae", d.x.shape[1], config), d, None, config, seed=0)
    assert trace[-1]["loss"] < trace[0]["loss"]
    with pytest.raises(ValueError, match="case"):
        CVGAE(4, case="c")
    with pytest.raises(ValueError, match="penalty"):
        EmbeddingConfig(penalty=-1)
    with pytest.raises(ValueError, match="kl_weight"):
        CVGAE(4, kl_weight=-0.5)


def test_training_is_reproducible_from_the_seed():
    d = sensitive_sbm_graph(seed=1)
    candidate = flip_candidate(d.sens, d.private_mask)
    config = EmbeddingConfig(epochs=20)
    outs = []
    for _ in range(2):
        m = build_autoencoder("b", d.x.shape[1], config, seed=3)
        train_embedding(m, d, candidate, config, seed=3)
        outs.append(m.encode(standardize(d.x), d.sens, d.edge_index)[0])
    # same seed, same computation; CPU scatter kernels may round differently from run to run (~1e-7)
    assert torch.allclose(outs[0], outs[1], atol=1e-5)


def test_sampled_non_edges_avoid_edges_and_self_pairs():
    d = sensitive_sbm_graph(seed=0)
    torch.manual_seed(0)
    pairs = sample_non_edges(d.edge_index, d.num_nodes, 5000)
    assert pairs.shape == (2, 5000)
    edges = set(map(tuple, d.edge_index.T.tolist()))
    assert not any((a, b) in edges for a, b in pairs.T.tolist())
    assert bool((pairs[0] != pairs[1]).all())
    # roughly uniform over the non-edges: both endpoints spread over all nodes
    assert pairs.flatten().unique().numel() > 0.95 * d.num_nodes
