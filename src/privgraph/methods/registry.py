"""The method registry's mapping: name → class, names announced with their module and imported on first use
(:class:`MethodRegistry`; the registry itself, ``METHODS``, and ``@register_method`` are in
:mod:`privgraph.methods.base`), the methods of other installed packages found through their entry points
(:mod:`privgraph.plugins`, :meth:`MethodRegistry.discover`), and the names no method parameter may take
(:data:`RESERVED`)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

from privgraph.plugins import PluginWarning, distribution, plugin_entry_points

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
        self._accept: Callable[[Any], C] | None = None  # checks and registers a plugin's class (use_plugins)
        self._plugins: dict[str, str] | None = None  # name → distribution, once discovered
        self.broken: dict[str, str] = {}  # entry-point name → the line saying why it was not registered

    def use_plugins(self, accept: Callable[[Any], C]) -> None:
        """Register the classes that the installed entry points of :data:`~privgraph.plugins.PLUGIN_GROUP` name,
        each through ``accept`` (which checks and registers it, or raises), on the first lookup of an unknown name
        or on listing."""
        self._accept = accept

    def discover(self, again: bool = False) -> dict[str, str]:
        """Load the installed plugins once (``again``: re-read the entry points, e.g. after installing one):
        name → ``distribution version`` of each registered.  One that fails to import, names no method class,
        or takes a built-in name is left out with one :class:`~privgraph.plugins.PluginWarning` line naming its
        distribution (kept in :attr:`broken`); it never stops the others or the built-ins."""
        if self._accept is None or (self._plugins is not None and not again):
            return self._plugins or {}
        self._plugins, self.broken = {}, {}  # set first: a plugin's module may look names up while imported
        for entry in plugin_entry_points():
            dist = distribution(entry)
            try:
                cls = self._accept(entry.load())
            except Exception as err:  # noqa: BLE001 - any failure of another package's code is its own line
                why = " ".join(f"{type(err).__name__}: {err}".split())  # one line, whatever the error's text
                line = f"plugin method {entry.name!r} ({entry.value}) from {dist} is not registered: {why}"
                self.broken[entry.name] = line
                warnings.warn(line, PluginWarning, stacklevel=2)
                continue
            self._plugins[getattr(cls, "name", entry.name)] = dist
        return self._plugins

    def builtins(self) -> list[str]:
        """The package's own names (those announced with their module), in listing order."""
        return list(self._modules)

    def _find(self, name: object) -> bool:
        """Whether ``name`` is registered, discovering the plugins on the first unknown one."""
        if name in self._classes or name in self._modules:
            return True
        self.discover()
        return name in self._classes

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
        if name not in self._classes:
            self._find(name)
        return self._classes[name]

    def __setitem__(self, name: str, cls: C) -> None:
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._classes.pop(name, None)
        self._modules.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return self._find(name)

    def __iter__(self) -> Iterator[str]:
        self.discover()
        return iter(dict.fromkeys([*self._modules, *self._classes]))

    def __len__(self) -> int:
        self.discover()
        return len(dict.fromkeys([*self._modules, *self._classes]))


__all__ = ["RESERVED", "MethodRegistry"]
