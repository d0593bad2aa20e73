"""Every runtime import of the package is a declared dependency (`click` was imported by the command
line but not declared, so every command of an installed wheel failed).  The imports are read from the source
(every ``import``/``from`` of a top-level module), mapped to their distributions by the installed metadata, and
compared with ``pyproject.toml``'s ``dependencies`` (``ray``: the ``sweep`` extra, imported only by the
sweep's executors)."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = {"ray": "sweep"}  # imported where the extra's feature is used, with a message when absent


def _top_level_imports() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "src" / "privgraph").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"privgraph", "__future__"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_third_party_import_is_a_declared_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    declared = {_normal(re.split(r"[<>=!~; \[]", dep, maxsplit=1)[0]) for dep in project["dependencies"]}
    extras = {
        extra: {_normal(re.split(r"[<>=!~; \[]", dep, maxsplit=1)[0]) for dep in deps}
        for extra, deps in project["optional-dependencies"].items()
    }
    distributions = packages_distributions()
    missing = []
    for module in sorted(_top_level_imports()):
        dists = {_normal(d) for d in distributions.get(module, [module])}
        if module in OPTIONAL:
            assert dists & extras[OPTIONAL[module]], f"{module} is not in the {OPTIONAL[module]} extra"
        elif not dists & declared:
            missing.append(f"{module} ({', '.join(sorted(dists))})")
    assert not missing, f"imported by privgraph but not declared in pyproject.toml's dependencies: {missing}"
