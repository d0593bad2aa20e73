"""HeteDP's gradient_step='paper': the authors' DP-SGD step, reproduced to measure what the
paper's link-prediction numbers rest on — opt-in, never the default, and stated as not DP."""

import math

import pytest
import torch
from torch.nn.functional import normalize

from privgraph.api import privatize
from privgraph.data import hetero_sbm_graph
from privgraph.methods.hetedp.method import HeteDPParams, score_links
from privgraph.train.dpsgd import DPSGDConfig, paper_gradient_step

EDGE = ("paper", "to", "author")
SMALL = dict(edge_type=EDGE, epochs=1, batch_size=256, edge_count=888)  # the graph's count, public here


def _authors_step(grad, clip, noise):
    """utilsDP.clip_and_accumulate then add_noise (github AixWinnie/HeteDP), transcribed for one parameter
    in their orientation (a DGL GraphConv weight is input × output), with the noise draw given."""
    g_norm = grad.norm(2, dim=-1)
    cum = normalize(torch.sum(grad / torch.clamp(g_norm.contiguous().view(-1, 1) / clip, min=1), dim=0), dim=0)
    proc_size = grad.size(0)
    if grad.dim() > 1:
        cum = cum.expand(proc_size, -1)
    return (cum + normalize(noise, dim=0)).view_as(grad) / proc_size


def test_the_step_is_the_authors_code():
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(5, 3, generator=g) * 3  # torch's nn.Linear orientation: output × input
    bias = torch.randn(5, generator=g) * 3
    ours = paper_gradient_step({"w": weight, "b": bias}, 1.0, 2.5, torch.Generator().manual_seed(1))
    draws = torch.Generator().manual_seed(1)  # the same stream, in the same order (w, then b)
    noise_w, noise_b = torch.randn(5, generator=draws) * 2.5, torch.randn(5, generator=draws) * 2.5
    assert torch.allclose(ours["w"], _authors_step(weight.t(), 1.0, noise_w).t(), atol=1e-6)
    assert torch.allclose(ours["b"], _authors_step(bias, 1.0, noise_b), atol=1e-6)
    # every input column of a weight gets the same update: the step is rank one
    assert torch.linalg.matrix_rank(ours["w"]) == 1


def test_the_noise_does_not_grow_as_sigma_grows():
    """Why it is not DP: the noise is rescaled to norm 1, so σ (hence ε) changes nothing."""
    grads = {"w": torch.randn(4, 6, generator=torch.Generator().manual_seed(2))}
    small = paper_gradient_step(grads, 1.0, 0.01, torch.Generator().manual_seed(3))
    large = paper_gradient_step(grads, 1.0, 1e4, torch.Generator().manual_seed(3))
    assert torch.allclose(small["w"], large["w"], atol=1e-6)
    noiseless = paper_gradient_step(grads, 1.0, 0.0, None)
    assert not torch.allclose(small["w"], noiseless["w"])


def test_paper_step_is_opt_in_and_states_no_guarantee():
    assert HeteDPParams().gradient_step == "dpsgd" and DPSGDConfig().gradient_step == "dpsgd"
    with pytest.raises(ValueError, match="gradient_step"):
        HeteDPParams.build("hetedp", {"edge_type": EDGE, "gradient_step": "authors"})
    data = hetero_sbm_graph(seed=0)
    paper = privatize(data, "hetedp", epsilon=1.0, seed=0, gradient_step="paper", **SMALL)
    edge = paper.report.by_unit()[f"edge of {EDGE}"]
    assert math.isinf(edge.epsilon) and "NOT differentially private" in " ".join(edge.notes)
    assert "0.5" in edge.notes[0]  # the ε_s the paper would claim (ε_f/ε = 0.5) is named
    ours = privatize(data, "hetedp", epsilon=1.0, seed=0, **SMALL).report.by_unit()[f"edge of {EDGE}"]
    assert ours.epsilon == pytest.approx(0.5, rel=1e-3)
    assert score_links(paper, torch.tensor([[0, 1], [0, 2]])).shape == (2,)


def test_a_node_mode_release_is_scored_from_the_release_alone():
    """Node mode passes no messages, so the release holds no relation; scoring must still work."""
    rel = privatize(hetero_sbm_graph(seed=0), "hetedp", epsilon=1.0, seed=0, topology="node", **SMALL)
    assert not rel.data.edge_types
    assert torch.isfinite(score_links(rel, torch.tensor([[0, 1], [0, 2]]))).all()
