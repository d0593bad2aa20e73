"""The package's layering (docs/layout.md): no module imports from a higher layer, and no two
subpackages import each other, however indirectly.

Every ``import`` of a ``privgraph`` module counts: at module level, inside a function (a lazy
import that hides a circle is still a circle), under ``TYPE_CHECKING``, and a module named by a
string (``importlib.import_module("privgraph.data.hetero")``, the dataset registry's loader
modules): a string constant that is the full name of one of the package's modules.  Inside a
subpackage, no two modules import each other, however indirectly, either.  The layers, lowest
first (a unit is a subpackage or a top-level module):

====  =====================================  ==================================================
rank  units                                  why there
====  =====================================  ==================================================
0     ``version``, ``progress``, ``device``,  no heavy imports; import only each other
      ``network``, ``threads``,              (``ray_cluster``: ``device``, ``network``)
      ``ray_cluster``, ``grids``,            (``grids``: the shipped grid files; ``plugins``: the
      ``display``, ``plugins``               plugin methods' entry points, none imported)
1     ``accounting``, ``param_checks``,      guarantees, the RDP accountant, ε/δ validation; the
      ``input_rules``                        declared parameter ranges and rules, a method's input
                                             rules (a declared domain: ε/δ validation's check_domain)
2     ``mechanisms``                         randomizers (report their guarantees)
3     ``data``                               loading, validation, splits (annotations draw noise)
4     ``nn``                                 layers and models
5     ``train``                              trainers (DP-SGD)
6     ``release``                            ``PrivateRelease``: what every method returns
7     ``methods``                            the registered methods
8     ``attacks``, ``request``               attacks on a method's release or trained model; the
                                             ``ReleaseRequest`` every entry point builds
9     ``api``                                ``privatize``/``fit``/``attack``/``release``
10    ``audit``, ``transforms``              release through ``api.release``, as users do
11    ``experiments``                        the pipeline, store, sweeps, reports
12    ``cli``, ``catalogue``, ``where``,     the command, its catalogue, where each method lives and the
      ``__main__``, ``privgraph``            package facade (its lazy names)
====  =====================================  ==================================================
"""

from __future__ import annotations

import ast
from pathlib import Path

import privgraph

PACKAGE = Path(privgraph.__file__).parent
ROOT = "privgraph"  # the package's own __init__: the facade, at the top
LAYERS: tuple[tuple[str, ...], ...] = (
    ("version", "progress", "display", "device", "network", "threads", "ray_cluster", "grids", "plugins"),
    ("accounting", "param_checks", "input_rules"),
    ("mechanisms",),
    ("data",),
    ("nn",),
    ("train",),
    ("release_files", "release_formats", "release"),
    ("methods",),
    ("attacks", "request"),
    ("api",),
    ("audit", "transforms"),
    ("experiments",),
    ("cli", "catalogue", "where", "__main__", ROOT),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def module_name(path: Path) -> str:
    """``privgraph.a.b`` for ``.../privgraph/a/b.py`` (a package: its ``__init__``)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit(module: str) -> str:
    """The layer unit of a privgraph module: its subpackage or top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


MODULES = frozenset(module_name(p) for p in PACKAGE.rglob("*.py"))


def imported_modules(path: Path) -> list[tuple[str, int]]:
    """(privgraph module, line) of every import in ``path``, at any depth, relative ones resolved; a
    string constant naming one of the package's modules (``"privgraph.a"``, not the bare ``"privgraph"``)
    counts as an import of it (``import_module``); ``from package import name`` imports the submodule
    ``package.name`` when there is one, and only the submodules when it names nothing else."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names]
            submodules = [name for name in names if name in MODULES]
            targets = submodules if len(submodules) == len(names) else [base, *submodules]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in MODULES - {ROOT}:
            targets = [node.value]
        else:
            continue
        found += [(t, node.lineno) for t in targets if t == ROOT or t.startswith(ROOT + ".")]
    return found


def edges() -> list[tuple[str, str, str]]:
    """(importing module, imported module, where) over every module of the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = module_name(path)
        out += [
            (source, target, f"{path.relative_to(PACKAGE.parent)}:{line}") for target, line in imported_modules(path)
        ]
    return out


def test_every_unit_has_a_layer():
    units = {unit(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert units <= set(RANK), f"units without a layer (add them to LAYERS and docs/layout.md): {units - set(RANK)}"


def test_the_scan_sees_lazy_and_type_checking_imports():
    """The parser finds function-level and TYPE_CHECKING imports."""
    sample = PACKAGE / "methods" / "base.py"
    targets = {t for t, _ in imported_modules(sample)}
    assert "privgraph.release" in targets and "privgraph.train" in targets  # TYPE_CHECKING / lazy
    assert unit("privgraph.methods.blink.client") == "methods" and unit("privgraph") == ROOT


def test_the_scan_sees_modules_named_by_strings():
    """The dataset registry imports its loader modules by name (``importlib.import_module``)."""
    targets = {t for t, _ in imported_modules(PACKAGE / "data" / "registry.py")}
    assert {"privgraph.data.datasets", "privgraph.data.sensitive", "privgraph.data.hetero"} <= targets


def test_no_import_from_a_higher_layer():
    up = [
        f"{where}: {source} imports {target} ({unit(source)} {RANK[unit(source)]} < "
        f"{unit(target)} {RANK[unit(target)]})"
        for source, target, where in edges()
        if RANK[unit(target)] > RANK[unit(source)]
    ]
    assert not up, "imports from a higher layer:\n" + "\n".join(up)


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """The circles of a directed graph found by a depth-first walk (each at least once), as ``a -> b -> a``."""
    found = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                found.append(" -> ".join(path[path.index(nxt) :] + [nxt]))
            elif nxt not in done:
                visit(nxt, path + [nxt])
        done.add(node)

    done: set[str] = set()
    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    return found


def test_no_cycles_between_units():
    graph: dict[str, set[str]] = {}
    for source, target, _ in edges():
        if unit(source) != unit(target):
            graph.setdefault(unit(source), set()).add(unit(target))
    circles = cycles(graph)
    assert not circles, "import cycles between subpackages:\n" + "\n".join(circles)


def test_no_cycles_inside_a_subpackage():
    """Between the modules of one unit (a subpackage's ``__init__`` counts as a module of it)."""
    graph: dict[str, set[str]] = {}
    for source, target, _ in edges():
        if unit(source) == unit(target) and source != target and unit(source) != ROOT:
            graph.setdefault(source, set()).add(target)
    circles = cycles(graph)
    assert not circles, "import cycles inside a subpackage:\n" + "\n".join(circles)


def test_the_cycle_check_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a -> b -> c -> a"]
    assert cycles({"a": {"b"}, "b": set()}) == []
