"""Mini-batch node-classification training over tables that need not fit in memory
(:mod:`privgraph.data.outofcore`).

The model is read through a ``forward(model, nodes)`` callable that fetches what the batch needs (a
node-wise model: the batch's rows of a table; a GCN layer: the batch's one-hop neighbourhood), so one
trainer serves GAP's multi-MLP, LPGNN's KProp model and a GCN.  Selection as the full-batch trainer
(:func:`~privgraph.train.node_classification.train_node_classifier`): after every epoch the validation
accuracy (ties: lower validation loss) picks the state kept.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

Forward = Callable[[nn.Module, np.ndarray], Tensor]


@dataclass
class MiniBatchResult:
    val_accuracy: float
    best_epoch: int
    epochs_run: int
    steps: int
    seconds: float


def batches(nodes: np.ndarray, batch_size: int, generator: torch.Generator | None) -> list[np.ndarray]:
    """``nodes`` in a random order (``generator``; none: as given), cut into batches of ``batch_size``."""
    order = nodes if generator is None else nodes[torch.randperm(nodes.shape[0], generator=generator).numpy()]
    return [order[i : i + batch_size] for i in range(0, order.shape[0], batch_size)]


@torch.no_grad()
def predict(model: nn.Module, forward: Forward, nodes: np.ndarray, batch_size: int = 65536) -> Tensor:
    """The model's logits for ``nodes`` (eval mode), ``batch_size`` nodes at a time."""
    model.eval()
    parts = [forward(model, b) for b in batches(np.asarray(nodes), batch_size, None)]
    return torch.cat(parts) if parts else torch.empty(0)


def evaluate(
    model: nn.Module, forward: Forward, nodes: np.ndarray, y: np.ndarray, batch_size: int = 65536
) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) on ``nodes``; (nan, inf) without nodes."""
    if len(nodes) == 0:
        return float("nan"), float("inf")
    logits = predict(model, forward, nodes, batch_size)
    target = torch.from_numpy(np.asarray(y)[nodes])
    return float((logits.argmax(-1) == target).float().mean()), float(F.cross_entropy(logits, target))


def train_minibatch(
    model: nn.Module,
    forward: Forward,
    y: np.ndarray,
    train_nodes: np.ndarray,
    val_nodes: np.ndarray,
    lr: float = 0.01,
    weight_decay: float = 0.0,
    epochs: int = 100,
    batch_size: int = 1024,
    seed: int = 0,
    patience: int | None = None,
    eval_batch: int = 65536,
) -> MiniBatchResult:
    """Adam on the cross-entropy of shuffled batches of ``train_nodes`` (labels ``y[node]``); after each
    epoch the state with the best validation accuracy (ties: lower loss) is kept, and loaded at the end.
    ``batch_size`` ≥ the training nodes is the full-batch trainer's step (one per epoch)."""
    if lr <= 0 or weight_decay < 0 or epochs < 1 or batch_size < 1:
        raise ValueError("need lr > 0, weight_decay >= 0, epochs >= 1 and batch_size >= 1")
    start = time.perf_counter()
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(seed)
    labels = torch.from_numpy(np.asarray(y, dtype=np.int64))
    best, best_state, best_epoch, since, steps, epoch = (-1.0, float("inf")), None, 0, 0, 0, 0
    for epoch in range(1, epochs + 1):
        model.train()
        for batch in batches(np.asarray(train_nodes), batch_size, gen):
            opt.zero_grad()
            F.cross_entropy(forward(model, batch), labels[batch]).backward()
            opt.step()
            steps += 1
        acc, loss = evaluate(model, forward, val_nodes, y, eval_batch)
        if (acc, -loss) > (best[0], -best[1]):
            best, best_epoch, since, best_state = (acc, loss), epoch, 0, copy.deepcopy(model.state_dict())
        else:
            since += 1
            if patience is not None and since >= patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return MiniBatchResult(best[0], best_epoch, epoch, steps, time.perf_counter() - start)


def row_forward(rows: np.ndarray, ids: np.ndarray) -> Forward:
    """A node-wise model's forward on the rows ``rows`` held for the sorted node ids ``ids``."""

    def forward(model: nn.Module, nodes: np.ndarray) -> Tensor:
        return model(torch.from_numpy(rows[np.searchsorted(ids, nodes)]))

    return forward


__all__ = ["MiniBatchResult", "batches", "evaluate", "predict", "row_forward", "train_minibatch"]
