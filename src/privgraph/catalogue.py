"""The command line's catalogue: what ``privgraph`` needs to know about the registered methods and
attacks before any work starts, read from ``catalogue.json`` without torch or PyG.

The registries (:data:`privgraph.methods.METHODS`, :data:`privgraph.attacks.ATTACKS`) hold classes
whose modules import torch and PyG (tens of seconds on a loaded machine).  ``privgraph methods``,
``privgraph attacks`` and every check of a command's arguments (a method's name, its ``--param``
names and types, ``--set`` names and types, ``--task``, ε, the dataset's name) read this generated
copy of their metadata instead; the heavy modules are imported only when the work starts.

``python -m privgraph.catalogue`` regenerates the file from the live registries; a test asserts that
the file equals them (tests/test_catalogue.py), so it cannot go stale.

Each method's entry: ``info`` (:meth:`~privgraph.methods.Method.info`, what ``privgraph methods`` prints),
the class flags the command line checks (``heterogeneous``, ``simple_graph``, ``needs_features``,
``needs_domain``, ``needs_private_edges``: :mod:`privgraph.input_rules`), ``params`` (each ``Params``
field's type, written as :func:`type_text`), ``choices`` (the parameters whose values are a fixed set),
``bounds`` (their ranges) and ``rules`` (the cross-parameter rules): all three checked before torch by
:func:`privgraph.param_checks.check_params`, the function ``Params`` validates with; and ``tasks``: for the
default task (key ``""``) and every ``--task`` name, the evaluation task it resolves to
(:func:`~privgraph.experiments.tasks.task_for`) with its ``--set`` hyperparameters' types (``training``,
None where the task trains no model of its own) and the registry graphs its ``--dataset`` is looked up
among, or the ``error`` that name gives. Each attack's entry: ``info``
(:meth:`~privgraph.attacks.Attack.info`), ``params``, ``choices``, ``bounds`` and ``rules``. Each method's
``where``: the module of its class and the mechanism modules that module imports (:func:`code_of`), which
:mod:`privgraph.where` completes with its derivation, tests and benchmark.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import math
import sys
import typing
import warnings
from functools import cache
from pathlib import Path
from typing import Any

from privgraph.plugins import PluginWarning, plugin_entry_points

CATALOGUE_PATH = Path(__file__).with_name("catalogue.json")
REGENERATE = "python -m privgraph.catalogue"

# the names a parameter's type is written with (every type a Params field may have: see _parse in cli)
_TYPE_NAMES: dict[str, Any] = {"int": int, "float": float, "bool": bool, "str": str, "tuple": tuple, "None": None}


def type_text(hint: Any) -> str:
    """A type as text: ``int``, ``float | None``, ``tuple[int, ...] | None`` (:func:`type_of` reads it)."""
    return hint.__name__ if isinstance(hint, type) else str(hint)


def type_of(text: str) -> Any:
    """The type :func:`type_text` wrote (only the builtin scalars, ``tuple`` and ``None`` are known)."""
    return eval(text, {"__builtins__": {}}, dict(_TYPE_NAMES))  # noqa: S307 - the package's own file, no builtins


@cache
def load_catalogue(path: Path = CATALOGUE_PATH) -> dict[str, Any]:
    """The catalogue file (read once)."""
    return json.loads(path.read_text(encoding="utf-8"))


def _live_registry() -> Any:
    """:mod:`privgraph.methods` where it may hold more than the file (imported already, or a plugin installed:
    then imported here, with torch), else None."""
    live = sys.modules.get("privgraph.methods")
    if live is None and plugin_entry_points():
        live = importlib.import_module("privgraph.methods")
    return live


def method_entries() -> dict[str, dict[str, Any]]:
    """Every method's entry: the built-in ones from the file, then the installed plugins' (described from their
    classes, :func:`_method_entry`: torch is imported only where a plugin is installed)."""
    methods = dict(load_catalogue()["methods"])
    if plugin_entry_points():
        registry = importlib.import_module("privgraph.methods").METHODS
        for name, dist in registry.discover().items():
            try:
                methods.setdefault(name, _method_entry(registry[name]))
            except Exception as err:  # noqa: BLE001 - another package's class: its line, never a crash of the listing
                why = " ".join(f"{type(err).__name__}: {err}".split())
                warnings.warn(f"plugin method {name!r} from {dist} cannot be described: {why}", PluginWarning, 2)
    return methods


def method_entry(name: str) -> dict[str, Any]:
    """The method ``name``'s entry; ``ValueError`` with the names otherwise (the registry's own message).
    A method registered at run time (``@register_method`` in a process that has imported the methods,
    e.g. a plugin calling :func:`privgraph.cli.main`) or by an installed plugin's entry point is described
    from the live registry."""
    methods = load_catalogue()["methods"]
    if name in methods:
        return methods[name]
    live = _live_registry()
    if live is not None and name in live.METHODS:
        return _method_entry(live.METHODS[name])
    why = f" ({live.METHODS.broken[name]})" if live is not None and name in live.METHODS.broken else ""
    raise ValueError(f"unknown method {name!r}; choose from {', '.join(methods)}{why}")


def attack_entry(name: str) -> dict[str, Any]:
    """The attack ``name``'s entry; ``ValueError`` with the names otherwise."""
    attacks = load_catalogue()["attacks"]
    if name not in attacks:
        raise ValueError(f"unknown attack {name!r}; choose from {', '.join(attacks)}")
    return attacks[name]


def hints(types: dict[str, str]) -> dict[str, Any]:
    """``{name: type}`` from an entry's ``{name: type text}``, in its order."""
    return {name: type_of(text) for name, text in types.items()}


def task_entry(method: dict[str, Any], task: str | None) -> dict[str, Any] | None:
    """The method's evaluation task for ``--task`` (None: its default): ``name``, ``training``,
    ``datasets``; ``ValueError`` where the name does not apply to it; None for a name the catalogue
    does not know (the pipeline refuses it)."""
    entry = method["tasks"].get(task or "")
    if entry is not None and "error" in entry:
        raise ValueError(entry["error"])
    return entry


# ------------------------------------------------------------------------------------------- generation


def _field_types(cls: type) -> dict[str, str]:
    hinted = typing.get_type_hints(cls)
    return {f.name: type_text(hinted[f.name]) for f in dataclasses.fields(cls)}


def _choices(cls: type) -> dict[str, list[Any]]:
    """Each parameter's fixed set of values (``param(..., choices=...)``), for the check before torch."""
    return {f.name: list(f.metadata["choices"]) for f in dataclasses.fields(cls) if "choices" in f.metadata}


def _bounds(cls: type) -> dict[str, str]:
    """Each parameter's range (``param(..., bound=...)``), for the check before torch."""
    return {f.name: f.metadata["bound"] for f in dataclasses.fields(cls) if "bound" in f.metadata}


def _plain_spend(cls: type) -> bool:
    """Whether ``cls`` declares the base spend (:meth:`~privgraph.methods.Method.planned_spend`: ε and the
    value of its ``delta_param`` on its unit, no mechanism event, nothing read from the data), which
    :func:`declared_spend` computes from the catalogue."""
    from privgraph.methods.base import Method

    own = ("planned_spend", "dp_delta", "spend_event", "_spend")
    return (
        all(getattr(cls, name) is getattr(Method, name) for name in own)
        and not cls.reads_nothing_private
        and not cls.spend_reads_data
    )


def declared_spend(entry: dict[str, Any], epsilon: float | None, values: dict[str, Any]) -> list[Any] | None:
    """A release's declared spend (:meth:`~privgraph.methods.Method.planned_spend`, without label ε) computed
    from the method's catalogue ``entry`` without torch, where the method declares the base spend
    (``plain_spend``); None where only the built method can tell.  ``values``: its ``--param`` values."""
    if not entry.get("plain_spend") or epsilon is None:
        return None
    from privgraph.accounting.ledger import Spend

    info = entry["info"]
    if not info["private"]:
        return [Spend(info["unit"], math.inf)]
    name = entry.get("delta_param")
    defaults = {p["name"]: p["default"] for p in info["parameters"]}
    delta = None if name is None else values.get(name, defaults.get(name))
    return [Spend(info["unit"], float(epsilon), 0.0 if delta is None else float(delta))]


# modules of privgraph.mechanisms that are randomness or shared checks, not mechanisms (not listed as used)
_NOT_MECHANISMS = frozenset(f"privgraph.mechanisms{m}" for m in ("", ".base", ".randomness", ".prf"))


def _package_path(path: str | Path) -> str:
    """``privgraph/methods/gap.py``: a source file's path relative to the folder that holds the package
    (a method defined outside the package, a user's subclass: its absolute path)."""
    root = Path(__file__).resolve().parent.parent
    resolved = Path(path).resolve()
    return resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else resolved.as_posix()


def _mechanisms_imported(files: list[Path]) -> list[str]:
    """The mechanism modules (as package paths) that ``files`` import, a name imported from the package
    ``privgraph.mechanisms`` counted for the module that defines it (a registry: each of its entries')."""
    package = importlib.import_module("privgraph.mechanisms")
    modules: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                modules.update(a.name for a in node.names if a.name.startswith("privgraph.mechanisms."))
            elif isinstance(node, ast.ImportFrom) and node.module == "privgraph.mechanisms":
                for alias in node.names:
                    obj = getattr(package, alias.name, None)
                    for one in obj.values() if isinstance(obj, dict) else [obj]:  # a registry: its entries
                        owner = one if inspect.ismodule(one) else inspect.getmodule(one)
                        if owner is not None:
                            modules.add(owner.__name__)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("privgraph.mechanisms."):
                modules.add(node.module or "")
    kept = sorted(m for m in modules if m.startswith("privgraph.mechanisms") and m not in _NOT_MECHANISMS)
    return [_package_path(inspect.getsourcefile(importlib.import_module(m)) or "") for m in kept]


def code_of(cls: type) -> dict[str, Any]:
    """Where a method's code lives: ``code`` (the module of its class, from :func:`inspect.getsourcefile`),
    ``class``, and ``mechanisms``: the mechanism modules that module imports (randomness left out)."""
    source = inspect.getsourcefile(cls) or ""
    return {
        "code": _package_path(source),
        "class": cls.__qualname__,
        "mechanisms": _mechanisms_imported([Path(source)]),
    }


def _method_entry(cls: type) -> dict[str, Any]:
    """A method class's catalogue entry (imports the tasks, so torch and PyG)."""
    from privgraph.experiments.tasks.base import TASK_ALIASES, TASK_CLASSES, task_for

    tasks: dict[str, Any] = {}
    for given in ("", *TASK_CLASSES, *(a for a in TASK_ALIASES if a not in TASK_CLASSES)):
        try:
            task = task_for(cls, given or None)
        except ValueError as err:
            tasks[given] = {"error": str(err)}
            continue
        training = None if task.training is None else _field_types(task.training)
        tasks[given] = {"name": task.name, "training": training, "datasets": list(task.datasets)}
    return {
        "info": cls.info(),
        "heterogeneous": cls.heterogeneous,
        "simple_graph": cls.simple_graph,
        "needs_features": cls.needs_features,
        "needs_domain": cls.needs_domain,
        "needs_private_edges": cls.needs_private_edges,
        "params": _field_types(cls.Params),
        "choices": _choices(cls.Params),
        "bounds": _bounds(cls.Params),
        "rules": [r.__name__ for r in cls.Params.rules],
        "renamed": {old: hint for old, (_, hint) in cls.Params.renamed.items()},
        "delta_param": cls.delta_param,
        "plain_spend": _plain_spend(cls),
        "tasks": tasks,
        "where": code_of(cls),
    }


def _attack_entry(cls: type) -> dict[str, Any]:
    """An attack class's catalogue entry: its ``info``, its parameters' types and their declared ``choices``,
    ``bounds`` and ``rules`` (checked before torch, as a method's)."""
    return {
        "info": cls.info(),
        "params": _field_types(cls.Params),
        "choices": _choices(cls.Params),
        "bounds": _bounds(cls.Params),
        "rules": [r.__name__ for r in cls.Params.rules],
    }


def build_catalogue() -> dict[str, Any]:
    """The catalogue from the live registries (imports torch and PyG)."""
    from privgraph.attacks import ATTACKS
    from privgraph.methods import METHODS

    return {
        "generated_by": REGENERATE,
        "methods": {name: _method_entry(METHODS[name]) for name in METHODS.builtins()},  # no plugin's
        "attacks": {name: _attack_entry(cls) for name, cls in ATTACKS.items()},
    }


def write_catalogue(path: Path = CATALOGUE_PATH) -> Path:
    """Write :func:`build_catalogue` to ``path`` (JSON, stable order)."""
    path.write_text(json.dumps(build_catalogue(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(f"wrote {write_catalogue(Path(sys.argv[1]) if len(sys.argv) > 1 else CATALOGUE_PATH)}")
