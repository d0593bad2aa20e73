"""Label LDP (LPGNN's, Sajadmanesh & Gatica-Perez, CCS 2021; §5 of Sajadmanesh's talk "Privacy-Preserving
Deep Learning over Graphs" (2020)), for every node-classification method.

Training/validation nodes report their label through k-ary randomized response
(:func:`report_labels`, the one-time label collection); the server denoises by KProp
propagation of the noisy one-hot labels (K_y steps) and takes the arg-max
(:func:`denoise_labels`).  With K_y = 0 the noisy labels are used as they are, with
forward loss correction by the known randomized-response channel.  :func:`label_spend`
declares the spend on the node labels.  The label set {0, …, k−1} is public and declared
(:func:`declared_classes`: ``num_classes``, ``data.num_classes``, ``--num-classes``, a registry
dataset's schema), never read from the private labels: k is in the release, and a k read from the
labels (their maximum + 1) would publish the largest label.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, Unit
from privgraph.accounting.ledger import Spend
from privgraph.mechanisms import RandomizedResponse, RandomSource
from privgraph.nn import KProp


@dataclass
class LabelReports:
    """Randomized-response label reports of training/validation nodes (-1: not collected)."""

    reported: torch.Tensor
    mechanism: RandomizedResponse

    def guarantee(self) -> PrivacyGuarantee:
        return self.mechanism.guarantee().with_note(
            "labels of training/validation nodes only; test nodes report no label"
        )


UNDECLARED_CLASSES = (
    "label LDP needs the public label set {0, …, k−1}: declare k (num_classes=K, data.num_classes = K, or "
    "--num-classes K); it is never read from the private labels"
)


def declared_classes(data: Data, num_classes: int | None = None) -> int:
    """k of the label set: ``num_classes`` when given, else the public declaration ``data.num_classes`` (a
    registry dataset's schema, ``--num-classes``); ``ValueError`` without one, or for a k that is not an integer
    ≥ 2.  Then every training and validation label must lie in [0, k) (:func:`check_labels`)."""
    k = num_classes if num_classes is not None else getattr(data, "num_classes", None)
    if k is None:
        raise ValueError(UNDECLARED_CLASSES)
    if isinstance(k, bool) or not isinstance(k, (int, float)) or int(k) != k or k < 2:
        raise ValueError(f"num_classes must be an integer >= 2, got {k!r}")
    return int(k)


def check_labels(data: Data, k: int | None = None) -> int:
    """k (default: declared, :func:`declared_classes`), after refusing (one line, before any noise) a training or
    validation label outside [0, k); the refusal names neither the label nor the node (it is itself an output)."""
    k = declared_classes(data) if k is None else k
    for name in ("y", "train_mask", "val_mask"):
        if getattr(data, name, None) is None:
            raise ValueError(f"label privacy needs data.{name}")
    y = data.y[data.train_mask | data.val_mask]
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= k):
        raise ValueError(
            f"a training or validation label lies outside the declared label set 0..{k - 1} (num_classes={k}): "
            "refused before any noise; declare the full label set or fix the labels"
        )
    return k


def report_labels(data: Data, label_epsilon: float, rng: RandomSource, num_classes: int | None = None) -> LabelReports:
    """Node side: k-ary randomized response on the label of every training and validation node (the one-time
    label collection), k declared (:func:`declared_classes`) and the labels checked first (:func:`check_labels`)."""
    k = check_labels(data, declared_classes(data, num_classes))
    rr = RandomizedResponse(label_epsilon, k)
    labelled = data.train_mask | data.val_mask
    reported = torch.full_like(data.y, -1)
    reported[labelled] = rr.perturb(data.y[labelled], rng)
    return LabelReports(reported, rr)


def release_labels(out: Data, labels: LabelReports) -> str:
    """Write ``labels`` into the release ``out`` as ``y_reported`` (−1: not collected), ``label_epsilon`` and
    ``num_classes`` (the declared k), never ``y``; returns ``y``'s field status."""
    out.y_reported, out.label_epsilon, out.num_classes = labels.reported, labels.mechanism.epsilon, labels.mechanism.k
    return "privatized (as y_reported): " + labels.guarantee().describe()


def denoise_labels(data: Data, reports: LabelReports, label_steps: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Server side (post-processing): KProp propagation of the noisy one-hot
    labels for ``label_steps`` steps and arg-max (nodes whose propagated
    vector is empty keep their own report).  ``label_steps = 0`` keeps the
    reports and returns the randomized-response channel for forward loss
    correction.  Returns ``(observed labels, transition matrix or None)``.
    """
    reported, k = reports.reported, reports.mechanism.k
    labelled = reported >= 0
    if label_steps == 0:
        return reported.clone(), reports.mechanism.transition_matrix().to(torch.float32)
    onehot = torch.zeros((reported.numel(), k))
    onehot[labelled] = torch.nn.functional.one_hot(reported[labelled], k).float()
    votes = KProp(label_steps, "mean", cached=False)(onehot, data.edge_index)
    observed = torch.where(votes.sum(dim=1) > 0, votes.argmax(dim=1), reported)
    return torch.where(labelled, observed, torch.full_like(observed, -1)), None


def label_spend(label_epsilon: float | None) -> list[Spend]:
    """LPGNN's label LDP (``label_epsilon``) spends ε_y per node label; nothing without it."""
    return [] if label_epsilon is None else [Spend(Unit.NODE_LABEL, float(label_epsilon))]
