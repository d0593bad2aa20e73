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

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from privgraph.device import DEVICE_ENV, parse_device
from privgraph.experiments.executors import (  # sweep's public names, defined with the executors
    EXECUTORS,
    POOL_MIN_SECONDS,
    Executor,
    error_record,
    execute_trial,
    fork_is_safe,
    make_executor,
    ray_task_options,
    timed_trial,
)
from privgraph.experiments.grid import Grid, GridSetting
from privgraph.experiments.pipeline import TunedSetting
from privgraph.experiments.store import DEFAULT_DB, ResultsStore, TrialRecord
from privgraph.progress import ProgressHook
from privgraph.ray_cluster import ray_start_failure


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
    data: Any = None,
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
        data: your own graph (a PyG ``Data``/``HeteroData``) in place of every setting's dataset
            (:meth:`Grid.with_input <privgraph.experiments.grid.Grid.with_input>`), its trials stored under a
            fresh random identity (nothing derived from the graph is stored; a second call runs them again).

    Returns:
        The sweep's :class:`SweepSummary`.

    Raises:
        SweepInterrupted: on Ctrl-C, once the workers are stopped (the trials that ended are stored).
    """
    if isinstance(grid, (str, Path)):
        grid = Grid.load(grid)
    if data is not None:
        from privgraph.experiments.pipeline import new_input_id

        grid = grid.with_input(data, new_input_id())
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
    runner: Executor | None = None
    try:
        if executor in ("auto", "processes") and not address:  # fork the workers before a display starts a thread
            runner = make_executor(
                executor, workers, address, len(todo), gpus_per_trial, notify, not accelerators(grid)
            )
        progress(label, summary.skipped, total)  # before any trial: the clock of the progress display
        if runner is None:
            runner = make_executor(executor, workers, address, len(todo), gpus_per_trial, notify)
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
