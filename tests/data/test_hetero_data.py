"""Heterogeneous graphs (HeteDP): loaders, task definitions, disjoint link splits."""

import os
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from privgraph.data import DATA_ENV, hetero_sbm_graph
from privgraph.data.datasets import DatasetSpec, load_spec
from privgraph.data.hetero import HeteroTask, link_split, load_hetero
from privgraph.data.registry import HETEROGENEOUS, get_dataset, list_datasets

SHARED = os.environ.get(DATA_ENV)


def _has(*parts: str) -> bool:
    return bool(SHARED) and Path(SHARED, *parts).exists()


def _pairs(ei: torch.Tensor) -> set:
    return set(map(tuple, ei.T.tolist()))


TASK = HeteroTask("paper", ("paper", "to", "author"), ("author", "to", "paper"))


def test_link_split_is_disjoint_and_test_edges_never_pass_messages():
    data = hetero_sbm_graph(seed=0)
    et, rev = TASK.edge_type, TASK.reverse
    train, val, test = link_split(data, TASK, 0.1, 0.2, seed=0)
    pos = {
        name: _pairs(d[et].edge_label_index[:, d[et].edge_label == 1])
        for name, d in (("train", train), ("val", val), ("test", test))
    }
    assert not (pos["train"] & pos["val"]) and not (pos["train"] & pos["test"]) and not (pos["val"] & pos["test"])
    assert pos["train"] | pos["val"] | pos["test"] == _pairs(data[et].edge_index)
    assert len(pos["test"]) == pytest.approx(0.2 * data[et].num_edges, abs=1)
    for split in (train, val):  # message passing: training edges only, in both directions
        assert _pairs(split[et].edge_index) == pos["train"]
        assert _pairs(split[rev].edge_index.flip(0)) == pos["train"]
    assert _pairs(test[et].edge_index) == pos["train"] | pos["val"]
    assert not (_pairs(test[rev].edge_index.flip(0)) & pos["test"])
    # negatives: as many as positives, and not edges
    labels = val[et].edge_label
    assert int(labels.sum()) * 2 == labels.numel()
    # seeded
    again = link_split(data, TASK, 0.1, 0.2, seed=0)[2]
    assert torch.equal(
        again[et].edge_label_index[:, again[et].edge_label == 1], test[et].edge_label_index[:, test[et].edge_label == 1]
    )


def test_link_split_bad_inputs():
    data = hetero_sbm_graph(seed=0)
    with pytest.raises(ValueError, match="not in the graph"):
        link_split(data, HeteroTask("paper", ("paper", "cites", "paper"), ("paper", "cites", "paper")))
    with pytest.raises(ValueError, match="val_ratio"):
        link_split(data, TASK, 0.5, 0.6)
    with pytest.raises(ValueError, match="unknown heterogeneous dataset"):
        load_hetero("nope")


def test_zipped_raw_files_unpack_into_the_cache_not_beside_the_zip(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    (shared / "Z").mkdir(parents=True)
    with zipfile.ZipFile(shared / "Z" / "TOY.zip", "w") as z:
        z.writestr("info.dat", "hello")
    cache = tmp_path / "cache"
    monkeypatch.setenv("PRIVGRAPH_CACHE", str(cache))
    seen = {}

    def factory(folder: str):
        seen["files"] = sorted(p.name for p in Path(folder, "raw", "TOY").iterdir())
        return [SimpleNamespace()]

    assert load_spec(DatasetSpec("toy", "Z", factory), shared).name == "toy"
    assert seen["files"] == ["info.dat"]
    assert sorted(p.name for p in (shared / "Z").iterdir()) == ["TOY.zip"]


def hetero(name: str):
    return get_dataset(name, HETEROGENEOUS)


def test_every_metapath_is_a_chain_from_the_classified_type():
    for info in list_datasets(HETEROGENEOUS):
        start = info.hetero.node_type or "item"
        for path in info.metapaths.values():
            assert path[0][0] == start and path[-1][2] == start
            assert all(a[2] == b[0] for a, b in zip(path, path[1:]))


@pytest.mark.skipif(not _has("HeteDP", "Amazon"), reason="needs $PRIVGRAPH_DATA/HeteDP/Amazon")
def test_amazon_counts_match_table_ii():
    d = load_hetero("amazon")
    assert {t: d[t].num_nodes for t in ("user", "item", "view", "category")} == {
        "user": 6170,
        "item": 2753,
        "view": 3857,
        "category": 22,
    }
    assert d["user", "rates", "item"].num_edges == 195791 == d["item", "rev_rates", "user"].num_edges
    assert d["item", "has_view", "view"].num_edges == 5694 and d["item", "has_category", "category"].num_edges == 5508
    for path in hetero("amazon").metapaths.values():
        assert all(et in d.edge_types for et in path)


@pytest.mark.skipif(not _has("IMDB", "raw"), reason="needs $PRIVGRAPH_DATA/IMDB/raw")
def test_imdb_magnn_counts_match_table_ii():
    d = load_hetero("imdb-magnn")
    assert (d["movie"].num_nodes, d["actor"].num_nodes, d["director"].num_nodes) == (4278, 5257, 2081)
    assert d["movie", "to", "actor"].num_edges == 12828 and d["movie", "to", "director"].num_edges == 4278
    assert d["movie"].y.numel() == 4278
    for path in hetero("imdb-magnn").metapaths.values():
        assert all(et in d.edge_types for et in path)


@pytest.mark.skipif(not _has("HGB", "acm", "raw"), reason="needs $PRIVGRAPH_DATA/HGB/acm")
def test_hgb_acm_loads_with_both_directions():
    d = load_hetero("acm")
    assert d["paper"].num_nodes == 3025 and d["paper"].x.shape == (3025, 1902)
    assert d["paper", "to", "author"].num_edges == d["author", "to", "paper"].num_edges == 9949
    for path in hetero("acm").metapaths.values():
        assert all(et in d.edge_types for et in path)
    assert hetero("acm").hetero.edge_type in d.edge_types and hetero("acm").hetero.reverse in d.edge_types


def test_link_split_is_reproducible_whatever_pythons_random_state():
    """PyG's negative sampling reads Python's `random`: the split seeds it, so a seed is a split."""
    import random

    data, task = hetero_sbm_graph(seed=0), hetero("sbm").hetero
    random.seed(1)
    a = link_split(data, task, seed=3)
    random.seed(2)
    b = link_split(data, task, seed=3)
    et = task.edge_type
    for x, y in zip(a, b):
        assert torch.equal(x[et].edge_label_index, y[et].edge_label_index)


@pytest.mark.skipif(not _has("DBLP", "raw"), reason="needs $PRIVGRAPH_DATA/DBLP/raw")
def test_the_hetedp_loader_variant_keeps_the_graph_and_drops_the_other_types_features():
    """dblp-hetedp = dblp-magnn with features on authors only (the HeteDP authors' data/dblp.py)."""
    from privgraph.data.hetero import node_inputs

    base, variant = load_hetero("dblp-magnn"), load_hetero("dblp-hetedp")
    assert [t for t in variant.node_types if "x" in variant[t]] == ["author"]
    assert torch.equal(variant["author"].x, base["author"].x) and torch.equal(variant["author"].y, base["author"].y)
    for key in ("train_mask", "val_mask", "test_mask"):
        assert torch.equal(variant["author"][key], base["author"][key])
    assert variant.edge_types == base.edge_types
    for et in base.edge_types:
        assert torch.equal(variant[et].edge_index, base[et].edge_index)
    for t in base.node_types:
        assert variant[t].num_nodes == base[t].num_nodes
    inputs = node_inputs(variant, seed=0)
    assert torch.equal(inputs["author"], base["author"].x.float())
    assert not torch.equal(inputs["paper"][:, :2], base["paper"].x[:, :2].float())  # random rows, not the features
    assert hetero("dblp-hetedp").hetero == hetero("dblp-magnn").hetero
    assert hetero("dblp-hetedp").metapaths == hetero("dblp-magnn").metapaths
