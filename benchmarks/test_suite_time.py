"""The test suite's wall time (the target: ``make test`` under 5 minutes on an idle 2-core machine).

    python benchmarks/test_suite_time.py                 # make test's pytest command, all cores
    python benchmarks/test_suite_time.py --workers 0     # in one process (the suite before pytest-xdist)
    python benchmarks/test_suite_time.py --label before tests/test_cli_input.py

Runs the pytest command of ``make test`` (``-n WORKERS --dist worksteal``) with ``--durations`` and a JUnit
XML report, and appends one entry to ``benchmarks/results/test_suite.json``: the total wall time, the
1-minute load average (``os.getloadavg``) before and after, the CPU count, the outcome counts, the wall time
per test file (the sum of its tests' durations: per-worker time under xdist, not elapsed time), the slowest
tests and the sum of the 30 slowest.  The machine is whatever runs it: compare entries from the same one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "test_suite.json"


def _durations(junit: Path) -> list[dict]:
    """Every test case of the JUnit report: its file, name, seconds and outcome."""
    cases = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        path = case.get("classname", "").replace(".", "/")
        cases.append(
            {"file": path + ".py", "test": case.get("name"), "seconds": float(case.get("time", 0)), "outcome": outcome}
        )
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", default=["tests"], help="what pytest runs (default: tests)")
    parser.add_argument("--workers", default="auto", help="pytest-xdist's -n (0: in one process)")
    parser.add_argument("--label", default="", help="a name for the entry (e.g. before, after)")
    parser.add_argument("--slowest", type=int, default=30, help="how many of the slowest tests to record")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--from-junit", type=Path, help="record this JUnit report of a run made elsewhere (no wall time, no load)"
    )
    args = parser.parse_args(argv)
    if args.from_junit is not None:
        cases = _durations(args.from_junit)
        return _record(args, cases, None, None, None, None, f"an existing report: {args.from_junit.name}")

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-n", args.workers, "--dist", "worksteal", "-p", "no:cacheprovider"]
        cmd += ["--durations", str(args.slowest), "--junitxml", str(junit), *args.paths]
        load_before = os.getloadavg()
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env)
        wall = time.perf_counter() - start
        load_after = os.getloadavg()
        if not junit.is_file():  # pytest was stopped before it wrote its report: nothing to record
            print(f"no report after {wall:.0f} s (exit status {proc.returncode}): nothing recorded", file=sys.stderr)
            return proc.returncode or 1
        cases = _durations(junit)

    shown = " ".join(["python", *cmd[1:]]).replace(str(junit), "JUNIT.xml")
    print(f"{wall:.0f} s wall, {len(cases)} tests, load {load_before[0]:.1f} → {load_after[0]:.1f}")
    return _record(args, cases, wall, load_before[0], load_after[0], proc.returncode, shown)


def _record(args, cases, wall, load_before, load_after, status, command) -> int:
    """Append the entry (module docstring) to ``args.results``; the run's exit status (0 for a report)."""
    per_file: dict[str, float] = defaultdict(float)
    for case in cases:
        per_file[case["file"]] += case["seconds"]
    slowest = sorted(cases, key=lambda c: -c["seconds"])[: args.slowest]
    outcomes: dict[str, int] = defaultdict(int)
    for case in cases:
        outcomes[case["outcome"]] += 1
    entry = {
        "label": args.label,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "exit_status": status,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "load_1min_before": None if load_before is None else round(load_before, 2),
        "load_1min_after": None if load_after is None else round(load_after, 2),
        "wall_seconds": None if wall is None else round(wall, 1),
        "tests": len(cases),
        "outcomes": dict(outcomes),
        "sum_of_test_seconds": round(sum(c["seconds"] for c in cases), 1),
        f"sum_of_slowest_{args.slowest}_seconds": round(sum(c["seconds"] for c in slowest), 1),
        "per_file_seconds": {f: round(s, 1) for f, s in sorted(per_file.items(), key=lambda kv: -kv[1])},
        "slowest": [{**c, "seconds": round(c["seconds"], 2)} for c in slowest],
    }
    runs = json.loads(args.results.read_text())["runs"] if args.results.is_file() else []
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps({"runs": [*runs, entry]}, indent=1, ensure_ascii=False) + "\n")
    print(f"recorded in {args.results}")
    return status or 0


if __name__ == "__main__":
    raise SystemExit(main())
