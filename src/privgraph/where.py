"""Where a registered method lives: its code, its derivation, its tests and its benchmark
(``privgraph methods NAME``, :func:`method_sources`).

* **code** — the module of its class and the mechanism modules that module imports, computed from the class
  (:func:`privgraph.catalogue.code_of`, stored in the catalogue so that no torch is imported here);
* **derivation** — the docs page and section that state and derive its guarantee, declared once per method
  here (:data:`DERIVATION`; a test checks every page and section exists);
* **tests** — found in a source checkout by convention from the code's place (``tests/methods/<family>/``,
  ``tests/methods/test_<family>*.py``, ``tests/audit/test_audit_<family>*.py``; those that name the method
  or its class, when some do), with the extra files declared in :data:`TESTS`;
* **benchmark** — the grids under ``src/privgraph/grids`` that run it (``method = "NAME"``), their results pages
  under ``docs/results``, and the scripts ``benchmarks/<family>*.py``.

An installed package holds neither the tests nor the benchmarks: they are then ``None``.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from privgraph.catalogue import load_catalogue, method_entry

_GUARANTEE = "setting-and-guarantee"
# The page (under docs/) and section where each method's guarantee is stated and derived.
DERIVATION: dict[str, str] = {
    "lpgnn": f"methods/lpgnn.md#{_GUARANTEE}",
    "ppcvgae": f"methods/ppcvgae.md#{_GUARANTEE}",
    "vgae": "methods/baselines.md#embedding-baselines-ppcvgae-paper",
    "dpgcn": "methods/baselines.md#embedding-baselines-ppcvgae-paper",
    "hetedp": f"methods/hetedp.md#{_GUARANTEE}",
    "hetedp-features": f"methods/hetedp.md#{_GUARANTEE}",
    "rgcn": "methods/baselines.md#heterogeneous-baselines-hetedp-paper",
    "hgt": "methods/baselines.md#heterogeneous-baselines-hetedp-paper",
    "metapath2vec": "methods/baselines.md#heterogeneous-baselines-hetedp-paper",
    "gcn-raw": "methods/baselines.md#lpgnns-comparison-rows",
    "mlp": "methods/baselines.md#lpgnns-comparison-rows",
    "gcn-rnd": "methods/baselines.md#lpgnns-comparison-rows",
    "gcn-ohd": "methods/baselines.md#lpgnns-comparison-rows",
    "rr": "methods/baselines.md#link-ldp-baselines-blink-paper-51",
    "symrr": "methods/baselines.md#link-ldp-baselines-blink-paper-51",
    "dprr": "methods/baselines.md#link-ldp-baselines-blink-paper-51",
    "ldpgcn": "methods/baselines.md#link-ldp-baselines-blink-paper-51",
    "ldpgen": "methods/baselines.md#link-ldp-baselines-blink-paper-51",
    "solitude": "methods/baselines.md#link-ldp-baselines-blink-paper-51",
    "blink": f"methods/blink.md#{_GUARANTEE}",
    "gap-inf": "methods/gap.md#guarantees",
    "gap-edp": "methods/gap.md#guarantees",
    "gap-ndp": "methods/gap.md#node-level-gap-ndp",
    "mlp-ndp": "methods/gap.md#features-only-node-level-dp-sgd-mlp-ndp",
    "featurerr": f"methods/heterorr.md#{_GUARANTEE}",
    "featureldp": "methods/baselines.md#feature-ldp-baselines-heterorr-paper",
    "edgerr": f"methods/heterorr.md#{_GUARANTEE}",
    "heterorr": f"methods/heterorr.md#{_GUARANTEE}",
    "privhrg": "methods/baselines.md#edge-level-baselines-heterorr-paper",
    "edgerand": "methods/baselines.md#edge-level-baselines-heterorr-paper",
    "lapgraph": "methods/baselines.md#edge-level-baselines-heterorr-paper",
    "gcn-public": "methods/baselines.md#edge-level-baselines-heterorr-paper",
    "node-dpsgd": f"methods/node_dpsgd.md#{_GUARANTEE}",
}
# Test files beyond the convention (paths from the checkout's root), where a method is tested elsewhere.
_LPGNN_ROWS = ("tests/methods/test_lpgnn.py",)
TESTS: dict[str, tuple[str, ...]] = {
    "gcn-raw": _LPGNN_ROWS,
    "mlp": _LPGNN_ROWS,
    "gcn-rnd": _LPGNN_ROWS,
    "gcn-ohd": _LPGNN_ROWS,
    "gap-edp": ("tests/experiments/test_gap_reference.py",),
    "gap-ndp": ("tests/experiments/test_gap_reference.py",),
    "node-dpsgd": ("tests/accounting/test_node_level.py",),
    "rgcn": ("tests/experiments/test_hetero_experiment.py", "tests/attacks/test_attack_hetero.py"),
    "hgt": ("tests/experiments/test_hetero_experiment.py", "tests/attacks/test_attack_hetero.py"),
    "edgerand": ("tests/audit/test_audit.py", "tests/mechanisms/test_large_epsilon.py"),
    "lapgraph": ("tests/test_registry.py", "tests/experiments/test_release_randomness.py"),
}
NOT_IN_PACKAGE = "not in an installed package (a source checkout has them)"


def checkout_root() -> Path | None:
    """The source checkout this package runs from (the folder holding ``src/privgraph``, ``tests`` and
    ``benchmarks``), or None for an installed package."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "tests").is_dir() and (root / "src" / "privgraph" / "grids").is_dir() else None


def family(code: str) -> str:
    """The method family of a code path: ``heterorr`` for ``privgraph/methods/heterorr/method.py``, ``gap``
    for ``privgraph/methods/gap.py`` (or ``privgraph/methods/gap/…``)."""
    parts = Path(code).parts
    return Path(parts[parts.index("methods") + 1]).stem


def _relative(paths: list[Path], root: Path) -> list[str]:
    out: list[str] = []
    for path in paths:
        text = path.relative_to(root).as_posix()
        if path.exists() and text not in out:
            out.append(text)
    return out


def tests_of(name: str, code: str, root: Path, cls: str | None = None) -> list[str]:
    """The test files of method ``name`` (code at ``code``) in the checkout at ``root``: by convention from its
    family (the files that name it or its class ``cls``; all of them when none does and nothing is declared), and
    the files :data:`TESTS` declares."""
    fam, tests = family(code), root / "tests"
    found = sorted((tests / "methods" / fam).rglob("test_*.py")) if (tests / "methods" / fam).is_dir() else []
    found += sorted((tests / "methods").glob(f"test_{fam}.py")) + sorted((tests / "methods").glob(f"test_{fam}_*.py"))
    found += sorted((tests / "audit").glob(f"test_audit_{fam}*.py"))
    declared = [root / p for p in TESTS.get(name, ())]
    named = [f for f in found if _names(f, name, cls)]  # the family's files that name the method
    return _relative((named or ([] if declared else found)) + declared, root)


def _names(path: Path, name: str, cls: str | None) -> bool:
    """Whether a test file names the method: its registered name quoted, or its class."""
    text = path.read_text(encoding="utf-8")
    return (
        f'"{name}"' in text or f"'{name}'" in text or (cls is not None and re.search(rf"\b{cls}\b", text) is not None)
    )


def benchmarks_of(name: str, code: str, root: Path) -> dict[str, list[str]]:
    """The grids that run method ``name`` (a ``method = "NAME"`` line), their results pages, and the
    family's benchmark scripts, in the checkout at ``root``."""
    line = re.compile(rf'^\s*method\s*=\s*"{re.escape(name)}"\s*(#.*)?$', re.MULTILINE)
    grids = [
        g for g in sorted((root / "src" / "privgraph" / "grids").glob("*.toml")) if line.search(g.read_text("utf-8"))
    ]
    fam = family(code)
    scripts = sorted((root / "benchmarks").glob(f"{fam}.py")) + sorted((root / "benchmarks").glob(f"{fam}_*.py"))
    return {
        "grids": _relative(grids, root),
        "results": _relative([root / "docs" / "results" / f"{g.stem}.md" for g in grids], root),
        "scripts": _relative(scripts, root),
    }


def unknown_method(name: str) -> str:
    """One line for an unknown method name, with the registered names closest to it."""
    names = list(load_catalogue()["methods"])
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"choose from {', '.join(names)}"
    return f"unknown method {name!r}; {hint} (privgraph methods lists them)"


def derivation_text(page: str, code: str, in_checkout: bool) -> str:
    """Where a method's derivation is written: ``docs/PAGE`` in a checkout; in an installed package (which
    ships no docs folder) the page named in the source repository and the installed module's docstring, which
    states the same guarantee and cites the same equations (``python -m pydoc MODULE``)."""
    if in_checkout:
        return f"docs/{page}"
    module = code.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return f"docs/{page} in the source repository; installed: python -m pydoc {module}"


def method_sources(name: str) -> dict[str, Any]:
    """Where method ``name`` lives: ``code``, ``class``, ``mechanisms`` (``src/privgraph/…`` in a checkout, else
        ``privgraph/…`` in the installed package), ``derivation``
        (``docs/PAGE.md#section``), ``tests`` (checkout paths) and ``benchmarks`` (``grids``, ``results``,
        ``scripts``); tests and benchmarks are None outside a source checkout, empty for a plugin's method (its code
    outside the package: docs/extending.md).  ``ValueError`` for an
        unknown name, with the closest names."""
    try:
        entry = method_entry(name)
    except ValueError:
        raise ValueError(unknown_method(name)) from None
    where = entry.get("where") or {}
    code = where.get("code", "")
    root = checkout_root()
    page = DERIVATION.get(name)
    if Path(code).is_absolute():  # a plugin's class, outside the package: privgraph's checkout has none of its own
        return {
            "code": code,
            "class": where.get("class"),
            "mechanisms": list(where.get("mechanisms", [])),
            "derivation": None,
            "tests": [],
            "benchmarks": {"grids": [], "results": [], "scripts": []},
        }
    in_checkout = (lambda path: f"src/{path}") if root is not None and (root / "src" / code).exists() else str
    return {
        "code": in_checkout(code) if code else "",
        "class": where.get("class"),
        "mechanisms": [in_checkout(m) for m in where.get("mechanisms", [])],
        "derivation": None if page is None else derivation_text(page, code, root is not None),
        "tests": None if root is None or not code else tests_of(name, code, root, where.get("class")),
        "benchmarks": None if root is None or not code else benchmarks_of(name, code, root),
    }


__all__ = [
    "DERIVATION",
    "NOT_IN_PACKAGE",
    "TESTS",
    "checkout_root",
    "derivation_text",
    "method_sources",
    "unknown_method",
]
