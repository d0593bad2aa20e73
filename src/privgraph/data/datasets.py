"""Dataset loading through PyG's classes, offline-friendly, and the homogeneous datasets
of the registry (:mod:`privgraph.data.registry`).

Raw files are *read* from ``$PRIVGRAPH_DATA/<Name>/raw`` (the layout PyG
expects) and never written there: the loader links them into a cache folder
(``$PRIVGRAPH_CACHE``, default ``~/.cache/privgraph``) where PyG writes its
``processed/`` files.  Without local raw files, PyG downloads as usual; when
that fails too, :class:`DatasetUnavailableError` names the dataset and the
variable.  Torch and PyG are imported when a dataset is loaded, not with this module.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privgraph.data.dataset_info import CACHE_ENV, DATA_ENV, HOMOGENEOUS, cache_dir, register_dataset
from privgraph.data.dataset_info import find_dataset as get_dataset  # its own graph's: all registered when it runs

if TYPE_CHECKING:
    from torch_geometric.data import Data


# where PyG's classes download the raw files from (the registry's ``download``: checked before a sweep)
PLANETOID_URL = "https://github.com/kimiyoung/planetoid/raw/master/data"
MUSAE_URL = "https://graphmining.ai/datasets/ptg"


class DatasetUnavailableError(RuntimeError):
    """Raw files are neither local nor downloadable."""


@dataclass(frozen=True)
class DatasetSpec:
    """A PyG dataset class read from ``folder`` (under ``$PRIVGRAPH_DATA`` and under the cache)."""

    name: str
    folder: str
    factory: Callable[[str], object]  # builds the PyG dataset from the cache folder


def _planetoid(name: str) -> Callable[[str], object]:
    def build(folder: str):
        from torch_geometric.datasets import Planetoid

        return Planetoid(str(Path(folder).parent), name)

    return build


def _single(cls_name: str) -> Callable[[str], object]:
    def build(folder: str):
        import torch_geometric.datasets as ds

        return getattr(ds, cls_name)(folder)

    return build


def _register_pyg(key: str, spec: DatasetSpec, source: str, files: tuple[str, ...], **metadata: Any) -> None:
    """Register a homogeneous PyG dataset: its loader gives the unmodified graph; :func:`load` prepares it."""

    def loader(root: str | os.PathLike | None, seed: int) -> Data:
        return load_spec(spec, root)

    register_dataset(
        key,
        graph=HOMOGENEOUS,
        name=spec.name,
        source=source,
        tasks=("nc",),
        layout=f"{spec.folder}/raw",
        files=files,
        **metadata,
    )(loader)


_register_pyg(
    "cora",
    DatasetSpec("Cora", "Cora", _planetoid("Cora")),
    "PyG Planetoid",
    ("ind.cora.*",),
    classes=7,
    public_split=True,
    download=PLANETOID_URL,
)
_register_pyg(
    "citeseer",
    DatasetSpec("CiteSeer", "CiteSeer", _planetoid("CiteSeer")),
    "PyG Planetoid",
    ("ind.citeseer.*",),
    classes=6,
    public_split=True,
    download=PLANETOID_URL,
)
_register_pyg(
    "pubmed",
    DatasetSpec("PubMed", "PubMed", _planetoid("PubMed")),
    "PyG Planetoid",
    ("ind.pubmed.*",),
    classes=3,
    public_split=True,
    download=PLANETOID_URL,
)
_register_pyg(
    "facebook",
    DatasetSpec("FacebookPagePage", "FacebookPagePage", _single("FacebookPagePage")),
    "PyG FacebookPagePage (MUSAE)",
    ("facebook.npz",),
    classes=4,
    aliases=("facebookpagepage",),
    download=f"{MUSAE_URL}/facebook.npz",
)
_register_pyg(
    "github",
    DatasetSpec("GitHub", "GitHub", _single("GitHub")),
    "PyG GitHub (MUSAE)",
    ("github.npz",),
    classes=2,
    download=f"{MUSAE_URL}/github.npz",
)
_register_pyg(
    "lastfm",
    DatasetSpec("LastFMAsia", "LastFMAsia", _single("LastFMAsia")),
    "PyG LastFMAsia",
    ("lastfm_asia.npz",),
    classes=18,
    aliases=("lastfmasia",),
    download=f"{MUSAE_URL}/lastfm_asia.npz",
)


@register_dataset(
    "sbm", graph=HOMOGENEOUS, name="SBM", source="built in: privgraph.data.sbm_graph", tasks=("nc",), synthetic=True
)
def _sbm(root: str | os.PathLike | None, seed: int, **params: Any) -> Data:
    from privgraph.data.synthetic import sbm_graph

    return sbm_graph(seed=seed, **params)


def _link_raw_files(spec: DatasetSpec, data_root: Path | None, folder: Path) -> None:
    """Symlink read-only raw files from ``data_root/<folder>/raw`` into the cache; a
    ``data_root/<folder>/<NAME>.zip`` (HGB's DBLP and IMDB) is unpacked into the
    cache's ``raw/<NAME>/`` instead (never next to the zip)."""
    if data_root is None:
        return
    for archive in sorted((data_root / spec.folder).glob("*.zip")):
        target = folder / "raw" / archive.stem
        if not target.is_dir():
            import zipfile

            partial = target.with_name(target.name + ".partial")
            with zipfile.ZipFile(archive) as z:
                z.extractall(partial)
            partial.rename(target)
    src = data_root / spec.folder / "raw"
    if not src.is_dir():
        return
    dst = folder / "raw"
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        target = dst / f.name
        if not target.exists():
            if target.is_symlink():
                target.unlink()
            target.symlink_to(f.resolve())


def load_pyg(name: str, root: str | os.PathLike | None = None) -> Data:
    """The unmodified graph of a homogeneous dataset (a PyG ``Data``; see module docstring)."""
    return get_dataset(name, HOMOGENEOUS).build(root)


def load_spec(spec: DatasetSpec, root: str | os.PathLike | None = None):
    """``spec``'s PyG dataset, first graph (``Data`` or ``HeteroData``), built in the cache."""
    data_root = Path(root) if root is not None else (Path(os.environ[DATA_ENV]) if os.environ.get(DATA_ENV) else None)
    folder = cache_dir() / "datasets" / spec.folder
    if data_root is not None and data_root.resolve() == folder.parent.resolve():
        raise ValueError(f"{CACHE_ENV} must differ from the raw-data folder {data_root}; it is never written to")
    _link_raw_files(spec, data_root, folder)
    old_timeout = socket.getdefaulttimeout()
    socket.setdefaulttimeout(30)
    try:
        dataset = spec.factory(str(folder))
    except Exception as err:  # PyG raises URLError / OSError / HTTPError on download failure
        local = data_root / spec.folder / "raw" if data_root is not None else None
        where = f"no usable raw files under {local}" if local else f"{DATA_ENV} is not set"
        raise DatasetUnavailableError(
            f"dataset {spec.name!r} is unavailable: {where}, and downloading it failed "
            f"({type(err).__name__}: {err}). Point {DATA_ENV} at a folder holding "
            f"{spec.folder}/raw/ in PyG's layout, or enable network access."
        ) from err
    finally:
        socket.setdefaulttimeout(old_timeout)
    data = dataset[0]
    data.name = spec.name
    return data


def load(
    name: str,
    root: str | os.PathLike | None = None,
    split: str = "random",
    seed: int = 0,
    train_ratio: float = 0.5,
    val_ratio: float = 0.25,
    normalize: bool = True,
    **options: Any,
) -> Data:
    """Load a homogeneous dataset (:func:`~privgraph.data.registry.list_datasets`), normalise its
    features to [0, 1] and attach split masks.

    Self-loops are removed (a node is not its own link; FacebookPagePage has
    them) and their number kept in ``data.removed_self_loops``; the GNN layers
    add their own self-loops where their formula has them.  Duplicate edges
    would double a link's weight in every degree-based sensitivity: they are
    merged and counted in ``data.merged_duplicate_edges`` (0 for every raw file
    we have checked).

    ``split`` is ``"random"`` (seeded, stratified, 50/25/25 by default) or
    ``"public"`` (the Planetoid split).  ``root`` overrides ``$PRIVGRAPH_DATA``.
    A synthetic graph (``sbm``) is generated from ``seed`` and ``options`` (its
    parameters) with its own stratified split of ``train_ratio``/``val_ratio``
    (for either ``split``); its features are already in [0, 1].
    """
    from torch_geometric.utils import remove_self_loops

    from privgraph.data.splits import stratified_split
    from privgraph.data.transforms import minmax_normalize
    from privgraph.data.validation import validate_graph

    if split not in ("random", "public"):
        raise ValueError(f"split must be 'random' or 'public', got {split!r}")
    info = get_dataset(name, HOMOGENEOUS)
    if info.synthetic:
        return info.build(root, seed, train_ratio=train_ratio, val_ratio=val_ratio, **options)
    if split == "public" and not info.public_split:
        raise ValueError(f"{info.name} has no public split; use split='random'")
    data = info.build(root, seed, **options)
    if split == "random":
        data = stratified_split(data, train_ratio, val_ratio, seed=seed)
    if normalize:
        data = minmax_normalize(data)
    data.y = data.y.long()
    edge_index, _ = remove_self_loops(data.edge_index.long())
    data.removed_self_loops = int(data.edge_index.shape[1] - edge_index.shape[1])
    data.edge_index = edge_index
    data, _ = validate_graph(data, undirected=False, duplicates="coalesce")
    data.merged_duplicate_edges = int(edge_index.shape[1] - data.edge_index.shape[1])
    data.num_classes = info.classes  # the published label set (label LDP's k), never read from the labels
    return data


__all__ = [
    "CACHE_ENV",
    "DATA_ENV",
    "DatasetSpec",
    "DatasetUnavailableError",
    "cache_dir",
    "load",
    "load_pyg",
    "load_spec",
]
