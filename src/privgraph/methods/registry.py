"""The method registry: name → :class:`~privgraph.methods.base.Method` class, names announced with their module
and imported on first use (:class:`MethodRegistry`), and ``@register_method``, which refuses a name taken by
another class and a parameter named like a release request's own keyword (:data:`RESERVED`)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from privgraph.methods.base import Method

# the release request's own keywords (privgraph.request): no method parameter is named by one; ``delta`` only as
# the method's delta_param (the δ of its claim)
RESERVED = frozenset(
    {"data", "method", "request", "params", "epsilon", "label_epsilon", "seed", "rng", "stream", "progress"}
    | {"device", "ledger", "compose", "shared", "randomness"}
)


class MethodRegistry(MutableMapping[str, "type[Method]"]):
    """Method name → class.  A name announced with its module (:meth:`announce`, the package's table) is
    listed at once and its module imported on first use, so that running one method imports that method
    alone (not every method's dependencies: scikit-learn, ...); ``@register_method`` adds the class."""

    def __init__(self) -> None:
        self._classes: dict[str, type[Method]] = {}
        self._modules: dict[str, str] = {}

    def announce(self, modules: dict[str, str]) -> None:
        """Name → the module whose import registers it (listing order: the table's)."""
        self._modules.update(modules)

    def announced(self, name: str) -> str | None:
        """The module announced for ``name`` (None: none)."""
        return self._modules.get(name)

    def loaded(self, name: str) -> type[Method] | None:
        """The class registered under ``name`` so far (no import)."""
        return self._classes.get(name)

    def __getitem__(self, name: str) -> type[Method]:
        if name not in self._classes and name in self._modules:
            importlib.import_module(self._modules[name])
        return self._classes[name]

    def __setitem__(self, name: str, cls: type[Method]) -> None:
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._classes.pop(name, None)
        self._modules.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._classes or name in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._modules, *self._classes]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*self._modules, *self._classes]))


METHODS = MethodRegistry()  # the registry: the CLI, the API and the tests all read it


def register_method(cls: type[Method]) -> type[Method]:
    """Class decorator: add ``cls`` to :data:`METHODS` under ``cls.name`` (PyG-style registry)."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no name")
    reserved = [f.name for f in fields(cls.Params) if f.name in RESERVED or f.name == "delta" != cls.delta_param]
    if reserved:
        raise TypeError(f"{cls.name}: parameter {reserved[0]!r} is a release request's own keyword: rename it")
    module = METHODS.announced(cls.name)
    if module is not None and cls.__module__ != module and not cls.__module__.startswith(module + "."):
        METHODS.get(cls.name)  # the announced class first: a clash is refused whichever is imported first
    taken = METHODS.loaded(cls.name)
    if taken is not None and taken is not cls:
        raise TypeError(f"method name {cls.name!r} is taken by {taken.__name__}")
    METHODS[cls.name] = cls
    return cls


__all__ = ["METHODS", "RESERVED", "MethodRegistry", "register_method"]
