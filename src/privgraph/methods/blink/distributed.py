"""Blink's server past one process: its blocks of rows as Ray tasks (Blink paper, Algorithms 2–3, §4.2.3).

The server (:mod:`privgraph.methods.blink.server`) is written as maps over blocks of rows with the reduce
in the driver: the β-MLE's sums E_i(β) (Algorithm 2) over blocks of nodes, the Anderson step on the
driver; Hard, Hybrid's rounds, the posterior mass and truncated Soft over blocks of sorted-β rows, each
block with its own rows of the reports' edges, the pairs put back in the order of one pass and
Hybrid's top-k chosen on the driver.  :class:`RayRunner` runs these blocks as Ray tasks on a local
cluster or on the one at ``address``; the arrays every block reads are put in the object store once.

The output equals the single-process server's bit for bit (``tests/methods/blink/test_blink_ray_server.py``):
the server draws no randomness (the reports' noise is the client's, drawn before), every block computes
what one pass computes for its rows, and every sum is reduced in a fixed order that does not depend
on the cut.  Privacy: the server is post-processing of the nodes' ε-link-LDP reports, so where it runs —
one process or a cluster — leaves the guarantee (Theorem 4.1) unchanged.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

BLOCKS_PER_WORKER = 2  # blocks cut per worker: a slow block (a busy machine) delays the map less


def _peak_rss_mib() -> float:
    """This process's peak resident memory (Linux VmHWM; ru_maxrss elsewhere), MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed_block(fn: Callable[..., T], *args: Any) -> tuple[T, dict[str, float]]:
    """``fn(*args)`` in a worker, with what it cost there: wall and CPU seconds (all threads), the
    worker's process id and its peak RSS during the task (Linux: the peak mark is reset when it starts)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here (Linux ≥ 4.0)
    except OSError:
        pass
    wall = time.perf_counter()
    r = resource.getrusage(resource.RUSAGE_SELF)
    cpu = r.ru_utime + r.ru_stime
    value = fn(*args)
    r = resource.getrusage(resource.RUSAGE_SELF)
    stats = {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": r.ru_utime + r.ru_stime - cpu,
        "pid": float(os.getpid()),
        "peak_rss_mib": _peak_rss_mib(),
    }
    return value, stats


@dataclass
class RayRunner:
    """A :class:`~privgraph.methods.blink.server.BlockRunner` on Ray: ``workers`` (default: the cluster's
    CPUs) times :data:`BLOCKS_PER_WORKER` blocks, each a task of one CPU (numba on one thread).  Starts a
    local cluster of ``workers`` CPUs, or joins the one at ``address`` (`ray start --head` prints it),
    unless Ray runs already (a local cluster's object store: ``object_store_bytes``, default Ray's, 30 % of
    the memory: it holds the shared arrays and the blocks' rows of the edges, about 40 B per node and 16 B
    per directed edge); shuts down what it started on :meth:`close` (or leaving a ``with``).
    ``stats`` keeps each task's cost (:func:`_timed_block`) for benchmarks."""

    workers: int | None = None
    address: str | None = None
    object_store_bytes: int | None = None
    notify: Callable[[str], None] | None = None
    stats: list[dict[str, float]] = field(default_factory=list)
    parts: int = field(init=False, default=1)
    started: bool = field(init=False, default=False)
    ray: Any = field(init=False, repr=False, default=None)
    _remote: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        from privgraph.ray_cluster import start_ray

        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        self.ray, self.started = start_ray(
            self.workers, self.address, self.notify, {"NUMBA_NUM_THREADS": "1"}, self.object_store_bytes
        )
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        self.parts = max(1, (self.workers or cpus) * BLOCKS_PER_WORKER)
        self._remote = self.ray.remote(num_cpus=1, max_retries=0)(_timed_block)

    def share(self, value: Any) -> Any:
        return self.ray.put(value)

    def map(self, fn: Callable[..., T], blocks: Sequence[tuple], *shared: Any) -> list[T]:
        """``fn(*block, *shared)`` for each block as a Ray task; the results in block order, each fetched
        as its task ends (``ray.wait``; numpy arrays stay in the object store, zero-copy, until the reduce
        releases them)."""
        pending = [self._remote.remote(fn, *block, *shared) for block in blocks]
        where = {ref: k for k, ref in enumerate(pending)}
        out: list[Any] = [None] * len(pending)
        while pending:
            done, pending = self.ray.wait(pending, num_returns=1)
            for ref in done:
                out[where.pop(ref)], stats = self.ray.get(ref)
                self.stats.append(stats)
        return out

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False

    def __enter__(self) -> RayRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
