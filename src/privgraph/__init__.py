"""privgraph: privacy-preserving learning on graphs.

The Python API (:mod:`privgraph.api`)::

    import privgraph as pg
    rel = pg.privatize(data, "lpgnn", epsilon=1.0)   # the user's own PyG Data
    print(rel.report); rel.save("graph.pt")
    res = pg.fit(rel, model="gcn", seed=0)
    pg.attack(res, "link-stealing", truth=data)       # audit it: attack_auc, attack_advantage, ...
    pg.list_methods()                                 # the registry
    T.Compose([T.NormalizeFeatures(), pg.Privatize("lpgnn", epsilon=1.0)])   # as a PyG transform
    pg.sweep("benchmarks/grids/lpgnn.toml", db="lpgnn.jsonl", workers=2)   # a paper's grid on Ray
    pg.report("lpgnn.jsonl", "benchmarks/grids/lpgnn.toml", out="docs/results")
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
import importlib.util
import re
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privgraph.version import __version__

if TYPE_CHECKING:  # the names as the docs and type checkers see them; _LAZY imports them at runtime
    from privgraph.accounting import Ledger, PrivacyGuarantee, PrivacyReport
    from privgraph.api import attack, fit, list_methods, load_release, privatize
    from privgraph.experiments.compare import compare
    from privgraph.experiments.report import report
    from privgraph.experiments.sweep import sweep
    from privgraph.mechanisms import SecureRandom
    from privgraph.release import PrivateRelease
    from privgraph.threads import set_threads
    from privgraph.transforms import Privatize

_LAZY = {
    "privatize": "privgraph.api",
    "fit": "privgraph.api",
    "attack": "privgraph.api",
    "list_methods": "privgraph.api",
    "load_release": "privgraph.api",
    "Privatize": "privgraph.transforms",
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
    "load_release",
    "Privatize",
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


def _is_torch_instance(obj: Any, cls: Any) -> bool:
    """PyG's ``is_torch_instance``: ``isinstance``, a ``torch.compile``'d model judged by the model it wraps
    (such a model exists only once something imported ``torch._dynamo``)."""
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None and isinstance(obj, dynamo.OptimizedModule):
        return isinstance(obj._orig_mod, cls)
    return isinstance(obj, cls)


def _defines_only_is_torch_instance(source: str) -> bool:
    """Whether PyG's ``isinstance.py`` defines ``is_torch_instance`` and nothing else at its top level."""
    names = re.findall(r"^(?:async\s+def|def|class)\s+(\w+)|^([A-Za-z_]\w*)\s*[:=]", source, re.M)
    return [a or b for a, b in names] == ["is_torch_instance"]


def _pyg_without_dynamo() -> None:
    """PyG's import runs ``torch_geometric/isinstance.py``, which imports ``torch._dynamo`` (about 1.3 of PyG's
    4 CPU-s: ``docs/benchmarks/import_cost.md``) only to unwrap compiled models; torch imports it lazily.  When
    that file defines ``is_torch_instance`` alone (the PyG this was checked against), its module is replaced
    by one defining the same function that reads ``torch._dynamo`` only if it was imported; any other PyG
    imports its own."""
    name = "torch_geometric.isinstance"
    if "torch_geometric" in sys.modules or name in sys.modules:
        return
    spec = importlib.util.find_spec("torch_geometric")
    if spec is None or spec.origin is None:
        return
    try:
        source = (Path(spec.origin).parent / "isinstance.py").read_text(encoding="utf-8")
    except OSError:
        return
    if _defines_only_is_torch_instance(source):
        module = types.ModuleType(name, "privgraph's copy of PyG's is_torch_instance (privgraph/__init__.py)")
        module.is_torch_instance = _is_torch_instance  # type: ignore[attr-defined]
        sys.modules[name] = module


class _BeforePyG:
    """On the process's first import of PyG (and only then: ``import privgraph`` loads nothing),
    :func:`_pyg_without_dynamo`, then out of the way."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if name == "torch_geometric":
            if _BEFORE_PYG in sys.meta_path:
                sys.meta_path.remove(_BEFORE_PYG)
            _pyg_without_dynamo()


_BEFORE_PYG = _BeforePyG()
if "torch_geometric" not in sys.modules:
    sys.meta_path.insert(0, _BEFORE_PYG)
