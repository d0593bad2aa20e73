import os

# Test workloads are tiny: one thread per library avoids oversubscription, which slows small problems down
# by an order of magnitude when the cores are busy (and under pytest-xdist, whose workers share the cores).
# BLAS/OpenMP and numba read these when they load, so they are set before numpy, scipy, numba or torch is
# imported here; the CLI's subprocesses inherit them.  numba's parallel kernels (Blink's pair scans) take one
# thread per core otherwise: on a busy core each call waits for its second thread (a 24-node release took
# 54 ms with one thread and 88 ms with two, at load 8 on 2 cores).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import warnings  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

warnings.filterwarnings("ignore", category=UserWarning)
torch.set_num_threads(1)
threadpool_limits(1)  # the BLAS a plugin may have loaded before this file


@contextmanager
def _cache_lock():
    """One process at a time builds a dataset in ``$PRIVGRAPH_CACHE`` (pytest-xdist's workers share it: two
    workers processing the same PyG dataset at once could read each other's half-written files)."""
    from filelock import FileLock

    from privgraph.data.datasets import cache_dir

    cache_dir().mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache_dir() / ".privgraph-tests.lock")):
        yield


def _locked(load_spec):
    def load(*args, **kwargs):
        with _cache_lock():
            return load_spec(*args, **kwargs)

    return load


REPO = Path(__file__).resolve().parents[1]

from repo_files import untracked_files  # noqa: E402 (tests/: the suite leaves the checkout as it found it)


def pytest_sessionstart(session):
    """The repository's untracked files before the suite (in the controller of pytest-xdist's workers)."""
    if not hasattr(session.config, "workerinput"):
        session.config._untracked_before = untracked_files(REPO)


def pytest_sessionfinish(session, exitstatus):
    """The suite writes nothing into the repository (``results/privgraph.jsonl``, a command run
    with its default store in the working directory): a file that was not there before fails the session."""
    before = getattr(session.config, "_untracked_before", None)
    after = None if before is None else untracked_files(REPO)
    if after is None or not after - before:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (
        "the suite created files in the repository (use tmp_path; a command's default output lands in the "
        "working directory): " + ", ".join(sorted(after - before))
    )
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(message, red=True)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config):
    """Under pytest-xdist, every module that loads a dataset into the cache does it under :func:`_cache_lock`."""
    if not hasattr(config, "workerinput"):
        return
    import privgraph.data.datasets as datasets
    import privgraph.data.hetero as hetero

    locked = _locked(datasets.load_spec)
    datasets.load_spec = hetero.load_spec = locked


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)


TINY_GRID = """
name = "tiny"
[defaults]
trials = 2
synthetic = { num_nodes = 80, num_features = 8 }
hyperparameters = { epochs = 5, patience = 5 }

[[tables]]
name = "nc"
datasets = ["sbm"]
models = ["gcn"]
epsilons = [1, 4]

[[tables.rows]]
label = "RR"
method = "rr"
"""


@pytest.fixture
def tiny_grid() -> str:
    """A sweep grid of four fast trials (RR on an 80-node SBM, GCN, ε ∈ {1, 4}, two trials each)."""
    return TINY_GRID


@pytest.fixture(scope="session")
def sbm():
    """:func:`privgraph.data.sbm_graph` by keyword arguments, each test keeping its own graph's parameters:
    ``sbm(base, **params)``, ``base`` a module's dict of its graph's arguments (optional), ``params`` those of
    this graph (they win).  ``private_edges=ρ`` marks a share ρ of the edges private
    (:func:`privgraph.data.mark_private_edges`, drawn with the graph's seed)."""
    from privgraph.data import mark_private_edges, sbm_graph

    def make(base: dict[str, Any] | None = None, /, **params: Any):
        params = {**(base or {}), **params}
        private_edges = params.pop("private_edges", None)
        data = sbm_graph(**params)
        return data if private_edges is None else mark_private_edges(data, private_edges, seed=params.get("seed", 0))

    return make


@pytest.fixture(scope="session")
def dp_accounting_epsilon():
    """dp-accounting's ``RdpAccountant`` (on privgraph's RDP orders): the ε at ``delta`` of a composition of
    parts (σ, q, steps), each ``steps`` Poisson-subsampled Gaussian steps of rate q and noise multiplier σ
    (q = 1: the plain Gaussian).  The reference the accountant tests compare privgraph's against."""
    import logging

    import dp_accounting

    from privgraph.accounting.rdp import RDP_ORDERS

    def epsilon(parts, delta: float) -> float:
        logging.getLogger("absl").setLevel(logging.ERROR)  # its own warning about the slow series
        accountant = dp_accounting.rdp.RdpAccountant(orders=list(RDP_ORDERS))
        events = []
        for sigma, q, steps in parts:
            step = dp_accounting.GaussianDpEvent(sigma)
            if q < 1:
                step = dp_accounting.PoissonSampledDpEvent(q, step)
            events.append(dp_accounting.SelfComposedDpEvent(step, steps))
        accountant.compose(dp_accounting.ComposedDpEvent(events))
        return float(accountant.get_epsilon(delta))

    return epsilon


@pytest.fixture(scope="session")
def invoke():
    """The command line in-process (typer's ``CliRunner``): ``invoke(*args, env=None)`` gives the exit code,
    the output (stdout and stderr together) on one line and the exception the command ended with;
    ``raw=True`` keeps the output's lines as printed."""
    from typer.testing import CliRunner

    from privgraph.cli import app

    def run(*args: object, env: dict[str, str] | None = None, raw: bool = False):
        res = CliRunner().invoke(app, [str(a) for a in args], env=env)
        return res.exit_code, res.output if raw else " ".join(res.output.split()), res.exception

    return run
