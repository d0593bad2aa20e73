"""The installed plugin works wherever a built-in method does: listed by ``pg.list_methods()`` and
``privgraph methods``, released by ``pg.privatize`` with its guarantee, and audited with no audit code of its own
(its unit, the adjacency list, chooses privgraph's definition; its release carries the reports it audits).

Run with the package installed next to privgraph: ``pip install ./examples/plugin_method && pytest
examples/plugin_method/tests``."""

import importlib.metadata

import numpy as np
import torch
from privgraph_rr_and import RandomizedResponseAnd
from torch_geometric.data import Data
from torch_geometric.utils import erdos_renyi_graph, to_undirected
from typer.testing import CliRunner

import privgraph as pg
from privgraph.accounting import Unit
from privgraph.audit import CONSISTENT, audit_method
from privgraph.cli import app


def small_graph(n: int = 40) -> Data:
    torch.manual_seed(0)
    return Data(x=torch.rand(n, 4), edge_index=to_undirected(erdos_renyi_graph(n, 0.1)), y=torch.randint(0, 2, (n,)))


def test_the_entry_point_is_installed_and_names_the_class():
    (entry,) = [e for e in importlib.metadata.entry_points(group="privgraph.methods") if e.name == "rr-and"]
    assert entry.load() is RandomizedResponseAnd


def test_it_is_listed_with_its_unit():
    info = pg.list_methods()["rr-and"]
    assert info["unit"] == Unit.ADJACENCY_LIST and info["private"] and info["task"] == "node classification"


def test_privatize_states_its_unit_and_epsilon_and_keeps_only_links_both_endpoints_report():
    data = small_graph()
    release = pg.privatize(data, "rr-and", epsilon=1, seed=0)
    (g,) = release.report.guarantees
    assert g.unit == Unit.ADJACENCY_LIST and g.epsilon == 1.0 and g.delta == 0.0
    a = torch.zeros(40, 40, dtype=torch.bool)
    a[release.data.edge_index[0], release.data.edge_index[1]] = True
    assert torch.equal(a, a.T) and not a.diagonal().any()  # undirected, no self-loops: the AND of both reports
    reports = release.reports
    i, j = release.data.edge_index.numpy()
    assert reports.bits(i, j).all() and reports.bits(j, i).all()  # every released link: both endpoints report it
    i, j = np.triu_indices(40, k=1)
    both = reports.bits(i, j) & reports.bits(j, i)
    assert 2 * int(both.sum()) == release.data.edge_index.shape[1]  # and every such pair is released
    again = pg.privatize(data, "rr-and", epsilon=1, seed=0)
    assert torch.equal(again.data.edge_index, release.data.edge_index)  # the same seed, the same release


def test_privgraph_methods_prints_it():
    listed = CliRunner().invoke(app, ["methods"])
    assert listed.exit_code == 0, listed.output
    assert "rr-and" in listed.stdout
    one = CliRunner().invoke(app, ["methods", "rr-and"])
    assert one.exit_code == 0, one.output
    assert "ε-LDP per adjacency list" in one.stdout and "max_nodes" in one.stdout
    assert "RandomizedResponseAnd" in one.stdout  # where its code lives: this package


def test_the_audit_runs_on_it_without_audit_code_of_its_own():
    rows = audit_method(None, "rr-and", epsilon=1.0, samples=60, seed=0).rows
    assert [r.unit for r in rows][0] == Unit.ADJACENCY_LIST
    assert all(r.requested is not None and r.verdict == CONSISTENT for r in rows), rows
