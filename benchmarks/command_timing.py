"""What the command-timing benchmarks share (cli_startup.py, readme_commands.py): a command's wall time in
a fresh process with a timeout, the machine and its load (recorded with every figure: the machine may be
shared), and the environment that runs this checkout's privgraph."""

from __future__ import annotations

import cProfile
import os
import platform
import pstats
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PAGES = ROOT / "docs" / "benchmarks"


def checkout_env(**extra: str) -> dict[str, str]:
    """The environment with this checkout's ``src`` first on ``PYTHONPATH`` (and a fixed terminal width,
    so rich draws the same tables), plus ``extra``."""
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "100", **extra}


def commit_of(src: Path | str, short: bool = True) -> str:
    """The commit checked out at ``src`` (any path inside a git work tree), or "?" outside one."""
    cmd = ["git", "-C", str(src), "rev-parse", *(["--short"] if short else []), "HEAD"]
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip() or "?"


def load() -> list[float]:
    """The 1-, 5- and 15-minute load averages."""
    return [round(v, 2) for v in os.getloadavg()]


def machine() -> dict[str, object]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "interpreter": sys.executable,
    }


def timed(cmd: list[str] | str, cwd: Path, timeout: float, env: dict[str, str], shell: bool = False) -> dict:
    """Run ``cmd`` once: wall seconds, CPU seconds (user + system, of the process and the children it
    waited for: on an idle machine a single-threaded start takes about that long), exit status, whether
    it ran past ``timeout`` (then its whole process group is killed) and the last line it wrote to stderr."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        shell=shell,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        timed_out = True
    wall = time.perf_counter() - start
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)
    last = next((line.strip() for line in reversed((err or "").splitlines()) if line.strip()), "")
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "rc": proc.returncode,
        "timed_out": timed_out,
        "stderr_tail": last[:300],
    }


def load_note(before: list[float], after: list[float], cpus: int | None) -> str:
    """One sentence on the load the figures were measured under."""
    busy = max(before[0], after[0]) > (cpus or 1)
    why = ": the machine was busy (more runnable processes than CPUs), so these times overstate an idle one"
    return (
        f"load average (1/5/15 min) {'/'.join(f'{v:g}' for v in before)} before and "
        f"{'/'.join(f'{v:g}' for v in after)} after, on {cpus} CPUs" + (why if busy else "")
    )


def top_functions(prof: cProfile.Profile, count: int = 5) -> list[dict[str, object]]:
    """The ``count`` functions of most own time in a finished ``cProfile`` run: ``file:line(name)``, own seconds
    and their share of the run's own time (what the benchmarks' profile sections record)."""
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.values())
    top = sorted(stats.items(), key=lambda kv: -kv[1][2])[:count]
    return [
        {"function": f"{Path(f).name}:{line}({name})", "own_s": round(v[2], 4), "share": round(v[2] / total, 3)}
        for (f, line, name), v in top
    ]
