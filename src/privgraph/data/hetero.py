"""Heterogeneous graphs (PyG ``HeteroData``) for HeteDP: loaders, metapaths,
task definitions and disjoint link splits.

Datasets (``load_hetero(name)``), each registered here with its task and
metapaths (:mod:`privgraph.data.registry`; ``privgraph datasets`` lists them):

* ``acm``, ``dblp``, ``imdb`` — the HGB benchmark (PyG ``HGBDataset``); raw
  files from ``$PRIVGRAPH_DATA/HGB/<name>/raw/<NAME>/`` (ACM) or the zip
  ``$PRIVGRAPH_DATA/HGB/<name>/<NAME>.zip`` (DBLP, IMDB), unpacked into the
  cache, never next to the zip;
* ``dblp-magnn``, ``imdb-magnn`` — MAGNN's preprocessing (PyG ``DBLP``,
  ``IMDB``), from ``$PRIVGRAPH_DATA/DBLP/raw`` and ``IMDB/raw``;
* ``dblp-hetedp`` — ``dblp-magnn`` with features on authors only, as the
  HeteDP authors' loader has them (its ``base`` is ``dblp-magnn``);
* ``amazon`` — HeteDP's user–item graph (``$PRIVGRAPH_DATA/HeteDP/Amazon``:
  ``user_item.dat`` with rating and timestamp, ``item_view.dat``,
  ``item_category.dat``, ``item_brand.dat``; comma-separated, no header).
  It has no node features;
* ``sbm`` — the synthetic :func:`~privgraph.data.synthetic.hetero_sbm_graph`.

Every loader returns both directions of each relation (``rev_…`` types added
where the source has only one) and at most one column per (source,
destination) pair in each relation (:func:`merge_duplicate_edges`; none of the
raw files we have holds a duplicate, ``data.merged_duplicate_edges`` = 0), so
the examples :func:`link_split` yields are duplicate-free.  A dataset's
``hetero`` (:class:`~privgraph.data.registry.HeteroTask`) names the node type
classified (NC) and the edge type predicted (LP), following HeteDP's Table II
where the types exist, and its ``metapaths`` (sequences of edge types) start
and end at the NC type.  :func:`node_inputs` gives every node type an input
(featureless types: fixed random rows drawn from a seed).  :func:`hetedp_node_split` is the
HeteDP authors' random 20/10/70 node split (node classification's ``split="hetedp"``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privgraph.data.dataset_info import (
    DATA_ENV,
    HETEROGENEOUS,
    DatasetInfo,
    EdgeType,
    HeteroTask,
    data_root,
    register_dataset,
)
from privgraph.data.dataset_info import find_dataset as get_dataset  # its own graph's: all registered when it runs
from privgraph.data.dataset_info import registered as list_datasets
from privgraph.data.datasets import DatasetSpec, DatasetUnavailableError, load_spec

if TYPE_CHECKING:
    from torch import Tensor
    from torch_geometric.data import HeteroData


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


def _to(a: str, b: str) -> EdgeType:
    return (a, "to", b)


def _path(*types: str) -> list[EdgeType]:
    return [_to(a, b) for a, b in zip(types, types[1:])]


def _register_pyg(key: str, spec: DatasetSpec, source: str, files: tuple[str, ...], **metadata: Any) -> None:
    """Register an HGB or MAGNN graph (PyG's classes, :func:`load_spec`), completed by :func:`_completed`."""

    def loader(root: str | os.PathLike | None, seed: int) -> HeteroData:
        data = _completed(load_spec(spec, root))
        data.name = spec.name
        return data

    register_dataset(
        key,
        graph=HETEROGENEOUS,
        name=spec.name,
        source=source,
        tasks=("hetero-nc", "lp"),
        layout=spec.folder,
        files=files,
        **metadata,
    )(loader)


# where PyG's HGBDataset and MAGNN classes download the raw files from (the registry's ``download``)
HGB_URL = "https://drive.google.com"
MAGNN_URL = "https://www.dropbox.com"

# Tasks follow HeteDP's Table II where the types exist; metapaths start and end at the classified type.
_register_pyg(
    "acm",
    DatasetSpec("HGB-ACM", "HGB/acm", _hgb("acm")),
    "HGB (PyG HGBDataset)",
    ("raw/ACM/*.dat",),
    download=HGB_URL,
    hetero=HeteroTask("paper", _to("paper", "author"), _to("author", "paper")),
    metapaths={"PAP": _path("paper", "author", "paper"), "PSP": _path("paper", "subject", "paper")},
)
_register_pyg(
    "dblp",
    DatasetSpec("HGB-DBLP", "HGB/dblp", _hgb("dblp")),
    "HGB (PyG HGBDataset)",
    ("DBLP.zip",),
    download=HGB_URL,
    hetero=HeteroTask("author", _to("author", "paper"), _to("paper", "author")),
    metapaths={
        "APA": _path("author", "paper", "author"),
        "APTPA": _path("author", "paper", "term", "paper", "author"),
        "APVPA": _path("author", "paper", "venue", "paper", "author"),
    },
)
_register_pyg(
    "imdb",
    DatasetSpec("HGB-IMDB", "HGB/imdb", _hgb("imdb")),
    "HGB (PyG HGBDataset)",
    ("IMDB.zip",),
    download=HGB_URL,
    hetero=HeteroTask("movie", _to("movie", "actor"), _to("actor", "movie")),
    metapaths={"MDM": _path("movie", "director", "movie"), "MAM": _path("movie", "actor", "movie")},
)
_register_pyg(
    "dblp-magnn",
    DatasetSpec("DBLP (MAGNN)", "DBLP", _magnn("DBLP")),
    "MAGNN (PyG DBLP)",
    ("raw/*.np[yz]",),
    download=MAGNN_URL,
    hetero=HeteroTask("author", _to("author", "paper"), _to("paper", "author")),
    metapaths={
        "APA": _path("author", "paper", "author"),
        "APTPA": _path("author", "paper", "term", "paper", "author"),
        "APCPA": _path("author", "paper", "conference", "paper", "author"),
    },
)
_register_pyg(
    "imdb-magnn",
    DatasetSpec("IMDB (MAGNN)", "IMDB", _magnn("IMDB")),
    "MAGNN (PyG IMDB)",
    ("raw/*.np[yz]",),
    download=MAGNN_URL,
    hetero=HeteroTask("movie", _to("movie", "actor"), _to("actor", "movie")),
    metapaths={"MDM": _path("movie", "director", "movie"), "MAM": _path("movie", "actor", "movie")},
)


def _featured_only(base: str, name: str, featured: tuple[str, ...]) -> Callable[..., HeteroData]:
    """The loader of another version of ``base``: the same graph, labels and split, with the node
    features of types other than ``featured`` removed (those types then read :func:`node_inputs`'
    random rows, as the source's loader gives them random features)."""

    def loader(root: str | os.PathLike | None, seed: int) -> HeteroData:
        data = get_dataset(base, HETEROGENEOUS).build(root, seed)
        for t in data.node_types:
            if t not in featured and "x" in data[t]:
                data[t].num_nodes = data[t].x.shape[0]
                del data[t].x
        data.name = name
        return data

    return loader


# The HeteDP authors' DBLP loader (AixWinnie/HeteDP data/dblp.py): authors keep their features,
# papers, conferences and terms get torch.randn rows.  For controlled comparisons with their numbers.
# It classifies, predicts and walks as its base (its task and metapaths are the base's).
_DBLP_HETEDP = "DBLP (MAGNN), features on authors only (HeteDP's loader)"
register_dataset(
    "dblp-hetedp",
    graph=HETEROGENEOUS,
    name=_DBLP_HETEDP,
    base="dblp-magnn",
    source="dblp-magnn, features on authors only (HeteDP's loader)",
)(_featured_only("dblp-magnn", _DBLP_HETEDP, ("author",)))


@register_dataset(
    "amazon",
    graph=HETEROGENEOUS,
    name="Amazon (HeteDP)",
    source="HeteDP repo (AixWinnie)",
    tasks=("lp",),
    layout="HeteDP/Amazon",
    files=("user_item.dat", "item_view.dat", "item_category.dat", "item_brand.dat"),
    hetero=HeteroTask(None, ("user", "rates", "item"), ("item", "rev_rates", "user")),
    metapaths={
        "IVI": [("item", "has_view", "view"), ("view", "rev_has_view", "item")],
        "ICI": [("item", "has_category", "category"), ("category", "rev_has_category", "item")],
        "IBI": [("item", "has_brand", "brand"), ("brand", "rev_has_brand", "item")],
    },
)
def _load_amazon(root: str | os.PathLike | None, seed: int) -> HeteroData:
    base = data_root(root)
    if base is None:
        raise DatasetUnavailableError(f"Amazon (HeteDP): set ${DATA_ENV} to the folder holding HeteDP/Amazon")
    data = merge_duplicate_edges(_amazon(base))
    data.name = "Amazon (HeteDP)"
    return data


@register_dataset(
    "sbm",
    graph=HETEROGENEOUS,
    name="hetero SBM",
    source="built in: privgraph.data.hetero_sbm_graph",
    tasks=("hetero-nc", "lp"),
    synthetic=True,
    hetero=HeteroTask("paper", _to("paper", "author"), _to("author", "paper")),
    metapaths={"PAP": _path("paper", "author", "paper"), "PSP": _path("paper", "subject", "paper")},
)
def _hetero_sbm(root: str | os.PathLike | None, seed: int, **params: Any) -> HeteroData:
    from privgraph.data.synthetic import hetero_sbm_graph

    return hetero_sbm_graph(seed=seed, **params)


class _View(Mapping):
    """A read-only view of the heterogeneous datasets in the registry: key -> ``value(info)``."""

    def __init__(self, value: Callable[[DatasetInfo], Any], where: Callable[[DatasetInfo], bool] = bool) -> None:
        self._value, self._where = value, where

    def _entries(self) -> dict[str, DatasetInfo]:
        return {info.key: info for info in list_datasets(HETEROGENEOUS) if self._where(info)}

    def __getitem__(self, key: str) -> Any:
        return self._value(self._entries()[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())


# Read-only views for older call sites; new code reads the registry
# (``get_dataset(name, HETEROGENEOUS).hetero`` / ``.metapaths`` / ``.base``).
TASKS: Mapping[str, HeteroTask] = _View(lambda info: info.hetero)
METAPATHS: Mapping[str, dict[str, list[EdgeType]]] = _View(
    lambda info: {name: list(path) for name, path in info.metapaths.items()}
)
VARIANTS: Mapping[str, DatasetInfo] = _View(lambda info: info, lambda info: info.base is not None)


def link_split(
    data: HeteroData, task: HeteroTask, val_ratio: float = 0.1, test_ratio: float = 0.2, seed: int = 0
) -> tuple[HeteroData, HeteroData, HeteroData]:
    """Disjoint, seeded train/validation/test split of ``task.edge_type`` (PyG's
    ``RandomLinkSplit``): validation and test edges, and their reverses, are removed
    from training's message passing; the test graph passes messages over training and
    validation edges only.  Validation/test carry as many sampled negatives as
    positives (``edge_label`` 0/1).  PyG's negative sampling draws from Python's ``random``,
    which is seeded here too (and restored), so the same seed gives the same split."""
    import random

    import torch
    from torch_geometric.transforms import RandomLinkSplit

    if task.edge_type not in data.edge_types or task.reverse not in data.edge_types:
        raise ValueError(
            f"edge type {task.edge_type} (or its reverse {task.reverse}) is not in the graph; it has {data.edge_types}"
        )
    if not (0 < val_ratio < 1 and 0 < test_ratio < 1 and val_ratio + test_ratio < 1):
        raise ValueError(
            f"need 0 < val_ratio, test_ratio and val_ratio + test_ratio < 1, got {val_ratio}, {test_ratio}"
        )
    split = RandomLinkSplit(
        num_val=val_ratio,
        num_test=test_ratio,
        is_undirected=False,
        edge_types=[task.edge_type],
        rev_edge_types=[task.reverse],
        add_negative_train_samples=False,
    )
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


def hetedp_node_split(
    num_nodes: int, seed: int, train_ratio: float = HETEDP_NODE_SPLIT[0], val_ratio: float = HETEDP_NODE_SPLIT[1]
) -> tuple[Tensor, Tensor, Tensor]:
    """The HeteDP authors' node split (github AixWinnie/HeteDP, ``data/dataprepro.py``:
    ``get_node_mask`` → ``split_idx``), as boolean (train, val, test) masks over ``num_nodes``
    nodes: scikit-learn's ``train_test_split`` of ``arange(num_nodes)``, not stratified, keeps
    ``train_ratio`` of the nodes for training; a second ``train_test_split`` of the rest, same
    ``random_state``, keeps ``val_ratio · num_nodes`` of them for validation; the rest is test.
    Their DBLP and IMDB loaders call it with ``random_state=42`` (one split for every run); ours
    takes the trial's seed.  Their ACM loader (DGL's ``ACM.mat``) draws an unseeded 20/10/70 split per
    conference instead; we use this one there too.  Disjoint, covering, and a function of
    (``num_nodes``, ``seed``) only."""
    import numpy as np
    import torch
    from sklearn.model_selection import train_test_split

    if num_nodes < 3:
        raise ValueError(f"need at least 3 nodes to split, got {num_nodes}")
    if not (0 < train_ratio < 1 and 0 < val_ratio < 1 and train_ratio + val_ratio < 1):
        raise ValueError(
            f"need 0 < train_ratio, val_ratio and train_ratio + val_ratio < 1, got {train_ratio}, {val_ratio}"
        )
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
    import torch

    g = torch.Generator().manual_seed(seed)
    out = {}
    for t in data.node_types:
        if read_features and "x" in data[t]:
            out[t] = data[t].x.float()
        else:
            out[t] = torch.randn(data[t].num_nodes, dim, generator=g) / dim**0.5
    return out


def _amazon(root: Path) -> HeteroData:
    import numpy as np
    import torch
    from torch_geometric.data import HeteroData
    from torch_geometric.transforms import ToUndirected

    folder = root / "HeteDP" / "Amazon"
    files = {name: folder / f"{name}.dat" for name in ("user_item", "item_view", "item_category", "item_brand")}
    missing = [str(f) for f in files.values() if not f.is_file()]
    if missing:
        raise DatasetUnavailableError(f"Amazon (HeteDP): missing {', '.join(missing)}")
    tables = {k: np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2) for k, f in files.items()}
    data = HeteroData()
    counts = {
        "user": int(tables["user_item"][:, 0].max()) + 1,
        "item": int(max(t[:, 0].max() for k, t in tables.items() if k != "user_item")) + 1,
        "view": int(tables["item_view"][:, 1].max()) + 1,
        "category": int(tables["item_category"][:, 1].max()) + 1,
        "brand": int(tables["item_brand"][:, 1].max()) + 1,
    }
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
    from privgraph.data.validation import check_graph

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


def load_hetero(name: str, root: str | os.PathLike | None = None, seed: int = 0, **options: Any) -> HeteroData:
    """Load a heterogeneous graph by name (module docstring; ``sbm``: the synthetic
    :func:`~privgraph.data.synthetic.hetero_sbm_graph` from ``seed`` and ``options``); raises
    :class:`DatasetUnavailableError` when its files are neither local nor downloadable."""
    return get_dataset(name, HETEROGENEOUS).build(root, seed, **options)


def _completed(data: HeteroData) -> HeteroData:
    """An HGB or MAGNN graph with both directions of each relation and no duplicate edge."""
    from torch_geometric.transforms import ToUndirected

    if ("movie", ">actorh", "actor") in data.edge_types:  # PyG's parse of HGB IMDB's info.dat
        data["movie", "to", "actor"].edge_index = data["movie", ">actorh", "actor"].edge_index
        del data["movie", ">actorh", "actor"]
    if not _has_reverse(data):
        data = ToUndirected()(data)
    return merge_duplicate_edges(data)


def _has_reverse(data: HeteroData) -> bool:
    types = set(data.edge_types)
    return all(any(t[0] == dst and t[2] == src for t in types) for src, _, dst in types)


METAPATH_MAX_SAMPLE = 30  # AddMetaPaths' per-step neighbour cap (dense metapaths such as APVPA)


def metapath_graph(
    data: HeteroData, name: str, seed: int, paths: list[list[tuple[str, str, str]]] | None = None
) -> HeteroData:
    """The metapath graphs (``AddMetaPaths``, at most :data:`METAPATH_MAX_SAMPLE` neighbours per step,
    drawn from ``derive_seed(seed, 6)``; torch's global generator is restored) of the dataset
    ``name``'s target type (its registered ``metapaths``), or of ``paths``."""
    import copy

    import torch
    from torch_geometric.transforms import AddMetaPaths

    from privgraph.mechanisms import derive_seed

    if paths is None:
        paths = [list(path) for path in get_dataset(name, HETEROGENEOUS).metapaths.values()]
    data = copy.copy(data)
    for et in data.edge_types:
        data[et].edge_index = data[et].edge_index.contiguous()
    with torch.random.fork_rng():  # AddMetaPaths samples neighbours from torch's global generator
        torch.manual_seed(derive_seed(seed, 6))
        return AddMetaPaths(
            paths, drop_orig_edge_types=True, drop_unconnected_node_types=True, max_sample=METAPATH_MAX_SAMPLE
        )(data)


def two_hop_metapaths(data: HeteroData, node_type: str) -> list[list[tuple[str, str, str]]]:
    """``node_type``'s metapaths t → s → t, one per neighbour type s ≠ t (the first relation each way):
    the first of the authors' metapaths of each of their types (``data/acm.py``, ``data/dblp.py``
    ``metapaths``; their longer ones are not built)."""
    out = []
    for s in dict.fromkeys(et[2] for et in data.edge_types if et[0] == node_type and et[2] != node_type):
        there = next(et for et in data.edge_types if et[0] == node_type and et[2] == s)
        back = next((et for et in data.edge_types if et[0] == s and et[2] == node_type), None)
        if back is not None:
            out.append([there, back])
    return out
