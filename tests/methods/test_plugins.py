"""A method of another installed package (an entry point of the group ``privgraph.methods``) works wherever a
built-in one does, and a plugin that is broken or takes a built-in name is refused with one line naming its
distribution.  Nothing is installed: each test writes a package and its ``*.dist-info`` (METADATA and
entry_points.txt, what pip writes) into a folder put on ``sys.path``, as an installed plugin is found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import erdos_renyi_graph, to_undirected
from typer.testing import CliRunner

import privgraph
import privgraph as pg
from privgraph.accounting import Unit
from privgraph.cli import app
from privgraph.methods import METHODS, RandomizedResponseGraph
from privgraph.plugins import PluginWarning
from privgraph.transforms import Privatize

DIST = "privgraph-test-plugin"
# a real method: the built-in RR's release under a new name (so its release can be compared with rr's)
MODULE = """
from privgraph.methods import RandomizedResponseGraph

class PluggedRR(RandomizedResponseGraph):
    name = "plugged-rr"
    description = "RR, registered by a plugin's entry point"

class TakesRR(RandomizedResponseGraph):
    name = "rr"

class NotAMethod:
    name = "not-a-method"

class NoInfo(RandomizedResponseGraph):
    name = "no-info"

    @classmethod
    def info(cls):
        raise RuntimeError("no description today")
"""


@pytest.fixture
def install(tmp_path, monkeypatch):
    """``install(entry_points)``: the module above as ``pg_test_plugin`` in :data:`DIST`, with the given
    ``[privgraph.methods]`` lines; removed again (its methods, its module, its path) after the test."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "pg_test_plugin.py").write_text(MODULE)

    def install(lines: str) -> Path:
        info = site / f"{DIST.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text("[privgraph.methods]\n" + textwrap.dedent(lines))
        monkeypatch.syspath_prepend(str(site))
        METHODS.discover(again=True)
        return site

    yield install
    for name in [n for n, cls in METHODS._classes.items() if cls.__module__ == "pg_test_plugin"]:
        del METHODS[name]
    sys.modules.pop("pg_test_plugin", None)
    if str(site) in sys.path:
        sys.path.remove(str(site))
    METHODS.discover(again=True)
    assert "plugged-rr" not in METHODS and METHODS["rr"] is RandomizedResponseGraph


def small_graph(n: int = 30) -> Data:
    torch.manual_seed(0)
    return Data(x=torch.rand(n, 4), edge_index=to_undirected(erdos_renyi_graph(n, 0.15)), y=torch.randint(0, 2, (n,)))


def test_a_plugin_is_listed_and_released_as_a_built_in_is(install):
    install("plugged-rr = pg_test_plugin:PluggedRR\n")
    assert METHODS.discover()["plugged-rr"] == f"{DIST} 0.1"  # name → its distribution
    assert pg.list_methods()["plugged-rr"]["unit"] == Unit.ADJACENCY_LIST
    data = small_graph()
    release = pg.privatize(data, "plugged-rr", epsilon=1, seed=0)
    (g,) = release.report.guarantees
    assert g.unit == Unit.ADJACENCY_LIST and g.epsilon == 1.0
    builtin = pg.privatize(data, "rr", epsilon=1, seed=0)  # the same mechanism and seed: the same release
    assert torch.equal(release.data.edge_index, builtin.data.edge_index)
    transformed = Privatize("plugged-rr", epsilon=1, seed=0)(data)
    assert torch.equal(transformed.edge_index, builtin.data.edge_index)
    assert transformed.privacy_report.guarantees[0].unit == Unit.ADJACENCY_LIST
    rows = pg.audit_method(None, "plugged-rr", epsilon=1.0, samples=20).rows  # by its unit: no audit code of its own
    assert rows[0].unit == Unit.ADJACENCY_LIST and rows[0].requested == 1.0


def test_the_cli_lists_describes_and_releases_a_plugin(install, tmp_path, monkeypatch):
    install("plugged-rr = pg_test_plugin:PluggedRR\n")
    from privgraph.cli import console

    monkeypatch.setattr(console.out_console, "_width", 300)  # one line a field, whatever an earlier test left set
    runner = CliRunner()
    listed = runner.invoke(app, ["methods", "--format", "json"])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout)["plugged-rr"]["description"] == "RR, registered by a plugin's entry point"
    one = runner.invoke(app, ["methods", "plugged-rr"])
    assert one.exit_code == 0, one.output
    assert "ε-LDP per adjacency list" in one.stdout and "PluggedRR" in one.stdout
    graph, out = tmp_path / "graph.pt", tmp_path / "release.pt"
    torch.save(small_graph(), graph)
    args = ["release", "plugged-rr", "--input", str(graph), "--epsilon", "1", "--reproducible", "-o", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    meta = json.loads(out.with_name("release.pt.json").read_text())
    assert meta["method"] == "plugged-rr" and meta["privacy"]["by_unit"][Unit.ADJACENCY_LIST]["epsilon"] == 1.0
    bad = runner.invoke(app, [*args[:-2], "--param", "max_nodes=3", "-o", str(tmp_path / "x.pt")])
    assert bad.exit_code == 2 and "max_nodes" in bad.output  # its --param names, checked before any work


def test_a_new_process_finds_the_plugin_for_the_light_commands(install, tmp_path):
    """``release``'s checks before any work, in a fresh interpreter: the installed entry point makes the catalogue
    import the methods and describe the plugin from its class (the file knows built-ins only), so a wrong
    ``--param`` is refused by the plugin's parameters, not as an unknown method."""
    site = install("plugged-rr = pg_test_plugin:PluggedRR\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(privgraph.__file__).parents[1]), str(site)])}
    argv = [sys.executable, "-m", "privgraph", "release", "plugged-rr", "--param", "nope=1", "-o", "x.pt"]
    res = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert res.returncode == 2 and "nope" in res.stderr and "unknown method" not in res.stderr, res.stderr


def test_a_plugin_cannot_take_a_built_in_name(install):
    with pytest.warns(PluginWarning) as caught:
        install("rr = pg_test_plugin:TakesRR\nplugged-rr = pg_test_plugin:PluggedRR\n")
    (line,) = [str(w.message) for w in caught]
    assert f"from {DIST} 0.1" in line and "'rr' is a built-in method's" in line and "\n" not in line
    assert METHODS["rr"] is RandomizedResponseGraph  # the built-in is kept, and the other plugin registered
    assert "rr" not in METHODS.discover() and METHODS.discover()["plugged-rr"] == f"{DIST} 0.1"


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("gone = pg_test_plugin_missing:Gone", "No module named 'pg_test_plugin_missing'"),
        ("gone = pg_test_plugin:Gone", "Gone"),
        ("gone = pg_test_plugin:NotAMethod", "not a privgraph.methods.Method subclass"),
    ],
)
def test_a_broken_plugin_is_one_warning_line_never_a_crash(install, entry, reason, tmp_path):
    with pytest.warns(PluginWarning, match=reason):
        install(entry + "\nplugged-rr = pg_test_plugin:PluggedRR\n")
    assert "plugged-rr" in METHODS and "gone" not in METHODS
    with pytest.raises(ValueError, match=f"unknown method 'gone'.*from {DIST} 0.1 is not registered"):
        pg.privatize(small_graph(), "gone", epsilon=1, seed=0)
    METHODS._plugins = None  # not discovered yet, as in a new process: `privgraph methods` lists the rest, warns once
    res = CliRunner().invoke(app, ["methods", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "plugged-rr" in json.loads(res.stdout) and "gone" not in json.loads(res.stdout)
    warned = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1 and DIST in warned[0] and "'gone'" in warned[0], res.stderr
    METHODS._plugins = None
    release = CliRunner().invoke(app, ["release", "gone", "--epsilon", "1", "-o", str(tmp_path / "never.pt")])
    assert release.exit_code == 2 and not (tmp_path / "never.pt").exists()
    lines = release.stderr.splitlines()
    assert lines[0].startswith("warning:") and lines[1].startswith("error: unknown method 'gone'"), lines


def test_a_plugin_whose_description_fails_is_one_warning_line_in_the_listing(install):
    install("no-info = pg_test_plugin:NoInfo\nplugged-rr = pg_test_plugin:PluggedRR\n")
    res = CliRunner().invoke(app, ["methods", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "plugged-rr" in json.loads(res.stdout) and "no-info" not in json.loads(res.stdout)
    (warned,) = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert f"'no-info' from {DIST} 0.1 cannot be described: RuntimeError: no description today" in warned


def test_the_catalogue_file_holds_built_in_methods_only(install):
    from privgraph.catalogue import build_catalogue, load_catalogue, method_entry

    install("plugged-rr = pg_test_plugin:PluggedRR\n")
    assert list(build_catalogue()["methods"]) == list(load_catalogue()["methods"]) == METHODS.builtins()
    assert Path(method_entry("plugged-rr")["where"]["code"]).name == "pg_test_plugin.py"
