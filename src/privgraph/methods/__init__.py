"""Published systems, one module each, registered by name in :data:`METHODS`
(``@register_method``); :func:`get_method` builds one with its typed parameters.

Each method's module is imported on first use (its name in :data:`METHODS`, or its class here, PEP 562):
running one method loads that method's dependencies alone (``privgraph run gap-edp`` imports no
scikit-learn)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:  # the names as the docs and type checkers see them; _LAZY imports them at runtime
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
    from privgraph.methods.gap import GAPEdge, GAPInf, GAPNode, MLPNode
    from privgraph.methods.hetedp.baselines import HGT, RGCN, MetaPath2Vec
    from privgraph.methods.hetedp.method import HeteDP, HeteDPFeatures
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
    from privgraph.methods.label_ldp import LabelReports, denoise_labels, report_labels
    from privgraph.methods.lpgnn import LPGNN
    from privgraph.methods.node_dpsgd import NodeDPSGD
    from privgraph.methods.ppcvgae.method import DPGCN, PPCVGAE, VGAE

# every registered method: its name → the module whose import registers it, in the order `privgraph methods`
# lists them (tests/test_lazy_imports.py checks it against the classes the package registers)
METHODS.announce(
    {
        "lpgnn": "privgraph.methods.lpgnn",
        "ppcvgae": "privgraph.methods.ppcvgae.method",
        "vgae": "privgraph.methods.ppcvgae.method",
        "dpgcn": "privgraph.methods.ppcvgae.method",
        "hetedp": "privgraph.methods.hetedp.method",
        "hetedp-features": "privgraph.methods.hetedp.method",
        "rgcn": "privgraph.methods.hetedp.baselines",
        "hgt": "privgraph.methods.hetedp.baselines",
        "metapath2vec": "privgraph.methods.hetedp.baselines",
        "gcn-raw": "privgraph.methods.baselines",
        "mlp": "privgraph.methods.baselines",
        "gcn-rnd": "privgraph.methods.baselines",
        "gcn-ohd": "privgraph.methods.baselines",
        "rr": "privgraph.methods.blink.baselines",
        "symrr": "privgraph.methods.blink.baselines",
        "dprr": "privgraph.methods.blink.baselines",
        "ldpgcn": "privgraph.methods.blink.baselines",
        "ldpgen": "privgraph.methods.blink.ldpgen",
        "blink": "privgraph.methods.blink.method",
        "gap-inf": "privgraph.methods.gap",
        "gap-edp": "privgraph.methods.gap",
        "gap-ndp": "privgraph.methods.gap",
        "mlp-ndp": "privgraph.methods.gap",
        "solitude": "privgraph.methods.blink.solitude",
        "featurerr": "privgraph.methods.heterorr.method",
        "featureldp": "privgraph.methods.heterorr.method",
        "edgerr": "privgraph.methods.heterorr.method",
        "privhrg": "privgraph.methods.heterorr.method",
        "edgerand": "privgraph.methods.heterorr.method",
        "lapgraph": "privgraph.methods.heterorr.method",
        "gcn-public": "privgraph.methods.heterorr.method",
        "heterorr": "privgraph.methods.heterorr.method",
        "node-dpsgd": "privgraph.methods.node_dpsgd",
    }
)

# the method classes (and label LDP's helpers) re-exported here: name → the submodule that defines it
_LAZY = {
    "MLP": "baselines",
    "OneHotDegree": "baselines",
    "RandomFeatures": "baselines",
    "RawFeatures": "baselines",
    "DegreePreservingRR": "blink.baselines",
    "LaplaceDpGCN": "blink.baselines",
    "RandomizedResponseGraph": "blink.baselines",
    "SymmetricRandomizedResponseGraph": "blink.baselines",
    "LDPGen": "blink.ldpgen",
    "Blink": "blink.method",
    "Solitude": "blink.solitude",
    "GAPEdge": "gap",
    "GAPInf": "gap",
    "GAPNode": "gap",
    "MLPNode": "gap",
    "HGT": "hetedp.baselines",
    "RGCN": "hetedp.baselines",
    "MetaPath2Vec": "hetedp.baselines",
    "HeteDP": "hetedp.method",
    "HeteDPFeatures": "hetedp.method",
    "EdgeRand": "heterorr.method",
    "EdgeRRMethod": "heterorr.method",
    "FeatureLDP": "heterorr.method",
    "FeatureRRMethod": "heterorr.method",
    "HeteroRR": "heterorr.method",
    "LapGraph": "heterorr.method",
    "PrivHRG": "heterorr.method",
    "PublicEdgesOnly": "heterorr.method",
    "LabelReports": "label_ldp",
    "denoise_labels": "label_ldp",
    "report_labels": "label_ldp",
    "LPGNN": "lpgnn",
    "NodeDPSGD": "node_dpsgd",
    "DPGCN": "ppcvgae.method",
    "PPCVGAE": "ppcvgae.method",
    "VGAE": "ppcvgae.method",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"privgraph.methods.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'privgraph.methods' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
    "METHODS",
    "SEARCH_SPACE",
    "HeteroMethod",
    "Hyperparameters",
    "Method",
    "MethodParams",
    "Release",
    "Task",
    "get_method",
    "method_class",
    "param",
    "register_method",
    "MLP",
    "OneHotDegree",
    "RandomFeatures",
    "RawFeatures",
    "DegreePreservingRR",
    "LaplaceDpGCN",
    "RandomizedResponseGraph",
    "SymmetricRandomizedResponseGraph",
    "LDPGen",
    "Blink",
    "Solitude",
    "GAPEdge",
    "GAPInf",
    "GAPNode",
    "MLPNode",
    "HGT",
    "RGCN",
    "MetaPath2Vec",
    "HeteDP",
    "HeteDPFeatures",
    "EdgeRand",
    "EdgeRRMethod",
    "FeatureLDP",
    "FeatureRRMethod",
    "HeteroRR",
    "LapGraph",
    "PrivHRG",
    "PublicEdgesOnly",
    "LabelReports",
    "denoise_labels",
    "report_labels",
    "LPGNN",
    "NodeDPSGD",
    "DPGCN",
    "PPCVGAE",
    "VGAE",
]
