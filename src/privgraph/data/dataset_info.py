"""What the dataset registry holds: :class:`DatasetInfo` (one dataset's metadata and loader),
:func:`register_dataset` (the loader modules' decorator) and the lookups among the datasets
registered so far.  The loader modules (:mod:`~privgraph.data.datasets`,
:mod:`~privgraph.data.sensitive`, :mod:`~privgraph.data.hetero`) register theirs here;
:mod:`privgraph.data.registry` imports them all before it answers.  Imports no torch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

DATA_ENV = "PRIVGRAPH_DATA"

HOMOGENEOUS = "homogeneous"
SENSITIVE = "sensitive attribute"
HETEROGENEOUS = "heterogeneous"
SYNTHETIC = "synthetic"
GRAPHS = (HOMOGENEOUS, SENSITIVE, HETEROGENEOUS)  # what each loader reads: load, load_sensitive, load_hetero
KINDS = (HOMOGENEOUS, HETEROGENEOUS, SENSITIVE, SYNTHETIC)  # listing order
EVALUATION_TASKS = ("nc", "attribute", "hetero-nc", "lp")  # the experiment pipeline's tasks
INHERITED = (
    "layout",
    "files",
    "tasks",
    "sensitive",
    "hetero",
    "metapaths",
    "download",
    "classes",
)  # what a variant takes from its base

EdgeType = tuple[str, str, str]
Loader = Callable[..., Any]  # loader(root, seed, **options) -> Data | HeteroData

CACHE_ENV = "PRIVGRAPH_CACHE"


@dataclass(frozen=True)
class HeteroTask:
    """A heterogeneous dataset's task: the node type classified (None: no labels), the relation
    predicted and protected, and its reverse (removed with it from message passing)."""

    node_type: str | None
    edge_type: EdgeType
    reverse: EdgeType


@dataclass(frozen=True)
class DatasetInfo:
    """One registered dataset.

    ``key`` is its ``--dataset`` name (``aliases`` are accepted too); ``graph`` the loader that reads
    it; ``name`` its display name; ``source`` where it comes from; ``tasks`` the pipeline's evaluation
    tasks it supports; ``loader(root, seed, **options)`` builds it (torch and PyG imported inside;
    ``options`` only for synthetic graphs).  ``layout`` is its folder under ``$PRIVGRAPH_DATA``
    (None: synthetic, built in) and ``files`` what the loader reads there.  ``sensitive`` names its
    sensitive attribute; ``hetero`` and ``metapaths`` (edge-type sequences from the classified type)
    are the heterogeneous task; ``base`` the dataset this is another version of.  ``download`` is the
    address its loader fetches the raw files from when they are not under ``$PRIVGRAPH_DATA`` (None:
    never downloaded).  ``classes`` is the size k of its public label set {0, …, k−1} (its published schema;
    :func:`~privgraph.data.load` sets ``data.num_classes``), what label LDP reads instead of the labels."""

    key: str
    graph: str
    name: str
    source: str
    loader: Loader = field(repr=False, compare=False)
    tasks: tuple[str, ...] = ()
    layout: str | None = None
    files: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    synthetic: bool = False
    sensitive: str | None = None
    hetero: HeteroTask | None = None
    metapaths: Mapping[str, tuple[EdgeType, ...]] = field(default_factory=dict, hash=False)
    base: str | None = None
    public_split: bool = False
    download: str | None = None
    classes: int | None = None

    def __post_init__(self) -> None:
        for name in ("tasks", "files", "aliases"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        paths = {k: tuple(tuple(et) for et in p) for k, p in self.metapaths.items()}
        object.__setattr__(self, "metapaths", MappingProxyType(paths))
        if self.graph not in GRAPHS:
            raise ValueError(f"dataset {self.key!r}: graph must be one of {GRAPHS}, got {self.graph!r}")
        if not self.tasks or not set(self.tasks) <= set(EVALUATION_TASKS):
            raise ValueError(f"dataset {self.key!r}: tasks must be some of {EVALUATION_TASKS}, got {self.tasks}")
        if self.synthetic != (self.layout is None):
            raise ValueError(f"dataset {self.key!r}: one read from files needs a layout, a synthetic one has none")
        if not callable(self.loader):
            raise ValueError(f"dataset {self.key!r}: its loader is not callable")
        if self.graph == SENSITIVE and self.sensitive is None:
            raise ValueError(f"dataset {self.key!r}: a {SENSITIVE} dataset names its sensitive attribute")
        if self.graph == HETEROGENEOUS and self.hetero is None:
            raise ValueError(f"dataset {self.key!r}: a heterogeneous dataset states its task (HeteroTask)")

    @property
    def kind(self) -> str:
        """``synthetic``, else its graph: homogeneous, heterogeneous or sensitive attribute."""
        return SYNTHETIC if self.synthetic else self.graph

    @property
    def names(self) -> tuple[str, ...]:
        """Its key and aliases."""
        return (self.key, *self.aliases)

    def build(self, root: str | os.PathLike | None = None, seed: int = 0, **options: Any) -> Any:
        """The graph, from the loader; ``options`` (a synthetic graph's parameters) are refused for
        a dataset read from files."""
        if options and not self.synthetic:
            raise ValueError(f"{self.key} is read from files: {', '.join(sorted(options))} set a synthetic graph only")
        return self.loader(root, seed, **options)

    def available(self, root: str | os.PathLike | None = None) -> bool | None:
        """Whether ``root`` (default ``$PRIVGRAPH_DATA``) holds its files (every pattern of ``files`` under
        ``layout``); None: built in, or no folder given."""
        base = data_root(root)
        if self.layout is None or base is None:
            return None
        return _holds(base / self.layout, self.files)

    def unavailable(self, root: str | os.PathLike | None = None, timeout: float = 3.0) -> str | None:
        """Why it cannot be loaded on this machine, in one sentence, or None: built in, its files under
        ``root`` (default ``$PRIVGRAPH_DATA``) or in the cache (downloaded before), or its ``download``
        host answers within ``timeout`` seconds.  Reads no data and imports no torch."""
        if self.layout is None or self.available(root):
            return None
        if _holds(cache_dir() / "datasets" / self.layout, self.files):  # PyG's own copy of the raw files
            return None
        base = data_root(root)
        where = f"its raw files are not under {base / self.layout}" if base else f"${DATA_ENV} is not set"
        wanted = f"{self.layout}/" + (", ".join(self.files) if self.files else "")
        fix = f"point ${DATA_ENV} (or --data-root) at a folder holding {wanted} (`privgraph datasets` lists them)"
        if self.download is None:
            return f"dataset {self.key}: {where}, and it is not downloadable: {fix}"
        from privgraph.network import unreachable

        failure = unreachable(self.download, timeout)
        if failure is None:
            return None
        return f"dataset {self.key}: {where}, and it cannot be downloaded here ({failure}): {fix}"

    def describe(self) -> dict[str, Any]:
        """Its metadata as JSON-ready values (everything but the loader)."""
        hetero = (
            None
            if self.hetero is None
            else {
                "node_type": self.hetero.node_type,
                "edge_type": list(self.hetero.edge_type),
                "reverse": list(self.hetero.reverse),
            }
        )
        return {
            "key": self.key,
            "aliases": list(self.aliases),
            "kind": self.kind,
            "graph": self.graph,
            "name": self.name,
            "source": self.source,
            "tasks": list(self.tasks),
            "layout": self.layout,
            "files": list(self.files),
            "sensitive": self.sensitive,
            "hetero": hetero,
            "metapaths": {k: [list(et) for et in p] for k, p in self.metapaths.items()},
            "base": self.base,
            "public_split": self.public_split,
            "download": self.download,
        }


_REGISTRY: dict[tuple[str, str], DatasetInfo] = {}  # (graph, key) -> its entry


def _normal(name: str) -> str:
    """Names match case-insensitively, ignoring ``-`` and ``_`` (``pokec_z`` is ``pokec-z``)."""
    return name.lower().replace("-", "").replace("_", "")


def _names(graph: str) -> dict[str, str]:
    """Every name (key or alias, normalised) a graph's loader accepts -> its key."""
    return {_normal(n): info.key for (g, _), info in _REGISTRY.items() if g == graph for n in info.names}


def register_dataset(key: str, **metadata: Any) -> Callable[[Loader], Loader]:
    """Decorator: register its loader under ``key`` with ``metadata`` (the fields of
    :class:`DatasetInfo`).  A name (key or alias) already taken among the datasets of the same
    ``graph`` is refused.  With ``base``, the fields in :data:`INHERITED` not given are the base's."""

    def register(loader: Loader) -> Loader:
        fields = dict(metadata)
        if fields.get("base") is not None:
            parent = _REGISTRY.get((fields.get("graph", ""), fields["base"]))
            if parent is None:
                raise ValueError(f"dataset {key!r}: its base {fields['base']!r} is not registered before it")
            fields = {**{name: getattr(parent, name) for name in INHERITED}, **fields}
        info = DatasetInfo(key=key, loader=loader, **fields)
        taken, seen = _names(info.graph), set()
        for name in info.names:
            if _normal(name) in taken or _normal(name) in seen:
                owner = taken.get(_normal(name), key)
                raise ValueError(f"dataset name {name!r} is taken by {owner!r} among the {info.graph} datasets")
            seen.add(_normal(name))
        _REGISTRY[(info.graph, info.key)] = info
        return loader

    return register


def registered(*graphs: str) -> list[DatasetInfo]:
    """The datasets registered so far (of ``graphs``, default all), in :func:`~privgraph.data.registry.list_datasets`'
    order; a loader module reads its own graph's with it (all registered when it runs)."""
    chosen = graphs or GRAPHS
    return sorted(
        (info for info in _REGISTRY.values() if info.graph in chosen),
        key=lambda info: (KINDS.index(info.kind), GRAPHS.index(info.graph)),
    )


def find_dataset(name: str, *graphs: str) -> DatasetInfo:
    """The registered dataset ``name`` (a key or an alias) among those of ``graphs`` (default all), the
    first graph first; an unknown name is refused with the names registered for those graphs."""
    for graph in graphs or GRAPHS:
        key = _names(graph).get(_normal(name))
        if key is not None:
            return _REGISTRY[(graph, key)]
    what = f"{graphs[0]} dataset" if graphs else "dataset"
    names = ", ".join(dict.fromkeys(info.key for info in registered(*graphs)))
    raise ValueError(f"unknown {what} {name!r}; choose from {names} (`privgraph datasets`)")


def data_root(root: str | os.PathLike | None) -> Path | None:
    """``root``, else ``$PRIVGRAPH_DATA``, else None."""
    if root is not None:
        return Path(root)
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else None


def _holds(folder: Path, patterns: Sequence[str]) -> bool:
    """Whether ``folder`` exists and has a file (not a dangling link) for every glob pattern."""
    if not folder.is_dir():
        return False
    return all(any(p.exists() for p in folder.glob(pattern)) for pattern in patterns)


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "privgraph"
