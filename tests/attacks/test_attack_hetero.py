"""Attacks against the heterogeneous methods: the views (truth), the targets' answers, attacks above
chance on the planted heterogeneous SBM, the guarantee in the threat model, refusals, the CLI."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import HeteroData
from typer.testing import CliRunner

from privgraph.attacks import get_attack
from privgraph.attacks.hetero import (
    classifier_target,
    link_model_target,
    relation_pairs,
    relation_view,
    target_type_view,
)
from privgraph.attacks.link import LinkCandidates
from privgraph.cli import app
from privgraph.data import hetero_sbm_graph
from privgraph.data.hetero_splits import labelled_node_masks
from privgraph.experiments import ExperimentSpec, run_experiment
from privgraph.nn.hetero import RGCNClassifier
from privgraph.train import train_node_classifier

PA, AP = ("paper", "to", "author"), ("author", "to", "paper")


def _pairs(ei: torch.Tensor) -> set:
    return set(map(tuple, ei.T.tolist()))


def _tiny() -> HeteroData:
    data = HeteroData()
    data["paper"].num_nodes, data["author"].num_nodes = 4, 3
    data[PA].edge_index = torch.tensor([[0, 1, 2, 3, 3, 0], [0, 0, 1, 1, 0, 0]])  # p0–a0 twice
    data[AP].edge_index = data[PA].edge_index.flip(0)
    return data


def test_relation_pairs_is_the_metapath_through_the_protected_relation():
    data = _tiny()
    expected = {(0, 1), (0, 3), (1, 3), (2, 3)}  # papers sharing an author, both directions, no self-loop
    got = relation_pairs(data, "paper", PA)
    assert _pairs(got) == expected | {(v, u) for u, v in expected}
    assert _pairs(relation_pairs(data, "paper", AP)) == _pairs(got)  # the same from the reverse's side
    # authors sharing a paper: a0–a1 through p3
    assert _pairs(relation_pairs(data, "author", PA)) == {(0, 1), (1, 0)}
    data["paper", "cites", "paper"].edge_index = torch.tensor([[0, 2], [1, 2]])
    assert _pairs(relation_pairs(data, "paper", ("paper", "cites", "paper"))) == {(0, 1), (1, 0)}
    data["subject"].num_nodes = 2
    with pytest.raises(ValueError, match="does not touch"):
        relation_pairs(data, "subject", PA)


def test_relation_view_is_bipartite_with_the_training_edges_secret():
    data = _tiny()
    secret = torch.tensor([[0, 2], [0, 1]])  # p0–a0 and p2–a1 trained on; the others held out
    view = relation_view(data, PA, secret)
    assert view.num_nodes == 7 and view.bipartite == 4
    links = LinkCandidates(_truth_target(view))
    assert set(links.secret.tolist()) == {0 * 7 + 4, 2 * 7 + 5}
    assert set(links.public.tolist()) == {1 * 7 + 4, 3 * 7 + 5, 3 * 7 + 4}
    negatives = links.non_links(5, np.random.default_rng(0))  # 4·3 pairs, 5 edges
    u, v = links.split(negatives)
    assert (u < 4).all() and (v >= 4).all() and not np.isin(negatives, links.edges).any()
    with pytest.raises(ValueError, match="fewer than"):
        links.non_links(8, np.random.default_rng(0))


def _truth_target(truth):
    from privgraph.attacks import Target

    return Target(method="test", truth=truth, embeddings=torch.zeros(truth.num_nodes, 2))


@pytest.fixture(scope="module")
def rgcn_target():
    """A non-private RGCN on the planted heterogeneous SBM (papers of 3 classes whose authors are mostly of
    their class), the dataset's protected relation paper–author."""
    data = hetero_sbm_graph(num_papers=150, num_authors=100, seed=3)
    masks = labelled_node_masks(data, "paper", 0, train_ratio=0.5, val_ratio=0.1)
    torch.manual_seed(0)
    inputs = {"paper": data["paper"].x, "author": data["author"].x, "subject": torch.eye(6)}
    model = RGCNClassifier({t: x.shape[1] for t, x in inputs.items()}, 32, 3, data.metadata(), "paper")
    y = data["paper"].y
    train_node_classifier(
        model, inputs, data.edge_index_dict, y, y, *masks, lr=0.01, weight_decay=0.0, epochs=150, patience=None
    )
    truth = target_type_view(data, "paper", PA, masks)
    target = classifier_target("rgcn", truth, model, inputs, data.edge_index_dict, "paper", "the input graph: none")
    return data, model, inputs, target


def test_classifier_target_answers_the_target_type_over_the_server_graph(rgcn_target):
    data, model, inputs, target = rgcn_target
    post = target.posteriors()
    assert post.shape == (150, 3) and torch.allclose(post.sum(1), torch.ones(150))
    model.eval()
    with torch.no_grad():
        direct = model(inputs, data.edge_index_dict).softmax(-1)
    assert torch.allclose(post, direct)
    # a query's features of paper 0 change the answers of its co-authored papers, through the graph
    x = target.x.clone()
    x[0] = 1 - x[0]
    moved = (target.log_posteriors_fresh(x) - target.log_posteriors()).abs().sum(1)
    neighbours = target.truth.edge_index[1][target.truth.edge_index[0] == 0]
    assert moved[neighbours].min() > 0
    assert target.representation("hidden").shape == (150, 32)
    assert target.truth.edge_index.shape[1] == relation_pairs(data, "paper", PA).shape[1]


def test_link_stealing_and_linkteller_beat_chance_on_the_metapath(rgcn_target):
    target = rgcn_target[3]
    stealing = get_attack("link-stealing").run(target, seed=0)
    assert stealing.metrics["attack_auc"] > 0.6
    teller = get_attack("linkteller", nodes=60).run(target, seed=0)
    assert teller.metrics["attack_auc"] > 0.6
    assert stealing.threat_model.answers == "the input graph: none"


def test_link_model_target_scores_pairs_by_the_inner_product():
    data = _tiny()
    z = {"paper": torch.randn(4, 3, generator=torch.Generator().manual_seed(0)), "author": torch.randn(3, 3)}
    view = relation_view(data, PA, data[PA].edge_index[:, :2])
    target = link_model_target("hetedp", view, z, PA, "answers")
    assert target.embeddings.shape == (7, 3)
    u, v = np.array([0, 3]), np.array([4, 6])
    expected = [(z["paper"][0] * z["author"][0]).sum(), (z["paper"][3] * z["author"][2]).sum()]
    assert np.allclose(target.pair_score(u, v), expected, atol=1e-6)
    with pytest.raises(ValueError, match="inference API"):
        get_attack("membership-confidence").run(target, seed=0)


def test_link_score_needs_a_link_predictor(rgcn_target):
    with pytest.raises(ValueError, match="predicts no links"):
        get_attack("link-score").run(rgcn_target[3], seed=0)


HETEDP_LP = {"batch_size": 64, "epochs": 10}


def test_pipeline_attacks_state_the_guarantee_and_beat_chance():
    """HeteDP's HAN on features released with ε = 1: membership-shadow runs and the threat model names the
    feature guarantee; HeteDP's link model without noise: its own score finds the training edges."""
    shadow = run_experiment(
        ExperimentSpec(
            method="hetedp",
            epsilons=[1.0],
            trials=1,
            hyperparameters={"epochs": 20},
            attack="membership-shadow",
            attack_params={"classifier_iterations": 50},
        )
    )
    rec = shadow.records[0]
    answers = rec.config["attack"]["threat_model"]["answers"]
    assert "HAN over the metapath graphs" in answers and "(1, 1e-05)-DP per node feature vector" in answers
    details = rec.config["attack"]["details"]
    assert 0 <= rec.metrics["attack_auc"] <= 1 and details["shadow_nodes"] >= 20 and details["shadow_accuracy"] > 0.5
    link = run_experiment(
        ExperimentSpec(method="hetedp", task="lp", trials=1, params=HETEDP_LP, attack="link-score")
    ).records[0]
    assert link.metrics["attack_auc"] > 0.6
    answers = link.config["attack"]["threat_model"]["answers"]
    assert "HeteDP's released link model" in answers and "no protection" in answers
    assert link.config["attack"]["details"]["public_edges"] > 0  # the held-out edges are not candidates


def test_lp_baseline_answers_with_its_best_epoch_embeddings():
    """RGCN trained for link prediction passes messages over the relation's training edges: its own score
    finds them, and the threat model says nothing is protected."""
    rec = run_experiment(
        ExperimentSpec(method="rgcn", task="lp", trials=1, hyperparameters={"epochs": 30}, attack="link-score")
    ).records[0]
    assert rec.metrics["attack_auc"] > 0.6 and 0 <= rec.metrics["roc_auc"] <= 1
    answers = rec.config["attack"]["threat_model"]["answers"]
    assert "rgcn's link predictor" in answers and "no protection" in answers


@pytest.mark.parametrize(
    "spec,message",
    [
        (dict(method="hetedp", task="lp", attack="membership-confidence"), "link model"),
        (dict(method="rgcn", task="lp", attack="linkteller"), "pair scores"),
        (dict(method="metapath2vec", attack="membership-shadow"), "fixed embeddings"),
        (dict(method="rgcn", attack="link-score"), "node classifier"),
        (dict(method="hgt", attack="attribute"), "carry none"),
        (dict(method="hetedp", params={"nc_model": "link-vgae"}, attack="link-stealing"), "--task lp"),
    ],
)
def test_meaningless_combinations_are_refused_with_the_reason(spec, message):
    with pytest.raises(ValueError, match=message):
        ExperimentSpec(**spec).validate()


def test_api_attack_on_a_heterogeneous_release_says_where_its_targets_are():
    import privgraph as pg

    data = hetero_sbm_graph(num_papers=40, num_authors=30)
    release = pg.privatize(data, "hetedp-features", epsilon=1.0, seed=0)
    with pytest.raises(ValueError, match="heterogeneous method: its targets are trained by a task"):
        pg.attack(release, "link-stealing", truth=data)


def test_cli_attacks_metapath2vec_link_predictor(tmp_path):
    args = ["attack", "link-stealing", "--method", "metapath2vec", "--task", "lp", "--trials", "1"]
    res = CliRunner().invoke(
        app, [*args, "--param", "walks_per_node=2", "--db", str(tmp_path / "r.db"), "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    metrics = {r["metric"]: r["mean"] for r in out["results"]}
    assert metrics["attack_auc"] > 0.6 and "roc_auc" in metrics
    assert "metapath2vec's link predictor" in out["attack"]["threat_model"]["answers"]


SHARED = os.environ.get("PRIVGRAPH_DATA")


@pytest.mark.skipif(not (SHARED and Path(SHARED, "HGB", "acm", "raw").exists()), reason="needs $PRIVGRAPH_DATA/HGB/acm")
def test_acm_metapath_view():
    from privgraph.data.hetero import load_hetero

    data = load_hetero("acm", seed=0)
    view = target_type_view(data, "paper", PA)
    assert view.num_nodes == data["paper"].num_nodes and view.edge_index.shape[1] > 0
    assert not (view.edge_index[0] == view.edge_index[1]).any()
