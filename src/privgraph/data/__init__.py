"""Datasets (PyG classes, offline root via ``PRIVGRAPH_DATA``; every one registered in
:mod:`privgraph.data.registry`), splits, normalisation, synthetic graphs and graph validation.

The names are imported lazily (PEP 562): the registry's metadata (:mod:`privgraph.data.registry`,
``privgraph datasets``) and the input-file checks (:mod:`privgraph.data.files`) are read without
loading torch or PyG.  :mod:`privgraph.data.safe_load`, imported by whatever reads a torch file
(``read_graph``, ``PrivateRelease.load``), allow-lists PyG's data classes for ``torch.load``."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as the docs and type checkers see them; _LAZY imports them at runtime
    from privgraph.data.annotations import mark_private_edges, mark_public_nodes, private_nodes, split_edges
    from privgraph.data.datasets import CACHE_ENV, DatasetUnavailableError, cache_dir, load, load_pyg
    from privgraph.data.io import GraphInputError, GraphRead, read_graph
    from privgraph.data.registry import (
        DATA_ENV,
        DatasetInfo,
        HeteroTask,
        dataset_names,
        get_dataset,
        list_datasets,
        register_dataset,
    )
    from privgraph.data.sensitive import load_sensitive
    from privgraph.data.splits import add_missing_split, split_sensitive, stratified_split
    from privgraph.data.synthetic import hetero_sbm_graph, sbm_graph, sensitive_sbm_graph
    from privgraph.data.transforms import minmax_normalize, one_hot_degree
    from privgraph.data.validation import CheckedGraph, check_graph, validate_graph


_LAZY = {
    "mark_private_edges": "annotations",
    "mark_public_nodes": "annotations",
    "private_nodes": "annotations",
    "split_edges": "annotations",
    "CACHE_ENV": "datasets",
    "DatasetUnavailableError": "datasets",
    "cache_dir": "datasets",
    "load": "datasets",
    "load_pyg": "datasets",
    "GraphInputError": "io",
    "GraphRead": "io",
    "read_graph": "io",
    "DATA_ENV": "registry",
    "DatasetInfo": "registry",
    "HeteroTask": "registry",
    "dataset_names": "registry",
    "get_dataset": "registry",
    "list_datasets": "registry",
    "register_dataset": "registry",
    "load_sensitive": "sensitive",
    "add_missing_split": "splits",
    "split_sensitive": "splits",
    "stratified_split": "splits",
    "hetero_sbm_graph": "synthetic",
    "sbm_graph": "synthetic",
    "sensitive_sbm_graph": "synthetic",
    "minmax_normalize": "transforms",
    "one_hot_degree": "transforms",
    "CheckedGraph": "validation",
    "check_graph": "validation",
    "validate_graph": "validation",
}

__all__ = [
    "mark_private_edges",
    "mark_public_nodes",
    "private_nodes",
    "split_edges",
    "CACHE_ENV",
    "DatasetUnavailableError",
    "cache_dir",
    "load",
    "load_pyg",
    "GraphInputError",
    "GraphRead",
    "read_graph",
    "DATA_ENV",
    "DatasetInfo",
    "HeteroTask",
    "dataset_names",
    "get_dataset",
    "list_datasets",
    "register_dataset",
    "load_sensitive",
    "add_missing_split",
    "split_sensitive",
    "stratified_split",
    "hetero_sbm_graph",
    "sbm_graph",
    "sensitive_sbm_graph",
    "minmax_normalize",
    "one_hot_degree",
    "CheckedGraph",
    "check_graph",
    "validate_graph",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"privgraph.data.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'privgraph.data' has no attribute {name!r}")
