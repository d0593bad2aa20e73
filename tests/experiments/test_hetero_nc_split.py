"""The hetero-nc task's ``split="hetedp"`` (the HeteDP authors' random 20/10/70 node split,
``data/dataprepro.py`` in github AixWinnie/HeteDP) and metapath2vec's walk settings as method
parameters: sizes, disjointness, reproducibility, wiring into the task, and bad input."""

import math

import numpy as np
import pytest
import torch
from sklearn.model_selection import train_test_split

from privgraph.data.hetero import hetedp_node_split
from privgraph.experiments import ExperimentSpec, run_experiment
from privgraph.experiments.tasks import hetero_nc as tasks_module
from privgraph.methods import get_method
from privgraph.methods.hetedp import baselines
from privgraph.methods.hetedp.baselines import WalkSettings


def _authors_split_idx(samples, train_size, val_size, random_state):
    """The authors' ``split_idx`` (data/dataprepro.py), transcribed: the reference of our helper."""
    train, val = train_test_split(samples, train_size=train_size, random_state=random_state)
    if isinstance(val_size, float):
        val_size *= len(samples) / len(val)
    val, test = train_test_split(val, train_size=val_size, random_state=random_state)
    return train, val, test


@pytest.mark.parametrize("n", [4057, 4278, 3025, 101])  # MAGNN DBLP authors, IMDB movies, HGB ACM papers
def test_the_split_has_the_stated_sizes_and_is_a_partition(n):
    train, val, test = hetedp_node_split(n, seed=3)
    assert train.shape == val.shape == test.shape == (n,) and train.dtype == torch.bool
    assert int(train.sum()) == math.floor(0.2 * n)  # scikit-learn floors the training share
    assert abs(int(val.sum()) - 0.1 * n) < 1
    assert int(test.sum()) == n - int(train.sum()) - int(val.sum())
    assert not (train & val).any() and not (train & test).any() and not (val & test).any()
    assert bool((train | val | test).all())


def test_the_split_is_the_authors_and_reproducible_from_the_seed():
    n = 4057
    for seed in (0, 42):  # 42: the seed their DBLP and IMDB loaders pass
        ref = _authors_split_idx(np.arange(n), 0.2, 0.1, seed)
        for mask, idx in zip(hetedp_node_split(n, seed), ref):
            assert torch.equal(mask.nonzero().flatten(), torch.from_numpy(np.sort(idx)))
    a, b, c = hetedp_node_split(n, 7), hetedp_node_split(n, 7), hetedp_node_split(n, 8)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], c[0])  # another seed, another split


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_nodes=2), "at least 3"),
        (dict(num_nodes=100, train_ratio=0.0), "train_ratio"),
        (dict(num_nodes=100, train_ratio=0.6, val_ratio=0.4), "train_ratio"),
    ],
)
def test_the_split_refuses_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        hetedp_node_split(seed=0, **kwargs)


def test_nc_masks_split_only_the_labelled_nodes():
    from torch_geometric.data import HeteroData

    data = HeteroData()
    data["paper"].y = torch.tensor([0, 1, -1, 2] * 25)
    data["paper"].num_nodes = 100
    train, val, test = tasks_module._nc_masks(data, "paper", 5, "hetedp")
    labelled = data["paper"].y >= 0
    assert not ((train | val | test) & ~labelled).any() and bool((train | val | test)[labelled].all())
    assert (int(train.sum()), int(val.sum()), int(test.sum())) == (15, 7, 53)
    with pytest.raises(ValueError, match="unknown node-classification split"):
        tasks_module._nc_masks(data, "paper", 5, "public")


def test_the_task_trains_and_scores_on_the_chosen_split(monkeypatch):
    """split="hetedp" reaches the classifier (20 % of the synthetic graph's papers train it, a new
    split per trial seed) and is recorded; the embeddings do not depend on the split."""
    seen = {}
    real = tasks_module._nc_masks

    def spy(data, target, seed, split="random"):
        masks = real(data, target, seed, split)
        seen.setdefault(split, []).append((seed, [int(m.sum()) for m in masks], masks[0]))
        return masks

    def fake(edge_index_dict, metapath, num_nodes_dict, seed, epochs=10, walks=None):
        g = torch.Generator().manual_seed(seed)
        return {"paper": torch.randn(num_nodes_dict["paper"], 8, generator=g)}

    monkeypatch.setattr(tasks_module, "_nc_masks", spy)
    monkeypatch.setattr(baselines, "metapath2vec_embeddings", fake)
    res = run_experiment(ExperimentSpec(method="metapath2vec", task="nc", trials=2, split="hetedp"))
    assert [r.config["split"] for r in res.records] == ["hetedp", "hetedp"]
    (s0, sizes, train0), (s1, _, train1) = seen["hetedp"]
    n = sum(sizes)
    assert (s0, s1) == (0, 1) and sizes[0] == math.floor(0.2 * n) and not torch.equal(train0, train1)
    run_experiment(ExperimentSpec(method="metapath2vec", task="nc", trials=1))
    assert abs(seen["random"][0][1][0] - n / 2) <= 3  # the synthetic graph's own stratified 50/25/25


def test_split_is_refused_where_it_means_nothing():
    with pytest.raises(ValueError, match="split must be one of"):
        ExperimentSpec(method="metapath2vec", task="nc", split="public").validate()
    with pytest.raises(ValueError, match="does not take split"):
        ExperimentSpec(method="metapath2vec", task="lp", split="hetedp").validate()
    ExperimentSpec(method="rgcn", task="nc", split="hetedp").validate()  # any hetero-nc method


def test_walk_settings_are_metapath2vec_parameters(monkeypatch):
    assert get_method("metapath2vec").params.walks() == WalkSettings()  # defaults: the stored rows' settings
    walks = get_method("metapath2vec", embedding_dim=16, walk_length=8, context_size=3, walks_per_node=2).params.walks()
    assert (walks.embedding_dim, walks.walk_length, walks.context_size, walks.walks_per_node) == (16, 8, 3, 2)
    for bad, match in (
        (dict(context_size=30), "context_size"),
        (dict(walks_per_node=0), "walks_per_node"),
        (dict(window=7), "no parameter"),
    ):
        with pytest.raises(ValueError, match=match):
            get_method("metapath2vec", **bad)
    seen = []

    def fake(edge_index_dict, metapath, num_nodes_dict, seed, epochs=10, walks=None):
        seen.append(walks)
        return {"paper": torch.randn(num_nodes_dict["paper"], 4, generator=torch.Generator().manual_seed(seed))}

    monkeypatch.setattr(baselines, "metapath2vec_embeddings", fake)
    run_experiment(ExperimentSpec(method="metapath2vec", task="nc", trials=1, params={"walks_per_node": 2}))
    assert seen == [WalkSettings(walks_per_node=2)]


def test_the_walk_settings_reach_pyg():
    """A small real run: the embedding has the asked dimension."""
    from torch_geometric.data import HeteroData

    data = HeteroData()
    n = 30
    ei = torch.stack([torch.arange(n), torch.arange(n) % 5])
    data["paper", "to", "author"].edge_index, data["author", "to", "paper"].edge_index = ei, ei.flip(0)
    path = [("paper", "to", "author"), ("author", "to", "paper")]
    z = baselines.metapath2vec_embeddings(
        data.edge_index_dict,
        path,
        {"paper": n, "author": 5},
        seed=0,
        epochs=1,
        walks=WalkSettings(embedding_dim=12, walk_length=4, context_size=3, walks_per_node=1, num_negative_samples=1),
    )
    assert z["paper"].shape == (n, 12)
