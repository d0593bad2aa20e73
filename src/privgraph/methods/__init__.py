"""Published systems, one module each, registered by name in :data:`METHODS`
(``@register_method``); :func:`get_method` builds one with its typed parameters."""

# ruff: noqa: I001, F401 -- the import order is the registration order (lpgnn first: `privgraph methods` lists
# in it), and the method classes are re-exported
from __future__ import annotations

from privgraph.methods.base import (
    METHODS,
    SEARCH_SPACE,
    HeteroMethod,
    Hyperparameters,
    Method,
    MethodParams,
    Release,
    Task,
    param,
    register_method,
)
from privgraph.methods.lpgnn import LPGNN
from privgraph.methods.label_ldp import LabelReports, denoise_labels, report_labels
from privgraph.methods.ppcvgae.method import DPGCN, PPCVGAE, VGAE
from privgraph.methods.hetedp.method import HeteDP, HeteDPFeatures
from privgraph.methods.hetedp.baselines import HGT, RGCN, MetaPath2Vec
from privgraph.methods.baselines import MLP, OneHotDegree, RandomFeatures, RawFeatures
from privgraph.methods.blink.baselines import (
    DegreePreservingRR,
    LaplaceDpGCN,
    RandomizedResponseGraph,
    SymmetricRandomizedResponseGraph,
)
from privgraph.methods.blink.ldpgen import LDPGen
from privgraph.methods.blink.method import Blink
from privgraph.methods.gap import GAPEdge, GAPInf, GAPNode
from privgraph.methods.blink.solitude import Solitude
from privgraph.methods.heterorr.method import (
    EdgeRand,
    EdgeRRMethod,
    FeatureLDP,
    FeatureRRMethod,
    HeteroRR,
    LapGraph,
    PrivHRG,
    PublicEdgesOnly,
)
from privgraph.methods.node_dpsgd import NodeDPSGD


def method_class(name: str) -> type[Method]:
    """The registered class of ``name`` (a clear error listing the methods otherwise)."""
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}") from None


def get_method(name: str, **params) -> Method:
    """Build a method by name with its parameters (validated by its ``Params``, e.g. Blink's ``variant``)."""
    return method_class(name)(**params)


__all__ = [
    "Blink",
    "LPGNN",
    "METHODS",
    "MLP",
    "MethodParams",
    "NodeDPSGD",
    "SEARCH_SPACE",
    "Task",
    "Release",
    "HeteroMethod",
    "Hyperparameters",
    "LabelReports",
    "Method",
    "OneHotDegree",
    "PublicEdgesOnly",
    "RandomFeatures",
    "RawFeatures",
    "denoise_labels",
    "get_method",
    "method_class",
    "param",
    "register_method",
    "report_labels",
]
