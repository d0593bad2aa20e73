"""Published systems, one module each, registered by command-line name."""

from __future__ import annotations

from privgraph.methods.base import SEARCH_SPACE, Release, Hyperparameters, Method
from privgraph.methods.baselines import MLP, OneHotDegree, RandomFeatures, RawFeatures
from privgraph.methods.blink.baselines import (
    DegreePreservingRR,
    LaplaceDpGCN,
    RandomizedResponseGraph,
    SymmetricRandomizedResponseGraph,
)
from privgraph.methods.blink.ldpgen import LDPGen
from privgraph.methods.blink.method import Blink
from privgraph.methods.blink.solitude import Solitude
from privgraph.methods.heterorr.method import (
    EdgeRand,
    EdgeRRMethod,
    FeatureLDP,
    FeatureRRMethod,
    HeteroRR,
    LapGraph,
    PrivHRG,
)
from privgraph.methods.lpgnn import LPGNN, LabelReports, denoise_labels, report_labels

METHODS: dict[str, type[Method]] = {
    m.name: m
    for m in (LPGNN, RawFeatures, RandomFeatures, OneHotDegree, MLP, Blink, RandomizedResponseGraph,
              SymmetricRandomizedResponseGraph, LaplaceDpGCN, DegreePreservingRR, LDPGen, Solitude,
              FeatureLDP, FeatureRRMethod, EdgeRRMethod, PrivHRG, EdgeRand, LapGraph, HeteroRR)
}


def get_method(name: str, **options) -> Method:
    """Instantiate a method by name; ``options`` go to its constructor (e.g. Blink's ``variant``)."""
    try:
        cls = METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}") from None
    return cls(**options)


__all__ = [
    "Blink",
    "LPGNN",
    "METHODS",
    "MLP",
    "SEARCH_SPACE",
    "Release",
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
