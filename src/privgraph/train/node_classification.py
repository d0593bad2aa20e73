"""Full-batch node-classification trainer with model selection on validation."""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from privgraph.device import current_device, to_device
from privgraph.progress import ProgressHook, report


@dataclass
class TrainResult:
    val_accuracy: float  # on the labels the server observes (noisy under label privacy)
    test_accuracy: float  # on the true test labels, for the selected model
    train_accuracy: float
    best_epoch: int
    epochs_run: int
    seconds: float
    test_predictions: Tensor | None = None  # predicted classes of the test nodes (selected model)
    model: nn.Module | None = None  # the trained model (set by privgraph.train)
    context: Any = None  # how privgraph.fit trained it (release, model, hyperparameters): what privgraph.attack reads

    def __repr__(self) -> str:
        """The scores and the run's length; the predictions, model and context by kind and size, not dumped."""
        predictions = "None" if self.test_predictions is None else f"<{self.test_predictions.numel()} classes>"
        model = "None" if self.model is None else f"<{type(self.model).__name__}>"
        context = "None" if self.context is None else f"<{type(self.context).__name__}>"
        return (
            f"TrainResult(test_accuracy={self.test_accuracy:.4f}, val_accuracy={self.val_accuracy:.4f}, "
            f"train_accuracy={self.train_accuracy:.4f}, best_epoch={self.best_epoch}, epochs_run={self.epochs_run}, "
            f"seconds={self.seconds:.2f}, test_predictions={predictions}, model={model}, context={context})"
        )


def accuracy(logits: Tensor, y: Tensor) -> float:
    if y.numel() == 0:
        return float("nan")
    return float((logits.argmax(dim=-1) == y).float().mean())


def to_csr(x: Tensor) -> Tensor:
    """``x`` in the sparse CSR layout (without torch's notice that the layout is in beta)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta", UserWarning)
        return x.to_sparse_csr()


def select_rows(x: Tensor, mask: Tensor) -> Tensor:
    """The rows of ``x`` where ``mask`` holds (or at the positions ``mask`` lists, an integer tensor), in
    order, in ``x``'s layout (dense, sparse COO or CSR)."""
    if x.layout == torch.strided:
        return x[mask]
    index = mask.nonzero().view(-1) if mask.dtype == torch.bool else mask
    rows = (x if x.layout == torch.sparse_coo else x.to_sparse_coo()).index_select(0, index).coalesce()
    return rows if x.layout == torch.sparse_coo else to_csr(rows)


def train_node_classifier(
    model: nn.Module,
    x: Tensor,
    edge_index: Tensor,
    y_observed: Tensor,
    y_true: Tensor,
    train_mask: Tensor,
    val_mask: Tensor,
    test_mask: Tensor,
    lr: float = 0.01,
    weight_decay: float = 5e-4,
    epochs: int = 200,
    patience: int | None = 50,
    loss_transition: Tensor | None = None,
    edge_weight: Tensor | None = None,
    selection: str = "accuracy",
    progress: ProgressHook | None = None,
    task: str = "training",
    row_wise: bool = False,
    batch_size: int | None = None,
) -> TrainResult:
    """Adam on the cross-entropy of the training nodes; after every epoch the
    model is evaluated on the validation nodes and the state with the best
    validation accuracy (ties: lower validation loss) is kept — or, with
    ``selection="loss"``, the state with the least validation loss (the Blink
    authors' protocol).  Test accuracy is that of the selected state.
    Training stops after ``patience`` epochs without improvement.

    ``y_observed`` are the labels the server holds for training/validation
    nodes; ``y_true`` is used only for the reported test accuracy.
    ``loss_transition`` (k×k, rows: true class) applies forward loss
    correction (Patrini et al. 2017) for labels from a known noise channel.
    ``edge_weight`` is passed to the model with the graph (weighted graphs).

    A model that learns its graph (``graph_parameters()``, ``regularization()``,
    ``project()``, e.g. Solitude) is trained by alternating optimisation: each
    epoch one Adam step on the other parameters, then one on the graph
    parameters with the regularisation added, followed by the projection.

    ``batch_size`` (a ``row_wise`` model only): each epoch takes one Adam step per batch of that many
    training nodes, in an order drawn from torch's generator (the mini-batch schedule of
    :func:`~privgraph.train.minibatch.train_minibatch`, on tensors in memory); None: one step on all of them.
    """
    if lr <= 0 or weight_decay < 0 or epochs < 1:
        raise ValueError("need lr > 0, weight_decay >= 0 and epochs >= 1")
    if batch_size is not None and (batch_size < 1 or not row_wise):
        raise ValueError(f"batch_size must be >= 1 and needs a row-wise model, got {batch_size}")
    if selection not in ("accuracy", "loss"):
        raise ValueError(f"selection must be 'accuracy' or 'loss', got {selection!r}")
    start = time.perf_counter()
    device = current_device()
    model.to(device)
    x, edge_index, y_observed, y_true, train_mask, val_mask, test_mask, loss_transition, edge_weight = (
        to_device(v, device)
        for v in (x, edge_index, y_observed, y_true, train_mask, val_mask, test_mask, loss_transition, edge_weight)
    )
    extra = () if edge_weight is None else (edge_weight,)
    graph_params = list(model.graph_parameters()) if hasattr(model, "graph_parameters") else []
    graph_ids = {id(p) for p in graph_params}
    opt = torch.optim.Adam([p for p in model.parameters() if id(p) not in graph_ids], lr=lr, weight_decay=weight_decay)
    graph_opt = torch.optim.Adam(graph_params, lr=lr) if graph_params else None
    best = (-1.0, float("inf"))
    best_state, best_epoch, since = None, 0, 0
    y_tr, y_va = y_observed[train_mask], y_observed[val_mask]
    x_va = select_rows(x, val_mask) if row_wise else x

    def loss_fn(logits: Tensor, y: Tensor) -> Tensor:
        if loss_transition is None:
            return F.cross_entropy(logits, y)
        probs = logits.softmax(dim=-1) @ loss_transition.to(logits.dtype)
        return F.nll_loss(probs.clamp_min(1e-12).log(), y)

    x_tr = select_rows(x, train_mask) if batch_size is not None else x
    epoch = 0
    for epoch in range(1, epochs + 1):
        model.train()
        if batch_size is not None:
            for batch in torch.randperm(y_tr.shape[0], device=device).split(batch_size):
                opt.zero_grad()
                loss = loss_fn(model(select_rows(x_tr, batch), edge_index, *extra), y_tr[batch])
                loss.backward()
                opt.step()
        else:
            opt.zero_grad()
            out = model(x, edge_index, *extra)
            loss = loss_fn(out[train_mask], y_tr)
            loss.backward()
            opt.step()
        if graph_opt is not None:
            graph_opt.zero_grad()
            out = model(x, edge_index, *extra)
            (loss_fn(out[train_mask], y_tr) + model.regularization()).backward()
            graph_opt.step()
            model.project()
        model.eval()
        with torch.no_grad():
            out = model(x_va, edge_index, *extra)
            out_va = out if row_wise else out[val_mask]
            val_acc = accuracy(out_va, y_va)
            val_loss = float(loss_fn(out_va, y_va))
        better = val_loss < best[1] if selection == "loss" else (val_acc, -val_loss) > (best[0], -best[1])
        if better:
            best, best_epoch, since = (val_acc, val_loss), epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            since += 1
        stop = not better and patience is not None and since >= patience
        if progress is not None:
            status = f"loss {float(loss.detach()):.4f}, val acc {val_acc:.3f}"
            if stop:
                status += f", best epoch {best_epoch}"
            report(progress, task, epoch, epoch if stop else epochs, status)  # stopped early: (epoch, epoch)
        if stop:
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        out = model(x, edge_index, *extra)
    return TrainResult(
        val_accuracy=best[0],
        test_accuracy=accuracy(out[test_mask], y_true[test_mask]),
        train_accuracy=accuracy(out[train_mask], y_tr),
        best_epoch=best_epoch,
        epochs_run=epoch,
        seconds=time.perf_counter() - start,
        test_predictions=out[test_mask].argmax(dim=-1).cpu(),
    )
