"""Benchmark fragments that the method pages include are what their scripts make of the stored results."""

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # dataclasses resolve their module's annotations through it
    spec.loader.exec_module(sys.modules[name])
    module = sys.modules[name]
    return module


def test_the_blink_protocol_fragment_is_the_table_of_the_stored_results():
    script = _script("blink_protocol")
    assert script.FRAGMENT.read_text() == script.table(), (
        "docs/results/_blink-protocol.md is stale: rerun python benchmarks/blink_protocol.py table"
    )


def test_the_authors_split_is_sklearns_and_not_stratified():
    """Blink_GNN's split: 50/25/25 of range(n), random_state=42, the same for every run."""
    script = _script("blink_protocol")
    train, val, test = script.authors_split(101)
    assert (train.sum(), val.sum(), test.sum()) == (50, 25, 26)
    assert not (train & val).any() and not (train & test).any() and not (val & test).any()
    again = script.authors_split(101)
    assert all((a == b).all() for a, b in zip((train, val, test), again))


def test_the_aggregation_bound_page_is_made_from_the_stored_results(monkeypatch):
    import json

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))  # its command_timing helpers
    script = _script("aggregation_bound")
    stored = json.loads((REPO / "benchmarks" / "results" / "aggregation_bound.json").read_text())
    assert (REPO / "docs" / "benchmarks" / "aggregation_bound.md").read_text() == script.page(stored), (
        "docs/benchmarks/aggregation_bound.md is stale: rerun python benchmarks/aggregation_bound.py page"
    )


def test_the_blink_pairs_page_is_made_from_the_stored_results(monkeypatch):
    import json

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))  # its command_timing helpers
    script = _script("blink_pairs")
    stored = json.loads((REPO / "benchmarks" / "results" / "blink_pairs.json").read_text())
    assert (REPO / "docs" / "benchmarks" / "blink_pairs.md").read_text() == script.page(stored), (
        "docs/benchmarks/blink_pairs.md is stale: rerun python benchmarks/blink_pairs.py page"
    )
    for row in stored["sizes"]:  # the ratios are the stored medians' (nothing typed in by hand)
        ns = row["ns_per_pair"]
        assert abs(row["ratio_new_to_floor"] - ns["new"] / ns["floor"]) < 2e-3
