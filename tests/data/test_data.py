import os
import urllib.error
from pathlib import Path

import pytest
import torch
import torch_geometric.datasets
from torch_geometric.data import Data

from privgraph.data import (
    DATA_ENV,
    DatasetUnavailableError,
    load,
    minmax_normalize,
    one_hot_degree,
    sbm_graph,
    stratified_split,
)

SHARED = os.environ.get(DATA_ENV)
needs_data = pytest.mark.skipif(
    not SHARED or not (Path(SHARED) / "Cora" / "raw").is_dir(), reason=f"{DATA_ENV} with Cora raw files not set"
)


def test_sbm_graph_is_undirected_homophilous_and_split():
    data = sbm_graph(num_nodes=1200, num_classes=3, num_features=20, avg_degree=10, homophily=0.9, seed=3)
    assert data.is_undirected() and not data.has_self_loops()
    same = (data.y[data.edge_index[0]] == data.y[data.edge_index[1]]).float().mean()
    assert 0.85 < float(same) < 0.95
    avg_deg = data.edge_index.shape[1] / data.num_nodes
    assert 8.5 < avg_deg < 11.5
    assert int(data.train_mask.sum()) == 600 and int((data.train_mask & data.test_mask).sum()) == 0
    again = sbm_graph(num_nodes=1200, num_classes=3, num_features=20, avg_degree=10, homophily=0.9, seed=3)
    assert torch.equal(data.edge_index, again.edge_index) and torch.equal(data.x, again.x)


def test_stratified_split_ratios_per_class():
    y = torch.arange(400) % 4
    data = stratified_split(Data(y=y, num_nodes=400), 0.5, 0.25, seed=1)
    for c in range(4):
        idx = y == c
        assert int(data.train_mask[idx].sum()) == 50 and int(data.val_mask[idx].sum()) == 25
    masks = data.train_mask.int() + data.val_mask.int() + data.test_mask.int()
    assert torch.all(masks == 1)
    other = stratified_split(Data(y=y, num_nodes=400), seed=2)
    assert not torch.equal(other.train_mask, data.train_mask)
    with pytest.raises(ValueError):
        stratified_split(Data(y=y, num_nodes=400), 0.8, 0.3)


def test_minmax_normalize_drops_constant_columns_and_records_it():
    x = torch.tensor([[1.0, 5.0, 2.0], [3.0, 5.0, 4.0], [2.0, 5.0, 0.0]])
    data = minmax_normalize(Data(x=x))
    assert data.x.shape == (3, 2)
    assert float(data.x.min()) == 0.0 and float(data.x.max()) == 1.0
    assert data.normalization["dropped_constant_columns"] == 1
    assert data.feature_domain == (0.0, 1.0)


def test_one_hot_degree():
    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    oh = one_hot_degree(ei, 3)
    assert oh.argmax(1).tolist() == [1, 2, 1]


def test_unknown_dataset_and_unavailable_error(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="unknown homogeneous dataset 'nope'; choose from cora, "):
        load("nope")

    def offline(*args, **kwargs):
        raise urllib.error.URLError("network unreachable")

    monkeypatch.setattr(torch_geometric.datasets, "Planetoid", offline)
    monkeypatch.setenv("PRIVGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(DATA_ENV, raising=False)
    with pytest.raises(DatasetUnavailableError, match=f"Cora.*{DATA_ENV}"):
        load("cora")


@needs_data
def test_cora_loads_from_data_folder_without_writing_there(monkeypatch, tmp_path):
    raw = Path(SHARED) / "Cora"
    before = sorted(p.name for p in raw.rglob("*"))
    monkeypatch.setenv("PRIVGRAPH_CACHE", str(tmp_path / "cache"))
    data = load("cora", seed=0)
    assert data.num_nodes == 2708 and data.edge_index.shape[1] == 10556 and int(data.y.max()) == 6
    assert data.x.shape[1] == 1433 - data.normalization["dropped_constant_columns"]
    assert float(data.x.min()) >= 0.0 and float(data.x.max()) <= 1.0
    assert (tmp_path / "cache" / "datasets" / "Cora" / "processed").is_dir()
    assert sorted(p.name for p in raw.rglob("*")) == before
    n_train = int(data.train_mask.sum())
    assert abs(n_train - 1354) <= 7
    public = load("cora", split="public")
    assert int(public.train_mask.sum()) == 140 and int(public.test_mask.sum()) == 1000


@needs_data
def test_citeseer_counts(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVGRAPH_CACHE", str(tmp_path / "cache"))
    data = load("citeseer")
    assert data.num_nodes == 3327 and data.edge_index.shape[1] == 9104


@needs_data
def test_facebook_self_loops_are_removed_and_counted(monkeypatch, tmp_path):
    from torch_geometric.utils import contains_self_loops, is_undirected

    monkeypatch.setenv("PRIVGRAPH_CACHE", str(tmp_path / "cache"))
    data = load("facebook")
    assert data.removed_self_loops > 0 and not contains_self_loops(data.edge_index)
    assert is_undirected(data.edge_index, num_nodes=data.num_nodes)
