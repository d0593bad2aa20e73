"""Heterogeneous graphs (PyG ``HeteroData``) for HeteDP: loaders, metapaths,
task definitions and disjoint link splits.

Datasets (``load_hetero(name)``):

* ``acm``, ``dblp``, ``imdb`` — the HGB benchmark (PyG ``HGBDataset``); raw
  files from ``$PRIVGRAPH_DATA/HGB/<name>/raw/<NAME>/`` (ACM) or the zip
  ``$PRIVGRAPH_DATA/HGB/<name>/<NAME>.zip`` (DBLP, IMDB), unpacked into the
  cache, never next to the zip;
* ``dblp-magnn``, ``imdb-magnn`` — MAGNN's preprocessing (PyG ``DBLP``,
  ``IMDB``), from ``$PRIVGRAPH_DATA/DBLP/raw`` and ``IMDB/raw``;
* ``dblp-hetedp`` — ``dblp-magnn`` with features on authors only, as the
  HeteDP authors' loader has them (:data:`VARIANTS`);
* ``amazon`` — HeteDP's user–item graph (``$PRIVGRAPH_DATA/HeteDP/Amazon``:
  ``user_item.dat`` with rating and timestamp, ``item_view.dat``,
  ``item_category.dat``, ``item_brand.dat``; comma-separated, no header).
  It has no node features.

Every loader returns both directions of each relation (``rev_…`` types added
where the source has only one) and at most one column per (source,
destination) pair in each relation (:func:`merge_duplicate_edges`; none of the
raw files we have holds a duplicate, ``data.merged_duplicate_edges`` = 0), so
the examples :func:`link_split` yields are duplicate-free.  :data:`TASKS`
names, per dataset, the node type classified (NC) and the edge type predicted
(LP), following HeteDP's Table II where the types exist, and
:data:`METAPATHS` the metapaths (as sequences of edge types) that start and
end at the NC type.  :func:`node_inputs` gives every node type an input
(featureless types: fixed random rows drawn from a seed).  :func:`hetedp_node_split` is the
HeteDP authors' random 20/10/70 node split (node classification's ``split="hetedp"``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import HeteroData
from torch_geometric.transforms import ToUndirected

from privgraph.data.datasets import DATA_ENV, DatasetSpec, DatasetUnavailableError, load_spec
from privgraph.data.validation import check_graph

EdgeType = tuple[str, str, str]


def _hgb(name: str):
    def build(folder: str):
        from torch_geometric.datasets import HGBDataset

        return HGBDataset(str(Path(folder).parent), name)

    return build


def _magnn(cls_name: str):
    def build(folder: str):
        import torch_geometric.datasets as ds

        return getattr(ds, cls_name)(folder)

    return build


HETERO_SPECS: dict[str, DatasetSpec] = {
    "acm": DatasetSpec("HGB-ACM", "HGB/acm", _hgb("acm")),
    "dblp": DatasetSpec("HGB-DBLP", "HGB/dblp", _hgb("dblp")),
    "imdb": DatasetSpec("HGB-IMDB", "HGB/imdb", _hgb("imdb")),
    "dblp-magnn": DatasetSpec("DBLP (MAGNN)", "DBLP", _magnn("DBLP")),
    "imdb-magnn": DatasetSpec("IMDB (MAGNN)", "IMDB", _magnn("IMDB")),
}


@dataclass(frozen=True)
class LoaderVariant:
    """Another version of a dataset of :data:`HETERO_SPECS`: the same graph, labels and split, with the
    node features of types other than ``featured`` removed (those types then read
    :func:`node_inputs`' random rows, as the source's loader gives them random features)."""

    base: str
    name: str
    featured: tuple[str, ...]


# The HeteDP authors' DBLP loader (AixWinnie/HeteDP data/dblp.py): authors keep their features,
# papers, conferences and terms get torch.randn rows.  For controlled comparisons with their numbers.
VARIANTS: dict[str, LoaderVariant] = {
    "dblp-hetedp": LoaderVariant("dblp-magnn", "DBLP (MAGNN), features on authors only (HeteDP's loader)",
                                 ("author",)),
}
HETERO_DATASETS = (*HETERO_SPECS, *VARIANTS, "amazon", "sbm")


@dataclass(frozen=True)
class HeteroTask:
    node_type: str | None  # classified (NC); None: no labels
    edge_type: EdgeType  # predicted (LP)
    reverse: EdgeType  # its reverse relation, removed with it from message passing


def _to(a: str, b: str) -> EdgeType:
    return (a, "to", b)


TASKS: dict[str, HeteroTask] = {
    "acm": HeteroTask("paper", _to("paper", "author"), _to("author", "paper")),
    "dblp": HeteroTask("author", _to("author", "paper"), _to("paper", "author")),
    "imdb": HeteroTask("movie", _to("movie", "actor"), _to("actor", "movie")),
    "dblp-magnn": HeteroTask("author", _to("author", "paper"), _to("paper", "author")),
    "imdb-magnn": HeteroTask("movie", _to("movie", "actor"), _to("actor", "movie")),
    "amazon": HeteroTask(None, ("user", "rates", "item"), ("item", "rev_rates", "user")),
    "sbm": HeteroTask("paper", _to("paper", "author"), _to("author", "paper")),  # hetero_sbm_graph
}


def _path(*types: str) -> list[EdgeType]:
    return [_to(a, b) for a, b in zip(types, types[1:])]


# Metapaths from the NC node type (Amazon: from items), as edge-type sequences.
METAPATHS: dict[str, dict[str, list[EdgeType]]] = {
    "acm": {"PAP": _path("paper", "author", "paper"), "PSP": _path("paper", "subject", "paper")},
    "dblp": {"APA": _path("author", "paper", "author"), "APTPA": _path("author", "paper", "term", "paper", "author"),
             "APVPA": _path("author", "paper", "venue", "paper", "author")},
    "imdb": {"MDM": _path("movie", "director", "movie"), "MAM": _path("movie", "actor", "movie")},
    "dblp-magnn": {"APA": _path("author", "paper", "author"),
                   "APTPA": _path("author", "paper", "term", "paper", "author"),
                   "APCPA": _path("author", "paper", "conference", "paper", "author")},
    "imdb-magnn": {"MDM": _path("movie", "director", "movie"), "MAM": _path("movie", "actor", "movie")},
    "sbm": {"PAP": _path("paper", "author", "paper"), "PSP": _path("paper", "subject", "paper")},
    "amazon": {"IVI": [("item", "has_view", "view"), ("view", "rev_has_view", "item")],
               "ICI": [("item", "has_category", "category"), ("category", "rev_has_category", "item")],
               "IBI": [("item", "has_brand", "brand"), ("brand", "rev_has_brand", "item")]},
}
# a loader variant classifies, predicts and walks as its base dataset
TASKS.update({key: TASKS[variant.base] for key, variant in VARIANTS.items()})
METAPATHS.update({key: METAPATHS[variant.base] for key, variant in VARIANTS.items()})


def link_split(data: HeteroData, task: HeteroTask, val_ratio: float = 0.1, test_ratio: float = 0.2,
               seed: int = 0) -> tuple[HeteroData, HeteroData, HeteroData]:
    """Disjoint, seeded train/validation/test split of ``task.edge_type`` (PyG's
    ``RandomLinkSplit``): validation and test edges, and their reverses, are removed
    from training's message passing; the test graph passes messages over training and
    validation edges only.  Validation/test carry as many sampled negatives as
    positives (``edge_label`` 0/1).  PyG's negative sampling draws from Python's ``random``,
    which is seeded here too (and restored), so the same seed gives the same split."""
    import random

    from torch_geometric.transforms import RandomLinkSplit

    if task.edge_type not in data.edge_types or task.reverse not in data.edge_types:
        raise ValueError(f"edge type {task.edge_type} (or its reverse {task.reverse}) is not in the graph; "
                         f"it has {data.edge_types}")
    if not (0 < val_ratio < 1 and 0 < test_ratio < 1 and val_ratio + test_ratio < 1):
        raise ValueError(f"need 0 < val_ratio, test_ratio and val_ratio + test_ratio < 1, got {val_ratio}, "
                         f"{test_ratio}")
    split = RandomLinkSplit(num_val=val_ratio, num_test=test_ratio, is_undirected=False,
                            edge_types=[task.edge_type], rev_edge_types=[task.reverse],
                            add_negative_train_samples=False)
    state = random.getstate()
    try:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            random.seed(seed)
            return split(data)
    finally:
        random.setstate(state)


# The HeteDP authors' node split (their `data/dataprepro.py`): 20 % train, 10 % validation, the rest test.
HETEDP_NODE_SPLIT = (0.2, 0.1)


def hetedp_node_split(num_nodes: int, seed: int, train_ratio: float = HETEDP_NODE_SPLIT[0],
                      val_ratio: float = HETEDP_NODE_SPLIT[1]) -> tuple[Tensor, Tensor, Tensor]:
    """The HeteDP authors' node split (github AixWinnie/HeteDP, ``data/dataprepro.py``:
    ``get_node_mask`` → ``split_idx``), as boolean (train, val, test) masks over ``num_nodes``
    nodes: scikit-learn's ``train_test_split`` of ``arange(num_nodes)``, not stratified, keeps
    ``train_ratio`` of the nodes for training; a second ``train_test_split`` of the rest, same
    ``random_state``, keeps ``val_ratio · num_nodes`` of them for validation; the rest is test.
    Their DBLP and IMDB loaders call it with ``random_state=42`` (one split for every run); ours
    takes the trial's seed.  Their ACM loader (DGL's ``ACM.mat``) draws an unseeded 20/10/70 split per
    conference instead; we use this one there too.  Disjoint, covering, and a function of
    (``num_nodes``, ``seed``) only."""
    from sklearn.model_selection import train_test_split

    if num_nodes < 3:
        raise ValueError(f"need at least 3 nodes to split, got {num_nodes}")
    if not (0 < train_ratio < 1 and 0 < val_ratio < 1 and train_ratio + val_ratio < 1):
        raise ValueError(f"need 0 < train_ratio, val_ratio and train_ratio + val_ratio < 1, got "
                         f"{train_ratio}, {val_ratio}")
    nodes = np.arange(num_nodes)
    train, rest = train_test_split(nodes, train_size=train_ratio, random_state=int(seed))
    val, test = train_test_split(rest, train_size=val_ratio * num_nodes / len(rest), random_state=int(seed))
    masks = []
    for idx in (train, val, test):
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(np.asarray(idx, dtype=np.int64))] = True
        masks.append(mask)
    return masks[0], masks[1], masks[2]


def node_inputs(data: HeteroData, dim: int = 64, seed: int = 0, read_features: bool = True) -> dict[str, Tensor]:
    """``x`` per node type; featureless types get N(0, 1/dim) rows from ``seed`` (fixed random
    inputs: public, data independent).  ``read_features=False``: every type gets them, ``x`` is
    never read (only the node counts are)."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for t in data.node_types:
        if read_features and "x" in data[t]:
            out[t] = data[t].x.float()
        else:
            out[t] = torch.randn(data[t].num_nodes, dim, generator=g) / dim**0.5
    return out


def _amazon(root: Path) -> HeteroData:
    folder = root / "HeteDP" / "Amazon"
    files = {name: folder / f"{name}.dat" for name in ("user_item", "item_view", "item_category", "item_brand")}
    missing = [str(f) for f in files.values() if not f.is_file()]
    if missing:
        raise DatasetUnavailableError(f"Amazon (HeteDP): missing {', '.join(missing)}")
    tables = {k: np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2) for k, f in files.items()}
    data = HeteroData()
    counts = {"user": int(tables["user_item"][:, 0].max()) + 1,
              "item": int(max(t[:, 0].max() for k, t in tables.items() if k != "user_item")) + 1,
              "view": int(tables["item_view"][:, 1].max()) + 1,
              "category": int(tables["item_category"][:, 1].max()) + 1,
              "brand": int(tables["item_brand"][:, 1].max()) + 1}
    counts["item"] = max(counts["item"], int(tables["user_item"][:, 1].max()) + 1)
    for node_type, n in counts.items():
        data[node_type].num_nodes = n
    ui = tables["user_item"]
    data["user", "rates", "item"].edge_index = torch.from_numpy(ui[:, :2].T.copy())
    data["user", "rates", "item"].edge_attr = torch.from_numpy(ui[:, 2:].astype(np.float32))  # rating, time
    for name, dst in (("item_view", "view"), ("item_category", "category"), ("item_brand", "brand")):
        data["item", f"has_{dst}", dst].edge_index = torch.from_numpy(tables[name].T.copy())
    return ToUndirected()(data)


def merge_duplicate_edges(data: HeteroData) -> HeteroData:
    """Keep one column per (source, destination) pair in every relation (the first, with its
    per-edge attributes): a duplicated edge would be two DP-SGD examples of one link.  Counts
    the merged columns in ``data.merged_duplicate_edges``; in place, returns ``data``."""
    merged = 0
    for edge_type in data.edge_types:
        store = data[edge_type]
        sizes = (data[edge_type[0]].num_nodes, data[edge_type[2]].num_nodes)
        checked = check_graph(store.edge_index, sizes, undirected=False, duplicates="coalesce", what=str(edge_type))
        if checked.kept is None:
            continue
        merged += int(store.edge_index.shape[1] - checked.kept.numel())
        for key in [k for k in store.keys() if "index" not in k and store.is_edge_attr(k)]:
            store[key] = store[key][checked.kept]
        store.edge_index = checked.edge_index
    data.merged_duplicate_edges = merged
    return data


def load_hetero(name: str, root: str | os.PathLike | None = None, seed: int = 0) -> HeteroData:
    """Load a heterogeneous graph by name (module docstring; ``sbm``: the synthetic
    :func:`~privgraph.data.synthetic.hetero_sbm_graph` from ``seed``); raises
    :class:`DatasetUnavailableError` when its files are neither local nor downloadable."""
    key = name.lower()
    if key == "sbm":
        from privgraph.data.synthetic import hetero_sbm_graph

        return hetero_sbm_graph(seed=seed)
    if key == "amazon":
        base = root if root is not None else os.environ.get(DATA_ENV)
        if not base:
            raise DatasetUnavailableError(f"Amazon (HeteDP): set ${DATA_ENV} to the folder holding HeteDP/Amazon")
        data = merge_duplicate_edges(_amazon(Path(base)))
        data.name = "Amazon (HeteDP)"
        return data
    if key in VARIANTS:
        variant = VARIANTS[key]
        data = load_hetero(variant.base, root, seed)
        for t in data.node_types:
            if t not in variant.featured and "x" in data[t]:
                data[t].num_nodes = data[t].x.shape[0]
                del data[t].x
        data.name = variant.name
        return data
    if key not in HETERO_SPECS:
        raise ValueError(f"unknown heterogeneous dataset {name!r}; choose from {', '.join(HETERO_DATASETS)}")
    data = load_spec(HETERO_SPECS[key], root)
    if ("movie", ">actorh", "actor") in data.edge_types:  # PyG's parse of HGB IMDB's info.dat
        data["movie", "to", "actor"].edge_index = data["movie", ">actorh", "actor"].edge_index
        del data["movie", ">actorh", "actor"]
    if not _has_reverse(data):
        data = ToUndirected()(data)
    data = merge_duplicate_edges(data)
    data.name = HETERO_SPECS[key].name
    return data


def _has_reverse(data: HeteroData) -> bool:
    types = set(data.edge_types)
    return all(any(t[0] == dst and t[2] == src for t in types) for src, _, dst in types)
