"""Checks shared by HeteDP's registered methods (:mod:`~privgraph.methods.hetedp.method`) and the
heterogeneous baselines (:mod:`~privgraph.methods.hetedp.baselines`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch_geometric.data import HeteroData

from privgraph.data.hetero import EdgeType
from privgraph.methods.hetedp.features import check_feature_options


def edge_type_param(value: Sequence[str] | None, name: str) -> EdgeType | None:
    """``value`` as a (source type, relation, destination type) triple (None stays None)."""
    if value is None:
        return None
    value = tuple(value)
    if len(value) != 3 or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a (source type, relation, destination type) triple, got {value!r}")
    return value  # type: ignore[return-value]


def check_projection(calibration: str, feature_dim: int | None, projection_seed: int, features: str = "noisy") -> None:
    """The feature options (:func:`~privgraph.methods.hetedp.features.check_feature_options`) and an integer seed."""
    if isinstance(projection_seed, bool) or not isinstance(projection_seed, int):
        raise ValueError(f"projection_seed must be an integer, got {projection_seed!r}")
    check_feature_options(calibration, feature_dim, features)


def check_hetero(method: str, data: Any) -> HeteroData:
    """``data`` when it is a ``HeteroData``; a ``TypeError`` naming ``method`` otherwise."""
    if not isinstance(data, HeteroData):
        raise TypeError(f"{method} takes a torch_geometric.data.HeteroData, got {type(data).__name__}")
    return data


def store_key(key: str | tuple) -> str:
    """A node or edge type as the name of its fields in a release (``src__rel__dst``)."""
    return key if isinstance(key, str) else "__".join(key)
