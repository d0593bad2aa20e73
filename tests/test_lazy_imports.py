"""What importing privgraph loads (a run's start-up outweighed its work).  ``import privgraph``
loads no scientific library; running one method loads that method's module alone, and no scikit-learn or
``scipy.stats`` (imported where they are used).  Each check runs in a fresh interpreter and reads its
``sys.modules``: not timed (the timings are ``benchmarks/import_cost.py``)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import privgraph.methods
from privgraph.methods import METHODS

SRC = Path(privgraph.methods.__file__).resolve().parents[2]
# imported on use only: the run of a method that does not use them must not load them
ON_USE = (
    "sklearn",
    "scipy.stats",
    "scipy.optimize",
    "matplotlib",
    "shap",
    "privgraph.experiments.plot",
    "privgraph.methods.blink.ldpgen",
    "privgraph.methods.hetedp",
)


def loaded_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def under(modules: list[str], roots: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == r or m.startswith(r + ".") for r in roots)]


def test_import_privgraph_loads_no_scientific_library():
    modules = loaded_after("import privgraph; dir(privgraph)")
    assert under(modules, ("torch", "torch_geometric", "numpy", "scipy", "sklearn")) == []


def test_running_one_method_imports_that_method_alone():
    """The run path (CLI, pipeline, API), the class of ``gap-edp``, its calibrations and the summary's
    confidence interval: no other method's module, no scikit-learn, no ``scipy.stats``, no
    ``scipy.optimize`` (the calibrations bisect: :mod:`privgraph.accounting.search`)."""
    modules = loaded_after(
        "import privgraph.cli.run, privgraph.experiments.pipeline, privgraph.api\n"
        "from privgraph.methods import METHODS, method_class\n"
        "assert 'gap-edp' in METHODS and len(list(METHODS)) > 20\n"
        "method_class('gap-edp')\n"
        "from privgraph.accounting.rdp import composed_noise_multiplier, gaussian_epsilon\n"
        "from privgraph.mechanisms.aggregation import composed_gaussian_epsilon\n"
        "from privgraph.mechanisms.gaussian import analytic_gaussian_sigma\n"
        "composed_noise_multiplier(1.0, 1e-5, ((1.0, 2), (0.1, 50)))\n"
        "gaussian_epsilon(1.0, 1e-5), composed_gaussian_epsilon(3.0, 1e-5, 2)\n"
        "analytic_gaussian_sigma(1.0, 1e-5, 1.0)\n"
        "from privgraph.experiments.summary import mean_ci\n"
        "mean_ci([1.0, 2.0])"
    )
    assert "privgraph.methods.gap" in modules
    assert under(modules, ON_USE) == []
    others = set(METHODS._modules.values()) - {METHODS._modules["gap-edp"]}  # gap's module also holds mlp-ndp
    assert others.isdisjoint(modules), sorted(others & set(modules))


def test_an_api_release_of_lpgnn_imports_lpgnn_alone():
    """``pg.privatize(data, "lpgnn", ...)``: LPGNN's module and no other method's, none of the libraries
    imported on use, and none of the command line (typer, rich)."""
    modules = loaded_after(
        "import privgraph as pg\n"
        "from privgraph.data.synthetic import sbm_graph\n"
        "rel = pg.privatize(sbm_graph(num_nodes=60, num_features=8, seed=0), 'lpgnn', epsilon=1.0, seed=0)\n"
        "assert rel.data.x.shape == (60, 8)"
    )
    assert "privgraph.methods.lpgnn" in modules
    assert under(modules, (*ON_USE, "privgraph.cli", "typer", "rich")) == []
    others = set(METHODS._modules.values()) - {METHODS._modules["lpgnn"]}
    assert others.isdisjoint(modules), sorted(others & set(modules))


def test_any_pyg_submodule_runs_the_whole_package():
    """Why privgraph does not defer its ``torch_geometric.nn`` or ``datasets`` imports
    (docs/benchmarks/import_cost.md): importing ``torch_geometric.data`` alone runs PyG's ``__init__``,
    which imports them (and ``torch._dynamo``, pandas) anyway.  If PyG's import turns lazy this fails,
    and deferring them becomes worth doing."""
    modules = loaded_after("from torch_geometric.data import Data")
    for name in ("torch_geometric.nn", "torch_geometric.datasets", "torch_geometric.loader", "torch._dynamo"):
        assert name in modules, name


def test_the_table_names_every_registered_method_and_where():
    """Every class the package registers is announced under its name, in a module that defines it, in the
    order of the table (the listing's order); and each lazy class name is the one its module defines."""
    for info in pkgutil.walk_packages(privgraph.methods.__path__, "privgraph.methods."):
        importlib.import_module(info.name)
    table = dict(METHODS._modules)
    registered = {n: c for n, c in METHODS._classes.items() if c.__module__.startswith("privgraph.methods.")}
    assert list(registered) and set(registered) == set(table), set(registered) ^ set(table)
    for name, cls in registered.items():
        assert getattr(importlib.import_module(table[name]), cls.__name__) is cls, name
    assert list(METHODS) == list(table)
    for name, source in privgraph.methods._LAZY.items():
        assert getattr(privgraph.methods, name) is getattr(importlib.import_module(f"privgraph.methods.{source}"), name)
    assert set(privgraph.methods._LAZY) <= set(privgraph.methods.__all__) <= set(dir(privgraph.methods))


def test_the_registry_loads_a_method_on_first_use():
    modules = loaded_after(
        "from privgraph.methods import METHODS\n"
        "before = 'privgraph.methods.lpgnn' in sys.modules\n"
        "cls = METHODS['lpgnn']\n"
        "assert not before and cls.__module__ == 'privgraph.methods.lpgnn' and cls.name == 'lpgnn'"
    )
    assert "privgraph.methods.lpgnn" in modules


def test_the_package_facade_names_what_it_imports():
    """``privgraph``'s lazy names: listed in ``__all__`` and ``dir()``, each the object its module defines,
    and the ``TYPE_CHECKING`` imports (what type checkers and IDEs read) name the same objects."""
    import ast

    import privgraph

    assert set(privgraph.__all__) == {"__version__", *privgraph._LAZY} and set(privgraph.__all__) <= set(dir(privgraph))
    declared = {}
    for node in ast.walk(ast.parse(Path(privgraph.__file__).read_text())):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                declared.update({alias.name: imp.module for alias in imp.names})
    assert set(declared) == set(privgraph._LAZY)
    for name, module in privgraph._LAZY.items():
        assert getattr(privgraph, name) is getattr(importlib.import_module(declared[name]), name), name
        assert getattr(privgraph, name) is getattr(importlib.import_module(module), name), name


def test_the_confidence_interval_is_students_t():
    """``mean_ci`` reads the t quantile from ``scipy.special`` (not ``scipy.stats``): the same interval."""
    import math

    import numpy as np
    from scipy import stats

    from privgraph.experiments.summary import mean_ci

    for values, level in (([1.0, 2.0, 4.0], 0.95), ([0.3, 0.1, 0.7, 0.9, 0.2], 0.9), ([5.0, 6.0], 0.99)):
        mean, std, half = mean_ci(values, level)
        v = np.asarray(values)
        expected = stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
        assert mean == v.mean() and std == v.std(ddof=1) and math.isclose(half, expected, rel_tol=1e-12)


def test_a_name_clash_is_refused_before_the_announced_method_loads():
    """A class registered under an announced name (its module not yet imported) clashes with the announced
    class, as it did when every method was imported first."""
    code = (
        "from privgraph.methods import METHODS, register_method\n"
        "from privgraph.methods.base import Method\n"
        "assert METHODS.loaded('blink') is None\n"
        "try:\n"
        "    register_method(type('Mine', (Method,), {'name': 'blink'}))\n"
        "except TypeError as e:\n"
        "    assert 'taken by Blink' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('no clash')\n"
        "assert METHODS['blink'].__name__ == 'Blink'"
    )
    assert "privgraph.methods.blink.method" in loaded_after(code)


def test_the_import_cost_page_is_made_from_the_stored_results(monkeypatch):
    root = SRC.parent
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    spec = importlib.util.spec_from_file_location("import_cost", root / "benchmarks" / "import_cost.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stored = json.loads((root / "benchmarks" / "results" / "import_cost.json").read_text())
    assert (root / "docs" / "benchmarks" / "import_cost.md").read_text() == script.page(stored), (
        "docs/benchmarks/import_cost.md is stale: rerun python benchmarks/import_cost.py page"
    )
