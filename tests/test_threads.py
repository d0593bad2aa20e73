"""A fair share of a busy machine: the thread count from the CPUs the process may use, settable, sleeping."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from privgraph.cli import app
from privgraph.threads import THREADS_ENV, cgroup_cpu_limit, check_threads, set_threads, thread_count, usable_cpus

ENV_VARS = (THREADS_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")


@pytest.fixture
def clean_env(monkeypatch):
    """The thread variables restored after the test (set_threads writes them), torch's pool too."""
    for var in (*ENV_VARS, "OMP_WAIT_POLICY"):
        monkeypatch.setenv(var, "1")
        monkeypatch.delenv(var)
    before = torch.get_num_threads()
    yield monkeypatch
    torch.set_num_threads(before)


def test_cgroup_v2_and_v1_quotas(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_limit(v2) == 1.5
    (v2 / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_limit(v2) is None
    v1 = tmp_path / "v1" / "cpu"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("50000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_limit(tmp_path / "v1") == 0.5
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_limit(tmp_path / "v1") is None
    assert cgroup_cpu_limit(tmp_path / "none") is None


def test_usable_cpus_is_the_affinity_capped_by_the_quota(tmp_path):
    affinity = len(os.sched_getaffinity(0))
    assert usable_cpus(tmp_path) == affinity  # no quota here
    (tmp_path / "cpu.max").write_text("50000 100000\n")  # half a CPU: one thread, not zero
    assert usable_cpus(tmp_path) == 1
    (tmp_path / "cpu.max").write_text(f"{100000 * (affinity + 3)} 100000\n")  # a quota above the affinity
    assert usable_cpus(tmp_path) == affinity


def test_thread_count_precedence_and_bad_values(clean_env):
    assert thread_count() == usable_cpus()
    clean_env.setenv("OMP_NUM_THREADS", "3")
    assert thread_count() == 3
    clean_env.setenv(THREADS_ENV, "2")
    assert thread_count() == 2 and thread_count(5) == 5
    clean_env.setenv(THREADS_ENV, "two")
    with pytest.raises(ValueError, match=r"\$PRIVGRAPH_THREADS takes a whole number"):
        thread_count()
    for bad in (0, -1, "1.5"):
        with pytest.raises(ValueError, match="whole number"):
            check_threads(bad)


def test_set_threads_sizes_the_pools_and_lets_waiting_threads_sleep(clean_env):
    assert set_threads(1) == 1
    assert torch.get_num_threads() == 1
    assert all(os.environ[v] == "1" for v in ENV_VARS[1:]) and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    clean_env.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the caller's policy stands
    set_threads(2)
    assert torch.get_num_threads() == 2 and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_cli_threads_option(clean_env):
    res = CliRunner().invoke(app, ["--threads", "0", "datasets"])
    assert res.exit_code == 2 and "--threads takes a whole number" in res.output
    res = CliRunner().invoke(app, ["--threads", "1", "datasets"])
    assert res.exit_code == 0 and torch.get_num_threads() == 1 and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


def test_the_command_line_sets_the_environment_before_torch_loads(tmp_path):
    """In a fresh interpreter: after the callback, torch is first imported with the pool size and policy set."""
    code = (
        "import sys, privgraph.cli as c; sys.argv = ['privgraph', '--threads', '1', 'datasets'];\n"
        "try: c.main()\nexcept SystemExit: pass\n"
        "import os, torch; print(torch.get_num_threads(), os.environ['OMP_WAIT_POLICY'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in (*ENV_VARS, "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split()[-2:] == ["1", "PASSIVE"]  # torch alone would take every core


def test_import_privgraph_chooses_the_threads_from_the_usable_cpus(tmp_path):
    """The Python API as robust as the command line: ``import privgraph`` before torch sets the
    thread count from the CPUs the process may use (here ``$PRIVGRAPH_THREADS``, the override) and lets
    OpenMP's waiting threads sleep; torch, loaded after, takes them.  A variable the caller set is kept."""
    code = (
        "import os, privgraph, torch; "
        "print(torch.get_num_threads(), os.environ['OMP_WAIT_POLICY'], os.environ['MKL_NUM_THREADS'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")}
    env.update(PRIVGRAPH_THREADS="1", PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "PASSIVE", "1"]
    env.update(MKL_NUM_THREADS="3", OMP_WAIT_POLICY="ACTIVE")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split()[1:] == ["ACTIVE", "3"]
