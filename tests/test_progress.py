import io
import subprocess
import sys

import pytest

from privgraph.progress import ConsoleProgress, ProgressHook, console_progress, format_duration


class FakeClock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


class TtyStringIO(io.StringIO):
    def isatty(self) -> bool:
        return True


def piped(interval=10.0):
    clock, stream = FakeClock(), io.StringIO()
    return console_progress(stream, interval=interval, clock=clock), clock, stream


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_first_call_printed_with_task_and_counts():
    progress, clock, stream = piped()
    assert not progress.tty
    progress("lpgnn on cora", 0, 10)
    assert lines(stream) == ["[privgraph] lpgnn on cora: 0/10 (0%), 0.0s elapsed"]


def test_lines_rate_limited_by_interval_and_eta():
    progress, clock, stream = piped(interval=10.0)
    progress("lpgnn on cora", 0, 10)
    for done in range(1, 4):  # 3 updates within 9 s: none printed
        clock.advance(3.0)
        progress("lpgnn on cora", done, 10)
    assert len(lines(stream)) == 1
    clock.advance(3.4)  # 12.4 s since the first line
    progress("lpgnn on cora", 4, 10)
    assert lines(stream)[-1] == "[privgraph] lpgnn on cora: 4/10 (40%), 12.4s elapsed, ETA 18.6s"
    clock.advance(1.0)
    progress("lpgnn on cora", 5, 10)
    assert len(lines(stream)) == 2
    clock.advance(10.0)
    progress("lpgnn on cora", 6, 10)
    assert len(lines(stream)) == 3 and "6/10 (60%)" in lines(stream)[-1]


def test_completion_always_printed_once():
    progress, clock, stream = piped(interval=60.0)
    progress("tuning ε=1", 0, 4)
    clock.advance(1.0)
    progress("tuning ε=1", 3, 4)
    clock.advance(1.0)
    progress("tuning ε=1", 4, 4)
    progress("tuning ε=1", 4, 4)  # a repeated completion adds nothing
    assert lines(stream) == [
        "[privgraph] tuning ε=1: 0/4 (0%), 0.0s elapsed",
        "[privgraph] tuning ε=1: 4/4 (100%), 2.0s elapsed, done",
    ]


def test_a_run_stopped_early_shows_its_count_of_the_planned_total():
    progress, clock, stream = piped(interval=60.0)
    progress("training gcn", 1, 300)
    clock.advance(2.0)
    progress("training gcn", 139, 139, status="best epoch 120")  # stopped early: (n, n)
    assert lines(stream)[-1] == (
        "[privgraph] training gcn: 139/300 (stopped early), 2.0s elapsed, done, best epoch 120"
    )
    progress("training gcn", 1, 300)  # the next run starts over, planned to its total again
    clock.advance(1.0)
    progress("training gcn", 300, 300)
    assert lines(stream)[-1] == "[privgraph] training gcn: 300/300 (100%), 1.0s elapsed, done"


def test_tasks_rate_limited_independently():
    progress, clock, stream = piped(interval=10.0)
    progress("outer", 0, 3)
    clock.advance(1.0)
    progress("inner", 0, 100)  # first call of another task: printed
    clock.advance(1.0)
    progress("inner", 50, 100)
    progress("outer", 1, 3)
    out = lines(stream)
    assert len(out) == 2 and "outer: 0/3" in out[0] and "inner: 0/100" in out[1]


def test_restarted_task_is_timed_afresh():
    progress, clock, stream = piped(interval=5.0)
    progress("training", 0, 10)
    clock.advance(20.0)
    progress("training", 10, 10)
    assert lines(stream)[-1].endswith("10/10 (100%), 20.0s elapsed, done")
    progress("training", 0, 10)  # next trial: within the interval, not printed
    clock.advance(6.0)
    progress("training", 3, 10)
    assert lines(stream)[-1] == "[privgraph] training: 3/10 (30%), 6.0s elapsed, ETA 14.0s"
    clock.advance(1.0)
    progress("training", 10, 10)  # its completion is printed again
    assert lines(stream)[-1].endswith("10/10 (100%), 7.0s elapsed, done")


def test_zero_total_does_not_divide():
    progress, clock, stream = piped()
    progress("nothing to do", 0, 0)
    assert lines(stream) == ["[privgraph] nothing to do: 0/0, 0.0s elapsed"]


def test_each_line_flushed():
    class Recorder(io.StringIO):
        flushes = 0

        def flush(self):
            Recorder.flushes += 1
            super().flush()

    stream = Recorder()
    progress = ConsoleProgress(stream, interval=0.0, clock=FakeClock())
    progress("a", 0, 2)
    progress("a", 1, 2)
    assert Recorder.flushes == 2


def test_is_a_progress_hook_and_context_manager():
    progress, clock, stream = piped()
    hook: ProgressHook = progress
    with progress as p:
        assert p is progress
        hook("task", 1, 2)
    assert callable(progress) and "task: 1/2" in stream.getvalue()


@pytest.mark.parametrize("seconds, text", [(0.04, "0.0s"), (12.44, "12.4s"), (125, "2m05s"), (3720, "1h02m")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_default_stream_is_stderr_at_call_time(capsys):
    progress = console_progress(clock=FakeClock())
    progress("task", 0, 1)
    assert "[privgraph] task: 0/1" in capsys.readouterr().err


def test_tty_mode_shows_rich_display_without_crashing():
    stream = TtyStringIO()
    with console_progress(stream) as progress:
        assert progress.tty
        progress("lpgnn on cora", 0, 3)
        progress("training", 5, 10)
        progress("lpgnn on cora", 2, 3)
        progress("training", 0, 10)  # restart
        progress("lpgnn on cora", 3, 3)
    assert progress._rich is None  # stopped on exit
    assert "lpgnn on cora" in stream.getvalue()  # the display was drawn (then cleared: transient)
    assert "[privgraph]" not in stream.getvalue()  # no piped-mode lines


def test_tty_forced_without_context_manager():
    stream = io.StringIO()
    progress = ConsoleProgress(stream, tty=True)
    progress("task", 1, 4)
    assert progress._rich is not None  # the rich display, though the stream is not a terminal
    progress.close()
    assert progress._rich is None and "task" in stream.getvalue()
    progress.close()  # idempotent
    assert progress._rich is None


def test_import_is_light():
    code = "import sys, privgraph.progress; print('rich' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_heartbeat_repeats_an_unfinished_task_until_it_completes_or_closes():
    import time

    stream = io.StringIO()
    progress = console_progress(stream, interval=0.05, heartbeat=True)
    progress("sweep", 0, 2)

    def beats() -> list[str]:
        return [line for line in lines(stream) if line.startswith("[privgraph] sweep: 0/2")]

    deadline = time.monotonic() + 60  # a bound for a stuck heartbeat, not a window: a loaded machine only waits
    while len(beats()) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(beats()) >= 4, lines(stream)  # without an update: the line repeats, once per interval
    progress.note("trial 0: done in 0.4s")
    progress("sweep", 2, 2)
    n = len(lines(stream))
    time.sleep(0.2)
    assert len(lines(stream)) == n and lines(stream)[-2] == "[privgraph] trial 0: done in 0.4s"  # complete: quiet
    progress("other", 0, 1)
    progress.close()
    n = len(lines(stream))
    time.sleep(0.2)
    assert len(lines(stream)) == n  # closed: the heartbeat stopped
    quiet = console_progress(io.StringIO(), interval=0.05)
    quiet("sweep", 0, 2)
    time.sleep(0.2)
    assert len(lines(quiet.stream)) == 1  # no heartbeat unless asked


def test_a_note_on_a_terminal_is_printed_above_the_bar_and_stays():
    stream = TtyStringIO()
    with console_progress(stream, heartbeat=True) as progress:
        progress("sweep", 0, 2)
        progress.note("RR on sbm ε=1 trial 0: done in 17.3s")
        progress("sweep", 1, 2)
    assert "RR on sbm ε=1 trial 0: done in 17.3s" in stream.getvalue()
    assert progress._beating is None  # no heartbeat thread on a terminal (rich redraws the bar itself)
