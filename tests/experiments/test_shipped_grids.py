"""The grids ship with the package and run by name from any folder: ``privgraph sweep quickstart``
outside the repository, ``privgraph grids`` lists them, and a path that exists wins over a name."""

from __future__ import annotations

import json

import pytest

from privgraph.experiments import Grid
from privgraph.grids import GRIDS_DIR, describe_grids, grid_file, shipped_grids


def test_every_shipped_grid_loads_by_name_from_another_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no src/privgraph/grids relative to here
    names = shipped_grids()
    assert {"quickstart", "lpgnn", "gap", "blink"} <= set(names)
    for name in names:
        grid = Grid.load(name)
        assert grid.path == GRIDS_DIR / f"{name}.toml" and grid.settings
        assert Grid.load(f"{name}.toml").path == grid.path
    published = Grid.load("lpgnn").published_path()
    assert published is not None and published.is_file()  # the papers' numbers ship beside the grids


def test_a_file_that_exists_wins_over_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quickstart").write_text((GRIDS_DIR / "quickstart.toml").read_text().replace("Quick start", "Mine"))
    assert grid_file("quickstart").resolve() == tmp_path / "quickstart"
    assert "Mine" in Grid.load("quickstart").title


def test_an_unknown_name_lists_the_shipped_ones():
    with pytest.raises(ValueError, match="no shipped grid of that name .*quickstart"):
        grid_file("no-such-grid")
    with pytest.raises(ValueError, match="no grid file at"):
        grid_file("folder/quickstart")  # a path is never read as a name


def test_privgraph_grids_lists_each_shipped_grid(invoke):
    code, out, _ = invoke("grids", "--format", "json", raw=True)
    assert code == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == list(shipped_grids()) == [r["name"] for r in describe_grids()]
    assert all(r["title"] and "\n" not in r["duration"] for r in rows)
