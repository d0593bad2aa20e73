"""Published systems, one module each, registered by command-line name."""

from __future__ import annotations

from privgraph.methods.base import SEARCH_SPACE, FeatureRelease, Hyperparameters, Method
from privgraph.methods.baselines import MLP, OneHotDegree, RandomFeatures, RawFeatures
from privgraph.methods.lpgnn import LPGNN, LabelReports, denoise_labels, report_labels

METHODS: dict[str, type[Method]] = {m.name: m for m in (LPGNN, RawFeatures, RandomFeatures, OneHotDegree, MLP)}


def get_method(name: str) -> Method:
    try:
        return METHODS[name]()
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}") from None


__all__ = [
    "LPGNN",
    "METHODS",
    "MLP",
    "SEARCH_SPACE",
    "FeatureRelease",
    "Hyperparameters",
    "LabelReports",
    "Method",
    "OneHotDegree",
    "RandomFeatures",
    "RawFeatures",
    "denoise_labels",
    "get_method",
    "report_labels",
]
