"""EdgeRR's private MCMC (``structure="private-mcmc"``, the paper's) claims ε only for a chain
that passes the convergence criterion of docs/methods/heterorr.md, refuses otherwise (nothing released), and
``convergence=waive`` releases with ε = ∞ whatever the verdict; no report carries the verdict (identical on
neighbouring graphs)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from privgraph.data import split_edges
from privgraph.methods import get_method
from privgraph.methods.heterorr.edges import ChainNotConverged, edge_rr, mixing_diagnostics
from privgraph.methods.heterorr.hrg import plateau_reached, plateau_rise

MCMC = {"structure": "private-mcmc"}


# the graph of these tests, the sbm fixture's base arguments (a test overrides some of them)
GRAPH = {"num_nodes": 50, "num_features": 2, "avg_degree": 6.0, "seed": 6, "private_edges": 0.3}


def _neighbour(data):
    """The same graph with one more private edge between two non-adjacent nodes."""
    other = data.clone()
    present = {tuple(p) for p in data.edge_index.t().tolist()}
    u, v = next((u, v) for u in range(data.num_nodes) for v in range(u + 1, data.num_nodes) if (u, v) not in present)
    extra = torch.tensor([[u, v], [v, u]])
    other.edge_index = torch.cat([data.edge_index, extra], dim=1)
    other.private_edge_mask = torch.cat([data.private_edge_mask, torch.ones(2, dtype=torch.bool)])
    return other


def test_plateau_criterion_fails_a_climb_and_passes_noise_around_a_level():
    rng = np.random.default_rng(0)
    t = np.arange(51, dtype=float)
    noise = rng.normal(0.0, 1.0, 51)
    assert not plateau_reached(t + noise)  # a steady climb: rise ≈ 1.7 sd
    assert not plateau_reached(-np.exp(-t / 60.0) * 100 + noise)  # still curving up, far from its level
    level = np.where(t % 2 == 0, 1.0, -1.0)  # noise around a level, no drift
    assert plateau_reached(level) and plateau_reached(100.0 - np.exp(-t / 3.0) * 100 + level)  # levelled off
    rise, sd = plateau_rise(t)
    assert rise == pytest.approx(13.0) and sd == pytest.approx(np.arange(25, 51).std())
    climbing = [[(s, float(s), 0.0) for s in range(51)]] * 2  # two chains climbing together: R̂ ≈ 1, still fails
    d = mixing_diagnostics(climbing, 1.0)
    assert d["mcmc_rhat"] < 1.1 and not d["mcmc_converged"]
    short = [[(s, 0.0, 0.0) for s in range(5)]]  # too short to judge: not converged
    assert not mixing_diagnostics(short, 1.0)["mcmc_converged"]


def test_an_unconverged_chain_is_refused_and_the_message_carries_no_private_number(sbm):
    data = sbm(GRAPH)
    messages = []
    for world in (data, _neighbour(data)):
        with pytest.raises(ChainNotConverged) as err:
            edge_rr(world, 1.0, torch.Generator().manual_seed(0), steps=500, **MCMC)  # 10·n moves: still climbing
        assert err.value.diagnostics["mcmc_converged"] is False and "mcmc_plateau_rise" in err.value.diagnostics
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "convergence=waive" in messages[0] and "nothing was released" in messages[0]
    with pytest.raises(ChainNotConverged):  # the registered method goes through the same check
        get_method("edgerr", mcmc_steps=500, **MCMC).release(data, 1.0, torch.Generator().manual_seed(0))


def test_a_converged_chain_claims_epsilon_and_says_why(sbm):
    data = sbm(GRAPH)
    _, g, d = edge_rr(data, 1.0, torch.Generator().manual_seed(0), **MCMC)  # default: max(1000·n, 2·10⁵) moves
    assert d["mcmc_steps"] == 200_000 and d["mcmc_converged"] is True and d["convergence"] == "require"
    assert g.epsilon == 1.0 and "passed the convergence criterion" in " ".join(g.notes)


@pytest.mark.parametrize("steps", [500, 200_000])  # not converged / converged: the same public report
def test_waive_claims_no_epsilon_whatever_the_verdict_and_neighbours_get_the_same_report(steps, sbm):
    data = sbm(GRAPH)
    runs = [
        edge_rr(world, 1.0, torch.Generator().manual_seed(0), steps=steps, convergence="waive", **MCMC)
        for world in (data, _neighbour(data))
    ]
    assert runs[0][2]["mcmc_converged"] is (steps == 200_000)  # curator-only diagnostics
    for _, g, _ in runs:
        assert g.epsilon == math.inf and "NOT DP" in g.mechanism and g.unit == "private edge"
    assert runs[0][1].to_dict() == runs[1][1].to_dict()
    pub, _ = split_edges(data)
    released = {tuple(p) for p in runs[0][0].t().tolist()}
    assert all(tuple(p) in released for p in pub.t().tolist())


def test_convergence_mode_is_validated(sbm):
    with pytest.raises(ValueError, match="convergence"):
        get_method("edgerr", convergence="maybe")
    with pytest.raises(ValueError, match="convergence"):
        edge_rr(sbm(GRAPH), 1.0, torch.Generator(), convergence="ignore")
