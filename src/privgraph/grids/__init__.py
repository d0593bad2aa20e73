"""The experiment grids shipped with privgraph: the papers' protocols and the quick start, as TOML files
(package data beside this module, read by :class:`privgraph.experiments.Grid`), and their published numbers
in ``privgraph/published`` beside this folder.  This module imports nothing heavy: ``privgraph grids`` lists
them before torch."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

GRIDS_DIR = Path(__file__).resolve().parents[1] / "grids"
"""The grids shipped with privgraph (package data: ``privgraph/grids/*.toml``, the papers' protocols and the
quick start), runnable by name from any folder (``privgraph sweep quickstart``)."""


def shipped_grids() -> dict[str, Path]:
    """The grids shipped with privgraph, by name (the file's stem), sorted."""
    return {path.stem: path for path in sorted(GRIDS_DIR.glob("*.toml"))}


def grid_file(name_or_path: str | Path) -> Path:
    """The grid file ``name_or_path`` names: an existing file, else the shipped grid of that name
    (``quickstart``, or ``quickstart.toml``); ``ValueError`` listing the shipped names otherwise.  A path
    that exists always wins over a shipped name."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = shipped_grids()
    stem = path.name[: -len(".toml")] if path.name.endswith(".toml") else path.name
    if len(path.parts) == 1 and stem in shipped:
        return shipped[stem]
    raise ValueError(
        f"no grid file at {path}, and no shipped grid of that name (shipped: {', '.join(shipped) or 'none'}; "
        "`privgraph grids` lists them)"
    )


def describe_grids() -> list[dict[str, str]]:
    """Each shipped grid's ``name``, ``title``, ``duration`` and ``file`` (read from the TOML, no torch)."""
    rows = []
    for name, path in shipped_grids().items():
        raw = tomllib.loads(path.read_text("utf-8"))
        rows.append(
            {
                "name": name,
                "title": " ".join(str(raw.get("title", "")).split()),
                "duration": " ".join(str(raw.get("duration", "")).split()),
                "file": str(path),
            }
        )
    return rows


__all__ = ["GRIDS_DIR", "describe_grids", "grid_file", "shipped_grids"]
