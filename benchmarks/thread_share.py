"""CPU-seconds of one command on an idle machine and under a competing load: a fair share of a busy machine.

    PRIVGRAPH_DATA=../shared/datasets python benchmarks/thread_share.py run
    PRIVGRAPH_DATA=../shared/datasets python benchmarks/thread_share.py run --api   # pg.privatize + pg.fit
    python benchmarks/thread_share.py table          # the page from the stored JSON alone

Runs one privgraph command (default: an LPGNN trial on Cora, ``--command`` for another) in four ways,
``--repeat`` rounds interleaved (a busy spell of the shared machine hits every way), and records each
run's wall time and CPU-seconds (user + system of the child, from ``getrusage``):

* ``idle, 1 thread``: ``privgraph --threads 1``, nothing else running (the reference);
* ``busy, torch's default``: as before privgraph chose threads: torch imported first (OpenMP's default
  wait policy: waiting threads spin), one thread per core;
* ``busy, privgraph's default``: no option (the CPUs the process may use, waiting threads sleep);
* ``busy, 1 thread``: ``--threads 1``.

"busy" is a competing load started by this script: one process spinning on every core the machine has.
``--api`` times the Python API instead (:data:`API_CODE`: ``pg.privatize`` of LPGNN on Cora, then ``pg.fit``):
its "torch's default" way imports torch before privgraph (no thread choice, spinning waits: what the API did
before ``import privgraph`` chose the threads), "privgraph's default" imports privgraph first, and the
one-thread ways set ``$PRIVGRAPH_THREADS=1``.

The target: privgraph's default under the load within 1.3× the CPU-seconds of the
idle one-thread run.  Results go to ``benchmarks/results/thread_share.json`` (``--out``), the table to
``docs/benchmarks/thread_share.md`` (``--page``), with the machine, its load and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_COMMAND = "run lpgnn --dataset cora --epsilon 1 --trials 1"
TARGET = 1.3
WAYS = ("idle, 1 thread", "busy, torch's default", "busy, privgraph's default", "busy, 1 thread")
# torch loaded before privgraph sets anything: its OpenMP pool with the default wait policy, a thread a core
TORCH_FIRST = (
    "import sys, torch; torch.set_num_threads({cores}); from privgraph.cli import main; "
    "sys.argv[1:] = ['--threads', '{cores}', *sys.argv[1:]]; main()"
)


# the Python API's run (--api): LPGNN's release of Cora and a GCN trained on it
API_CODE = (
    "import privgraph as pg; from privgraph.data import load; data = load('cora'); "
    "data.feature_domain = (0.0, 1.0); rel = pg.privatize(data, 'lpgnn', epsilon=1.0, seed=0); "
    "pg.fit(rel, model='gcn', seed=0)"
)
API_OUT = HERE / "results" / "thread_share_api.json"
API_TORCH_FIRST = "import torch; torch.set_num_threads({cores}); " + API_CODE


@contextmanager
def competing_load(processes: int) -> Iterator[None]:
    """``processes`` Python processes spinning on the CPU until the block ends."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        time.sleep(1.0)  # let them take their cores
        yield
    finally:
        for p in spinners:
            p.kill()
        for p in spinners:
            p.wait()


def timed(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall seconds and CPU-seconds (user + system) of one child process (in a scratch folder: what the
    command stores goes there)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(argv, env=env, cwd=scratch, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "load": os.getloadavg()[0]}


def argv_for(way: str, command: list[str], cores: int, api: bool = False) -> list[str]:
    if api:
        code = API_TORCH_FIRST.format(cores=cores) if way == "busy, torch's default" else API_CODE
        return [sys.executable, "-c", code]
    if way == "busy, torch's default":
        return [sys.executable, "-c", TORCH_FIRST.format(cores=cores), *command]
    threads = ["--threads", "1"] if way.endswith("1 thread") else []
    return [sys.executable, "-m", "privgraph", *threads, *command]


def run(args: argparse.Namespace) -> dict:
    command = shlex.split(args.command)
    cores = os.cpu_count() or 1
    unset = ("PRIVGRAPH_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in (*unset, "NUMBA_NUM_THREADS")}
    runs: dict[str, list[dict[str, float]]] = {w: [] for w in WAYS}
    one = {**env, "PRIVGRAPH_THREADS": "1"}  # the API's one-thread ways (the CLI's take --threads 1)

    def env_for(way: str) -> dict[str, str]:
        return one if args.api and way.endswith("1 thread") else env

    for r in range(args.repeat):
        runs[WAYS[0]].append(timed(argv_for(WAYS[0], command, cores, args.api), env_for(WAYS[0])))
        with competing_load(cores):
            for way in WAYS[1:]:
                runs[way].append(timed(argv_for(way, command, cores, args.api), env_for(way)))
        print(f"round {r + 1}/{args.repeat}: " + ", ".join(f"{w} {runs[w][-1]['cpu_s']:.1f} CPU-s" for w in WAYS))
    return {
        "command": f"python -c {shlex.quote(API_CODE)}" if args.api else f"privgraph {args.command}",
        "script": "python benchmarks/thread_share.py run"
        + (" --api" if args.api else "")
        + (f" --command {shlex.quote(args.command)}" if args.command != DEFAULT_COMMAND else ""),
        "machine": f"{platform.processor() or platform.machine()}, {cores} cores, {platform.system()}",
        "competing_load": f"{cores} spinning processes (one per core)",
        "api": bool(args.api),
        "repeat": args.repeat,
        "runs": runs,
    }


def table(result: dict) -> str:
    runs = result["runs"]
    base = statistics.median(r["cpu_s"] for r in runs[WAYS[0]])
    lines = [
        "| way | CPU-seconds (median) | × idle 1 thread | wall s (median) | every run's CPU-s | load |",
        "|---|---|---|---|---|---|",
    ]
    for way in WAYS:
        cpu = statistics.median(r["cpu_s"] for r in runs[way])
        wall = statistics.median(r["wall_s"] for r in runs[way])
        each = ", ".join(f"{r['cpu_s']:.1f}" for r in runs[way])
        load = ", ".join(f"{r['load']:.1f}" for r in runs[way])
        lines.append(f"| {way} | {cpu:.1f} | {cpu / base:.2f}× | {wall:.1f} | {each} | {load} |")
    ratio = statistics.median(r["cpu_s"] for r in runs[WAYS[2]]) / base
    verdict = "met" if ratio <= TARGET else "not met"
    return "\n".join(
        [
            "# Threads on a busy machine",
            "",
            f"Generated by `python benchmarks/thread_share.py table{' --api' if result.get('api') else ''}` from "
            f"`{result.get('results_file', 'benchmarks/results/thread_share.json')}`",
            f"(measured with `{result['script']}`). Command: `{result['command']}`; machine: {result['machine']};",
            f"competing load: {result['competing_load']}; {result['repeat']} rounds, interleaved.",
            "",
            *lines,
            "",
            f"Target: privgraph's default under the load within {TARGET}× the idle one-thread CPU-seconds: "
            f"**{ratio:.2f}×, {verdict}**. How privgraph chooses its threads: "
            "[usage](../usage.md#threads-threads-and-privgraph_threads).",
            "",
        ]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("run", "table"))
    ap.add_argument("--command", default=DEFAULT_COMMAND, help="the privgraph command (without 'privgraph')")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--api", action="store_true", help="time the Python API (pg.privatize + pg.fit) instead")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "thread_share.json")
    ap.add_argument("--page", type=Path, default=HERE.parent / "docs" / "benchmarks" / "thread_share.md")
    args = ap.parse_args()
    if args.api and args.out == API_OUT.with_name("thread_share.json"):  # the API's own files by default
        args.out, args.page = API_OUT, args.page.with_name("thread_share_api.md")
    if args.action == "run":
        result = run(args)
        result["results_file"] = f"benchmarks/results/{args.out.name}"
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    else:
        result = json.loads(args.out.read_text())
    args.page.parent.mkdir(parents=True, exist_ok=True)
    args.page.write_text(table(result))
    print(table(result))


if __name__ == "__main__":
    main()
