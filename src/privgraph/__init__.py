"""privgraph: privacy-preserving learning on graphs.

The Python API (:mod:`privgraph.api`)::

    import privgraph as pg
    rel = pg.privatize(data, "lpgnn", epsilon=1.0)   # the user's own PyG Data
    print(rel.report); rel.save("graph.pt")
    res = pg.fit(rel, model="gcn", seed=0)
    pg.attack(res, "link-stealing", truth=data)       # audit it: attack_auc, attack_advantage, ...
    pg.audit_method(data, "lpgnn", epsilon=1.0)       # ε lower bounds against the claim (data None: synthetic)
    pg.privatize(data, pg.ReleaseRequest.build("lpgnn", epsilon=1.0, seed=0))   # the one request, typed
    pg.list_methods()                                 # the registry
    pg.method_sources("gap-edp")                      # where its code, derivation, tests and benchmark live
    T.Compose([T.NormalizeFeatures(), pg.Privatize("lpgnn", epsilon=1.0)])   # as a PyG transform
    pg.sweep("src/privgraph/grids/lpgnn.toml", db="lpgnn.jsonl", workers=2)   # a paper's grid on Ray
    pg.report("lpgnn.jsonl", "src/privgraph/grids/lpgnn.toml", out="docs/results")
    pg.compare(["lpgnn", "blink", "gap-edp"], dataset="cora", epsilons=[1, 4], trials=2, out="cmp")  # side by side

Subpackages are layered, lowest first (docs/layout.md; nothing imports from a higher one):
``accounting`` (guarantees) → ``mechanisms`` (randomizers with unbiased estimators) →
``data`` (loading, validation, splits, synthetic graphs) → ``nn`` / ``train`` (models and
trainers) → ``release`` → ``methods`` (published systems, registered in
``privgraph.methods.METHODS``) → ``attacks`` (membership, link and attribute inference
against a trained target) → ``api`` → ``audit``, ``transforms`` (the PyG transforms) →
``experiments`` (the pipeline, results store, plots) → ``cli``.  Every mechanism and method returns a
:class:`~privgraph.accounting.PrivacyGuarantee`.

The API names are imported lazily, so ``privgraph --help`` starts without
loading torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from privgraph.threads import set_default_threads as _set_default_threads
from privgraph.version import __version__

_set_default_threads()  # the CPUs this process may use, as the command line does ($PRIVGRAPH_THREADS overrides)

if TYPE_CHECKING:  # the names as the docs and type checkers see them; _LAZY imports them at runtime
    from privgraph.accounting import Ledger, PrivacyGuarantee, PrivacyReport
    from privgraph.api import attack, fit, list_methods, load_release, privatize
    from privgraph.audit import audit_method
    from privgraph.experiments.compare import compare
    from privgraph.experiments.report import report
    from privgraph.experiments.sweep import sweep
    from privgraph.mechanisms import SecureRandom
    from privgraph.release import PrivateRelease
    from privgraph.request import ReleaseRequest
    from privgraph.threads import set_threads
    from privgraph.transforms import Privatize
    from privgraph.where import method_sources

_LAZY = {
    "privatize": "privgraph.api",
    "fit": "privgraph.api",
    "attack": "privgraph.api",
    "list_methods": "privgraph.api",
    "method_sources": "privgraph.where",
    "load_release": "privgraph.api",
    "Privatize": "privgraph.transforms",
    "ReleaseRequest": "privgraph.request",
    "audit_method": "privgraph.audit",
    "sweep": "privgraph.experiments.sweep",
    "report": "privgraph.experiments.report",
    "compare": "privgraph.experiments.compare",
    "PrivateRelease": "privgraph.release",
    "SecureRandom": "privgraph.mechanisms",
    "PrivacyGuarantee": "privgraph.accounting",
    "PrivacyReport": "privgraph.accounting",
    "Ledger": "privgraph.accounting",
    "set_threads": "privgraph.threads",
}

__all__ = [
    "__version__",
    "privatize",
    "fit",
    "attack",
    "list_methods",
    "method_sources",
    "load_release",
    "Privatize",
    "ReleaseRequest",
    "audit_method",
    "sweep",
    "report",
    "compare",
    "PrivateRelease",
    "SecureRandom",
    "PrivacyGuarantee",
    "PrivacyReport",
    "Ledger",
    "set_threads",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'privgraph' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
