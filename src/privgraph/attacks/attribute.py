"""Sensitive-attribute inference on released embeddings, and the utility task
measured the same way (PPCVGAE §6.2).

The adversary knows the sensitive attribute of the public nodes Q and wants
that of the private nodes P:

* case (a) — it also knows A: a two-layer GCN on ``(A, [Z, f(s_Q)])``, where
  ``f(s_Q)`` gives each node the share of its neighbours known to have s = 1
  and the share whose s is known (the node's own value is never among them,
  so training on Q does not leak the target); the GCN learns on s_Q;
* case (b) — it does not know A: an MLP on Z, trained on s_Q.

Utility is node classification of y with the same model and inputs, trained
on the training split, selected on validation, reported on test.  Both
report accuracy and binary F1 (class 1).  ``balance`` resamples the attack's
training and test nodes to equal class counts (the paper's treatment of the
imbalanced Credit defaulter attribute).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from sklearn.metrics import f1_score
from torch import Tensor
from torch_geometric.utils import scatter

from privgraph.nn import NodeClassifier
from privgraph.train import train_node_classifier

CASE_MODELS = {"a": "gcn", "b": "mlp"}


@dataclass(frozen=True)
class ClassifierScore:
    accuracy: float
    f1: float
    val_accuracy: float


def check_case(case: str) -> str:
    if case not in CASE_MODELS:
        raise ValueError(f"case must be 'a' (the adversary knows A) or 'b' (it does not), got {case!r}")
    return case


def known_attribute_features(edge_index: Tensor, sens: Tensor, known: Tensor, num_nodes: int) -> Tensor:
    """Per node: share of neighbours with known s = 1, share of neighbours with known s (self excluded)."""
    src, dst = edge_index
    keep = src != dst
    src, dst = src[keep], dst[keep]
    known_f = known.float()
    degree = scatter(torch.ones_like(src, dtype=torch.float), dst, dim_size=num_nodes, reduce="sum").clamp_min(1)
    positive = scatter((known_f * sens.float())[src], dst, dim_size=num_nodes, reduce="sum")
    seen = scatter(known_f[src], dst, dim_size=num_nodes, reduce="sum")
    return torch.stack([positive / degree, seen / degree], dim=1)


def balanced_mask(mask: Tensor, labels: Tensor, generator: torch.Generator) -> Tensor:
    """``mask`` with the majority classes downsampled at random to the minority's count."""
    idx = mask.nonzero().flatten()
    classes = [idx[labels[idx] == c] for c in torch.unique(labels[idx])]
    if len(classes) < 2:
        raise ValueError("cannot balance: only one class among the selected nodes")
    m = min(c.numel() for c in classes)
    out = torch.zeros_like(mask)
    for c in classes:
        out[c[torch.randperm(c.numel(), generator=generator)[:m]]] = True
    return out


def _split_known(known: Tensor, labels: Tensor, generator: torch.Generator, val_ratio: float = 0.2
                 ) -> tuple[Tensor, Tensor]:
    """Stratified split of the known nodes into the adversary's training and validation nodes."""
    train, val = torch.zeros_like(known), torch.zeros_like(known)
    for c in torch.unique(labels[known]):
        idx = (known & (labels == c)).nonzero().flatten()
        idx = idx[torch.randperm(idx.numel(), generator=generator)]
        cut = int(round(val_ratio * idx.numel()))
        val[idx[:cut]], train[idx[cut:]] = True, True
    return train, val


def fit_and_score(case: str, x: Tensor, edge_index: Tensor, labels: Tensor, train: Tensor, val: Tensor,
                  test: Tensor, seed: int, hidden: int = 32, epochs: int = 300) -> ClassifierScore:
    """Train the case's classifier (GCN or MLP) and score it on ``test`` (accuracy, binary F1)."""
    torch.manual_seed(seed)
    model = NodeClassifier(CASE_MODELS[check_case(case)], x.shape[1], hidden, int(labels.max()) + 1, dropout=0.5)
    result = train_node_classifier(model, x, edge_index, labels, labels, train, val, test, lr=0.01,
                                   weight_decay=5e-4, epochs=epochs, patience=100)
    truth, predicted = labels[test].numpy(), result.test_predictions.numpy()
    return ClassifierScore(result.test_accuracy, float(f1_score(truth, predicted, zero_division=0)),
                           result.val_accuracy)


def classifier_inputs(case: str, z: Tensor, edge_index: Tensor, sens: Tensor, public_mask: Tensor) -> Tensor:
    """``[Z, f(s_Q)]`` for case (a), ``Z`` for case (b) (module docstring)."""
    if check_case(case) == "b":
        return z.float()
    return torch.cat([z.float(), known_attribute_features(edge_index, sens, public_mask, z.shape[0])], dim=1)


def attribute_inference(case: str, z: Tensor, edge_index: Tensor, sens: Tensor, private_mask: Tensor, seed: int,
                        balance: bool = False) -> ClassifierScore:
    """Infer s on the private nodes from the release and s_Q (module docstring)."""
    public = ~private_mask
    if public.sum() == 0 or private_mask.sum() == 0:
        raise ValueError("attribute inference needs both public and private nodes")
    if torch.unique(sens[public]).numel() < 2:
        raise ValueError("the public nodes carry a single sensitive value: nothing to learn from")
    g = torch.Generator().manual_seed(seed)
    x = classifier_inputs(case, z, edge_index, sens, public)
    train, val = _split_known(public, sens, g)
    test = private_mask
    if balance:
        train, test = balanced_mask(train, sens, g), balanced_mask(test, sens, g)
    return fit_and_score(case, x, edge_index, sens.long(), train, val, test, seed)


def utility(case: str, z: Tensor, edge_index: Tensor, y: Tensor, sens: Tensor, private_mask: Tensor,
            train_mask: Tensor, val_mask: Tensor, test_mask: Tensor, seed: int) -> ClassifierScore:
    """Node classification of ``y`` with the same classifier and inputs as the attack."""
    x = classifier_inputs(case, z, edge_index, sens, ~private_mask)
    return fit_and_score(case, x, edge_index, y.long(), train_mask, val_mask, test_mask, seed)
