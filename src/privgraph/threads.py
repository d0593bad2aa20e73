"""How many threads privgraph computes with: a fair share of the machine, settable, never spinning.

torch sizes its intra-op pool by the machine's cores, whatever the process may use, and its OpenMP
threads (libgomp on Linux) spin while they wait for each other.  On a shared server, a cluster job or a
container that is the worst case: a thread whose partner lost its core to another process spins until
the partner comes back, and a busy 2-core host turned one HeteDP trial into 5.8× the CPU-seconds of a
one-thread run.  So privgraph

* counts the CPUs the process may use (:func:`usable_cpus`): its CPU affinity (``taskset``, a cpuset,
  Slurm) and its cgroup's CPU quota (``docker --cpus``, Kubernetes limits; v2 ``cpu.max`` and v1
  ``cpu.cfs_quota_us``), the smaller of the two;
* takes that many threads unless told (:func:`thread_count`: ``threads``, else ``$PRIVGRAPH_THREADS``,
  else ``$OMP_NUM_THREADS``, else the usable CPUs);
* lets waiting OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE``, unless the caller set a policy).

The command line applies it before torch is imported (``privgraph --threads N …``); ``import privgraph``
applies the same count (:func:`set_default_threads`); :func:`set_threads` sets torch's pool, the BLAS pools
(threadpoolctl) and numba's, and the environment for what starts later.  OpenMP reads its wait policy when
torch first loads it: set it before ``import torch`` (:func:`configure_environment`), as the command line
and ``import privgraph`` do.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

THREADS_ENV = "PRIVGRAPH_THREADS"
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def cgroup_cpu_limit(root: Path = CGROUP_ROOT) -> float | None:
    """The CPUs the cgroup's quota allows (quota / period), or ``None`` without a quota.  Reads cgroup v2's
    ``cpu.max`` (``"200000 100000"``, ``"max 100000"``) or v1's ``cpu/cpu.cfs_quota_us`` and
    ``cpu.cfs_period_us`` (quota -1: none)."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


def usable_cpus(root: Path = CGROUP_ROOT) -> int:
    """The CPUs this process may use: its affinity, capped by its cgroup's quota (rounded up), at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows: no affinity call
        cpus = os.cpu_count() or 1
    limit = cgroup_cpu_limit(root)
    if limit is not None:
        cpus = min(cpus, math.ceil(limit))
    return max(1, cpus)


def check_threads(value: object, where: str = "threads") -> int:
    """A thread count: an integer ≥ 1 (``ValueError`` names ``where`` otherwise)."""
    try:
        threads = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{where} takes a whole number of threads (>= 1), got {value!r}") from None
    if threads < 1:
        raise ValueError(f"{where} takes a whole number of threads (>= 1), got {value!r}")
    return threads


def thread_count(threads: int | None = None) -> int:
    """``threads``, else ``$PRIVGRAPH_THREADS``, else ``$OMP_NUM_THREADS`` (which torch honours too), else
    :func:`usable_cpus`."""
    if threads is not None:
        return check_threads(threads)
    for var in (THREADS_ENV, "OMP_NUM_THREADS"):
        if os.environ.get(var):
            return check_threads(os.environ[var], f"${var}")
    return usable_cpus()


def configure_environment(threads: int) -> None:
    """Before torch, numpy or numba load: their pools get ``threads`` threads, and OpenMP's waiting threads
    sleep (``OMP_WAIT_POLICY=PASSIVE``) unless the environment already names a policy."""
    for var in _THREAD_VARS:
        os.environ[var] = str(threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def set_threads(threads: int | None = None) -> int:
    """Every pool privgraph computes with gets :func:`thread_count` threads (torch's intra-op pool, the BLAS
    pools, numba's, and the environment for processes started later); returns the count.  Pools already
    loaded are resized; OpenMP's wait policy only applies where it was set before torch was imported."""
    n = thread_count(threads)
    configure_environment(n)
    _resize_pools(n)
    return n


def set_default_threads() -> int:
    """What ``import privgraph`` does (the Python API as robust as the command line under load):
    :func:`thread_count` threads for every pool already loaded, and the same count and a sleeping OpenMP
    wait policy in the environment for what loads later, where the caller has not set them (a variable
    already set is kept).  ``$PRIVGRAPH_THREADS`` overrides the count; :func:`set_threads` changes it later."""
    n = thread_count()
    for var in _THREAD_VARS:
        os.environ.setdefault(var, str(n))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _resize_pools(n)
    return n


def _resize_pools(n: int) -> None:
    """torch's intra-op pool, the BLAS pools and numba's, those already loaded, to ``n`` threads."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    if "numpy" in sys.modules:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    if "numba" in sys.modules:
        numba = sys.modules["numba"]
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


__all__ = [
    "THREADS_ENV",
    "cgroup_cpu_limit",
    "check_threads",
    "configure_environment",
    "set_default_threads",
    "set_threads",
    "thread_count",
    "usable_cpus",
]
