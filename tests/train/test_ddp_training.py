"""Data-parallel training on two local processes (privgraph.train.distributed), each holding a partition
of the table's training rows, against one process."""

import functools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.multiprocessing import ProcessExitedException

from privgraph.data.outofcore import NodeTable
from privgraph.train.distributed import DDPConfig, partition, train_ddp


def make_model(width: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(width, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def test_partition_is_contiguous_and_complete():
    nodes = np.arange(11)
    parts = [partition(nodes, 3, r) for r in range(3)]
    assert [len(p) for p in parts] == [4, 4, 3]
    assert np.array_equal(np.concatenate(parts), nodes)


def test_two_processes_equal_one_full_batch_process(tmp_path):
    """Full batch (batch ≥ the training nodes), two equal partitions: the DDP-averaged gradient is the whole
    mean's, so the weights after 15 Adam steps equal one process's to float rounding (atol 1e-5); the
    model learns (the loss falls).  Two tables side by side, as GAP's [x⁰ … x^K]."""
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (200,), generator=g)
    x = torch.randn(200, 6, generator=g) + F.one_hot(y, 6).float() * 2
    tables = [NodeTable.from_tensor(tmp_path / "a.f32", x[:, :4]), NodeTable.from_tensor(tmp_path / "b.f32", x[:, 4:])]
    nodes = np.arange(10, 190)  # 180 training rows: 90 per process
    cfg = DDPConfig(epochs=15, batch_size=10_000, lr=0.05, seed=3)
    factory = functools.partial(make_model, 6)
    state = train_ddp(factory, tables, nodes, y.numpy(), cfg, world=2)

    torch.manual_seed(3)
    ref = factory()
    before = F.cross_entropy(ref(x[nodes]), y[nodes]).item()
    opt = torch.optim.Adam(ref.parameters(), lr=0.05)
    for _ in range(15):
        opt.zero_grad()
        F.cross_entropy(ref(x[nodes]), y[nodes]).backward()
        opt.step()
    for k, v in ref.state_dict().items():
        torch.testing.assert_close(state[k], v, rtol=1e-4, atol=1e-5)
    trained = factory()
    trained.load_state_dict(state)
    assert F.cross_entropy(trained(x[nodes]), y[nodes]).item() < 0.7 * before


def test_gap_classifier_trains_on_two_processes(tmp_path):
    """GAP-EDP out of core with its classifier trained data-parallel on two processes: it learns an easy SBM."""
    from privgraph.data.outofcore import OutOfCoreGraph
    from privgraph.data.synthetic import sbm_graph
    from privgraph.mechanisms import make_generator
    from privgraph.methods.outofcore import gap_edp

    sbm = sbm_graph(num_nodes=400, num_features=16, homophily=0.9, feature_signal=0.4, seed=0)
    g = OutOfCoreGraph.from_data(sbm, tmp_path)
    run = gap_edp(g, 4.0, make_generator(0), epochs=30, encoder_epochs=30, batch_size=64, processes=2)
    assert run.test_accuracy > 0.7 and run.guarantee.epsilon == 4.0


def test_a_failing_process_fails_the_call_instead_of_hanging(tmp_path):
    """A worker that raises (here: a label outside the model's 3 classes on rank 1's partition only) ends
    the call with an error; the other rank, left waiting in a collective, is stopped, not waited for."""
    x = torch.randn(40, 4, generator=torch.Generator().manual_seed(1))
    tables = [NodeTable.from_tensor(tmp_path / "x.f32", x)]
    y = np.zeros(40, dtype=np.int64)
    y[30:] = 7  # only in rank 1's half of the training rows
    with pytest.raises(ProcessExitedException, match="exit code 1"):
        train_ddp(functools.partial(make_model, 4), tables, np.arange(40), y, DDPConfig(epochs=2), world=2)
