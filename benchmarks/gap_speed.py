"""GAP-EDP per trial, side by side: privgraph at two checkouts (``before``, ``after``) and the authors' code
(``benchmarks/gap_reference.py``, its setup first), one trial per process, interleaved round by round, 1 torch
thread each, on FacebookPagePage at ε = 1 (δ = 10⁻⁶, the reference's automatic δ on this graph).

A privgraph trial is ``privatize`` (noise calibration, encoder training, the K noisy hops) and ``fit`` (the
classifier, the test); the reference's is its ``fit`` (the same stages); imports and data loading are excluded
on both sides.  Seed ``s``: privgraph's trial-``s`` split (``stratified_split(load(...), seed=s)``), given to
both.  privgraph's lazy imports (made on a process's first release) are done before the timing by a
one-epoch release on a 60-node graph, as the reference's imports are before its ``fit``.  The results (CPU
seconds, wall seconds, test accuracy, the 1-minute load before and after) are stored in
``benchmarks/results/gap_speed.json``; ``python benchmarks/gap_reference.py page`` puts them on
docs/benchmarks/gap_reference.md.

usage: PRIVGRAPH_DATA=... python benchmarks/gap_speed.py run --before /path/to/old/src [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from command_timing import commit_of

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "gap_speed.json"
EPSILON, DELTA = 1.0, 1e-6


def trial(seed: int) -> None:
    """One privgraph GAP-EDP trial in this process; prints its numbers as one JSON line."""
    import copy

    import torch

    torch.set_num_threads(1)
    import privgraph as pg
    from privgraph.data import load, stratified_split
    from privgraph.data.registry import HOMOGENEOUS, get_dataset

    data = stratified_split(
        copy.copy(load(get_dataset("facebook", HOMOGENEOUS).key, split="random", seed=0)), seed=seed
    )
    from privgraph.data import sbm_graph

    small = sbm_graph(num_nodes=60, num_classes=2, num_features=8, avg_degree=4.0, homophily=0.8, seed=0)
    few = dict(encoder_epochs=1, epochs=1)
    pg.fit(pg.privatize(small, "gap-edp", epsilon=EPSILON, seed=0, delta=DELTA, **few), seed=0)  # lazy imports
    load0 = os.getloadavg()[0]
    w0, c0 = time.perf_counter(), time.process_time()
    rel = pg.privatize(data, "gap-edp", epsilon=EPSILON, seed=seed, delta=DELTA)
    fitted = pg.fit(rel, seed=seed)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    out = dict(cpu=cpu, wall=wall, test_acc=fitted.test_accuracy, load=[load0, os.getloadavg()[0]])
    print("GAPSPEED " + json.dumps(out), flush=True)


def _privgraph(src: str, seed: int) -> dict:
    env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, __file__, "trial", str(seed)], env=env, capture_output=True, text=True, check=True
    )
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("GAPSPEED "))
    return json.loads(line[len("GAPSPEED ") :])


def _reference(seed: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(REPO / "benchmarks" / "gap_reference.py"), "one", "facebook", "gap-edp", "1", str(seed)]
    proc = subprocess.run([*cmd, "1"], env=env, capture_output=True, text=True, check=True)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("GAPREF_RESULT "))
    out = json.loads(line[len("GAPREF_RESULT ") :])
    return dict(cpu=out["cpu"], wall=out["wall"], test_acc=out["test_acc"], load=out["load"])


def run(args: argparse.Namespace) -> None:
    """Round by round (one seed each): the reference, privgraph before, privgraph after; stored as they end."""
    args.after = str(REPO / "src")
    result = dict(
        created_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        command="python benchmarks/gap_speed.py run --before SRC --seeds " + " ".join(map(str, args.seeds)),
        machine=f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        commits={"before": commit_of(args.before, short=False), "after": commit_of(args.after, short=False)},
        epsilon=EPSILON,
        delta=DELTA,
        trials=[],
    )
    for seed in args.seeds:
        for variant in ("reference", "before", "after"):
            numbers = _reference(seed) if variant == "reference" else _privgraph(vars(args)[variant], seed)
            out = dict(variant=variant, seed=seed, **numbers)
            result["trials"].append(out)
            print(
                f"seed {seed} {variant}: cpu {out['cpu']:.2f} s, wall {out['wall']:.2f} s, "
                f"test {100 * out['test_acc']:.1f}%, load {out['load'][0]:.2f}",
                flush=True,
            )
            args.out.write_text(json.dumps(result, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_run = sub.add_parser("run", help="the side-by-side trials, stored in benchmarks/results/gap_speed.json")
    p_run.add_argument("--before", required=True, help="the src folder of the checkout to compare with")
    p_run.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p_run.add_argument("--out", type=Path, default=RESULTS)
    p_trial = sub.add_parser("trial", help="(internal) one privgraph trial; prints its numbers as JSON")
    p_trial.add_argument("seed", type=int)
    args = parser.parse_args()
    if args.cmd == "trial":
        trial(args.seed)
    else:
        run(args)


if __name__ == "__main__":
    main()
