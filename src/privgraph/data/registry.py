"""The dataset registry: every dataset the loaders know, with its metadata.

Each loader module registers its datasets with :func:`register_dataset`:
:mod:`~privgraph.data.datasets` the PyG graphs and the synthetic ``sbm``,
:mod:`~privgraph.data.sensitive` the graphs with a sensitive attribute and the
synthetic ``planted``, :mod:`~privgraph.data.hetero` the heterogeneous graphs and
their synthetic ``sbm``.  The loaders (``load``, ``load_sensitive``,
``load_hetero``), ``privgraph datasets``, the error messages that list names and
the table in ``docs/datasets.md`` (``privgraph datasets --format markdown``) all
read it.

A name is unique among the datasets one loader reads (its ``graph``): ``sbm`` is
the synthetic graph of each.  Neither this module nor the loader modules import
torch or PyG when imported (the loaders do, when called), so the metadata is read
without them.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from privgraph.data.dataset_info import (  # the registry's public names, declared there
    DATA_ENV,
    EVALUATION_TASKS,
    GRAPHS,
    HETEROGENEOUS,
    HOMOGENEOUS,
    KINDS,
    SENSITIVE,
    SYNTHETIC,
    DatasetInfo,
    EdgeType,
    HeteroTask,
    data_root,
    find_dataset,
    register_dataset,
    registered,
)

# the loader modules, imported before the registry is read
_LOADER_MODULES = ("privgraph.data.datasets", "privgraph.data.sensitive", "privgraph.data.hetero")


def _load_all() -> None:
    for module in _LOADER_MODULES:
        importlib.import_module(module)


def list_datasets(*graphs: str) -> list[DatasetInfo]:
    """The registered datasets (of ``graphs``, default all), homogeneous, heterogeneous, sensitive
    attribute, then synthetic."""
    _load_all()
    return registered(*graphs)


def dataset_names(*graphs: str) -> list[str]:
    """The registered keys (of ``graphs``, default all), in :func:`list_datasets`' order, each once."""
    return list(dict.fromkeys(info.key for info in list_datasets(*graphs)))


def get_dataset(name: str, *graphs: str) -> DatasetInfo:
    """The dataset ``name`` (a key or an alias) among those of ``graphs`` (default all), the first
    graph first; an unknown name is refused with the names those loaders know."""
    _load_all()
    return find_dataset(name, *graphs)


def _details(info: DatasetInfo) -> str:
    if info.sensitive is not None:
        return f"sensitive: `{info.sensitive}`"
    if info.hetero is None:
        return "public split" if info.public_split else ""
    target = f"classifies `{info.hetero.node_type}`; " if info.hetero.node_type else ""
    paths = f"; metapaths {', '.join(info.metapaths)}" if info.metapaths else ""
    return f"{target}predicts `{'–'.join(info.hetero.edge_type)}`{paths}"


def markdown_table(entries: Sequence[DatasetInfo] | None = None) -> str:
    """The registry as the Markdown table of ``docs/datasets.md``."""
    rows = [
        "| `--dataset` | kind | tasks | source | files under `$PRIVGRAPH_DATA` | details |",
        "|---|---|---|---|---|---|",
    ]
    for info in list_datasets() if entries is None else entries:
        names = f"`{info.key}`" + (f" ({', '.join(f'`{a}`' for a in info.aliases)})" if info.aliases else "")
        kind = f"{SYNTHETIC} ({info.graph})" if info.synthetic else info.kind
        files = (
            "built in"
            if info.layout is None
            else f"`{info.layout}/`" + (": " + ", ".join(f"`{f}`" for f in info.files) if info.files else "")
        )
        rows.append(f"| {names} | {kind} | {', '.join(info.tasks)} | {info.source} | {files} | {_details(info)} |")
    return "\n".join(rows) + "\n"


__all__ = [
    "DATA_ENV",
    "EVALUATION_TASKS",
    "GRAPHS",
    "HETEROGENEOUS",
    "HOMOGENEOUS",
    "KINDS",
    "SENSITIVE",
    "SYNTHETIC",
    "DatasetInfo",
    "EdgeType",
    "HeteroTask",
    "data_root",
    "dataset_names",
    "get_dataset",
    "list_datasets",
    "markdown_table",
    "register_dataset",
]
