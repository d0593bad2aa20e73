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
* a trial that raises is stored with its traceback and the sweep goes on;
* a tuned setting chooses on trial 0 (as ``privgraph run`` does); its other
  trials start when trial 0 is in, with the choice trial 0 recorded, so a
  resumed sweep never chooses again.  The cost of the choice is in every
  guarantee of the setting (``docs/privacy.md``).

``workers=0`` (or ``executor="local"``) runs every trial in this process, one
after another.

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
import time
import traceback
import uuid
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
    """Runs each submitted trial at once, in this process."""

    name = "local"

    def __init__(self) -> None:
        self._done: list[tuple[Any, TrialRecord]] = []

    def submit(self, tag: Any, *args: Any) -> None:
        self._done.append((tag, execute_trial(*args)))

    def wait(self) -> tuple[Any, TrialRecord]:
        return self._done.pop(0)

    def pending(self) -> int:
        return len(self._done)

    def describe(self) -> str:
        return "in this process"

    def close(self) -> None:
        pass


def _init_worker(env: dict[str, str]) -> None:
    """A pool worker: the driver's data settings and one thread per worker (no oversubscription)."""
    os.environ.update(env)
    import torch

    torch.set_num_threads(1)


def _forkserver() -> Any:
    """The ``forkserver`` context, its server importing this module (torch, PyG, privgraph) once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


class _ProcessExecutor:
    """Trials in a pool of ``workers`` local processes (``forkserver``: forked from a server that
    imported privgraph once, never from the driver's threads); :meth:`wait` returns the next to finish."""

    name = "processes"

    def __init__(self, workers: int) -> None:
        ctx = _forkserver()
        env = {k: os.environ[k] for k in WORKER_ENV if k in os.environ}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.workers = workers
        self.pool = concurrent.futures.ProcessPoolExecutor(workers, ctx, initializer=_init_worker, initargs=(env,))
        self.futures: dict[concurrent.futures.Future, tuple[Any, tuple]] = {}

    def submit(self, tag: Any, *args: Any) -> None:
        self.futures[self.pool.submit(execute_trial, *args)] = (tag, args)

    def wait(self) -> tuple[Any, TrialRecord]:
        done, _ = concurrent.futures.wait(self.futures, return_when=concurrent.futures.FIRST_COMPLETED)
        future = next(iter(done))
        tag, args = self.futures.pop(future)
        try:
            return tag, future.result()
        except Exception as err:  # noqa: BLE001 - a worker that died (out of memory, killed)
            setting, trial, _, run_id = args[:4]
            return tag, error_record(setting, trial, run_id, f"the worker failed: {err!r}")

    def pending(self) -> int:
        return len(self.futures)

    def describe(self) -> str:
        return f"{self.workers} worker processes"

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class _AutoExecutor:
    """In this process while the work left is small, then a process pool (module docstring).

    Trials are queued; :meth:`wait` runs the next queued one here, timed, until the queue's
    estimated time (mean trial time so far × trials queued) exceeds ``min_seconds`` with at
    least two trials queued: then the queue, and every later trial, goes to ``workers`` processes."""

    name = "auto"

    def __init__(self, workers: int, min_seconds: float | None = None) -> None:
        self.workers = workers
        self.min_seconds = POOL_MIN_SECONDS if min_seconds is None else min_seconds
        self.queue: list[tuple[Any, tuple]] = []
        self.pool: _ProcessExecutor | None = None
        self.local_trials, self.local_seconds = 0, 0.0
        _forkserver()
        multiprocessing.forkserver.ensure_running()  # its imports overlap the first trial here (another core)

    def submit(self, tag: Any, *args: Any) -> None:
        if self.pool is not None:
            self.pool.submit(tag, *args)
        else:
            self.queue.append((tag, args))

    def wait(self) -> tuple[Any, TrialRecord]:
        if self.pool is None and self.queue:
            tag, args = self.queue.pop(0)
            start = time.perf_counter()
            record = execute_trial(*args)
            self.local_trials += 1
            self.local_seconds += time.perf_counter() - start
            estimate = self.local_seconds / self.local_trials * len(self.queue)
            if self.workers >= 2 and len(self.queue) >= 2 and estimate > self.min_seconds:
                self.pool = _ProcessExecutor(min(self.workers, len(self.queue)))
                for queued in self.queue:
                    self.pool.submit(queued[0], *queued[1])
                self.queue = []
            return tag, record
        assert self.pool is not None
        return self.pool.wait()

    def pending(self) -> int:
        return len(self.queue) + (self.pool.pending() if self.pool is not None else 0)

    def describe(self) -> str:
        here = f"{self.local_trials} in this process"
        if self.pool is None:
            return f"{here} (the work was small: no worker started)"
        return f"{here}, then {self.pool.describe()}"

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def ray_task_options(gpus_per_trial: float = 0.0) -> dict[str, Any]:
    """What one trial asks Ray for: one CPU, ``gpus_per_trial`` GPUs (a fraction shares a GPU), no retry."""
    return {"num_cpus": 1, "num_gpus": gpus_per_trial, "max_retries": 0}


class _RayExecutor:
    """Trials as Ray tasks (one CPU and ``gpus_per_trial`` GPUs each); :meth:`wait` returns the next one to
    finish."""

    def __init__(self, workers: int | None, address: str | None, gpus_per_trial: float = 0.0) -> None:
        try:
            import ray
        except ImportError as err:  # pragma: no cover - ray is a dependency
            raise RuntimeError("sweeps run on Ray: pip install 'privgraph[sweep]'") from err
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
                ray.init(address=address, **kwargs)
            else:
                ray.init(num_cpus=workers or os.cpu_count(), object_store_memory=OBJECT_STORE_BYTES, **kwargs)
        if gpus_per_trial > 0 and not address:  # a cluster may add GPU nodes later; a local one never does
            gpus = ray.cluster_resources().get("GPU", 0)
            if gpus < gpus_per_trial:
                self.close()
                raise ValueError(f"a trial asks for {gpus_per_trial:g} GPU(s), but the local Ray cluster has {gpus:g}")
        self.remote = ray.remote(**ray_task_options(gpus_per_trial))(execute_trial)
        self.refs: dict[Any, Any] = {}
        self.address = address

    def submit(self, tag: Any, *args: Any) -> None:
        self.refs[self.remote.remote(*args)] = (tag, args)

    def wait(self) -> tuple[Any, TrialRecord]:
        (ref,), _ = self.ray.wait(list(self.refs), num_returns=1)
        tag, args = self.refs.pop(ref)
        try:
            return tag, self.ray.get(ref)
        except Exception as err:  # noqa: BLE001 - a worker that died (out of memory, killed)
            setting, trial, _, run_id = args[:4]
            return tag, error_record(setting, trial, run_id, f"the worker failed: {err!r}")

    def pending(self) -> int:
        return len(self.refs)

    def describe(self) -> str:
        return f"the Ray cluster at {self.address}" if self.address else "a local Ray cluster"

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


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
) -> SweepSummary:
    """Run every trial of ``grid`` that ``db`` does not hold (module docstring).

    Args:
        grid: a :class:`~privgraph.experiments.grid.Grid` or the path of a grid file.
        db: the JSON-lines store (created if missing); only this process writes it.
        workers: trials at a time (default: all CPUs); ``0`` or ``1`` runs them in this process.
        address: an existing Ray cluster to join (``ray start --head`` prints it); implies ``executor="ray"``.
        retry_errors: run again the trials stored with an error (their error rows are replaced).
        progress: called as ``progress(name, done, total)`` after every trial.
        on_error: called with every failed trial's record.
        executor: ``auto`` (in this process while the work left is small, then ``workers`` local
            processes; Ray with ``address``), ``local`` (this process), ``processes`` (a local
            process pool from the start) or ``ray`` (a local Ray cluster, or ``address``'s).
        device: where every trial runs (``cpu``, ``cuda``, ``cuda:N``, ``mps``; default: each setting's own,
            else ``$PRIVGRAPH_DEVICE``, else the CPU; with ``gpus_per_trial``: ``cuda``).
        gpus_per_trial: GPUs Ray gives each trial (e.g. 1, or 0.5 for two trials a GPU): Ray only
            (:func:`placement`).

    Returns:
        The sweep's :class:`SweepSummary`.
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
    store = ResultsStore(db)
    store.check_writable()
    stored = store.stored(errors=not retry_errors)
    settings = grid.unique_settings()
    todo = [(s, t) for s in settings for t in range(s.trials) if (s.key, t) not in stored]
    if retry_errors:
        store.delete_errors({(s.key, t) for s, t in todo})
    total = sum(s.trials for s in settings)
    summary = SweepSummary(
        grid.name, total, total - len(todo), workers=workers if workers is not None else (os.cpu_count() or 1)
    )
    progress = progress or (lambda name, done, total: None)
    label = f"sweep {grid.name}"
    if not todo:
        progress(label, total, total)
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
    start = time.perf_counter()
    runner = _executor(executor, workers, address, len(todo), gpus_per_trial)
    try:
        for s, t in todo:
            if s.spec.tune and tuned.get(s.key) is None and t > 0:
                if s.key in choosing:
                    waiting.setdefault(s.key, []).append(t)
                    continue
                _finish(
                    store,
                    summary,
                    on_error,
                    error_record(s, t, run_id, "trial 0 of this tuned setting, which makes the choice, failed"),
                )
                continue
            runner.submit((s.key, t), s, t, tuned.get(s.key), run_id)
        done = summary.skipped + summary.failed
        progress(label, done, total)
        while runner.pending():
            (key, t), record = runner.wait()
            _finish(store, summary, on_error, record)
            if t == 0 and key in waiting:
                rest = waiting.pop(key)
                s = by_key[key]
                if record.ok:
                    for u in rest:
                        runner.submit((key, u), s, u, TunedSetting.from_record(record), run_id)
                else:
                    for u in rest:
                        _finish(
                            store,
                            summary,
                            on_error,
                            error_record(s, u, run_id, "trial 0 of this tuned setting, which makes the choice, failed"),
                        )
            progress(label, summary.skipped + summary.ran + summary.failed, total)
    finally:
        runner.close()
        summary.seconds = time.perf_counter() - start
        summary.executor = runner.describe()
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
        default = os.environ.get(DEVICE_ENV)
        wanted = {device} if device is not None else {s.spec.device or default for s in grid.settings}
        gpu = sorted(d for d in wanted if d and parse_device(d) != "cpu")
        if gpu:
            raise ValueError(
                f"device {gpu[0]!r} on Ray needs gpus_per_trial > 0 (e.g. 1, or 0.5 for two trials a GPU): "
                "Ray hides the GPUs from a trial that asks for none"
            )
    return executor, device


def _executor(name: str, workers: int | None, address: str | None, trials: int, gpus_per_trial: float = 0.0) -> Any:
    """The executor ``name`` stands for (:func:`sweep`'s ``executor``) for ``trials`` trials."""
    parallel = workers if workers is not None else (os.cpu_count() or 1)
    if address or name == "ray":
        return _RayExecutor(workers, address, gpus_per_trial)
    if name == "local" or parallel <= 1 or trials <= 1:
        return _LocalExecutor()
    if name == "processes":
        return _ProcessExecutor(min(parallel, trials))
    return _AutoExecutor(parallel)


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
    "SweepSummary",
    "error_record",
    "execute_trial",
    "placement",
    "ray_task_options",
    "sweep",
]
