"""The progress callback the long-running trainers and experiments accept,
and a console display for it that also works when stderr is piped."""

from __future__ import annotations

import inspect
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

# (task name, steps done, total steps); a hook may also take a keyword ``status`` (a short text shown beside the
# counts, e.g. "loss 0.532"): :func:`report` passes it to the hooks that declare it, and only to them.  A task is
# complete when done == total; one that ends before its total (training stopped early) reports (task, done, done)
ProgressHook = Callable[[str, int, int], None]

PREFIX = "[privgraph]"


def format_duration(seconds: float) -> str:
    """``12.4s``, ``2m05s``, ``1h02m``: short enough for a one-line update."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    seconds = int(round(seconds))
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` accepts the keyword argument ``name`` (declared, or through ``**kwargs``)."""
    if isinstance(function, ConsoleProgress):
        return name == "status"
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return any(
        (p.name == name and p.kind is not inspect.Parameter.POSITIONAL_ONLY) or p.kind is inspect.Parameter.VAR_KEYWORD
        for p in parameters
    )


def report(progress: ProgressHook | None, task: str, done: int, total: int, status: str | None = None) -> None:
    """``progress(task, done, total)``, with ``status=status`` where the hook takes it (:func:`takes_keyword`),
    so a three-argument hook keeps working; nothing when ``progress`` is None.  ``status`` must say nothing
    un-noised about the private data (a loss on a release is post-processing; one on the private graph is not)."""
    if progress is None:
        return
    if status is not None and takes_keyword(progress, "status"):
        progress(task, done, total, status=status)  # type: ignore[call-arg]
    else:
        progress(task, done, total)


def counts_only(progress: ProgressHook | None) -> ProgressHook | None:
    """``progress`` without its ``status``: for work on the private data itself (training on the true graph, an
    attack's shadow models), whose loss is not a number to show."""
    if progress is None:
        return None
    hook = progress

    def counts(task: str, done: int, total: int) -> None:
        hook(task, done, total)

    return counts


class Stages:
    """A run of named stages shown as one task: :meth:`start` reports ``(task, i, len(stages))`` with stage i's
    name (and a detail) as ``status``; :meth:`finish` reports ``(task, n, n)``.  ``progress=None``: nothing."""

    def __init__(self, progress: ProgressHook | None, task: str, stages: tuple[str, ...]):
        self.progress, self.task, self.stages = progress, task, stages

    def start(self, stage: str, detail: str | None = None) -> None:
        status = stage if detail is None else f"{stage} ({detail})"
        report(self.progress, self.task, self.stages.index(stage), len(self.stages), status)

    def finish(self) -> None:
        report(self.progress, self.task, len(self.stages), len(self.stages))


@dataclass
class _TaskState:
    start: float
    last_print: float
    done: int = 0
    total: int = 0
    completed: bool = False  # the completion line of the current run was printed
    status: str | None = None
    planned: int = 0  # the total announced before a run ended early (done == total < planned), else 0


class ConsoleProgress:
    """A :data:`ProgressHook` that shows progress on ``stream``.

    * On a terminal (``stream.isatty()``, or ``tty=True``): a transient rich
      display, one bar per task name with ``M/N``, elapsed time and ETA.
    * Otherwise (piped to a file or a log): one line per update, e.g.
      ``[privgraph] lpgnn on cora: 3/10 (30%), 12.4s elapsed, ETA 29s`` (then the
      update's ``status``, e.g. ``, loss 0.532``, if it has one) -- the
      first call of each task, then at most one line per ``interval`` seconds
      per task, and always the completion line (``done == total``); each line
      is flushed.  With ``heartbeat``, a task not complete yet gets its line
      again every ``interval`` seconds even without an update (a background
      thread; for a task that is long between updates, like a sweep's trials).

    :meth:`note` prints a line of its own (above the bar on a terminal).

    Use it as a context manager (the rich display is stopped on exit); it can
    also be called without one (the display starts on the first update, and
    :meth:`close` stops it).  ``clock`` (seconds, monotonic) can be injected
    for tests.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        interval: float = 10.0,
        clock: Callable[[], float] | None = None,
        tty: bool | None = None,
        prefix: str = PREFIX,
        heartbeat: bool = False,
    ):
        self.stream = sys.stderr if stream is None else stream
        self.interval = float(interval)
        self.heartbeat = heartbeat
        self._lock = threading.Lock()  # the heartbeat thread writes too
        self._stop = threading.Event()
        self._beating: threading.Thread | None = None
        self.clock = clock or time.monotonic
        self.prefix = prefix
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            try:
                tty = bool(isatty()) if isatty is not None else False
            except (ValueError, OSError):  # closed stream
                tty = False
        self.tty = tty
        self._tasks: dict[str, _TaskState] = {}
        self._rich: Any = None  # rich.progress.Progress, started lazily
        self._rich_tasks: dict[str, tuple[Any, int]] = {}  # task name -> (rich task id, done)

    # context manager -------------------------------------------------
    def __enter__(self) -> ConsoleProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the rich display, or the heartbeat in piped mode."""
        self._stop.set()
        if self._beating is not None:
            self._beating.join()
            self._beating = None
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
            self._rich_tasks.clear()

    # the hook --------------------------------------------------------
    def __call__(self, task: str, done: int, total: int, status: str | None = None) -> None:
        if self.tty:
            self._update_rich(task, done, total, status)
            return
        with self._lock:
            self._update_lines(task, done, total, status)
        if self.heartbeat and self._beating is None and not self._stop.is_set():
            self._beating = threading.Thread(target=self._beat, name="progress-heartbeat", daemon=True)
            self._beating.start()

    def note(self, text: str) -> None:
        """``text`` on a line of its own: above the bar on a terminal, between the progress lines when piped."""
        with self._lock:
            if self._rich is not None:
                self._rich.console.print(text, markup=False, highlight=False)
            else:
                self.stream.write(f"{self.prefix} {text}\n")
                self.stream.flush()

    def _beat(self) -> None:
        """The heartbeat thread (piped mode): :meth:`beat` until :meth:`close`."""
        while not self._stop.wait(self.beat()):
            pass

    def beat(self) -> float:
        """One heartbeat: each task not complete whose last line is ``interval`` seconds old or more gets its line
        again; returns the seconds until the next line is due (at least 0.01)."""
        with self._lock:
            now = self.clock()
            due = now + self.interval
            for task, state in self._tasks.items():
                if state.completed:
                    continue
                if now - state.last_print >= self.interval:
                    self._write(task, state, now)
                due = min(due, state.last_print + self.interval)
            return max(due - now, 0.01)

    def _update_rich(self, task: str, done: int, total: int, status: str | None = None) -> None:
        if self._rich is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            console = Console(file=self.stream, force_terminal=True)
            self._rich = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[status]}"),
                console=console,
                transient=True,
            )
            self._rich.start()
        progress = self._rich
        text = status or ""
        if task not in self._rich_tasks:
            self._rich_tasks[task] = (progress.add_task(task, total=total, completed=done, status=text), done)
            return
        task_id, previous = self._rich_tasks[task]
        if done < previous:  # the task started over (e.g. the next trial's training)
            progress.reset(task_id, total=total, completed=done, status=text)
        else:
            progress.update(task_id, completed=done, total=total, status=text)
        self._rich_tasks[task] = (task_id, done)

    def _update_lines(self, task: str, done: int, total: int, status: str | None = None) -> None:
        now = self.clock()
        state = self._tasks.get(task)
        first = state is None
        if state is None:
            state = self._tasks[task] = _TaskState(start=now, last_print=now)
        elif done < state.done or (state.completed and done < total):
            state.start = now  # started over: time this run afresh
            state.completed, state.planned = False, 0
        if not first and not state.completed and 0 < total < state.total and done >= total:
            state.planned = state.total  # ended before its total: shown as "done/planned (stopped early)"
        state.done, state.total, state.status = done, total, status
        complete = total > 0 and done >= total
        if complete:
            if state.completed:
                return  # the completion line of this run is out already
            state.completed = True
        elif not first and now - state.last_print < self.interval:
            return
        self._write(task, state, now)

    def _write(self, task: str, state: _TaskState, now: float) -> None:
        state.last_print = now
        line = self.line(task, state.done, state.total, now - state.start, state.status, planned=state.planned)
        self.stream.write(line + "\n")
        self.stream.flush()

    def line(
        self, task: str, done: int, total: int, elapsed: float, status: str | None = None, *, planned: int = 0
    ) -> str:
        """One update: ``[privgraph] TASK: M/N (P%), Xs elapsed, ETA Ys[, STATUS]``; a run that ended before the
        ``planned`` total: ``M/PLANNED (stopped early), Xs elapsed, done[, STATUS]``."""
        text = f"{self.prefix} {task}: {done}/{max(total, planned)}"
        if planned > total and done >= total:
            text += " (stopped early)"
        elif total > 0:
            text += f" ({100 * done / total:.0f}%)"
        text += f", {format_duration(elapsed)} elapsed"
        if total > 0 and done >= total:
            text += ", done"
        elif 0 < done < total and elapsed > 0:
            text += f", ETA {format_duration(elapsed / done * (total - done))}"
        if status:
            text += f", {status}"
        return text


def console_progress(
    stream: IO[str] | None = None,
    interval: float = 10.0,
    clock: Callable[[], float] | None = None,
    tty: bool | None = None,
    heartbeat: bool = False,
) -> ConsoleProgress:
    """A :class:`ConsoleProgress` on ``stream`` (default: ``sys.stderr`` at call time),
    to use as ``with console_progress() as progress: run(..., progress)``."""
    return ConsoleProgress(stream, interval=interval, clock=clock, tty=tty, heartbeat=heartbeat)
