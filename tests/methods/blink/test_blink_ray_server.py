"""Blink's server in blocks of rows — cut in this process and as Ray tasks — gives the single-process
server's output bit for bit (β, Hard, Hybrid, truncated Soft, the posterior mass)."""

from __future__ import annotations

import importlib.util
import os
import pickle

import numpy as np
import pytest
import torch

from privgraph.mechanisms import make_generator
from privgraph.methods.blink import beta_mle, clip_degrees, hard_graph, hybrid_graph, kernels, link_ldp, shards
from privgraph.methods.blink.server import LOCAL, posterior_norm
from privgraph.methods.blink.soft import soft_graph

ray_missing = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed")

GRAPH = {"num_nodes": 2500, "num_classes": 3, "num_features": 4, "avg_degree": 6.0, "homophily": 0.8, "seed": 0}


class CutRunner:
    """The single-process runner with its rows cut into ``parts`` blocks (run here, in block order);
    ``reports_only``: its tasks get the reports' bits, as Ray's do."""

    def __init__(self, parts: int, reports_only: bool = False):
        self.parts, self.calls, self.reports_only = parts, 0, reports_only

    def share(self, value):
        return value

    def map(self, fn, blocks, *shared):
        out = [fn(*block, *shared) for block in blocks]
        self.calls += len(out)
        return out


@pytest.fixture(scope="module")
def reports():
    from privgraph.data.synthetic import sbm_edges

    n = GRAPH["num_nodes"]  # above the exact sums' blocks (2048 rows for E_i(β), 1024 for ‖P‖): they are cut too
    edges = sbm_edges([n // 3] * 3, 6 * 0.8 / (n / 3), 6 * 0.2 / (2 * n / 3), np.random.default_rng(0))
    return link_ldp(edges, n, 2.0, 0.2, make_generator(1))


def _fit(rep, runner=LOCAL, exact_limit=20_000):
    return beta_mle(clip_degrees(rep.noisy_degrees, rep.num_nodes), tol=1e-4, exact_limit=exact_limit, runner=runner)


def _outputs(rep, runner=LOCAL) -> dict:
    """Every server step through ``runner``: the β-MLE with exact and binned sums E_i(β); Hard (also on a
    wide β, where it keeps many pairs); ‖P‖ and Hybrid with ‖P‖ exact (all pairs) and estimated (the band
    and the prior); truncated Soft."""
    out = {f"mle{limit}": _fit(rep, runner, limit) for limit in (20_000, 1_000)}
    beta = out["mle20000"].beta
    wide = np.random.default_rng(3).normal(-2.0, 1.5, size=rep.num_nodes)
    out["hard"], out["hard_wide"] = hard_graph(rep, beta, runner), hard_graph(rep, wide, runner)
    for limit in (20_000, 0):
        out[f"norm{limit}"] = posterior_norm(rep, beta, limit, runner=runner)
        out[f"hybrid{limit}"] = hybrid_graph(rep, beta, limit, runner=runner)
    out["soft"] = soft_graph(rep, beta, exact_limit=0, runner=runner)
    return out


@pytest.fixture(scope="module")
def reference(reports):
    out = _outputs(reports)
    assert out["hard_wide"].edge_index.shape[1] > 0 and out["hybrid0"].edge_index.shape[1] > 0  # not empty graphs
    return out


def _same_graph(a, b):
    assert torch.equal(a.edge_index, b.edge_index)
    assert (a.edge_weight is None) == (b.edge_weight is None)
    if a.edge_weight is not None:
        assert torch.equal(a.edge_weight, b.edge_weight)
    assert a.visited_pairs == b.visited_pairs
    assert a.threshold == b.threshold


def _check_all(rep, runner, reference):
    """Every server step through ``runner`` equals the single-process one, exactly."""
    got = _outputs(rep, runner)
    for limit in (20_000, 1_000):
        assert np.array_equal(got[f"mle{limit}"].beta, reference[f"mle{limit}"].beta)
        assert got[f"mle{limit}"].iterations == reference[f"mle{limit}"].iterations
    for key in ("hard", "hard_wide", "hybrid20000", "hybrid0"):
        _same_graph(got[key], reference[key])
    assert got["norm20000"] == reference["norm20000"] and got["norm0"] == reference["norm0"]
    _same_graph(got["soft"].graph, reference["soft"].graph)
    assert got["soft"].details == reference["soft"].details


@pytest.mark.parametrize("parts, reports_only", [(7, False), (7, True)])
def test_server_cut_into_blocks_in_this_process_equals_one_block(reports, reference, parts, reports_only):
    runner = CutRunner(parts, reports_only)
    _check_all(reports, runner, reference)
    assert runner.calls > 0


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray cluster of 2 CPUs for this module's tests (its start is the slow part)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield ray
    ray.shutdown()


def _arrays(value, seen=None):
    """Every numpy array inside ``value`` (tuples, lists, dicts, dataclasses)."""
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            yield from _arrays(getattr(value, name))


def _secrets_in(payload, rep) -> list[str]:
    """What of the clients' secrets ``payload`` holds: a key's bytes in its pickle, an array holding a key,
    an array equal to the true edges' CSR (by node or in sorted-β order)."""
    keys, indptr, indices, *_ = rep.kernel_args()
    band = kernels.SortedBand.build(np.zeros(rep.num_nodes), *rep.kernel_args(), rep.is_symmetric())
    raw = pickle.dumps(payload, protocol=5)
    found = [f"key {k}" for k in keys[:: max(1, keys.size // 64)] if raw.find(k.tobytes()) >= 0]
    for arr in _arrays(payload):
        if arr.dtype.itemsize == 8 and arr.size and np.isin(arr.view(np.uint64).ravel(), keys).any():
            found.append(f"a key in an array of shape {arr.shape}")
        for name, true in (("indptr", indptr), ("indices", indices), ("ptr", band.ptr), ("nbr", band.nbr)):
            if arr.shape == true.shape and np.array_equal(arr, true):
                found.append(f"the true edges' {name}")
    return found


@ray_missing
def test_server_on_ray_with_two_workers_equals_the_single_process_server(reports, reference, sbm, ray_session):
    from privgraph.methods import get_method
    from privgraph.methods.blink.distributed import RayRunner

    runner = RayRunner(workers=2)
    assert not runner.started  # Ray ran already: the runner joins it and leaves it running
    # every task payload: what is put in the object store and every argument of a task
    payloads: list = []
    put, remote = runner.ray.put, runner._remote

    class Capture:
        def remote(self, *args):
            payloads.append([a for a in args if not isinstance(a, ray_session.ObjectRef)])
            return remote.remote(*args)

    runner.share = lambda value: (payloads.append(value), put(value))[1]
    runner._remote = Capture()
    _check_all(reports, runner, reference)
    assert {s["pid"] for s in runner.stats} and all(s["cpu_s"] >= 0 for s in runner.stats)
    assert len(payloads) > 10 and any(isinstance(a, shards.ReportShard) for p in payloads for a in p)
    assert _secrets_in(reports.kernel_args(), reports)  # the check sees what the old tasks received
    for payload in payloads:
        assert _secrets_in(payload, reports) == []
    # the method: the released graph with server=ray equals the local one, for the same seed
    data = sbm(GRAPH, num_nodes=400)
    for variant in ("hard", "hybrid"):
        local = get_method("blink", variant=variant).release(data, 2.0, make_generator(5))
        remote_release = get_method("blink", variant=variant, server="ray", workers=2).release(
            data, 2.0, make_generator(5)
        )
        assert torch.equal(local.edge_index, remote_release.edge_index)
        assert (local.edge_weight is None) == (remote_release.edge_weight is None)
        if local.edge_weight is not None:
            assert torch.equal(local.edge_weight, remote_release.edge_weight)
        assert local.guarantee == remote_release.guarantee


@ray_missing
def test_a_lost_worker_is_retried_and_the_graph_is_the_same(reports, reference, ray_session, tmp_path):
    from privgraph.methods.blink.distributed import RayRunner, _timed_block

    marker = str(tmp_path / "crashed")

    def dies_once(fn, *args):  # the first task tried kills its worker (os._exit: a lost worker)
        import os

        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        return _timed_block(fn, *args)

    runner = RayRunner(workers=2, task=dies_once)
    _same_graph(hard_graph(reports, reference["mle20000"].beta, runner), reference["hard"])
    assert os.path.exists(marker)


@ray_missing
def test_a_task_that_keeps_losing_its_worker_fails_in_one_line(ray_session):
    from privgraph.methods.blink.distributed import RayRunner

    def dies(fn, *args):
        import os

        os._exit(1)

    runner = RayRunner(workers=2, task=dies, max_retries=1)
    with pytest.raises(RuntimeError) as failure:
        runner.map(abs, [(-1,)])
    line = str(failure.value)
    assert "\n" not in line and "failed 2 time(s)" in line and "WorkerCrashedError" in line
    assert "node " in line and "server=local" in line


def test_workers_without_ray_are_refused():
    from privgraph.methods import get_method

    with pytest.raises(ValueError, match="server=ray"):
        get_method("blink", workers=2)


def test_an_address_without_a_cluster_fails_in_seconds_with_the_fix(sbm):
    # the command line's --address is Blink's address parameter; a head that does not answer is one line
    from privgraph.methods import get_method

    method = get_method("blink", variant="hard", address="127.0.0.1:1")
    with pytest.raises(RuntimeError, match="could not join the cluster at 127.0.0.1:1"):
        method.release(sbm(GRAPH, num_nodes=60), 2.0, make_generator(0))


def test_the_reduce_gives_what_concatenation_gives():
    # Hybrid's top-k: the k largest logits, ties by pair index, sorted — on many ties and k at a tie
    from privgraph.methods.blink import kernels
    from privgraph.methods.blink.server import _top_k

    rng = np.random.default_rng(0)
    n, m = 1000, 5000
    keys = rng.choice(n * n, size=m, replace=False)
    i, j = keys // n, keys % n
    logit = rng.integers(-5, 5, size=m).astype(np.float64) * 0.5  # ten values: ties everywhere
    for k in (1, 17, 499, 500, 2500, m - 1, m, m + 10):
        assert np.array_equal(_top_k(i, j, n, logit, k), np.lexsort((i * n + j, -logit))[:k])
    # the blocks' pairs put back chunk by chunk: what concatenating the pieces in that order gives
    chunks = 64
    parts = []
    for b in range(3):
        counts = rng.integers(0, 4, size=chunks)
        size = int(counts.sum())
        parts.append(
            (
                rng.integers(0, n, size),
                rng.integers(0, n, size),
                rng.integers(0, 3, size).astype(np.uint8),
                counts,
                10 * b + 1,
            )
        )
    bounds = [np.concatenate([[0], np.cumsum(p[3])]) for p in parts]
    pieces = [(p, s[c], s[c + 1]) for c in range(chunks) for p, s in zip(parts, bounds)]
    expected = [np.concatenate([p[k][lo:hi] for p, lo, hi in pieces]) for k in range(3)]
    *got, visited = kernels.interleave(list(parts))
    assert visited == 1 + 11 + 21
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and np.array_equal(g, e)


def test_hybrid_over_several_rounds_keeps_the_same_graph(reports, reference, monkeypatch):
    # the β-model's expected count inflated 50×: the search starts at a τ too high and lowers it over several
    # rounds, whose pairs are joined; the top k (and so the graph) is the one found in one round
    from privgraph.methods.blink import server

    rounds = []
    joined = server._joined
    monkeypatch.setattr(server, "_joined", lambda found: (rounds.append(len(found)), joined(found))[1])
    call = server._ExpectedPassing.__call__
    monkeypatch.setattr(server._ExpectedPassing, "__call__", lambda self, tau: 50.0 * call(self, tau))
    beta = reference["mle20000"].beta
    for runner in (LOCAL, CutRunner(7), CutRunner(7, reports_only=True)):
        got = hybrid_graph(reports, beta, 0, runner=runner)
        want = reference["hybrid0"]
        assert torch.equal(got.edge_index, want.edge_index) and torch.equal(got.edge_weight, want.edge_weight)
        assert got.threshold == want.threshold
    assert min(rounds) > 1


def test_a_task_failure_names_the_node_that_left():
    from privgraph.ray_cluster import ray_task_failure

    class Cluster:  # what ray.nodes() says after a machine was lost
        @staticmethod
        def nodes():
            return [
                {"NodeManagerAddress": "10.0.0.7", "Alive": False},
                {"NodeManagerAddress": "10.0.0.1", "Alive": True},
            ]

    err = RuntimeError("The node died.\n" + "traceback line\n" * 150)
    line = ray_task_failure(err, Cluster, retries=3, what="Blink's server", local="run with --param server=local")
    assert "\n" not in line and "failed 4 time(s)" in line and "node 10.0.0.7 left the cluster" in line
    assert "10.0.0.1" not in line and "RuntimeError: The node died." in line and "server=local" in line


@ray_missing
def test_the_command_line_prints_a_lost_worker_as_one_line(ray_session, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from privgraph.cli import app
    from privgraph.methods.blink.distributed import RayRunner

    def dies(fn, *args):
        import os

        os._exit(1)

    start = RayRunner.__post_init__

    def dying(self):  # every task of the release's runner kills its worker; no retry
        self.task, self.max_retries = dies, 0
        start(self)

    monkeypatch.setattr(RayRunner, "__post_init__", dying)
    args = ["release", "blink", "--dataset", "sbm", "--epsilon", "2", "--param", "server=ray"]
    res = CliRunner().invoke(app, [*args, "--param", "workers=1", "-o", str(tmp_path / "g.pt")])
    assert res.exit_code == 1, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "a Ray task of Blink's server failed 1 time(s)" in errors[0], res.output
    assert "Traceback" not in res.output and not (tmp_path / "g.pt").exists()
