"""Where a sweep's trials run: the executors behind :class:`Executor` (:func:`make_executor` picks one).

``local`` runs the trials in this process, one after another; ``processes`` in a pool of worker processes,
forked from this one when :func:`fork_is_safe`, else from a ``forkserver`` that imports this module (torch,
PyG, privgraph) once; ``auto`` in this process while the work left is small, then in a pool; ``ray`` as Ray
tasks.  Every one runs :func:`timed_trial` (:func:`execute_trial`) with one torch thread, so the store holds
the same records whichever ran them.  :mod:`privgraph.experiments.sweep` documents the sweep itself.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from privgraph.experiments.grid import GridSetting
from privgraph.experiments.pipeline import Experiment, TunedSetting
from privgraph.experiments.store import ERROR, TrialRecord
from privgraph.ray_cluster import WORKER_ENV, start_ray
from privgraph.version import __version__

# environment the workers need (the driver's values are passed to every worker)
EXECUTORS = ("auto", "local", "processes", "ray")
# ``auto`` starts worker processes only when the trials left would take longer than this in this process
# (the estimate: the mean time of the trials run here so far); a pool's start-up is a second or two a worker
POOL_MIN_SECONDS = 10.0


@runtime_checkable
class Executor(Protocol):
    """Where a sweep's trials run.  :func:`~privgraph.experiments.sweep.sweep` submits each trial with a
    tag, then calls :meth:`wait` while :meth:`pending` is not zero, and :meth:`close` at the end
    (``wait=False`` when interrupted)."""

    def submit(self, tag: Any, *args: Any) -> None:
        """Queue trial ``args`` (:func:`execute_trial`'s arguments); ``tag`` comes back with its record."""

    def pending(self) -> int:
        """How many submitted trials have not come back from :meth:`wait`."""

    def wait(self) -> tuple[Any, TrialRecord, float]:
        """The next trial to end: its tag, its record and the seconds it took where it ran."""

    def describe(self) -> str:
        """Where the trials ran, for the summary ("in this process", "2 worker processes", …)."""

    def close(self, wait: bool = True) -> None:
        """Release the workers; ``wait=False`` (an interrupted sweep) stops the running trials too."""


def execute_trial(
    setting: GridSetting, trial: int, tuned: TunedSetting | None, run_id: str, threads: int = 1
) -> TrialRecord:
    """Trial ``trial`` of ``setting`` (in a worker or in this process): its record, or an error record
    with the traceback when anything raises."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    start = time.perf_counter()
    try:
        experiment = Experiment(setting.spec)
        experiment.run_id = run_id
        data = experiment.task.load()
        prepared = experiment.prepare(data, setting.epsilon, tuned)
        return experiment.run_trial(data, prepared, trial)
    except Exception:  # noqa: BLE001 - every failure becomes a stored error, and the sweep goes on
        return error_record(setting, trial, run_id, traceback.format_exc(), time.perf_counter() - start)
    finally:
        torch.set_num_threads(previous)


def timed_trial(*args: Any) -> tuple[TrialRecord, float]:
    """:func:`execute_trial` (what an executor runs) and the seconds it took where it ran: loading the data,
    the setting's choice (trial 0 of a tuned setting) and the trial, without the time it waited in a queue."""
    start = time.perf_counter()
    record = execute_trial(*args)
    return record, time.perf_counter() - start


def error_record(setting: GridSetting, trial: int, run_id: str, error: str, wall_time: float = 0.0) -> TrialRecord:
    """The stored form of a trial that did not finish."""
    spec = setting.spec
    return TrialRecord(
        run_id=run_id,
        method=spec.method,
        dataset=setting.dataset,
        model=setting.model,
        mechanism=None,
        epsilon=setting.epsilon,
        label_epsilon=spec.label_epsilon,
        trial=trial,
        seed=None if spec.secure else spec.seed + trial,
        config={"params": spec.params, "label": setting.label, "table": setting.table},
        metrics={},
        guarantee={},
        wall_time=wall_time,
        version=__version__,
        config_hash=setting.key,
        status=ERROR,
        error=error,
    )


class _LocalExecutor:
    """Runs the submitted trials in this process, one per :meth:`wait`, in the order submitted (so each is
    stored, and shown, as it ends)."""

    name = "local"

    def __init__(self) -> None:
        self._queue: list[tuple[Any, tuple]] = []

    def submit(self, tag: Any, *args: Any) -> None:
        self._queue.append((tag, args))

    def wait(self) -> tuple[Any, TrialRecord, float]:
        tag, args = self._queue.pop(0)
        return (tag, *timed_trial(*args))

    def pending(self) -> int:
        return len(self._queue)

    def describe(self) -> str:
        return "in this process"

    def close(self, wait: bool = True) -> None:
        pass


def exit_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (``prctl(PR_SET_PDEATHSIG)``): a pool worker of
    a sweep whose driver was SIGKILLed exits instead of running on, orphaned.  A forkserver's workers are its
    children; the forkserver itself exits when the driver's end of its pipe closes.  Elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # no libc prctl (a static or unusual build): the old behaviour
        return
    if os.getppid() == 1:  # the parent died before the request was made: it can never fire now
        os._exit(1)


def _init_worker(env: dict[str, str]) -> None:
    """A pool worker: the driver's data settings and one thread per worker (no oversubscription); it dies with
    its parent (:func:`exit_with_parent`)."""
    exit_with_parent()
    os.environ.update(env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the driver, which stops the workers
    import torch

    torch.set_num_threads(1)


def _forkserver() -> Any:
    """The ``forkserver`` context, its server importing this module (torch, PyG, privgraph) once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


def fork_is_safe(cpu_trials: bool = True) -> bool:
    """Whether worker processes may be forked from this process now: on Linux, for trials on the CPU (a
    child cannot use CUDA once its parent has touched it), with CUDA not initialised here, and with no
    Python thread but this one (a thread could hold a lock, of stdout or of logging, that its copy in the
    child never releases).  The native thread pools torch and numpy keep are idle between calls and are not copied;
    each worker sets one torch thread, as PyTorch's own forked ``DataLoader`` workers do.  Elsewhere (macOS
    frameworks are not fork-safe) and with other threads alive (a notebook's kernel, a progress display)
    the workers come from a ``forkserver``."""
    torch = sys.modules.get("torch")
    return (
        cpu_trials
        and sys.platform.startswith("linux")
        and "fork" in multiprocessing.get_all_start_methods()
        and threading.active_count() == 1
        and not (torch is not None and torch.cuda.is_initialized())
    )


def _pool_context(cpu_trials: bool = True) -> Any:
    """Where a pool's workers come from: forked from this process when :func:`fork_is_safe` (they start in
    milliseconds with everything imported), else from the ``forkserver`` (which imports privgraph once)."""
    return multiprocessing.get_context("fork") if fork_is_safe(cpu_trials) else _forkserver()


class _ProcessExecutor:
    """Trials in a pool of ``workers`` local processes, forked from this one when :func:`fork_is_safe`, else
    from a ``forkserver`` that imported privgraph once; :meth:`wait` returns the next to finish."""

    name = "processes"

    def __init__(self, workers: int, cpu_trials: bool = True) -> None:
        ctx = _pool_context(cpu_trials)
        env = {k: os.environ[k] for k in WORKER_ENV if k in os.environ}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.workers = workers
        self.forked = ctx.get_start_method() == "fork"
        self.pool = concurrent.futures.ProcessPoolExecutor(workers, ctx, initializer=_init_worker, initargs=(env,))
        self.futures: dict[concurrent.futures.Future, tuple[Any, tuple, float]] = {}
        if self.forked:  # a fork pool forks every worker at its first task: now, while this is the only thread
            with warnings.catch_warnings():
                # Python >= 3.12 warns of any OS thread; the others here are torch's and numpy's idle native
                # pools (fork_is_safe), which hold no lock the child needs
                warnings.filterwarnings("ignore", r"This process .* is multi-threaded", DeprecationWarning)
                self.pool.submit(os.getpid).result()

    def submit(self, tag: Any, *args: Any) -> None:
        self.futures[self.pool.submit(timed_trial, *args)] = (tag, args, time.perf_counter())

    def wait(self) -> tuple[Any, TrialRecord, float]:
        done, _ = concurrent.futures.wait(self.futures, return_when=concurrent.futures.FIRST_COMPLETED)
        future = next(iter(done))
        tag, args, submitted = self.futures.pop(future)
        try:
            return (tag, *future.result())
        except Exception as err:  # noqa: BLE001 - a worker that died (out of memory, killed)
            return _worker_failed(tag, args, err, time.perf_counter() - submitted)

    def pending(self) -> int:
        return len(self.futures)

    def describe(self) -> str:
        return f"{self.workers} worker processes" + (" (forked)" if self.forked else "")

    def close(self, wait: bool = True) -> None:
        """Shut the pool down; ``wait=False`` (an interrupted sweep) stops the running trials too."""
        if not wait and hasattr(self.pool, "terminate_workers"):  # Python 3.14
            self.pool.terminate_workers()
            return
        if not wait:
            for process in list((getattr(self.pool, "_processes", None) or {}).values()):
                process.terminate()
        self.pool.shutdown(wait=wait, cancel_futures=True)


class _AutoExecutor:
    """Worker processes when they start at no cost, else in this process while the work left is small, then a
    process pool (module docstring).

    When workers can be forked from this process (:func:`fork_is_safe`), they are, at once, and every
    trial goes to them: they start in milliseconds.  Otherwise trials are queued; :meth:`wait` runs the next
    queued one here, timed, until the queue's estimated time (mean trial time so far × trials queued)
    exceeds ``min_seconds`` with at least two trials queued: then the queue, and every later trial, goes to
    ``workers`` processes from the ``forkserver`` (started now, so its imports overlap the first trial)."""

    name = "auto"

    def __init__(
        self, workers: int, min_seconds: float | None = None, trials: int | None = None, cpu_trials: bool = True
    ) -> None:
        self.workers = workers
        self.min_seconds = POOL_MIN_SECONDS if min_seconds is None else min_seconds
        self.queue: list[tuple[Any, tuple]] = []
        self.pool: _ProcessExecutor | None = None
        self.local_trials, self.local_seconds = 0, 0.0
        self.cpu_trials = cpu_trials
        if workers >= 2 and fork_is_safe(cpu_trials):
            self.pool = _ProcessExecutor(min(workers, trials or workers), cpu_trials)
            return
        _forkserver()
        multiprocessing.forkserver.ensure_running()  # its imports overlap the first trial here (another core)

    def submit(self, tag: Any, *args: Any) -> None:
        if self.pool is not None:
            self.pool.submit(tag, *args)
        else:
            self.queue.append((tag, args))

    def wait(self) -> tuple[Any, TrialRecord, float]:
        if self.pool is None and self.queue:
            tag, args = self.queue.pop(0)
            record, seconds = timed_trial(*args)
            self.local_trials += 1
            self.local_seconds += seconds
            estimate = self.local_seconds / self.local_trials * len(self.queue)
            if self.workers >= 2 and len(self.queue) >= 2 and estimate > self.min_seconds:
                self.pool = _ProcessExecutor(min(self.workers, len(self.queue)), self.cpu_trials)
                for queued in self.queue:
                    self.pool.submit(queued[0], *queued[1])
                self.queue = []
            return tag, record, seconds
        assert self.pool is not None
        return self.pool.wait()

    def pending(self) -> int:
        return len(self.queue) + (self.pool.pending() if self.pool is not None else 0)

    def describe(self) -> str:
        here = f"{self.local_trials} in this process"
        if self.pool is not None and not self.local_trials:
            return self.pool.describe()
        if self.pool is None:
            return f"{here} (the work was small: no worker started)"
        return f"{here}, then {self.pool.describe()}"

    def close(self, wait: bool = True) -> None:
        if self.pool is not None:
            self.pool.close(wait)


def ray_task_options(gpus_per_trial: float = 0.0) -> dict[str, Any]:
    """What one trial asks Ray for: one CPU, ``gpus_per_trial`` GPUs (a fraction shares a GPU), and up to
    :data:`RAY_TRIAL_RETRIES` retries when its worker is lost (a killed process, a machine that left): a trial is
    a function of its setting and seed, so a retry stores the record the lost one would have; an exception
    inside the trial is not retried (it is stored as the trial's error)."""
    return {"num_cpus": 1, "num_gpus": gpus_per_trial, "max_retries": RAY_TRIAL_RETRIES}


RAY_TRIAL_RETRIES = 2


class _RayExecutor:
    """Trials as Ray tasks (one CPU and ``gpus_per_trial`` GPUs each); :meth:`wait` returns the next one to
    finish."""

    def __init__(
        self,
        workers: int | None,
        address: str | None,
        gpus_per_trial: float = 0.0,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        ray, self.started = start_ray(workers, address, notify)
        self.ray = ray
        if gpus_per_trial > 0 and not address:  # a cluster may add GPU nodes later; a local one never does
            gpus = ray.cluster_resources().get("GPU", 0)
            if gpus < gpus_per_trial:
                self.close()
                raise ValueError(f"a trial asks for {gpus_per_trial:g} GPU(s), but the local Ray cluster has {gpus:g}")
        self.remote = ray.remote(**ray_task_options(gpus_per_trial))(timed_trial)
        self.refs: dict[Any, tuple[Any, tuple, float]] = {}
        self.address = address

    def submit(self, tag: Any, *args: Any) -> None:
        self.refs[self.remote.remote(*args)] = (tag, args, time.perf_counter())

    def wait(self) -> tuple[Any, TrialRecord, float]:
        (ref,), _ = self.ray.wait(list(self.refs), num_returns=1)
        tag, args, submitted = self.refs.pop(ref)
        try:
            return (tag, *self.ray.get(ref))
        except Exception as err:  # noqa: BLE001 - a worker that died (out of memory, killed)
            return _worker_failed(tag, args, err, time.perf_counter() - submitted)

    def pending(self) -> int:
        return len(self.refs)

    def describe(self) -> str:
        return f"the Ray cluster at {self.address}" if self.address else "a local Ray cluster"

    def close(self, wait: bool = True) -> None:
        if self.started:
            self.ray.shutdown()


def _worker_failed(tag: Any, args: tuple, err: BaseException, seconds: float) -> tuple[Any, TrialRecord, float]:
    """What :meth:`wait` returns for a trial whose worker died (out of memory, killed): its error record."""
    setting, trial, _, run_id = args[:4]
    return tag, error_record(setting, trial, run_id, f"the worker failed: {err!r}", seconds), seconds


def make_executor(
    name: str,
    workers: int | None,
    address: str | None,
    trials: int,
    gpus_per_trial: float = 0.0,
    notify: Callable[[str], None] | None = None,
    cpu_trials: bool = True,
) -> Executor:
    """The executor ``name`` stands for (:func:`~privgraph.experiments.sweep.sweep`'s ``executor``) for
    ``trials`` trials (``cpu_trials``: all of them run on the CPU, so a pool's workers may be forked)."""
    parallel = workers if workers is not None else (os.cpu_count() or 1)
    if address or name == "ray":
        return _RayExecutor(workers, address, gpus_per_trial, notify)
    if name == "local" or parallel <= 1 or trials <= 1:
        return _LocalExecutor()
    if name == "processes":
        return _ProcessExecutor(min(parallel, trials), cpu_trials)
    return _AutoExecutor(parallel, trials=trials, cpu_trials=cpu_trials)
