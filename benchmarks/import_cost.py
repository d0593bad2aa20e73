"""How much of a small trial's CPU time goes to importing (a GAP-EDP command spent 22.9 of its
41 CPU-seconds importing).  The target: a run command's imports under 25 % of its CPU time.

    PRIVGRAPH_DATA=../shared/datasets python benchmarks/import_cost.py run
    PRIVGRAPH_DATA=../shared/datasets python benchmarks/import_cost.py run --before ../main/src  # and main
    python benchmarks/import_cost.py page       # docs/benchmarks/import_cost.md from the stored JSON alone

``run`` runs privgraph commands (default: one GAP-EDP trial on FacebookPagePage, the GAP paper's smallest
graph, one on Cora, and one LPGNN trial on Cora; ``--command``, repeated, for others) ``--repeat`` rounds, and
in each round, for each:

* the command itself, in a scratch folder (``python -m privgraph ...``, as ``privgraph`` runs it); at its
  exit it writes the names of the modules it imported, in the order it imported them;
* its imports alone: a fresh interpreter that imports those modules in that order and does nothing else;
* the least any trial imports, ``import torch, torch_geometric`` (what a method's data and model need), in
  parts (torch; torch with ``torch._dynamo``, which torch's optimizers load; PyG with its ``datasets``
  subpackage deferred, to price that lever), and the interpreter's own start (``python -c pass``).

CPU time is user + system of the child (``getrusage``): the imports run on one thread, the trial on
privgraph's threads.  The share is the median import CPU over the median command CPU.  ``--before SRC``
measures another checkout's ``src`` (e.g. the main branch, before a change) in the same rounds,
interleaved, so a busy spell of the shared machine touches both alike.  Results go to
``benchmarks/results/import_cost.json`` (``--out``), the page to ``docs/benchmarks/import_cost.md``
(``--page``), with the machine, its load and the command beside each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from command_timing import PAGES, RESULTS, ROOT, commit_of, load, load_note, machine, timed

DEFAULT_COMMANDS = (
    "run gap-edp --dataset facebookpagepage --epsilon 1 --trials 1",
    "run gap-edp --dataset cora --epsilon 1 --trials 1",
    "run lpgnn --dataset cora --epsilon 1 --trials 1",
)
TARGET = 0.25
TIMEOUT_S = 1800.0
# runs privgraph's command line as `python -m privgraph` does, and writes the modules it imported at exit
RUN_AND_LIST = (
    "import atexit, json, runpy, sys\n"
    "out = sys.argv[1]\n"
    "atexit.register(lambda: open(out, 'w').write(json.dumps(list(sys.modules))))\n"
    "sys.argv = ['privgraph', *sys.argv[2:]]\n"
    "runpy.run_module('privgraph', run_name='__main__', alter_sys=True)\n"
)
# imports the listed modules in their order (a name the import system cannot import alone, e.g. an alias a
# package put into sys.modules, is counted and skipped) and nothing else
IMPORT_ONLY = (
    "import importlib, json, sys\n"
    "skipped = 0\n"
    "for name in json.load(open(sys.argv[1])):\n"
    "    if name in sys.modules or name == '__main__' or name.endswith('.__main__'):\n"
    "        continue\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "    except Exception:\n"
    "        skipped += 1\n"
    "open(sys.argv[2], 'w').write(str(skipped))\n"
)
# PyG's package with its `datasets` subpackage (pandas, `torch_geometric.llm`) loaded on first use instead of
# by PyG's `__init__`: measured here only, what that lever would save (privgraph does not do it: a run loads a
# PyG dataset class, and any `torch_geometric.datasets.X` runs that subpackage's `__init__`, which imports all)
PYG_DATASETS_DEFERRED = (
    "import importlib.abc, importlib.machinery, importlib.util, sys\n"
    "class Lazy(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path, target=None):\n"
    "        if name != 'torch_geometric.datasets':\n"
    "            return None\n"
    "        spec = importlib.machinery.PathFinder.find_spec(name, path)\n"
    "        spec.loader = importlib.util.LazyLoader(spec.loader)\n"
    "        return spec\n"
    "sys.meta_path.insert(0, Lazy())\n"
    "import torch, torch_geometric\n"
)
# the least a trial imports, in parts: torch; torch._dynamo, which torch's optimizers load when the first one is
# built (`torch._compile._disable_dynamo`), so any trial that trains loads it with or without PyG; PyG
FLOORS = {
    "torch + PyG": "import torch, torch_geometric",
    "torch": "import torch",
    "torch + dynamo": "import torch, torch._dynamo",
    "torch + PyG, its datasets deferred": PYG_DATASETS_DEFERRED,
    "interpreter": "pass",
}
# the libraries worth naming: whether the command imported each
NAMED = (
    "torch",
    "torch_geometric",
    "torch._dynamo",
    "scipy.optimize",
    "scipy.stats",
    "sklearn",
    "pandas",
    "numba",
    "ray",
    "opacus",
    "dp_accounting",
    "matplotlib",
)


def env_for(src: Path) -> dict[str, str]:
    """The environment with ``src`` alone on ``PYTHONPATH`` (a fixed terminal width)."""
    return {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "100"}


def one_round(src: Path, command: list[str]) -> dict:
    """The command and its imports alone, each in a fresh interpreter."""
    env = env_for(src)
    with tempfile.TemporaryDirectory() as scratch:
        listed, skipped = Path(scratch) / "modules.json", Path(scratch) / "skipped"
        work = Path(scratch) / "work"
        work.mkdir()
        cmd = timed([sys.executable, "-c", RUN_AND_LIST, str(listed), *command], work, TIMEOUT_S, env)
        if cmd["rc"] != 0 or not listed.exists():
            raise SystemExit(f"the command failed ({cmd['rc']}): {cmd['stderr_tail']}")
        modules = json.loads(listed.read_text())
        imp = timed([sys.executable, "-c", IMPORT_ONLY, str(listed), str(skipped)], work, TIMEOUT_S, env)
        if imp["rc"] != 0:
            raise SystemExit(f"importing the command's modules failed: {imp['stderr_tail']}")
        return {
            "command_cpu_s": cmd["cpu_s"],
            "command_wall_s": cmd["wall_s"],
            "import_cpu_s": imp["cpu_s"],
            "import_wall_s": imp["wall_s"],
            "modules": len(modules),
            "skipped": int(skipped.read_text()),
            "imported": [name for name in NAMED if name in modules],
            "load": load()[0],
        }


def run(args: argparse.Namespace) -> dict:
    commands = args.command or list(DEFAULT_COMMANDS)
    checkouts = {"this checkout": ROOT / "src"}
    if args.before:
        checkouts = {"before": args.before.resolve(), **checkouts}
    before = load()
    runs: dict[str, dict[str, list[dict]]] = {c: {label: [] for label in checkouts} for c in commands}
    floors: dict[str, list[dict]] = {label: [] for label in FLOORS}
    for r in range(args.repeat):
        for command in commands:
            for label, src in checkouts.items():
                runs[command][label].append(one_round(src, shlex.split(command)))
            print(
                f"round {r + 1}/{args.repeat}, {command}: "
                + "; ".join(
                    f"{label} {rs[-1]['command_cpu_s']:.1f} CPU-s, imports {rs[-1]['import_cpu_s']:.1f}"
                    for label, rs in runs[command].items()
                )
                + f"; load {load()[0]}",
                flush=True,
            )
        for label, code in FLOORS.items():
            floors[label].append(timed([sys.executable, "-c", code], ROOT, TIMEOUT_S, env_for(ROOT / "src")))
    return {
        "script": "python benchmarks/import_cost.py run"
        + "".join(f" --command {shlex.quote(c)}" for c in args.command or ())
        + (f" --before {args.before}" if args.before else "")
        + (f" --repeat {args.repeat}" if args.repeat != 3 else ""),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "load_before": before,
        "load_after": load(),
        "repeat": args.repeat,
        "target_share": TARGET,
        "checkouts": {label: {"src": str(src), "commit": commit_of(src)} for label, src in checkouts.items()},
        "commands": {f"privgraph {c}": runs[c] for c in commands},
        "floors": {
            label: {"code": FLOORS[label], "cpu_s": [f["cpu_s"] for f in fs], "wall_s": [f["wall_s"] for f in fs]}
            for label, fs in floors.items()
        },
    }


def share(rs: list[dict]) -> float:
    return statistics.median(r["import_cpu_s"] for r in rs) / statistics.median(r["command_cpu_s"] for r in rs)


def shown(code: str) -> str:
    """A floor's code as the page names it: the command line, or the script's constant for a script."""
    return f'`python -c "{code}"`' if "\n" not in code else "the script's `PYG_DATASETS_DEFERRED`"


def page(res: dict) -> str:
    cpus = res["machine"]["cpus"]
    target = res["target_share"]
    lines = [
        "# Start-up: a trial's imports",
        "",
        "<!-- generated by `python benchmarks/import_cost.py page` from benchmarks/results/import_cost.json; "
        "do not edit -->",
        "",
        f"How much of a small trial's CPU time goes to importing (target: under {target:.0%}). "
        f"Measured with `{res['script']}` on {res['measured']}: {res['repeat']} rounds in fresh interpreters, "
        f"the commands and checkouts interleaved, Python {res['machine']['python']} on "
        f"{res['machine']['platform']}, {load_note(res['load_before'], res['load_after'], cpus)}. Checkouts: "
        + ", ".join(f"{label} `{c['commit']}` (`{c['src']}`)" for label, c in res["checkouts"].items())
        + ".",
        "",
        "Each round runs the command, then a fresh interpreter that imports the modules the command imported, "
        "in its order, and nothing else. CPU time is user + system (the imports run on one thread, the trial "
        "on privgraph's threads); the share is the median import CPU over the median command CPU.",
        "",
        "| command | checkout | command CPU-s | imports CPU-s | imports' share | under 25 % | "
        "above torch + PyG CPU-s | torch + PyG's share | command wall s | modules | libraries imported | "
        "every round (command / imports CPU-s) | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    floor = {label: statistics.median(f["cpu_s"]) for label, f in res["floors"].items()}
    for command, by_checkout in res["commands"].items():
        for label, rs in by_checkout.items():
            med = {k: statistics.median(r[k] for r in rs) for k in ("command_cpu_s", "import_cpu_s", "command_wall_s")}
            each = ", ".join(f"{r['command_cpu_s']:.1f} / {r['import_cpu_s']:.1f}" for r in rs)
            loads = ", ".join(f"{r['load']:g}" for r in rs)
            lines.append(
                f"| `{command}` | {label} | {med['command_cpu_s']:.1f} | {med['import_cpu_s']:.1f} | "
                f"{share(rs):.0%} | {'met' if share(rs) < target else 'not met'} | "
                f"{med['import_cpu_s'] - floor['torch + PyG']:.1f} | "
                f"{floor['torch + PyG'] / med['command_cpu_s']:.0%} | "
                f"{med['command_wall_s']:.1f} | {rs[-1]['modules']} | {', '.join(rs[-1]['imported'])} | {each} | "
                f"{loads} |"
            )
    floor_text = "; ".join(
        f"{label} ({shown(f['code'])}): {floor[label]:.2f} CPU-s" for label, f in res["floors"].items()
    )
    dynamo = floor["torch + dynamo"] - floor["torch"]
    pyg_rest = floor["torch + PyG"] - floor["torch + dynamo"]
    datasets = floor["torch + PyG"] - floor["torch + PyG, its datasets deferred"]
    lines += [
        "",
        f"The least any trial imports, in the same rounds (median): {floor_text}. A trial shorter than "
        f"{floor['torch + PyG'] / target:.0f} CPU-s cannot meet the target while it needs torch and PyG, and "
        f"one shorter than {floor['torch + dynamo'] / target:.0f} CPU-s cannot while it trains with torch.",
        "",
        f"What remains, and why. torch itself: {floor['torch']:.2f} CPU-s. `torch._dynamo`: {dynamo:.2f} CPU-s "
        "more; PyG imports it (`torch_geometric/isinstance.py`), and a trial that trains loads it without PyG: "
        "torch's optimizers import it when the first one is built (`torch._compile._disable_dynamo`). The rest "
        f"of PyG: {pyg_rest:.2f} CPU-s more, whichever of its submodules privgraph imports: any of them (even "
        "`torch_geometric.data` for `Data`) runs the package's `__init__`, which imports `utils`, `data`, "
        "`loader`, `transforms`, `datasets`, `nn`, `explain` and `profile`, so deferring privgraph's own "
        "`torch_geometric.nn` or `datasets` imports saves nothing; it brings numba (`torch_geometric.utils.ppr`) "
        "and pandas (`torch_geometric.datasets` → `torch_geometric.llm`). Of that, PyG's `datasets` subpackage "
        f"costs {datasets:.2f} CPU-s (the floor with it deferred, measured here only): a run reads its dataset "
        "through a PyG dataset class, and any `torch_geometric.datasets.X` runs that subpackage's `__init__`, "
        "which imports every dataset, so privgraph cannot skip it short of patching PyG's import. Every method "
        "takes and returns PyG's `Data`, so no run path needs torch alone. What privgraph and the rest add "
        "above torch + PyG is the *above torch + PyG* column: privgraph's own modules (a few ms each), "
        "`scipy.special` (the accountants), the command line's typer and rich, and numba's "
        "first-call set-up for the compiled CSR kernels (counted as imports: it imports numba's typing modules). "
        "`scipy.optimize` (half a CPU-second) is no longer among it: the calibrations bisect "
        "(`privgraph.accounting.search`). The commands that do no work: [start-up](startup.md); what a run "
        "imports is tested in `tests/test_lazy_imports.py`.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("run", "page"))
    ap.add_argument("--command", action="append", help="a privgraph command (without 'privgraph'); repeat for more")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", type=Path, help="another checkout's src, measured in the same rounds")
    ap.add_argument("--out", type=Path, default=RESULTS / "import_cost.json")
    ap.add_argument("--page", type=Path, default=PAGES / "import_cost.md")
    args = ap.parse_args()
    if args.action == "run":
        result = run(args)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    else:
        result = json.loads(args.out.read_text())
    args.page.parent.mkdir(parents=True, exist_ok=True)
    args.page.write_text(page(result))
    print(page(result))


if __name__ == "__main__":
    main()
