"""The command line's catalogue (privgraph/catalogue.json) equals the live registries, and the light
commands and the argument errors run without importing torch or PyG."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path

from privgraph.catalogue import REGENERATE, build_catalogue, load_catalogue, type_of, type_text

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("torch", "torch_geometric", "scipy", "sklearn")


def test_the_catalogue_equals_the_registries():
    """A method, attack, parameter, default, task or training field changed without regenerating the file
    fails here (the CLI would list and check stale metadata)."""
    assert load_catalogue() == build_catalogue(), f"privgraph/catalogue.json is stale: run `{REGENERATE}`"


def test_every_parameter_type_reads_back():
    from privgraph.attacks import ATTACKS
    from privgraph.experiments.tasks.base import TASK_CLASSES
    from privgraph.methods import METHODS

    classes = [c.Params for c in (*METHODS.values(), *ATTACKS.values())]
    classes += [t.training for t in TASK_CLASSES.values() if t.training is not None]
    for cls in classes:
        for name, hint in typing.get_type_hints(cls).items():
            if typing.get_origin(hint) is typing.ClassVar:  # not a parameter (MethodParams.renamed)
                continue
            assert type_of(type_text(hint)) == hint, (cls.__name__, name, hint)


LIGHT = [
    ["--help"],
    ["--version"],
    ["methods"],
    ["methods", "blink"],
    ["methods", "--format", "json"],
    ["datasets"],
    ["datasets", "--format", "json"],
    ["attacks"],
    ["run", "--help"],
    ["ledger", "book.json", "--dataset", "mine", "--budget", "adjacency list=4"],
    ["ledger", "book.json", "--format", "json"],
]
# each: the command line and a piece of its one error line (exit 2)
ERRORS = [
    (["run", "lpgnn", "--epsilon", "0"], "epsilon must be finite and > 0"),
    (["run", "lpgnn", "--epsilon", "25"], "exceeds the maximum epsilon"),
    (["run", "lpgnn", "--epsilon", "1", "1"], "given more than once"),
    (["run", "lpgnn", "--epsilon", "abc"], "--epsilon 'abc'"),
    (["run", "lpgnn", "--label-epsilon", "0"], "label_epsilon must be finite"),
    (["run", "mlp", "--epsilon", "1"], "mlp is a non-private baseline: it takes no epsilon"),
    (["run", "nope"], "unknown method 'nope'"),
    (["run", "blink", "--param", "foo=1"], "has no parameter 'foo'"),
    (["run", "featurerr", "--param", "bins=x"], "bins='x'"),
    (["run", "lpgnn", "--set", "foo=1"], "no hyperparameter 'foo'"),
    (["run", "ppcvgae", "--set", "epochs=5"], "does not take --set"),
    (["run", "lpgnn", "--task", "lp"], "task 'lp' does not apply"),
    (["run", "gcn-raw", "--dataset", "nope"], "unknown homogeneous dataset 'nope'"),
    (["run", "hetedp", "--dataset", "nope"], "unknown heterogeneous dataset 'nope'"),
    (["run", "ppcvgae", "--dataset", "cora"], "unknown sensitive attribute dataset 'cora'"),
    (["run", "lpgnn", "--input", "missing.csv"], "graph file not found: missing.csv"),
    (["run", "lpgnn", "--input", "graph.xyz"], "unsupported graph file"),
    (["release", "lpgnn", "-o", "o.pt", "--epsilon", "0"], "epsilon must be finite"),
    (["release", "nope", "-o", "o.pt"], "unknown method 'nope'"),
    (["release", "lpgnn", "-o", "o.pt", "--address", "h:1"], "has no parameter 'address'"),  # Blink's server only
    (["attack", "nope", "--method", "lpgnn"], "unknown attack 'nope'"),
    (["attack", "link-stealing", "--method", "lpgnn", "--attack-param", "foo=1"], "has no parameter 'foo'"),
    (["audit", "lpgnn"], "lpgnn is private: give epsilon"),
    (["audit", "nope"], "unknown method 'nope'"),
    # --device's spelling (privgraph.device.parse_device) is checked before torch is imported
    (["run", "lpgnn", "--device", "gpu"], "--device: unknown device 'gpu'"),
    (["run", "lpgnn", "--device", "cuda:x"], "--device: unknown device 'cuda:x'"),
    (["attack", "link-stealing", "--method", "lpgnn", "--device", "cuda:"], "unknown device 'cuda:'"),
    (["release", "rr", "-o", "o.pt", "--device", "tpu"], "unknown device 'tpu'"),
    (["audit", "rr", "--epsilon", "1", "--device", "gpu"], "unknown device 'gpu'"),
    (["sweep", "grid.toml", "--device", "mps:0"], "unknown device 'mps:0'"),
    (["demo", "--device", "gpu"], "unknown device 'gpu'"),
    (["ledger", "missing.json"], "no ledger at missing.json"),
    # the parameters' declared bounds and rules (privgraph.param_checks), from the catalogue
    (["run", "gap-edp", "--param", "hops=-1"], "hops must be >= 0, got -1"),
    (["release", "blink", "-o", "o.pt", "--param", "soft_min_probability=2"], "soft_min_probability must lie in"),
    (["run", "lpgnn", "--param", "delta=0.1"], "delta is the Gaussian mechanism's δ; the multibit mechanism"),
    (["audit", "gap-ndp", "--epsilon", "1", "--param", "batch_norm=true"], "batch normalisation mixes"),
    (["run", "hetedp", "--param", "nc_inputs=authors-han"], "nc_inputs='authors-han…' computes"),
    (["run", "edgerr", "--param", "mcmc_share=1"], "mcmc_share must lie in (0, 1), got 1.0"),
    (["attack", "linkteller", "--method", "lpgnn", "--attack-param", "nodes=1"], "nodes must be >= 2, got 1"),
    (["compare", "gap-edp", "blink", "--param", "gap-edp.hops=-1"], "hops must be >= 0, got -1"),
    (["attack", "link-stealing", "--method", "lpgnn", "--attack-param", "distance=manhattan"], "distance must be"),
]

SCRIPT = """
import contextlib, io, json, sys
from privgraph.cli import main
commands, heavy_roots = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = []
for argv in commands:
    sys.argv = ["privgraph", *argv]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            main()
            code = 0
        except SystemExit as exit:
            code = exit.code
    out.append([code, " ".join(stderr.getvalue().split())])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in heavy_roots)
print(json.dumps({"results": out, "heavy": heavy}))
"""


def _in_fresh_interpreter(commands: list[list[str]], tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "100"}
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(commands), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_listings_and_argument_errors_import_no_torch(tmp_path):
    """The path of the light commands and of every argument error reads the catalogue and the dataset
    registry only: torch, PyG, SciPy and scikit-learn stay unimported (what keeps them under 1.5 s)."""
    found = _in_fresh_interpreter(LIGHT + [args for args, _ in ERRORS], tmp_path)
    assert found["heavy"] == [], found["heavy"]
    light, errors = found["results"][: len(LIGHT)], found["results"][len(LIGHT) :]
    for args, (code, _) in zip(LIGHT, light):
        assert code == 0, args
    for (args, needle), (code, text) in zip(ERRORS, errors):
        assert code == 2, (args, code, text)
        assert text.startswith("error:") and text.count("error:") == 1 and needle in text, (args, text)


def test_unknown_names_are_refused_as_the_registries_refuse_them():
    """The catalogue's lines for an unknown method or attack are the registries' own."""
    import pytest

    from privgraph.attacks import get_attack
    from privgraph.catalogue import attack_entry, method_entry
    from privgraph.methods import method_class

    for light, heavy in ((method_entry, method_class), (attack_entry, get_attack)):
        with pytest.raises(ValueError) as caught:
            heavy("nope")
        with pytest.raises(ValueError, match=str(caught.value).replace("(", r"\(").replace(")", r"\)")):
            light("nope")


def test_the_lazy_facades_name_what_they_import():
    """``privgraph.data`` and ``privgraph.accounting`` import their names on first use: each lazy name is
    the one its module defines, and the ``TYPE_CHECKING`` imports (what the API reference and type checkers
    read) list the same names from the same modules."""
    import ast
    import importlib

    for package in ("privgraph.data", "privgraph.accounting"):
        module = importlib.import_module(package)
        assert sorted(module.__all__) == sorted(module._LAZY), package
        declared = {}
        for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                for imp in node.body:
                    declared.update({alias.name: imp.module.rpartition(".")[2] for alias in imp.names})
        assert declared == module._LAZY, package
        for name, source in module._LAZY.items():
            assert getattr(module, name) is getattr(importlib.import_module(f"{package}.{source}"), name)
