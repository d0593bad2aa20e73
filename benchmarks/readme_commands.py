"""Whether the README's "30 seconds" quick-starts take 30 seconds: every command of its "30 seconds: the
command line" block and its "30 seconds: Python" block, each timed in a fresh process.

    python benchmarks/readme_commands.py run                      # every command, 120 s each at most
    python benchmarks/readme_commands.py run --only 'methods|datasets' --timeout 60
    python benchmarks/readme_commands.py list                     # the commands, as they will run
    python benchmarks/readme_commands.py page                     # the page from the stored results

``run`` extracts the commands from README.md (each line of the ```bash block after the heading, its
comment dropped; the ```python block as one script), runs each in one temporary folder, in README
order (``report`` reads the store ``sweep`` wrote), with ``privgraph`` as this checkout's ``python -m
privgraph``, ``python`` as this interpreter) and the repository's relative paths (``src/privgraph/grids/...``)
made absolute.  The files a command names as the user's own (``edges.csv``, ``x.npy``) are written by the
README's own line before it, as a reader would run it; the folder holds nothing else but the Python block,
as quickstart.py.  Each run is killed after ``--timeout`` seconds.  The
results (wall time, exit status, the last error line, the load) go to
``benchmarks/results/readme_commands.json`` (``--only``: those commands replaced, the others kept)
and ``docs/benchmarks/readme_commands.md``.  A command over ``--timeout`` is recorded as such: rerun
it alone with a longer one to know its time.  ``$PRIVGRAPH_DATA`` is passed on (the sweep reads Cora).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import tempfile
import time
from pathlib import Path

from command_timing import PAGES, RESULTS, ROOT, checkout_env, load, load_note, machine, timed

README = ROOT / "README.md"
RESULT_FILE = RESULTS / "readme_commands.json"
PAGE = PAGES / "readme_commands.md"
TARGET_S = 30.0
CLI_HEADING = "## 30 seconds: the command line"
PYTHON_HEADING = "## 30 seconds: Python"
PYTHON_NAME = "python quick-start (README's python block)"


def _block(text: str, heading: str, language: str) -> str:
    """The first ```language block after the heading that starts with ``heading``."""
    start = text.index(heading)
    found = re.compile(rf"```{language}\n(.*?)```", re.S).search(text, start)
    if found is None:
        raise ValueError(f"README.md: no ```{language} block after {heading!r}")
    return found.group(1)


def commands(readme: Path = README) -> list[dict[str, str]]:
    """The README's quick-start commands: ``name`` (as written, without its comment) and ``run`` (the
    shell line this script runs)."""
    text = readme.read_text(encoding="utf-8")
    out = []
    for line in _block(text, CLI_HEADING, "bash").splitlines():
        command = line.split("  #")[0].strip()
        if not command or command.startswith("#"):
            continue
        words = shlex.split(command)
        if words[0] == "privgraph":
            words = [sys.executable, "-m", "privgraph", *words[1:]]
        elif words[0] == "python":
            words = [sys.executable, *words[1:]]
        words = [str(ROOT / w) if w.startswith("benchmarks/") else w for w in words]
        out.append({"name": command, "run": shlex.join(words)})
    out.append({"name": PYTHON_NAME, "run": f"{shlex.quote(sys.executable)} quickstart.py"})
    return out


def write_inputs(folder: Path, readme: Path = README) -> None:
    """The README's Python block as quickstart.py (the command line block writes its own input files)."""
    text = readme.read_text(encoding="utf-8")
    (folder / "quickstart.py").write_text(_block(text, PYTHON_HEADING, "python"))


def run(args: argparse.Namespace) -> None:
    chosen = [c for c in commands() if not args.only or re.search(args.only, c["name"])]
    if not chosen:
        sys.exit(f"no command matches {args.only!r}")
    env = checkout_env()
    rows = []
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_inputs(folder)
        for c in chosen:
            before = load()
            res = timed(c["run"], folder, args.timeout, env, shell=True)
            rows.append({"command": c["name"], **res, "timeout_s": args.timeout, "load_before": before})
            state = "timed out" if res["timed_out"] else f"exit {res['rc']}"
            print(f"{res['wall_s']:8.1f} s  {state:10}  {c['name']}", flush=True)
    stored = json.loads(RESULT_FILE.read_text()) if RESULT_FILE.exists() and args.only else {"commands": []}
    by_name = {r["command"]: r for r in stored["commands"]}
    by_name.update({r["command"]: r for r in rows})
    order = [c["name"] for c in commands()]
    out = {
        "target_s": TARGET_S,
        "measured": started,
        "machine": machine(),
        "load_after": load(),
        "commands": sorted(by_name.values(), key=lambda r: order.index(r["command"]) if r["command"] in order else 99),
    }
    RESULT_FILE.parent.mkdir(parents=True, exist_ok=True)
    RESULT_FILE.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {RESULT_FILE}")
    page(args)


def _verdict(r: dict, target: float) -> str:
    if r["timed_out"]:
        return f"not met (stopped at {r['timeout_s']:g} s)"
    if r["rc"] != 0:
        return f"failed (exit {r['rc']})"
    return "met" if r["wall_s"] <= target else "not met"


def page(args: argparse.Namespace) -> None:
    res = json.loads(RESULT_FILE.read_text())
    target = res["target_s"]
    cpus = res["machine"]["cpus"]
    lines = [
        "# The README's quick-starts",
        "",
        "<!-- generated by `python benchmarks/readme_commands.py page` from "
        "benchmarks/results/readme_commands.json; do not edit -->",
        "",
        f'Each command of the README\'s "30 seconds" blocks, run as written (the command line block line '
        f"by line, the Python block as one script) in one temporary folder, each in a fresh process, once; "
        f"target {target:g} s each. Measured {res['measured']} with Python {res['machine']['python']} on "
        f"{res['machine']['platform']}, {cpus} CPUs; the load average (1/5/15 min) before each command is "
        f"in its row, {'/'.join(f'{v:g}' for v in res['load_after'])} after the last.",
        "",
        f"| command | wall time (s) | ≤ {target:g} s | load before | last error line |",
        "|---|---|---|---|---|",
    ]
    for r in res["commands"]:
        err = r["stderr_tail"].replace("|", "\\|") if r["rc"] != 0 or r["timed_out"] else ""
        lines.append(
            f"| `{r['command']}` | {r['wall_s']:.1f} | {_verdict(r, target)} | "
            f"{'/'.join(f'{v:g}' for v in r['load_before'])} | {err} |"
        )
    busy = [r for r in res["commands"] if r["load_before"][0] > (cpus or 1)]
    lines += [
        "",
        f"{sum(_verdict(r, target) == 'met' for r in res['commands'])} of {len(res['commands'])} commands "
        f"within {target:g} s."
        + (
            f" {len(busy)} ran on a busy machine (load above {cpus}): "
            + load_note(busy[0]["load_before"], res["load_after"], cpus).split(": ", 1)[-1]
            + "."
            if busy
            else ""
        ),
        "Rerun: `python benchmarks/readme_commands.py run` (`--only PATTERN`, `--timeout SECONDS`).",
        "",
    ]
    PAGE.write_text("\n".join(lines))
    print(f"wrote {PAGE}")


def list_commands(args: argparse.Namespace) -> None:
    for c in commands():
        print(f"{c['name']}\n    {c['run']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the commands, store the results, write the page")
    r.add_argument("--only", help="only the commands matching this regular expression")
    r.add_argument("--timeout", type=float, default=120, help="seconds before a command is killed")
    r.set_defaults(func=run)
    sub.add_parser("list", help="print the commands as they will run").set_defaults(func=list_commands)
    sub.add_parser("page", help="write the page from the stored results").set_defaults(func=page)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
