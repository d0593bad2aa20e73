"""The method registry's mapping: name → class, names announced with their module and imported on first use
(:class:`MethodRegistry`; the registry itself, ``METHODS``, and ``@register_method`` are in
:mod:`privgraph.methods.base`), and the names no method parameter may take (:data:`RESERVED`)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Generic, TypeVar

C = TypeVar("C")  # the registered class type (C)

# the release request's own keywords (privgraph.request): no method parameter is named by one; ``delta`` only as
# the method's delta_param (the δ of its claim)
RESERVED = frozenset(
    {"data", "method", "request", "params", "epsilon", "label_epsilon", "seed", "rng", "stream", "progress"}
    | {"device", "ledger", "compose", "shared", "randomness"}
)


class MethodRegistry(MutableMapping[str, C], Generic[C]):
    """Method name → class.  A name announced with its module (:meth:`announce`, the package's table) is
    listed at once and its module imported on first use, so that running one method imports that method
    alone (not every method's dependencies: scikit-learn, ...); ``@register_method`` adds the class."""

    def __init__(self) -> None:
        self._classes: dict[str, C] = {}
        self._modules: dict[str, str] = {}

    def announce(self, modules: dict[str, str]) -> None:
        """Name → the module whose import registers it (listing order: the table's)."""
        self._modules.update(modules)

    def announced(self, name: str) -> str | None:
        """The module announced for ``name`` (None: none)."""
        return self._modules.get(name)

    def loaded(self, name: str) -> C | None:
        """The class registered under ``name`` so far (no import)."""
        return self._classes.get(name)

    def __getitem__(self, name: str) -> C:
        if name not in self._classes and name in self._modules:
            importlib.import_module(self._modules[name])
        return self._classes[name]

    def __setitem__(self, name: str, cls: C) -> None:
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


__all__ = ["RESERVED", "MethodRegistry"]
