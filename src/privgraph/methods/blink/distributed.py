"""Blink's server past one process: its blocks of rows as Ray tasks (Blink paper, Algorithms 2–3, §4.2.3).

The server (:mod:`privgraph.methods.blink.server`) is written as maps over blocks of rows with the reduce
in the driver: the β-MLE's sums E_i(β) (Algorithm 2) over blocks of nodes, the Anderson step on the
driver; Hard, Hybrid's rounds, the posterior mass and truncated Soft over blocks of sorted-β rows, the
pairs put back in the order of one pass and Hybrid's top-k chosen on the driver.  :class:`RayRunner` runs
these blocks as Ray tasks on a local cluster or on the one at ``address``.

What a task receives (trust model: an untrusted server, ε-link-LDP per node, Theorem 4.1).  The driver
plays the clients: the true edges and the nodes' secret PRF keys never leave it.  A task gets the
clients' reports and public parameters only: β (from the noisy degrees), its binned table, the sorted-β
order, ε_a, the pass's thresholds, and — for the passes over pairs — the reported bits Ã_ij, Ã_ji
themselves (:mod:`~privgraph.methods.blink.shards`: per block of sorted rows, 2 bits per pair of the
pass's window of β-sums, drawn on the driver just before the task is submitted), or, for the exact
‖P‖ (n ≤ 20,000), every node's whole report (n²/8 bytes, ≤ 50 MB).  So the server is post-processing of
the reports wherever it runs (``tests/methods/blink/test_blink_ray_server.py`` captures every payload).

Memory: a pass's shards hold 2 bits per pair in its window — far more, all together, than the keys and
edges the tasks used to read (Hybrid visits ≈ 8.8·10¹⁰ pairs at n = 10⁷: 22 GB of shards over its rounds,
against 16 B per node and per edge) — so they are never all held: :meth:`RayRunner.map` reads the shards
from a generator, keeps at most :attr:`RayRunner.parts` tasks in flight, and a shard is at most about
:data:`~privgraph.methods.blink.shards.SHARD_BYTES` (the band is cut into more blocks where needed); a
finished task's shard leaves the object store (Ray does not pin a task's arguments for its result), so
the store holds about ``parts`` × 64 MiB of reports at once, however wide the band.  The price is CPU:
the PRF draws of the band (in a deployment, each node's own work) run on the driver, and the tasks only
threshold the bits.

The output equals the single-process server's bit for bit: the server draws no randomness (the reports'
noise is the client's, drawn before), every block computes what one pass computes for its rows, and every
sum is reduced in a fixed order that does not depend on the cut.  For the same reason a task whose worker
is lost is run again (``max_retries`` times, :data:`MAX_RETRIES` by default) with the same result; a task
that still fails stops the server with one line naming the node and the fix
(:func:`~privgraph.ray_cluster.ray_task_failure`).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

BLOCKS_PER_WORKER = 2  # blocks cut per worker: a slow block (a busy machine) delays the map less
MAX_RETRIES = 3  # runs of a task whose worker died, after the first (the task is deterministic)


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
    CPUs) times :data:`BLOCKS_PER_WORKER` blocks, each a task of one CPU (numba on one thread), at most
    :attr:`parts` in flight.  Starts a local cluster of ``workers`` CPUs, or joins the one at ``address``
    (`ray start --head` prints it), unless Ray runs already (a local cluster's object store:
    ``object_store_bytes``, default Ray's, 30 % of the memory: the shared arrays of n entries and the
    tasks' shards of reports, module docstring); shuts down what it started on :meth:`close` (or leaving a
    ``with``).  A task whose worker dies runs again, up to ``max_retries`` times.  ``stats`` keeps each
    task's cost (:func:`_timed_block`) for benchmarks; ``task`` is what every task runs (tests inject faults)."""

    workers: int | None = None
    address: str | None = None
    object_store_bytes: int | None = None
    notify: Callable[[str], None] | None = None
    max_retries: int = MAX_RETRIES
    task: Callable[..., Any] = _timed_block
    stats: list[dict[str, float]] = field(default_factory=list)
    parts: int = field(init=False, default=1)
    reports_only = True  # the tasks may run on other machines: they get the reports, never keys or edges
    started: bool = field(init=False, default=False)
    ray: Any = field(init=False, repr=False, default=None)
    _remote: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        from privgraph.ray_cluster import start_ray

        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        self.ray, self.started = start_ray(
            self.workers, self.address, self.notify, {"NUMBA_NUM_THREADS": "1"}, self.object_store_bytes
        )
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        self.parts = max(1, (self.workers or cpus) * BLOCKS_PER_WORKER)
        self._remote = self.ray.remote(num_cpus=1, max_retries=self.max_retries)(self.task)

    def share(self, value: Any) -> Any:
        return self.ray.put(value)

    def map(self, fn: Callable[..., T], blocks: Iterable[tuple], *shared: Any) -> list[T]:
        """``fn(*block, *shared)`` for each block as a Ray task, at most :attr:`parts` in flight (``blocks``
        is read as tasks end: a generator's shards are drawn just in time); the results in block order,
        each fetched as its task ends (``ray.wait``; numpy arrays stay in the object store, zero-copy, until
        the reduce releases them).  A task that fails after its retries raises one line
        (:func:`~privgraph.ray_cluster.ray_task_failure`)."""
        from ray.exceptions import RayError, RayTaskError

        from privgraph.ray_cluster import ray_task_failure

        todo = iter(blocks)
        out: dict[int, Any] = {}
        where: dict[Any, int] = {}
        pending: list[Any] = []
        submitted = 0
        try:
            while True:
                while len(pending) < self.parts and (block := next(todo, None)) is not None:
                    ref = self._remote.remote(fn, *block, *shared)
                    where[ref] = submitted
                    submitted += 1
                    pending.append(ref)
                    del block
                if not pending:
                    break
                done, pending = self.ray.wait(pending, num_returns=1)
                for ref in done:
                    out[where.pop(ref)], stats = self.ray.get(ref)
                    self.stats.append(stats)
        except RayTaskError:
            raise  # the task's own exception (a bug, not a lost worker): Ray's traceback is the one to read
        except RayError as err:
            for ref in pending:
                self.ray.cancel(ref, force=True)
            local = "run the server in one process (--param server=local)"
            line = ray_task_failure(err, self.ray, retries=self.max_retries, what="Blink's server", local=local)
            raise RuntimeError(line) from None
        return [out[k] for k in range(len(out))]

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False

    def __enter__(self) -> RayRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
