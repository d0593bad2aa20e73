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

``workers=0`` runs the trials in this process, one after another, with the
same per-trial code and thread count (for debugging; the tests compare both).
"""

from __future__ import annotations

import os
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privgraph.experiments.grid import Grid, GridSetting
from privgraph.experiments.pipeline import Experiment, TunedSetting
from privgraph.experiments.store import DEFAULT_DB, ERROR, ResultsStore, TrialRecord
from privgraph.progress import ProgressHook
from privgraph.version import __version__

# environment the workers need (the driver's values are passed to every worker)
WORKER_ENV = ("PRIVGRAPH_DATA", "PRIVGRAPH_CACHE")
OBJECT_STORE_BYTES = 256 * 2**20  # a local cluster's object store: records are small


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
        }


class _LocalExecutor:
    """Runs each submitted trial at once, in this process."""

    def __init__(self) -> None:
        self._done: list[tuple[Any, TrialRecord]] = []

    def submit(self, tag: Any, *args: Any) -> None:
        self._done.append((tag, execute_trial(*args)))

    def wait(self) -> tuple[Any, TrialRecord]:
        return self._done.pop(0)

    def pending(self) -> int:
        return len(self._done)

    def close(self) -> None:
        pass


class _RayExecutor:
    """Trials as Ray tasks (one CPU each); :meth:`wait` returns the next one to finish."""

    def __init__(self, workers: int | None, address: str | None) -> None:
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
        self.remote = ray.remote(num_cpus=1, max_retries=0)(execute_trial)
        self.refs: dict[Any, Any] = {}

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
) -> SweepSummary:
    """Run every trial of ``grid`` that ``db`` does not hold (module docstring).

    Args:
        grid: a :class:`~privgraph.experiments.grid.Grid` or the path of a grid file.
        db: the JSON-lines store (created if missing); only this process writes it.
        workers: CPUs of the local Ray cluster (default: all); ``0`` runs in this process.
        address: an existing Ray cluster to join (``ray start --head`` prints it), instead of a local one.
        retry_errors: run again the trials stored with an error (their error rows are replaced).
        progress: called as ``progress(name, done, total)`` after every trial.
        on_error: called with every failed trial's record.

    Returns:
        A :class:`SweepSummary`.
    """
    if isinstance(grid, (str, Path)):
        grid = Grid.load(grid)
    if workers is not None and workers < 0:
        raise ValueError("workers must be >= 0")
    if workers == 0 and address:
        raise ValueError("workers=0 runs in this process: it cannot join a cluster")
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
    executor: Any = _LocalExecutor() if workers == 0 else _RayExecutor(workers, address)
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
            executor.submit((s.key, t), s, t, tuned.get(s.key), run_id)
        done = summary.skipped + summary.failed
        progress(label, done, total)
        while executor.pending():
            (key, t), record = executor.wait()
            _finish(store, summary, on_error, record)
            if t == 0 and key in waiting:
                rest = waiting.pop(key)
                s = by_key[key]
                if record.ok:
                    for u in rest:
                        executor.submit((key, u), s, u, TunedSetting.from_record(record), run_id)
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
        executor.close()
        summary.seconds = time.perf_counter() - start
    return summary


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


__all__ = ["SweepSummary", "error_record", "execute_trial", "sweep"]
