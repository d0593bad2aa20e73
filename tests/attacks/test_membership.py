"""Membership inference (confidence and shadow) against a planted SBM: it finds the members of an
overfit target, is at chance against a target that never trained on the "members", and is
reproducible from its seed."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from privgraph.attacks import ATTACKS, METRICS, Target, get_attack, train_target
from privgraph.attacks.membership import MembershipConfidence, MembershipShadow, membership_candidates
from privgraph.methods import Hyperparameters, get_method

# No dropout or weight decay, 40 training nodes of 400, 500 weak features, homophily 0.5:
# training accuracy 1.0, test accuracy about 0.5 (4 classes).
OVERFIT = Hyperparameters(dropout=0.0, weight_decay=0.0, epochs=200, patience=200, hidden=64)
ATTACK_CLASSES = [MembershipConfidence, MembershipShadow]


# the graph of these tests, the sbm fixture's base arguments (a test overrides some of them)
PLANTED = {
    "num_nodes": 400,
    "num_classes": 4,
    "num_features": 500,
    "feature_signal": 0.03,
    "homophily": 0.5,
    "train_ratio": 0.1,
    "val_ratio": 0.1,
}


@pytest.fixture(scope="module", params=[0, 1])
def overfit(request, sbm) -> Target:
    return train_target(get_method("gcn-raw"), sbm(PLANTED, seed=request.param), None, request.param, hp=OVERFIT)


def auc_standard_error(n_pos: int, n_neg: int, auc: float = 0.5) -> float:
    """Hanley & McNeil (1982): the standard error of the AUC (Mann–Whitney) for these counts."""
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    var = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc**2) + (n_neg - 1) * (q2 - auc**2)) / (n_pos * n_neg)
    return math.sqrt(var)


@pytest.mark.parametrize("cls", ATTACK_CLASSES)
def test_attacks_find_the_members_of_an_overfit_target(overfit, cls):
    p = overfit.posteriors()
    truth = overfit.truth
    train_acc = (p[truth.train_mask].argmax(1) == truth.y[truth.train_mask]).float().mean()
    test_acc = (p[truth.test_mask].argmax(1) == truth.y[truth.test_mask]).float().mean()
    assert train_acc - test_acc > 0.3  # the premise: an overfit target
    result = cls().run(overfit, seed=3)
    n = int(truth.train_mask.sum())  # fewer members than non-members: all of them are candidates
    assert result.truth.tolist() == [1] * n + [0] * n and result.details["candidates"] == 2 * n
    assert set(result.metrics) == set(METRICS)
    assert result.metrics["attack_auc"] > 0.75  # observed 0.90–0.96
    assert set(np.unique(result.predicted)) <= {0, 1}


def test_confidence_scores_and_median_rule(overfit):
    result = MembershipConfidence().run(overfit, seed=0)
    assert np.all((result.scores > 0) & (result.scores <= 1))
    assert result.predicted.sum() == result.truth.size // 2  # the top half of the candidates
    assert result.scores[result.predicted == 1].min() >= result.scores[result.predicted == 0].max()
    assert "median" in result.details["decision"]


def test_shadow_trains_on_a_graph_disjoint_from_the_members(overfit):
    seen = []

    def recording_shadow(aux, seed):
        seen.append(aux)
        return overfit.shadow(aux, seed)

    truth = overfit.truth.clone()
    truth.node_id = torch.arange(truth.num_nodes)
    target = dataclasses.replace(overfit, truth=truth, shadow=recording_shadow)
    result = MembershipShadow(shadow_nodes=200).run(target, seed=0)
    (aux,) = seen
    assert aux.num_nodes == 200 == result.details["shadow_nodes"]
    assert not truth.train_mask[aux.node_id].any()  # no member of the target in the attacker's graph
    candidates, _ = membership_candidates(truth, None, np.random.default_rng(0))  # the run's first draw
    assert not np.isin(aux.node_id.numpy(), candidates).any()  # nor an evaluated candidate
    assert torch.equal(aux.x, truth.x[aux.node_id]) and torch.equal(aux.y, truth.y[aux.node_id])
    assert aux.train_mask.any() and aux.test_mask.any()  # its own split
    assert 0 <= result.details["shadow_accuracy"] <= 1
    assert result.metrics["attack_auc"] > 0.6


@pytest.mark.parametrize("cls", ATTACK_CLASSES)
def test_chance_against_a_target_that_never_saw_the_members(cls, sbm):
    target = train_target(get_method("gcn-raw"), sbm(PLANTED, seed=0), None, 0, hp=OVERFIT)
    truth = target.truth.clone()
    unseen = truth.test_mask.nonzero().flatten()  # nodes the model never trained on
    unseen = unseen[torch.randperm(unseen.numel(), generator=torch.Generator().manual_seed(5))]
    half = unseen.numel() // 2
    truth.train_mask = torch.zeros_like(truth.train_mask)
    truth.train_mask[unseen[:half]] = True  # "members" it never trained on
    truth.test_mask = torch.zeros_like(truth.test_mask)
    truth.test_mask[unseen[half : 2 * half]] = True
    result = cls().run(dataclasses.replace(target, truth=truth), seed=0)
    assert result.truth.sum() == half  # 160 of each
    se = auc_standard_error(half, half)  # 0.032
    assert abs(result.metrics["attack_auc"] - 0.5) < 4 * se


@pytest.mark.parametrize("cls", ATTACK_CLASSES)
def test_reproducible_from_the_seed(overfit, cls):
    a, b, c = (cls(max_candidates=30).run(overfit, seed=s) for s in (7, 7, 8))
    assert np.array_equal(a.scores, b.scores) and np.array_equal(a.predicted, b.predicted)
    assert a.metrics == b.metrics
    assert not np.array_equal(a.scores, c.scores)
    assert a.truth.size == 60


def test_candidates_are_balanced_and_follow_the_seed(sbm):
    data = sbm(PLANTED, seed=0)
    nodes, truth = membership_candidates(data, None, np.random.default_rng(0))
    n = int(data.train_mask.sum())
    assert truth.sum() == n and truth.size == 2 * n and np.unique(nodes).size == 2 * n
    assert data.train_mask[nodes[truth == 1]].all() and data.test_mask[nodes[truth == 0]].all()
    again, _ = membership_candidates(data, None, np.random.default_rng(0))
    other, _ = membership_candidates(data, None, np.random.default_rng(1))
    assert np.array_equal(nodes, again)
    assert set(other[n:]) != set(nodes[n:])  # another sample of the non-members
    few, few_truth = membership_candidates(data, 10, np.random.default_rng(0))
    assert few.size == 20 and few_truth.sum() == 10


@pytest.mark.parametrize("cls", ATTACK_CLASSES)
def test_threat_model_and_registry(overfit, cls):
    result = cls().run(overfit, seed=0)
    tm = result.threat_model
    assert tm.queries and tm.knowledge and tm.answers == overfit.answers
    assert result.attack == cls.name and ATTACKS[cls.name] is cls
    assert cls.family == "membership" and cls.needs_model and cls.info()["metrics"] == list(METRICS)


def test_bad_input_is_refused(overfit, sbm):
    data = sbm(PLANTED, seed=0)
    embeddings = Target(method="x", truth=data, embeddings=torch.randn(data.num_nodes, 8))
    for cls in ATTACK_CLASSES:
        with pytest.raises(ValueError, match="inference API"):
            cls().run(embeddings, seed=0)
    available = int((~overfit.truth.train_mask).sum())  # more than the attacker may use (candidates excluded)
    with pytest.raises(ValueError, match="exceeds"):
        MembershipShadow(shadow_nodes=available + 1).run(overfit, seed=0)
    with pytest.raises(ValueError, match="shadow_nodes must be >= 20, got 5"):
        MembershipShadow(shadow_nodes=5)
    with pytest.raises(ValueError, match="shadow"):
        MembershipShadow().run(dataclasses.replace(overfit, shadow=None), seed=0)
    with pytest.raises(ValueError, match="no parameter"):
        MembershipShadow(bogus=1)
    with pytest.raises(ValueError, match="no parameter"):
        get_attack("membership-confidence", shadow_nodes=100)
    with pytest.raises(ValueError, match="max_candidates"):
        MembershipConfidence(max_candidates=0)
    no_split = overfit.truth.clone()
    del no_split.test_mask
    with pytest.raises(ValueError, match="test_mask"):
        MembershipConfidence().run(dataclasses.replace(overfit, truth=no_split), seed=0)
    no_members = overfit.truth.clone()
    no_members.train_mask = torch.zeros_like(no_members.train_mask)
    with pytest.raises(ValueError, match="members and non-members"):
        MembershipConfidence().run(dataclasses.replace(overfit, truth=no_members), seed=0)
