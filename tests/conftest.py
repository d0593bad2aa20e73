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
