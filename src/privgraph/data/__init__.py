"""Datasets (PyG classes, offline root via ``PRIVGRAPH_DATA``; every one registered in
:mod:`privgraph.data.registry`), splits, normalisation, synthetic graphs and graph validation."""

from privgraph.data.annotations import mark_private_edges, mark_public_nodes, private_nodes, split_edges
from privgraph.data.datasets import CACHE_ENV, DatasetUnavailableError, cache_dir, load, load_pyg
from privgraph.data.io import GraphInputError, read_graph
from privgraph.data.registry import (
    DATA_ENV,
    DatasetInfo,
    HeteroTask,
    dataset_names,
    get_dataset,
    list_datasets,
    register_dataset,
)
from privgraph.data.sensitive import load_sensitive, split_sensitive
from privgraph.data.splits import stratified_split
from privgraph.data.synthetic import hetero_sbm_graph, sbm_graph, sensitive_sbm_graph
from privgraph.data.transforms import minmax_normalize, one_hot_degree
from privgraph.data.validation import CheckedGraph, check_graph, validate_graph

__all__ = [
    "CACHE_ENV",
    "CheckedGraph",
    "check_graph",
    "validate_graph",
    "DATA_ENV",
    "DatasetInfo",
    "DatasetUnavailableError",
    "HeteroTask",
    "cache_dir",
    "dataset_names",
    "get_dataset",
    "list_datasets",
    "load",
    "load_pyg",
    "load_sensitive",
    "register_dataset",
    "sensitive_sbm_graph",
    "hetero_sbm_graph",
    "split_sensitive",
    "mark_private_edges",
    "mark_public_nodes",
    "private_nodes",
    "split_edges",
    "minmax_normalize",
    "one_hot_degree",
    "sbm_graph",
    "stratified_split",
    "GraphInputError",
    "read_graph",
]
