"""Datasets (PyG classes, offline root via ``PRIVGRAPH_DATA``; every one registered in
:mod:`privgraph.data.registry`), splits, normalisation, synthetic graphs and graph validation.

The names are imported lazily (PEP 562): the registry's metadata (:mod:`privgraph.data.registry`,
``privgraph datasets``) and the input-file checks (:mod:`privgraph.data.files`) are read without
loading torch or PyG.  :mod:`privgraph.data.io`, imported by whatever reads a torch file
(``read_graph``, ``PrivateRelease.load``), allow-lists PyG's data classes for ``torch.load``."""

from __future__ import annotations

import importlib
from typing import Any

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
    "read_graph": "io",
    "DATA_ENV": "registry",
    "DatasetInfo": "registry",
    "HeteroTask": "registry",
    "dataset_names": "registry",
    "get_dataset": "registry",
    "list_datasets": "registry",
    "register_dataset": "registry",
    "load_sensitive": "sensitive",
    "split_sensitive": "sensitive",
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

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"privgraph.data.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'privgraph.data' has no attribute {name!r}")
