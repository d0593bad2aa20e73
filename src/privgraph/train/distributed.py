"""Data-parallel training of a node-wise model over node tables partitioned between processes
(``torch.distributed``, gloo backend, local processes started by ``torch.multiprocessing``).

Each of the ``world`` processes reads only its partition of the training rows from the tables
(:class:`~privgraph.data.outofcore.NodeTable` files: a contiguous slice of the training node ids), draws its
share ⌈B / world⌉ of every batch from it, and ``DistributedDataParallel`` averages the gradients over the
processes before every Adam step: with equal shares that is the gradient of the whole batch's mean loss, so
one process with batch B and ``world`` processes with B / world each take the same steps (to float
rounding).  With ``batch_size`` ≥ the training nodes and equal partitions the run is full-batch Adam, equal
to the single-process trainer (``tests/train/test_ddp_training.py``).  The state kept: the last iterate, or
the best validation epoch's (rank 0 reads the validation rows).  Training reads only what a release
published (GAP's noisy tables): post-processing, no guarantee changes.
"""

from __future__ import annotations

import copy
import math
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from privgraph.data.outofcore import NodeTable


@dataclass(frozen=True)
class DDPConfig:
    epochs: int = 100
    batch_size: int = 1024
    lr: float = 0.01
    weight_decay: float = 0.0
    seed: int = 0


def partition(nodes: np.ndarray, world: int, rank: int) -> np.ndarray:
    """Rank ``rank``'s contiguous share of ``nodes`` (``numpy.array_split``: sizes differ by at most one)."""
    return np.array_split(np.asarray(nodes), world)[rank]


def _rows(tables: list[NodeTable], nodes: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.concatenate([t.gather(nodes) for t in tables], axis=1))


def _worker(
    rank: int,
    world: int,
    store: str,
    factory: Callable[[], nn.Module],
    tables: list[NodeTable],
    nodes: np.ndarray,
    y: np.ndarray,
    cfg: DDPConfig,
    out: str,
    val: np.ndarray,
) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    # The process leaves by os._exit, skipping the interpreter's teardown: there the last reference to gloo's
    # process group (held by DDP's reducer) is dropped with the GIL held, and its destructor joins gloo's
    # worker threads, one of which may be waiting for the GIL to free a finished collective — a deadlock
    # seen in the test suite (the child hung in ~ProcessGroupGloo).  A failure prints its traceback first.
    try:
        torch.manual_seed(cfg.seed)
        model = factory()
        ddp = DistributedDataParallel(model)  # broadcasts rank 0's initial weights
        part = partition(nodes, world, rank)
        x_local, y_local = _rows(tables, part), torch.from_numpy(np.asarray(y)[part].astype(np.int64))
        share = math.ceil(min(cfg.batch_size, nodes.shape[0]) / world)
        largest = math.ceil(nodes.shape[0] / world)
        steps = math.ceil(largest / share)  # the same on every rank (DDP needs each step on all)
        opt = torch.optim.Adam(ddp.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        gen = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
        if rank == 0 and val.shape[0]:
            x_val, y_val = _rows(tables, val), torch.from_numpy(np.asarray(y)[val].astype(np.int64))
        best, best_state = (-1.0, float("inf")), None
        for _ in range(cfg.epochs):
            ddp.train()
            order = torch.randperm(part.shape[0], generator=gen) if steps > 1 else torch.arange(part.shape[0])
            for s in range(steps):
                idx = order[torch.arange(s * share, (s + 1) * share) % part.shape[0]] if steps > 1 else order
                opt.zero_grad()
                F.cross_entropy(ddp(x_local[idx]), y_local[idx]).backward()
                opt.step()
            if rank == 0 and val.shape[0]:  # every rank holds the same weights: rank 0 selects alone
                model.eval()
                with torch.no_grad():
                    logits = model(x_val)
                score = (float((logits.argmax(-1) == y_val).float().mean()), float(F.cross_entropy(logits, y_val)))
                if (score[0], -score[1]) > (best[0], -best[1]):
                    best, best_state = score, copy.deepcopy(model.state_dict())
        if rank == 0:
            torch.save(best_state if best_state is not None else model.state_dict(), out)
        dist.barrier()  # every rank done (rank 0's state written) before any leaves
    except BaseException:
        traceback.print_exc()
        _leave(1)
    _leave(0)


def _leave(code: int) -> NoReturn:
    """Exit a worker now, with its output flushed and without the teardown (:func:`_worker`)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def train_ddp(
    factory: Callable[[], nn.Module],
    tables: list[NodeTable],
    nodes: np.ndarray,
    y: np.ndarray,
    cfg: DDPConfig,
    world: int = 2,
    val_nodes: np.ndarray | None = None,
    start_method: str = "spawn",
) -> dict[str, torch.Tensor]:
    """Train ``factory()`` (a picklable callable: a module-level function or ``functools.partial``) on the rows
    ``nodes`` of the tables side by side, labels ``y[node]``, in ``world`` local processes (module docstring);
    returns the trained state dict: the last iterate, or with ``val_nodes`` the epoch's state of best
    validation accuracy (ties: lower loss; rank 0 evaluates, every rank holding the same weights).
    ``start_method``: ``spawn`` (each child imports afresh, a few seconds; ``fork`` from a process whose
    OpenMP or other threads already ran can leave a child deadlocked on a lock held at the fork, as it did
    in a test worker: fork only from a fresh single-threaded process)."""
    if world < 1:
        raise ValueError("world must be >= 1")
    if len(nodes) < world:
        raise ValueError("every process needs at least one training node")
    tables = [NodeTable(t.path, t.num_rows, t.num_cols, t.col_block) for t in tables]  # no open map to pickle
    with tempfile.TemporaryDirectory(prefix="privgraph-ddp-") as tmp:
        store, out = os.path.join(tmp, "store"), os.path.join(tmp, "state.pt")
        val = np.asarray([] if val_nodes is None else val_nodes, dtype=np.int64)
        args = (world, store, factory, tables, np.asarray(nodes), y, cfg, out, val)
        mp.start_processes(_worker, args=args, nprocs=world, start_method=start_method)
        return torch.load(Path(out), weights_only=True)


__all__ = ["DDPConfig", "partition", "train_ddp"]
