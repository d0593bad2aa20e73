"""Sweeps: a grid's trials as Ray tasks, resumable, one writer of the store.

``privgraph sweep GRID.toml`` / :func:`sweep`:

* the grid (:mod:`privgraph.experiments.grid`) expands into settings (one ε of
  one spec) and trials; every trial runs :meth:`Experiment.run_trial
  <privgraph.experiments.pipeline.Experiment.run_trial>`, the loop ``privgraph
  run`` uses, as one Ray task with one torch thread;
* by default Ray starts a local cluster of ``workers`` CPUs; ``address`` joins
  an existing cluster (``ray start --head`` on one machine, ``ray start
  --address …`` on the others), and the same grid runs on all its machines;
* workers send their :class:`~privgraph.experiments.store.TrialRecord` back;
  only the driver appends them to the JSON-lines store, one line per trial;
* resuming: a trial whose (configuration hash, trial index) is stored is
  skipped (``retry_errors`` runs the failed ones again);
* before any trial or worker starts, the grid and the data of the trials to run are checked
  (:meth:`Grid.check_data <privgraph.experiments.grid.Grid.check_data>`: a missing dataset is a
  ``ValueError`` at once, not a failure per trial after Ray's start);
* each trial is stored as soon as it ends (``on_trial`` sees it then, with the seconds it took where it
  ran); Ctrl-C stops the workers and raises :class:`SweepInterrupted` with the trials that ended stored;
* Ray that does not start (or an ``address`` that does not answer) is a ``RuntimeError`` of one line that
  says what to do instead;
* a trial that raises is stored with its traceback and the sweep goes on;
* a tuned setting chooses on trial 0 (as ``privgraph run`` does); its other
  trials start when trial 0 is in, with the choice trial 0 recorded, so a
  resumed sweep never chooses again.  The cost of the choice is in every
  guarantee of the setting (``docs/privacy.md``).

``workers=0`` (or ``executor="local"``) runs every trial in this process, one
after another.  Without Ray (``executor="auto"`` or ``"processes"``), the worker
processes are forked from this one when that is safe (:func:`fork_is_safe`:
Linux, trials on the CPU, no other Python thread), before the progress display starts a thread;
else they come from a ``forkserver`` that imports privgraph once.

Devices: ``device`` (``privgraph sweep --device``) runs every trial there (it is
not part of a setting's identity: the stored trials stay the same settings).
``gpus_per_trial`` (``--gpus-per-trial F``) asks Ray for ``num_gpus=F`` per trial
task, so a grid spreads over the GPUs of a machine or a cluster: Ray schedules
at most ``1/F`` trials a GPU and sets ``CUDA_VISIBLE_DEVICES`` in each task, so
the trials run on ``cuda`` (the default device then).  It needs Ray (``auto``
picks Ray); the local executors refuse it, and Ray refuses a GPU device without
it (Ray hides the GPUs from tasks that ask for none).  Every executor runs the same per-trial code with the same
thread count and seed, so the store holds the same records whichever ran them
(the tests compare all of them, record by record).
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
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from privgraph.device import DEVICE_ENV, parse_device
from privgraph.experiments.grid import Grid, GridSetting
from privgraph.experiments.pipeline import Experiment, TunedSetting
from privgraph.experiments.store import DEFAULT_DB, ERROR, ResultsStore, TrialRecord
from privgraph.progress import ProgressHook
from privgraph.version import __version__

# environment the workers need (the driver's values are passed to every worker)
WORKER_ENV = ("PRIVGRAPH_DATA", "PRIVGRAPH_CACHE", DEVICE_ENV)
OBJECT_STORE_BYTES = 256 * 2**20  # a local cluster's object store: records are small
EXECUTORS = ("auto", "local", "processes", "ray")
RAY_CONNECT_SECONDS = 5.0  # how long --address's head may take to accept a connection before the sweep gives up
# ``auto`` starts worker processes only when the trials left would take longer than this in this process
# (the estimate: the mean time of the trials run here so far); a pool's start-up is a second or two a worker
POOL_MIN_SECONDS = 10.0


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
        epsilon_y=spec.epsilon_y,
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


@dataclass
class SweepSummary:
    """What a sweep did: trials run, skipped (already stored) and failed, and the time it took."""

    grid: str
    total: int
    skipped: int
    ran: int = 0
    failed: int = 0
    seconds: float = 0.0
    workers: int = 0
    errors: list[str] = field(default_factory=list)  # "label on dataset ε=…, trial t: last line"
    executor: str = ""  # where the trials ran ("in this process", "2 worker processes", …)

    def to_dict(self) -> dict[str, Any]:
        return {
            "grid": self.grid,
            "total": self.total,
            "skipped": self.skipped,
            "ran": self.ran,
            "failed": self.failed,
            "seconds": self.seconds,
            "workers": self.workers,
            "errors": self.errors,
            "executor": self.executor,
        }


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


def _init_worker(env: dict[str, str]) -> None:
    """A pool worker: the driver's data settings and one thread per worker (no oversubscription)."""
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
    """What one trial asks Ray for: one CPU, ``gpus_per_trial`` GPUs (a fraction shares a GPU), no retry."""
    return {"num_cpus": 1, "num_gpus": gpus_per_trial, "max_retries": 0}


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
        if address and address != "auto" and "://" not in address:  # Ray retries an absent head for minutes
            from privgraph.network import unreachable

            failure = unreachable(f"tcp://{address}", RAY_CONNECT_SECONDS)
            if failure is not None:
                raise RuntimeError(ray_start_failure(ConnectionError(failure), address))
        try:
            import ray
        except ImportError:  # pragma: no cover - ray is a dependency
            raise RuntimeError(
                "the ray executor needs Ray: pip install 'privgraph[sweep]' (or --executor processes)"
            ) from None
        self.ray = ray
        env = {k: os.environ[k] for k in WORKER_ENV if k in os.environ}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.started = not ray.is_initialized()
        if self.started:
            kwargs: dict[str, Any] = {
                "runtime_env": {"env_vars": env},
                "include_dashboard": False,
                "logging_level": "ERROR",
                "log_to_driver": False,
            }
            if address:
                (notify or _quiet)(f"joining the Ray cluster at {address}")
                where = {"address": address}
            else:
                cpus = workers or os.cpu_count()
                (notify or _quiet)(
                    f"starting a local Ray cluster of {cpus} CPUs (a minute or more on a busy machine; "
                    "--executor processes starts in seconds)"
                )
                where = {"num_cpus": cpus, "object_store_memory": OBJECT_STORE_BYTES}
            try:
                ray.init(**where, **kwargs)
            except Exception as err:  # noqa: BLE001 - Ray raises many kinds; the user gets one line and the fix
                try:
                    ray.shutdown()  # what part of a local cluster started
                except Exception:  # noqa: BLE001, S110 - the start's reason is the one to report
                    pass
                raise RuntimeError(ray_start_failure(err, address)) from None
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


def ray_start_failure(err: BaseException, address: str | None) -> str:
    """The one line a sweep prints when Ray does not start (or join ``address``): Ray's reason and the fix."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    reason = f"{type(err).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    if address:
        return (
            f"Ray could not join the cluster at {address} ({reason}): check that `ray start --head` runs there "
            "(`ray status --address ADDRESS`), or drop --address to run on this machine"
        )
    return (
        f"Ray did not start a local cluster ({reason}): run on this machine without Ray with --executor processes "
        "(or auto), or start Ray first (`ray start --head`) and pass its address with --address"
    )


def _worker_failed(tag: Any, args: tuple, err: BaseException, seconds: float) -> tuple[Any, TrialRecord, float]:
    """What :meth:`wait` returns for a trial whose worker died (out of memory, killed): its error record."""
    setting, trial, _, run_id = args[:4]
    return tag, error_record(setting, trial, run_id, f"the worker failed: {err!r}", seconds), seconds


def _quiet(line: str) -> None:
    """A ``notify`` that says nothing."""


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a sweep: every trial that ended is stored, the running ones are not (the same
    call resumes); ``summary`` is what it did until then."""

    def __init__(self, summary: SweepSummary) -> None:
        super().__init__(f"interrupted: {summary.skipped + summary.ran + summary.failed} trials stored")
        self.summary = summary


def sweep(
    grid: Grid | str | Path,
    db: str | Path = DEFAULT_DB,
    workers: int | None = None,
    address: str | None = None,
    retry_errors: bool = False,
    progress: ProgressHook | None = None,
    on_error: Callable[[TrialRecord], None] | None = None,
    executor: str = "auto",
    device: str | None = None,
    gpus_per_trial: float = 0.0,
    on_trial: Callable[[GridSetting, TrialRecord, float], None] | None = None,
    notify: Callable[[str], None] | None = None,
    check_data: bool = True,
) -> SweepSummary:
    """Run every trial of ``grid`` that ``db`` does not hold (module docstring).

    Before any trial or worker starts, the grid is checked (methods, parameters, devices) and so are the
    datasets of the trials to run (:meth:`Grid.check_data <privgraph.experiments.grid.Grid.check_data>`):
    ``ValueError`` says what is wrong.  Each trial's record is stored as soon as it ends.

    Args:
        grid: a :class:`~privgraph.experiments.grid.Grid` or the path of a grid file.
        db: the JSON-lines store (created if missing); only this process writes it.
        workers: trials at a time (default: all CPUs); ``0`` or ``1`` runs them in this process.
        address: an existing Ray cluster to join (``ray start --head`` prints it); implies ``executor="ray"``.
        retry_errors: run again the trials stored with an error (their error rows are replaced).
        progress: called as ``progress(name, done, total)`` before the first trial and after every trial.
        on_error: called with every failed trial's record.
        executor: ``auto`` (in this process while the work left is small, then ``workers`` local
            processes; Ray with ``address``), ``local`` (this process), ``processes`` (a local
            process pool from the start) or ``ray`` (a local Ray cluster, or ``address``'s).
        device: where every trial runs (``cpu``, ``cuda``, ``cuda:N``, ``mps``; default: each setting's own,
            else ``$PRIVGRAPH_DEVICE``, else the CPU; with ``gpus_per_trial``: ``cuda``).
        gpus_per_trial: GPUs Ray gives each trial (e.g. 1, or 0.5 for two trials a GPU): Ray only
            (:func:`placement`).
        on_trial: called with every trial that ran, once it is stored (before ``progress``): its setting, its
            record and the seconds it took where it ran (loading the data, a tuned setting's choice and the
            trial; :func:`timed_trial`).
        notify: called with one line before a slow start (a local Ray cluster).
        check_data: check that the datasets can be read here first (a cluster's machines may hold data that
            this one does not: ``False`` skips the check).

    Returns:
        The sweep's :class:`SweepSummary`.

    Raises:
        SweepInterrupted: on Ctrl-C, once the workers are stopped (the trials that ended are stored).
    """
    if isinstance(grid, (str, Path)):
        grid = Grid.load(grid)
    if workers is not None and workers < 0:
        raise ValueError("workers must be >= 0")
    if workers == 0 and address:
        raise ValueError("workers=0 runs in this process: it cannot join a cluster")
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if address and executor not in ("auto", "ray"):
        raise ValueError(f"address joins a Ray cluster: executor={executor!r} cannot")
    if workers == 0 and executor in ("processes", "ray"):
        raise ValueError(f"workers=0 runs in this process: executor={executor!r} needs workers")
    executor, device = placement(grid, executor, workers, address, device, gpus_per_trial)
    if device is not None:  # not hashed: every setting keeps its key, so a stored trial is skipped on any device
        grid = replace(grid, settings=[replace(s, spec=replace(s.spec, device=device)) for s in grid.settings])
    grid.validate()
    store = ResultsStore(db) if Path(db).exists() else None  # a sweep refused before it starts creates no file
    if store is not None:
        store.check_writable()
    stored = store.stored(errors=not retry_errors) if store is not None else set()
    settings = grid.unique_settings()
    todo = [(s, t) for s in settings for t in range(s.trials) if (s.key, t) not in stored]
    if check_data:
        grid.check_data({s.key: s for s, _ in todo}.values())
    store = store or ResultsStore(db)
    if retry_errors:
        store.delete_errors({(s.key, t) for s, t in todo})
    total = sum(s.trials for s in settings)
    summary = SweepSummary(
        grid.name, total, total - len(todo), workers=workers if workers is not None else (os.cpu_count() or 1)
    )
    progress = progress or (lambda name, done, total: None)
    label = f"sweep {grid.name}"
    if not todo:
        progress(label, summary.skipped, total)
        return summary

    run_id = uuid.uuid4().hex[:12]
    tuned: dict[str, TunedSetting | None] = {}
    waiting: dict[str, list[int]] = {}  # tuned settings whose trial 0 is running: their other trials
    by_key = {s.key: s for s in settings}
    for s in {s.key: s for s, _ in todo}.values():
        if s.spec.tune:
            first = next(iter(store.records(config_hash=s.key, trial=0)), None)
            tuned[s.key] = TunedSetting.from_record(first) if first is not None else None
    choosing = {s.key for s, t in todo if t == 0 and s.spec.tune}  # tuned settings whose trial 0 runs now

    def finish(record: TrialRecord, ran: GridSetting | None = None, seconds: float = 0.0) -> None:
        _finish(store, summary, on_error, record)
        if ran is not None and on_trial is not None:
            on_trial(ran, record, seconds)
        progress(label, summary.skipped + summary.ran + summary.failed, total)

    def not_chosen(s: GridSetting, t: int) -> TrialRecord:
        return error_record(s, t, run_id, "trial 0 of this tuned setting, which makes the choice, failed")

    start = time.perf_counter()
    runner: Any = None
    try:
        if executor in ("auto", "processes") and not address:  # fork the workers before a display starts a thread
            runner = _executor(executor, workers, address, len(todo), gpus_per_trial, notify, not accelerators(grid))
        progress(label, summary.skipped, total)  # before any trial: the clock of the progress display
        if runner is None:
            runner = _executor(executor, workers, address, len(todo), gpus_per_trial, notify)
        for s, t in todo:
            if s.spec.tune and tuned.get(s.key) is None and t > 0:
                if s.key in choosing:
                    waiting.setdefault(s.key, []).append(t)
                else:
                    finish(not_chosen(s, t))
                continue
            runner.submit((s.key, t), s, t, tuned.get(s.key), run_id)
        while runner.pending():
            (key, t), record, seconds = runner.wait()
            finish(record, by_key[key], seconds)  # stored now: an interrupted sweep keeps every trial that ended
            if t == 0 and key in waiting:
                rest = waiting.pop(key)
                s = by_key[key]
                for u in rest:
                    if record.ok:
                        runner.submit((key, u), s, u, TunedSetting.from_record(record), run_id)
                    else:
                        finish(not_chosen(s, u))
    except KeyboardInterrupt:
        if runner is not None:
            runner.close(wait=False)  # the running trials stop; they run again when the sweep resumes
            runner = None
        raise SweepInterrupted(summary) from None
    finally:
        if runner is not None:
            runner.close()
            summary.executor = runner.describe()
        summary.seconds = time.perf_counter() - start
    return summary


def placement(
    grid: Grid,
    executor: str = "auto",
    workers: int | None = None,
    address: str | None = None,
    device: str | None = None,
    gpus_per_trial: float = 0.0,
) -> tuple[str, str | None]:
    """The executor and the device the trials of ``grid`` run with (:func:`sweep`'s arguments): with
    ``gpus_per_trial`` > 0, Ray (``auto`` becomes ``ray``; ``local``, ``processes`` and ``workers=0`` are
    refused) and ``cuda`` (Ray gives each task its GPUs as ``CUDA_VISIBLE_DEVICES``: ``cuda:N`` or another
    device is refused); on Ray without GPUs, a trial's device (``device``, else its setting's, else
    ``$PRIVGRAPH_DEVICE``) must be the CPU.  ``ValueError`` says what to change; no torch is imported."""
    if not (0 <= gpus_per_trial < float("inf")) or (gpus_per_trial > 1 and gpus_per_trial != int(gpus_per_trial)):
        raise ValueError(f"gpus_per_trial takes a fraction of a GPU (0 to 1) or a whole number, got {gpus_per_trial:g}")
    if device is not None:
        device = parse_device(device)
    if gpus_per_trial > 0:
        if executor in ("local", "processes") or workers == 0:
            where = f"executor={executor!r}" if executor != "auto" else "workers=0"
            raise ValueError(
                f"gpus_per_trial={gpus_per_trial:g} asks Ray for GPUs: use the ray executor (ray or auto), not {where}"
            )
        if device not in (None, "cuda"):
            raise ValueError(
                f"gpus_per_trial gives each trial its GPU on Ray (CUDA_VISIBLE_DEVICES): the device is cuda, "
                f"not {device!r}"
            )
        return "ray", "cuda"
    if address or executor == "ray":
        gpu = accelerators(grid, device)
        if gpu:
            raise ValueError(
                f"device {gpu[0]!r} on Ray needs gpus_per_trial > 0 (e.g. 1, or 0.5 for two trials a GPU): "
                "Ray hides the GPUs from a trial that asks for none"
            )
    return executor, device


def accelerators(grid: Grid, device: str | None = None) -> list[str]:
    """The devices other than the CPU that the trials of ``grid`` run on: ``device``, else each setting's,
    else ``$PRIVGRAPH_DEVICE`` (checked without torch)."""
    default = os.environ.get(DEVICE_ENV)
    wanted = {device} if device is not None else {s.spec.device or default for s in grid.settings}
    return sorted(d for d in wanted if d and parse_device(d) != "cpu")


def _executor(
    name: str,
    workers: int | None,
    address: str | None,
    trials: int,
    gpus_per_trial: float = 0.0,
    notify: Callable[[str], None] | None = None,
    cpu_trials: bool = True,
) -> Any:
    """The executor ``name`` stands for (:func:`sweep`'s ``executor``) for ``trials`` trials (``cpu_trials``:
    all of them run on the CPU, so a pool's workers may be forked)."""
    parallel = workers if workers is not None else (os.cpu_count() or 1)
    if address or name == "ray":
        return _RayExecutor(workers, address, gpus_per_trial, notify)
    if name == "local" or parallel <= 1 or trials <= 1:
        return _LocalExecutor()
    if name == "processes":
        return _ProcessExecutor(min(parallel, trials), cpu_trials)
    return _AutoExecutor(parallel, trials=trials, cpu_trials=cpu_trials)


def _finish(
    store: ResultsStore, summary: SweepSummary, on_error: Callable[[TrialRecord], None] | None, record: TrialRecord
) -> None:
    store.add(record)
    if record.ok:
        summary.ran += 1
        return
    summary.failed += 1
    last = (record.error or "").strip().splitlines()[-1:] or [""]
    summary.errors.append(
        f"{record.config.get('label', record.method)} on {record.dataset} "
        f"ε={record.epsilon}, trial {record.trial}: {last[0]}"
    )
    if on_error is not None:
        on_error(record)


__all__ = [
    "EXECUTORS",
    "POOL_MIN_SECONDS",
    "SweepInterrupted",
    "SweepSummary",
    "error_record",
    "execute_trial",
    "fork_is_safe",
    "placement",
    "ray_start_failure",
    "ray_task_options",
    "sweep",
    "timed_trial",
]
