"""CVGAE models (PPCVGAE §4): shapes, training, and the Δν penalty's effect on the prior."""

import random

import pytest
import torch

from privgraph.data import sbm_graph
from privgraph.methods.ppcvgae.privacy import flip_candidate, privacy_penalty
from privgraph.nn.cvgae import CVGAE, VGAEBaseline


def _data():
    d = sbm_graph(seed=0)
    g = torch.Generator().manual_seed(0)
    sens = (torch.rand(d.num_nodes, generator=g) < 0.4).long()
    private = torch.rand(d.num_nodes, generator=g) < 0.7
    return d, sens, private


def _train(model, d, sens, candidates, weight, epochs=60):
    torch.manual_seed(0)
    random.seed(0)  # PyG's negative sampling
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    first = None
    for _ in range(epochs):
        opt.zero_grad()
        loss, parts = model.loss(d.x, sens, d.edge_index, candidates, weight)
        loss.backward()
        opt.step()
        first = float(loss.detach()) if first is None else first
    return first, float(loss.detach())


@pytest.mark.parametrize("case", ["a", "b"])
def test_cvgae_trains_and_the_penalty_shrinks_delta_nu(case):
    d, sens, private = _data()
    candidate = flip_candidate(sens, private)
    plain = CVGAE(d.x.shape[1], case=case)
    first, last = _train(plain, d, sens, [], 0.0)
    assert last < first
    mu, logstd = plain.encode(d.x, sens, d.edge_index)
    assert mu.shape == logstd.shape == (d.num_nodes, 16)
    penalised = CVGAE(d.x.shape[1], case=case)
    _train(penalised, d, sens, [candidate], 100.0)
    gap = {}
    for name, m in (("plain", plain), ("penalised", penalised)):
        gap[name] = float(privacy_penalty(lambda s, m=m: m.prior_mean(s, d.edge_index), sens, [candidate]).detach())
    assert gap["penalised"] < 0.1 * gap["plain"]


def test_vgae_baseline_and_bad_case():
    d, sens, _ = _data()
    first, last = _train(VGAEBaseline(d.x.shape[1]), d, None, [], 0.0)
    assert last < first
    with pytest.raises(ValueError, match="case"):
        CVGAE(4, case="c")
