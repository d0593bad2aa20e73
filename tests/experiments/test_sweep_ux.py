"""Sweeps that say what they do: the grid's data checked before anything starts (one line,
exit 2), Ray's start-up failure in one line with the fix, a line per trial with its real elapsed time and a
progress line every interval when piped, each trial stored when it ends, and Ctrl-C then the same command
resuming with nothing lost or duplicated."""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from privgraph import network
from privgraph.data import registry
from privgraph.experiments import Grid, ResultsStore

sweeps = importlib.import_module("privgraph.experiments.sweep")  # the module (the attribute is the function)
executors = importlib.import_module("privgraph.experiments.executors")
REPO = Path(__file__).resolve().parents[2]


class FakeRay:
    """Ray as the sweep calls it, whose start fails with ``error`` (or records that it was started)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error, self.started = error, False

    def is_initialized(self) -> bool:
        return False

    def shutdown(self) -> None:
        pass

    def init(self, **kwargs: object) -> None:
        self.started = True
        if self.error is not None:
            raise self.error


def stand_in(monkeypatch, db: Path, seconds: float = 0.0, interrupt_at: int | None = None) -> list[int]:
    """Trials that take ``seconds`` each and succeed (Ctrl-C at call ``interrupt_at``); the list it returns gets,
    at the start of each trial, the number of rows the store holds then."""
    seen: list[int] = []

    def trial(setting, t, tuned, run_id, threads=1):
        seen.append(sum(1 for _ in ResultsStore(db).records()) if db.exists() else 0)
        if interrupt_at is not None and len(seen) == interrupt_at:
            raise KeyboardInterrupt
        time.sleep(seconds)
        return dataclasses.replace(sweeps.error_record(setting, t, run_id, ""), status="ok", error=None)

    monkeypatch.setattr(executors, "execute_trial", trial)  # what every executor runs
    return seen


# ------------------------------------------------------------------------------------ data checked first
@pytest.fixture
def no_data(tmp_path, monkeypatch):
    """An empty data folder and cache, and no network (what a machine without internet sees)."""
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("PRIVGRAPH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("PRIVGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(network, "unreachable", lambda url, timeout: "no network")
    return tmp_path / "data"


def test_a_missing_dataset_is_one_line_and_exit_2_before_ray_or_any_trial(
    tiny_grid, tmp_path, no_data, monkeypatch, invoke
):
    grid = tmp_path / "grid.toml"
    grid.write_text(tiny_grid.replace('datasets = ["sbm"]', 'datasets = ["cora", "sbm"]'))
    ray = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", ray)
    seen = stand_in(monkeypatch, tmp_path / "s.jsonl")
    probes: list[tuple[str, bool, int]] = []  # (url, Ray started?, trials run) at each question to the network

    def probe(url, timeout):
        probes.append((url, ray.started, len(seen)))
        return "no network"

    monkeypatch.setattr(network, "unreachable", probe)
    code, out, _ = invoke("sweep", grid, "--executor", "ray", "--workers", "2", "--db", tmp_path / "s.jsonl", raw=True)
    text = " ".join(out.split())
    assert code == 2 and text.startswith("error: grid tiny: dataset cora:") and text.count("error:") == 1, text
    # (the line may wrap where $COLUMNS sets a width, as under pytest-xdist: the path is compared without spaces)
    assert f"notunder{no_data / 'Cora' / 'raw'}" in "".join(out.split())
    assert "cannot be downloaded here (no network)" in text
    assert "Cora/raw/ind.cora.*" in text and "sbm" not in text.split("error:")[1]  # the synthetic graph is built in
    assert "Traceback" not in out and not ray.started and seen == [] and not (tmp_path / "s.jsonl").exists()
    # the refusal came from one question to the network, asked before Ray or any trial (not from a download)
    assert [(started, trials) for _, started, trials in probes] == [(False, 0)], probes
    # the same grid runs once the raw files are there, or downloadable, or when every cora trial is stored
    Grid.load(grid).check_data([s for s in Grid.load(grid).settings if s.dataset == "sbm"])
    monkeypatch.setattr(network, "unreachable", lambda url, timeout: None)
    Grid.load(grid).check_data()
    monkeypatch.setattr(network, "unreachable", lambda url, timeout: "no network")
    (no_data / "Cora" / "raw").mkdir(parents=True)
    with pytest.raises(ValueError, match="dataset cora"):
        Grid.load(grid).check_data()  # a folder without the files is not enough
    for name in ("x", "y", "graph"):
        (no_data / "Cora" / "raw" / f"ind.cora.{name}").write_text("")
    Grid.load(grid).check_data()
    assert registry.get_dataset("cora").available() is True


def test_availability_checks(no_data, monkeypatch):
    german = registry.get_dataset("german")
    assert "it is not downloadable" in german.unavailable()  # read from files only: no network asked
    monkeypatch.delenv("PRIVGRAPH_DATA")
    assert "$PRIVGRAPH_DATA is not set" in registry.get_dataset("cora").unavailable()
    assert registry.get_dataset("sbm").unavailable() is None
    # files downloaded before (PyG's copy in the cache) count
    raw = Path(os.environ["PRIVGRAPH_CACHE"]) / "datasets" / "CiteSeer" / "raw"
    raw.mkdir(parents=True)
    (raw / "ind.citeseer.x").write_text("")
    assert registry.get_dataset("citeseer").unavailable() is None
    assert registry.get_dataset("dblp-hetedp").download == registry.get_dataset("dblp-magnn").download  # inherited


def test_a_host_that_does_not_answer_is_reported_within_the_timeout(monkeypatch):
    assert "nowhere.invalid" in network.unreachable("https://nowhere.invalid/data", 2.0)  # never resolves
    asked, release, gave_up = [], threading.Event(), threading.Event()

    def dropped(address, timeout):  # a firewall that drops the packets: no answer until the test lets go
        asked.append((address, timeout))
        release.wait(60)
        gave_up.set()
        raise TimeoutError("timed out")

    monkeypatch.setattr("socket.create_connection", dropped)
    try:
        assert network.unreachable("https://example.org", 0.2) == "example.org did not answer in 0.2 s"
        # the answer came while the connection was still pending: the timeout, not the connection, ended it
        assert not gave_up.is_set() and asked == [(("example.org", 443), 0.2)]
    finally:
        release.set()


# ------------------------------------------------------------------------------------ Ray's start-up
@pytest.mark.parametrize(
    "args, needle",
    [
        (["--executor", "ray", "--workers", "2"], "Ray did not start a local cluster (RuntimeError: The current node"),
        (["--address", "10.0.0.1:6379"], "Ray could not join the cluster at 10.0.0.1:6379 (ConnectionError:"),
    ],
)
def test_ray_failing_to_start_is_one_line_with_the_fix(tiny_grid, tmp_path, monkeypatch, args, needle, invoke):
    grid = tmp_path / "grid.toml"
    grid.write_text(tiny_grid)
    kind = ConnectionError if "--address" in args else RuntimeError
    ray = FakeRay(kind("The current node timed out during startup.\n" + "  File ray/_private/node.py\n" * 70))
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setattr(network, "unreachable", lambda url, timeout: None)  # the head answers, then Ray fails
    code, out, err = invoke("sweep", grid, *args, "--db", tmp_path / "s.jsonl", raw=True)
    errors = " ".join(out.split()).split("error: ")
    assert code == 1 and isinstance(err, SystemExit) and ray.started and len(errors) == 2, out
    assert needle in errors[1] and "Traceback" not in out and "node.py" not in out, out
    assert ("--executor processes" in errors[1]) != ("--address" in args) and "ray start --head" in errors[1]
    if "--address" in args:  # a head that does not answer: said at once, Ray not even imported
        ray = FakeRay()
        monkeypatch.setitem(sys.modules, "ray", ray)
        monkeypatch.setattr(network, "unreachable", lambda url, timeout: f"{url}: Connection refused")
        code, out, _ = invoke("sweep", grid, *args, "--db", tmp_path / "s.jsonl", raw=True)
        text = " ".join(out.split())
        assert code == 1 and not ray.started and "(ConnectionError: tcp://10.0.0.1:6379: Connection refused)" in text


# ------------------------------------------------------------------------------------ what a sweep shows
def test_each_trial_is_stored_and_shown_when_it_ends_with_its_time_and_a_line_every_interval(
    tiny_grid, tmp_path, monkeypatch, invoke
):
    grid, db = tmp_path / "grid.toml", tmp_path / "s.jsonl"
    grid.write_text(tiny_grid.replace("epsilons = [1, 4]", "epsilons = [1]"))  # 2 trials
    seen = stand_in(monkeypatch, db, seconds=0.6)
    code, out, _ = invoke("sweep", grid, "--executor", "local", "--db", db, "--progress-every", "0.1", raw=True)
    assert code == 0, out
    assert seen == [0, 1]  # trial 1 started with trial 0 stored
    times = [float(x) for x in re.findall(r"RR on sbm ε=1 trial \d: done in ([\d.]+)s", out)]
    assert len(times) == 2 and all(0.6 <= x < 3 for x in times), out  # the trial's own time, not 0.0s
    waiting = re.findall(r"sweep tiny: 0/2 \(0%\), ([\d.]+)s elapsed", out)
    assert len(waiting) >= 4, out  # a line every 0.1 s while trial 0 runs (without a heartbeat: one)
    assert [float(x) for x in waiting] == sorted(float(x) for x in waiting) and float(waiting[-1]) >= 0.4
    lines = out.splitlines()
    first_done = next(i for i, line in enumerate(lines) if "trial 0: done" in line)
    assert "1/2" in lines[first_done + 1], out  # the trial's line, then the count it makes


def test_ctrl_c_then_the_same_command_resumes_with_nothing_lost_or_duplicated_in_process(
    tiny_grid, tmp_path, monkeypatch, invoke
):
    grid, db = tmp_path / "grid.toml", tmp_path / "s.jsonl"
    grid.write_text(tiny_grid)  # 4 trials
    stand_in(monkeypatch, db, interrupt_at=3)
    code, out, _ = invoke("sweep", grid, "--executor", "local", "--db", db, raw=True)
    line = "interrupted: 2 of 4 trials stored (2 by this run); run the same command to resume"
    assert code == 130 and line in out.splitlines(), out
    assert "Traceback" not in out and "error:" not in out
    stand_in(monkeypatch, db)
    code, out, _ = invoke("sweep", grid, "--executor", "local", "--db", db, raw=True)
    assert code == 0 and "2 trials ran, 2 were stored already" in " ".join(out.split()), out
    keys = Counter((r.config_hash, r.trial) for r in ResultsStore(db).records(errors=True))
    assert len(keys) == 4 and set(keys.values()) == {1}


def test_sigint_stops_a_sweep_and_the_same_command_resumes(tiny_grid, tmp_path, invoke):
    """Ctrl-C as a terminal sends it: SIGINT to the sweep's process group (the driver and any workers).  In this
    process by default (fast); ``PRIVGRAPH_TEST_SIGINT_EXECUTOR=processes`` runs it with worker processes.  The
    driver is held after its first stored trial (``held_sweep.py``) and the signal is sent then: synchronised on
    that event, not on the machine's speed (four fast trials could otherwise end before the signal)."""
    grid, db, flag = tmp_path / "grid.toml", tmp_path / "s.jsonl", tmp_path / "first-trial-stored"
    grid.write_text(tiny_grid)  # 4 trials
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PRIVGRAPH_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, str(Path(__file__).with_name("held_sweep.py")), str(flag)]
    command += ["sweep", str(grid), "--db", str(db)]
    command += ["--executor", os.environ.get("PRIVGRAPH_TEST_SIGINT_EXECUTOR", "local")]
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 240
    while not flag.exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "no trial stored"
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    rows = ResultsStore(db).records(errors=True)
    stored = Counter((r.config_hash, r.trial) for r in rows)
    assert proc.returncode == 130, (out, err)
    n = len(stored)
    assert err.strip().splitlines()[-1] == (
        f"interrupted: {n} of 4 trials stored ({n} by this run); run the same command to resume"
    ), err
    assert "Traceback" not in err and len(stored) == 1 and set(stored.values()) == {1}, err
    code, output, _ = invoke(*command[3:], raw=True)  # the same command
    assert code == 0 and f"{4 - len(stored)} trials ran, {len(stored)} were stored already" in " ".join(
        output.split()
    ), output
    final = Counter((r.config_hash, r.trial) for r in ResultsStore(db).records(errors=True))
    assert len(final) == 4 and set(final.values()) == {1} and all(r.ok for r in ResultsStore(db).records(errors=True))


def test_a_sigkilled_sweep_driver_leaves_no_worker_running(tmp_path):
    """SIGKILL cannot be caught, so the driver cannot stop its pool: each worker asks the kernel to kill it when
    its parent dies (``executors.exit_with_parent``).  A driver with two forked workers in a long task is
    SIGKILLed; both workers must be gone within seconds."""
    pids = tmp_path / "workers"
    driver = (
        "import os, sys, time\n"
        "from privgraph.experiments import executors\n"
        "ex = executors._ProcessExecutor(2)\n"
        "futures = [ex.pool.submit(time.sleep, 600) for _ in range(2)]\n"
        "time.sleep(0.5)\n"
        "open(sys.argv[1], 'w').write(' '.join(str(p) for p in ex.pool._processes))\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-c", driver, str(pids)], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not pids.exists() or not pids.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, "the driver never started its workers"
            time.sleep(0.05)
        workers = [int(p) for p in pids.read_text().split()]
        assert len(workers) == 2
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        alive = workers
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [p for p in workers if _running(p)]
        assert not alive, f"workers {alive} outlived their SIGKILLed driver"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """``pid`` exists and is not a zombie (an exited child not yet reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"
