"""Where each registered method lives (privgraph.where, ``privgraph methods NAME``): its code, derivation,
tests and benchmark — every declared path exists in the checkout, the code's place is the class's own."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import privgraph
from privgraph import where
from privgraph.where import DERIVATION, TESTS, method_sources

ROOT = Path(__file__).resolve().parents[1]
METHOD_NAMES = list(json.loads((ROOT / "src" / "privgraph" / "catalogue.json").read_text())["methods"])


def headings(page: Path) -> set[str]:
    """The anchors of a docs page's headings, as mkdocs' toc extension writes them (outside code blocks)."""
    from markdown.extensions.toc import slugify

    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.add(slugify(line.lstrip("#").strip(), "-"))
    return found


def test_every_method_declares_a_derivation_that_exists():
    assert set(DERIVATION) == set(METHOD_NAMES), "declare each registered method's page in privgraph.where"
    for name, ref in DERIVATION.items():
        page, _, section = ref.partition("#")
        path = ROOT / "docs" / page
        assert path.is_file(), (name, ref)
        assert section in headings(path), f"{name}: no heading #{section} in docs/{page}"


def test_declared_tests_exist_and_every_method_has_tests():
    for name, paths in TESTS.items():
        assert name in METHOD_NAMES, name
        for path in paths:
            assert (ROOT / path).is_file(), (name, path)
    for name in METHOD_NAMES:
        found = method_sources(name)
        assert found["tests"], f"{name}: no test file found (declare one in privgraph.where.TESTS)"
        assert all((ROOT / p).is_file() for p in found["tests"]), name


def test_the_code_is_the_class_module_and_every_path_exists():
    """The code's place comes from the class itself (inspect), so it follows a module that moves."""
    from privgraph.methods import METHODS

    for name, cls in METHODS.items():
        found = method_sources(name)
        source = Path(inspect.getsourcefile(cls)).resolve()
        assert ROOT / found["code"] == source, name
        assert found["class"] == cls.__qualname__
        for path in [*found["mechanisms"], *found["benchmarks"]["grids"], *found["benchmarks"]["results"]]:
            assert (ROOT / path).is_file(), (name, path)


def test_a_grid_counts_only_when_it_runs_the_method_itself():
    """``rr`` is not ``symrr``: a grid is listed for the method named on one of its ``method =`` lines."""
    for name in ("rr", "gap-edp", "lpgnn"):
        for grid in method_sources(name)["benchmarks"]["grids"]:
            assert f'method = "{name}"' in (ROOT / grid).read_text(), (name, grid)
    assert "src/privgraph/grids/gap.toml" in method_sources("gap-edp")["benchmarks"]["grids"]
    assert "src/privgraph/grids/gap.toml" not in method_sources("lpgnn")["benchmarks"]["grids"]


def test_methods_name_prints_where_the_method_lives(invoke):
    code, out, _ = invoke("methods", "gap-edp")
    assert code == 0, out
    found = method_sources("gap-edp")
    for text in (
        found["code"],
        "docs/methods/gap.md#guarantees",
        "tests/audit/test_audit_gap.py",
        "src/privgraph/grids/gap.toml",
        "docs/results/gap.md",
        "(ε, δ)-DP per edge",
        "central (trusted curator)",
        "hops",  # a parameter
    ):
        assert text in out, text
    code, out, _ = invoke("methods", "gcn-raw")
    assert code == 0 and "guarantee: none" in out and "tests/methods/test_lpgnn.py" in out, out
    code, out, _ = invoke("methods", "lpgnn")
    assert code == 0 and "(ε, δ)-LDP per node feature vector (δ is --param delta" in out, out


def test_methods_name_json_carries_where(invoke):
    code, out, _ = invoke("methods", "blink", "--format", "json", raw=True)
    assert code == 0, out
    entry = json.loads(out)
    assert entry["where"]["derivation"] == "docs/methods/blink.md#setting-and-guarantee"
    assert entry["where"]["code"].endswith("privgraph/methods/blink/method.py")


def test_an_unknown_method_is_one_line_with_close_names(invoke):
    code, out, _ = invoke("methods", "gap", raw=True)
    assert code == 2
    assert out.count("\n") == 1 and out.startswith("error: unknown method 'gap'"), out
    assert "did you mean" in out and "gap-edp" in out and "gap-ndp" in out
    code, out, _ = invoke("methods", "qqqqqq", raw=True)
    assert code == 2 and out.count("\n") == 1 and "choose from" in out and "lpgnn" in out
    with pytest.raises(ValueError, match="did you mean.*heterorr"):
        privgraph.method_sources("heterorrr")


def test_an_installed_package_says_tests_and_benchmarks_are_not_there(invoke, monkeypatch):
    monkeypatch.setattr(where, "checkout_root", lambda: None)
    found = method_sources("lpgnn")
    assert found["tests"] is None and found["benchmarks"] is None
    assert found["code"] == "privgraph/methods/lpgnn.py" and found["derivation"].startswith("docs/methods/")
    code, out, _ = invoke("methods", "lpgnn")
    assert code == 0 and out.count(where.NOT_IN_PACKAGE) == 2, out


def test_tests_by_convention_keep_the_files_that_name_the_method(tmp_path):
    fam = tmp_path / "tests" / "methods" / "fam"
    fam.mkdir(parents=True)
    (fam / "test_a.py").write_text('METHOD = "m1"\n')
    (fam / "test_b.py").write_text("from privgraph.methods.fam import Cls2\n")
    (tmp_path / "tests" / "audit").mkdir()
    (tmp_path / "tests" / "audit" / "test_audit_fam.py").write_text("'m1'\n")
    code = "privgraph/methods/fam/method.py"
    assert where.tests_of("m1", code, tmp_path) == ["tests/methods/fam/test_a.py", "tests/audit/test_audit_fam.py"]
    assert where.tests_of("m2", code, tmp_path, "Cls2") == ["tests/methods/fam/test_b.py"]  # by its class
    assert len(where.tests_of("m3", code, tmp_path)) == 3  # named nowhere: the family's files
    assert where.family("privgraph/methods/gap/aggregation.py") == where.family("privgraph/methods/gap.py") == "gap"
