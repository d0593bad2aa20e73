"""``--device`` and ``sweep --gpus-per-trial``: a misspelt device is refused before torch is
imported (tests/test_catalogue.py's ERRORS), a device missing here is one line with exit 2 before any work,
the device reaches the spec, the API, the audit and every trial of a sweep without changing a setting's
configuration hash, and a trial asks Ray for its GPUs."""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
import types

import pytest
import torch

from privgraph.experiments import Grid, ResultsStore, config_hash

# the module (privgraph.experiments.sweep, the attribute, is the function)
sweeps = importlib.import_module("privgraph.experiments.sweep")
executors = importlib.import_module("privgraph.experiments.executors")  # where the trials run

FAST = ["--set", "epochs=5", "--set", "patience=5"]


@pytest.fixture
def grid_file(tmp_path, tiny_grid):
    path = tmp_path / "grid.toml"
    path.write_text(tiny_grid)
    return path


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_a_device_missing_here_is_one_line_exit_2_and_nothing_written(tmp_path, grid_file, invoke):
    db, out, demo = tmp_path / "r.jsonl", tmp_path / "o.pt", tmp_path / "demo"
    cases = [
        (["run", "lpgnn", "--device", "cuda", "--db", db, *FAST], "device 'cuda'"),
        (["attack", "link-stealing", "--method", "lpgnn", "--device", "cuda:1", "--db", db], "device 'cuda:1'"),
        (["release", "rr", "--epsilon", "1", "-o", out, "--device", "cuda"], "device 'cuda'"),
        (["audit", "rr", "--epsilon", "1", "--samples", "8", "--device", "CUDA"], "device 'cuda'"),
        (["demo", "--out", demo, "--device", "cuda"], "device 'cuda'"),
        (["sweep", grid_file, "--executor", "local", "--device", "cuda", "--db", db], "device 'cuda'"),
        (["sweep", grid_file, "--gpus-per-trial", "1", "--db", db], "device 'cuda'"),  # refused before Ray starts
    ]
    for args, needle in cases:
        code, text, exc = invoke(*args)
        assert code == 2 and isinstance(exc, SystemExit), (args, code, text, exc)
        assert text.startswith("error:") and text.count("error:") == 1 and "Traceback" not in text, (args, text)
        assert needle in text and "sees no CUDA GPU" in text, (args, text)
    # $PRIVGRAPH_DEVICE is the default: a missing device is named with where it came from, a misspelt one too
    code, text, _ = invoke("run", "lpgnn", "--db", db, *FAST, env={"PRIVGRAPH_DEVICE": "cuda"})
    assert code == 2 and "device 'cuda' (from $PRIVGRAPH_DEVICE)" in text and text.count("error:") == 1, text
    code, text, _ = invoke("run", "lpgnn", "--db", db, *FAST, env={"PRIVGRAPH_DEVICE": "gpu"})
    assert code == 2 and "$PRIVGRAPH_DEVICE: unknown device 'gpu'" in text, text
    assert not db.exists() and not out.exists() and not demo.exists()


def test_run_on_the_cpu_records_the_device(tmp_path, invoke):
    db = tmp_path / "r.jsonl"
    code, text, _ = invoke("run", "lpgnn", "--trials", "1", "--device", "cpu", "--db", db, *FAST)
    assert code == 0, text
    (record,) = ResultsStore(db).records()
    assert record.config["device"].startswith("cpu"), record.config["device"]


def test_the_device_reaches_the_spec_the_release_and_the_audit(tmp_path, monkeypatch, invoke):
    """What each command hands on (the work itself replaced by a stand-in that reports what it was given)."""
    import privgraph.audit
    import privgraph.cli.run
    import privgraph.experiments
    import privgraph.experiments.release

    specs = []
    monkeypatch.setattr(privgraph.cli.run, "_run_and_print", lambda spec, db, format: specs.append(spec))

    def refuse(what):
        def stand_in(*args, device=None, **kwargs):  # audit_method(data, method, device=) or release(data, request)
            raise ValueError(f"{what} on {device if device is not None else args[-1].device}")

        return stand_in

    monkeypatch.setattr(privgraph.experiments.release, "release", refuse("released"))
    monkeypatch.setattr(privgraph.audit, "audit_method", refuse("audited"))
    monkeypatch.setattr(privgraph.experiments, "run_experiment", lambda spec, *a: specs.append(spec) or 1 / 0)
    db = tmp_path / "r.jsonl"
    assert invoke("run", "lpgnn", "--device", "CPU", "--db", db)[0] == 0
    assert invoke("attack", "link-stealing", "--method", "lpgnn", "--device", "cpu", "--db", db)[0] == 0
    assert invoke("run", "lpgnn", "--db", db)[0] == 0  # no --device: None, $PRIVGRAPH_DEVICE's or the CPU later
    assert [s.device for s in specs] == ["cpu", "cpu", None]
    specs.clear()
    assert isinstance(invoke("demo", "--out", tmp_path / "demo", "--device", "cpu")[2], ZeroDivisionError)
    assert [s.device for s in specs] == ["cpu"]
    code, text, _ = invoke("release", "rr", "--epsilon", "1", "-o", tmp_path / "o.pt", "--device", "cpu")
    assert code == 2 and text == "error: released on cpu", text
    code, text, _ = invoke("audit", "rr", "--epsilon", "1", "--device", "cpu")
    assert code == 2 and text == "error: audited on cpu", text


def test_a_sweeps_device_reaches_every_trial_and_keeps_the_configuration_hash(tmp_path, grid_file, monkeypatch, invoke):
    seen = []

    def stand_in(setting, trial, tuned, run_id, threads=1):
        seen.append((setting.key, trial, setting.spec.device))
        return sweeps.error_record(setting, trial, run_id, "not run")

    monkeypatch.setattr(executors, "execute_trial", stand_in)
    grid = Grid.load(grid_file)
    keys = [s.key for s in grid.settings]
    assert keys == [config_hash(dataclasses.replace(s.spec, device="cuda:3"), s.epsilon) for s in grid.settings]
    code, text, _ = invoke("sweep", grid_file, "--executor", "local", "--device", "cpu", "--db", tmp_path / "s.jsonl")
    assert code == 1 and "4 failed" in text, text  # the stand-in's error records
    assert sorted(seen) == sorted((k, t, "cpu") for k in keys for t in range(2))
    stored = {(r.config_hash, r.trial) for r in ResultsStore(tmp_path / "s.jsonl").records(errors=True)}
    assert stored == {(k, t) for k in keys for t in range(2)}  # the same settings as on any other device


class FakeRay:
    """Ray's API as the sweep uses it: records what a trial task asks for and what it is given, runs nothing."""

    def __init__(self, gpus: float) -> None:
        self.gpus, self.options, self.init_args, self.shut = gpus, None, None, False
        self.results: list = []
        self.submitted: list = []

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs) -> None:
        self.init_args = kwargs

    def cluster_resources(self) -> dict:
        return {"CPU": 2.0, "GPU": self.gpus}

    def remote(self, **options):
        self.options = options
        return lambda fn: types.SimpleNamespace(remote=self._submit)

    def _submit(self, setting, trial, tuned, run_id, *rest):
        self.submitted.append((setting.key, trial, setting.spec.device))
        self.results.append((sweeps.error_record(setting, trial, run_id, "not run"), 0.0))  # timed_trial's result
        return len(self.results) - 1

    def wait(self, refs, num_returns=1):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        return self.results[ref]

    def shutdown(self) -> None:
        self.shut = True


def test_a_trial_asks_ray_for_its_gpus_and_runs_on_cuda(tmp_path, grid_file, monkeypatch):
    fake = FakeRay(gpus=1.0)
    monkeypatch.setitem(sys.modules, "ray", fake)
    keys = [s.key for s in Grid.load(grid_file).settings]
    summary = sweeps.sweep(grid_file, tmp_path / "s.jsonl", workers=2, gpus_per_trial=0.5)  # auto: Ray
    assert fake.options == {"num_cpus": 1, "num_gpus": 0.5, "max_retries": 2}  # a lost worker's trial reruns
    assert sweeps.ray_task_options(0.0)["num_gpus"] == 0
    assert summary.executor == "a local Ray cluster" and fake.shut and summary.failed == 4
    assert sorted(fake.submitted) == sorted((k, t, "cuda") for k in keys for t in range(2))  # hashes unchanged
    # a local cluster without the GPUs a trial asks for is refused (Ray would wait for them for ever)
    monkeypatch.setitem(sys.modules, "ray", FakeRay(gpus=0.0))
    with pytest.raises(ValueError, match="a trial asks for 1 GPU\\(s\\), but the local Ray cluster has 0"):
        sweeps.sweep(grid_file, tmp_path / "t.jsonl", workers=2, gpus_per_trial=1)


def test_gpus_per_trial_runs_on_ray_and_cuda_only(tiny_grid, tmp_path, grid_file, monkeypatch, invoke):
    grid = Grid.load(grid_file)
    monkeypatch.delenv("PRIVGRAPH_DEVICE", raising=False)
    assert sweeps.placement(grid, "auto", None, None, None, 0.5) == ("ray", "cuda")
    assert sweeps.placement(grid, "ray", 2, None, "cuda", 2) == ("ray", "cuda")
    assert sweeps.placement(grid, "processes", 2, None, "CUDA", 0) == ("processes", "cuda")
    assert sweeps.placement(grid, "ray", 2, None, "cpu", 0) == ("ray", "cpu")
    refused = [
        (("local", None, None, None, 1.0), "use the ray executor (ray or auto), not executor='local'"),
        (("processes", None, None, None, 1.0), "not executor='processes'"),
        (("auto", 0, None, None, 1.0), "not workers=0"),
        (("auto", None, None, "cpu", 1.0), "the device is cuda, not 'cpu'"),
        (("auto", None, None, "cuda:1", 1.0), "the device is cuda, not 'cuda:1'"),
        (("auto", None, None, None, 1.5), "a fraction of a GPU (0 to 1) or a whole number"),
        (("auto", None, None, None, -1.0), "a fraction of a GPU"),
        (("ray", None, None, "cuda", 0.0), "device 'cuda' on Ray needs gpus_per_trial > 0"),
        (("auto", None, "head:6379", "cuda:0", 0.0), "device 'cuda:0' on Ray needs gpus_per_trial > 0"),
    ]
    for args, message in refused:
        with pytest.raises(ValueError, match=re.escape(message)):
            sweeps.placement(grid, *args)
    # a device from the grid file or $PRIVGRAPH_DEVICE (what the workers read) is checked too
    on_gpu = tmp_path / "on_gpu.toml"
    on_gpu.write_text(tiny_grid.replace("trials = 2", 'trials = 2\ndevice = "cuda"'))
    assert {s.spec.device for s in Grid.load(on_gpu).settings} == {"cuda"}
    with pytest.raises(ValueError, match="device 'cuda' on Ray"):
        sweeps.placement(Grid.load(on_gpu), "ray")
    monkeypatch.setenv("PRIVGRAPH_DEVICE", "mps")
    with pytest.raises(ValueError, match="device 'mps' on Ray"):
        sweeps.placement(grid, "ray")
    monkeypatch.delenv("PRIVGRAPH_DEVICE")
    # the command line: one line, exit 2, nothing stored
    db = tmp_path / "s.jsonl"
    for args, needle in [
        (["--executor", "local", "--gpus-per-trial", "1"], "use the ray executor"),
        (["--workers", "0", "--gpus-per-trial", "0.5"], "not workers=0"),
        (["--executor", "ray", "--device", "cuda"], "needs gpus_per_trial > 0"),
        (["--gpus-per-trial", "1", "--device", "cuda:0"], "the device is cuda, not 'cuda:0'"),
    ]:
        code, text, _ = invoke("sweep", grid_file, "--db", db, *args)
        assert code == 2 and text.startswith("error:") and text.count("error:") == 1 and needle in text, text
    code, text, _ = invoke("sweep", grid_file, "--db", db, "--gpus-per-trial", "-1")
    assert code == 2 and "--gpus-per-trial" in text, text
    on_gpu.write_text(tiny_grid.replace("trials = 2", 'trials = 2\ndevice = "gpu"'))
    with pytest.raises(ValueError, match="RR on sbm: unknown device 'gpu'"):  # a grid file's device: its spelling
        Grid.load(on_gpu).validate()
    assert not db.exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_run_and_a_sweep_on_cuda_record_the_gpu(tmp_path, grid_file, invoke):
    db = tmp_path / "r.jsonl"
    code, text, _ = invoke("run", "lpgnn", "--device", "cuda", "--trials", "1", "--db", db, "--format", "json", *FAST)
    assert code == 0, text
    (record,) = ResultsStore(db).records()
    assert "cuda:" in record.config["device"], record.config["device"]
    pytest.importorskip("ray")  # the sweep's part needs Ray (the sweep extra)
    summary = sweeps.sweep(grid_file, tmp_path / "s.jsonl", workers=2, gpus_per_trial=0.5)
    assert summary.failed == 0 and summary.ran == 4, summary.errors
    devices = {r.config["device"] for r in ResultsStore(tmp_path / "s.jsonl").records()}
    assert all("cuda:0" in d for d in devices), devices  # Ray's CUDA_VISIBLE_DEVICES: each task's GPU is cuda:0
