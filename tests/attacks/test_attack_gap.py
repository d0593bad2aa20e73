"""Attacks against GAP targets (train_target): link stealing and LinkTeller against gap-edp, membership
inference against gap-ndp (its released encoder and classifier, aggregating over the server's graph).  A
gap-edp target answers from the release's cached hop tables, so LinkTeller's
feature perturbations move only the perturbed rows (no influence: chance), while link stealing reads the
posteriors the noisy aggregates produce (well above chance without noise, lower at a small ε)."""

import pytest

from privgraph.attacks import get_attack, train_target
from privgraph.attacks.membership import MembershipConfidence
from privgraph.methods import get_method

FAST = {"encoder_epochs": 30, "epochs": 40}


@pytest.fixture(scope="module")
def graph(sbm):
    return sbm(num_nodes=300, num_features=60, feature_signal=0.1, avg_degree=10, seed=0)


def test_link_attacks_against_gap_edp(graph):
    inf = train_target(get_method("gap-edp", **FAST), graph, None, 0)
    small = train_target(get_method("gap-edp", **FAST), graph, 0.5, 0)
    assert "cached noisy aggregates" in inf.answers and "no further budget" in small.answers
    stealing = {name: get_attack("link-stealing").run(t, seed=0) for name, t in (("inf", inf), ("small", small))}
    assert stealing["inf"].metrics["attack_auc"] > 0.7
    assert stealing["small"].metrics["attack_auc"] < stealing["inf"].metrics["attack_auc"]
    teller = get_attack("linkteller", nodes=100).run(inf, seed=0)
    assert abs(teller.metrics["attack_auc"] - 0.5) < 0.1  # cached tables: a query's features reach no other node


def test_membership_inference_against_gap_ndp(graph):
    within = {"max_degree": graph.num_nodes, "num_train": int(graph.train_mask.sum())}  # the bounded-degree domain
    target = train_target(get_method("gap-ndp", batch_size=32, **within, **FAST), graph, 4.0, 0)
    assert "GAPNodeModel" in target.answers  # the released modules answer over the server's graph
    result = MembershipConfidence().run(target, seed=0)
    assert 0.0 <= result.metrics["attack_auc"] <= 1.0
    assert 0.3 < result.metrics["attack_auc"] < 0.7  # a DP-SGD classifier at ε = 4 on 150 members: near chance
