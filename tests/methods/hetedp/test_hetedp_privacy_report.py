"""HeteDP's report is the same for a graph and its neighbour.  DP-SGD's sampling
rate, steps and σ come from a public ``edge_count``, never from the private number of protected
edges (q = 4/56 against 4/57 once told the two graphs apart)."""

import pytest
import torch

from privgraph.api import privatize
from privgraph.audit.definitions import with_hetero_edge
from privgraph.audit.graphs import HETERO_EDGE_TYPE, audit_hetero_graph

REVERSE = ("author", "to", "paper")


def _neighbours():
    data = audit_hetero_graph(0)
    present = set(map(tuple, data[HETERO_EDGE_TYPE].edge_index.t().tolist()))
    u, v = next((u, v) for u in range(20) for v in range(12) if (u, v) not in present)
    return data, with_hetero_edge(data, HETERO_EDGE_TYPE, REVERSE, u, v)


def test_a_graph_and_its_neighbour_get_the_same_report():
    data, neighbour = _neighbours()
    assert neighbour[HETERO_EDGE_TYPE].edge_index.shape[1] == data[HETERO_EDGE_TYPE].edge_index.shape[1] + 1
    params = dict(edge_type=HETERO_EDGE_TYPE, batch_size=4, epochs=1, edge_count=60)
    a, b = (privatize(d, "hetedp", epsilon=1.0, seed=0, **params) for d in (data, neighbour))
    assert a.report.lines() == b.report.lines()
    assert a.metadata() == b.metadata()
    edge = a.report.by_unit()[f"edge of {HETERO_EDGE_TYPE}"]
    assert "sampling rate 0.06667" in " ".join(edge.notes)  # q = 4/60: the public N, not 4/56 or 4/57
    # the release itself differs (the model was trained on different edges): the test above is not vacuous
    assert any(not torch.equal(a.model_state[k], b.model_state[k]) for k in a.model_state)


def test_a_private_release_without_a_public_edge_count_is_refused_before_any_noise():
    data, _ = _neighbours()
    with pytest.raises(ValueError, match="edge_count=N, a public number of training edges"):
        privatize(data, "hetedp", epsilon=1.0, seed=0, edge_type=HETERO_EDGE_TYPE, epochs=1)
    # without ε nothing is claimed: the noiseless model plans on the true count
    plain = privatize(data, "hetedp", epsilon=None, seed=0, edge_type=HETERO_EDGE_TYPE, epochs=1, batch_size=4)
    assert plain.details["dpsgd"]["expected_batch"] == 4 and plain.details["dpsgd"]["noise_multiplier"] == 0
