"""Sensitive-attribute inference from what a target exposes — a released embedding, or a trained
model's hidden layer or posteriors (Duddu et al. 2020, attribute inference from embeddings) —
and the utility task measured the same way (PPCVGAE §6.2).

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

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor
from torch_geometric.utils import scatter

from privgraph.attacks.base import Attack, AttackParams, AttackResult, Target, ThreatModel, register_attack
from privgraph.attacks.metrics import METRICS, attack_metrics
from privgraph.methods.base import param
from privgraph.methods.ppcvgae.privacy import CASE_MODELS, check_case  # PPCVGAE's threat model (re-exported)
from privgraph.nn import NodeClassifier
from privgraph.progress import ProgressHook, counts_only
from privgraph.train import train_node_classifier


@dataclass(frozen=True)
class ClassifierScore:
    """A classifier's test accuracy and binary F1, its validation accuracy, and per test node the
    predicted probability of class 1 (``scores``, binary targets), the truth and the prediction."""

    accuracy: float
    f1: float
    val_accuracy: float
    scores: np.ndarray | None = field(default=None, repr=False)
    truth: np.ndarray | None = field(default=None, repr=False)
    predicted: np.ndarray | None = field(default=None, repr=False)


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


def _split_known(
    known: Tensor, labels: Tensor, generator: torch.Generator, val_ratio: float = 0.2
) -> tuple[Tensor, Tensor]:
    """Stratified split of the known nodes into the adversary's training and validation nodes."""
    train, val = torch.zeros_like(known), torch.zeros_like(known)
    for c in torch.unique(labels[known]):
        idx = (known & (labels == c)).nonzero().flatten()
        idx = idx[torch.randperm(idx.numel(), generator=generator)]
        cut = int(round(val_ratio * idx.numel()))
        val[idx[:cut]], train[idx[cut:]] = True, True
    return train, val


def holdout_private_nodes(
    private_mask: Tensor, sens: Tensor, seed: int, fraction: float = 0.2
) -> tuple[Tensor, Tensor]:
    """A seeded, stratified (by s) ``fraction`` of the private nodes held out for validation, and the rest:
    ``(validation, test)``.  The data owner, who knows s, tunes on the first and reports on the second."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
    test, val = _split_known(private_mask.bool(), sens, torch.Generator().manual_seed(seed), fraction)
    return val, test


def fit_and_score(
    case: str,
    x: Tensor,
    edge_index: Tensor,
    labels: Tensor,
    train: Tensor,
    val: Tensor,
    test: Tensor,
    seed: int,
    hidden: int = 32,
    epochs: int = 300,
) -> ClassifierScore:
    """Train the case's classifier (GCN or MLP) and score it on ``test`` (accuracy, binary F1)."""
    return fit_and_score_on(case, x, edge_index, labels, train, val, [test], seed, hidden, epochs)[0]


def fit_and_score_on(
    case: str,
    x: Tensor,
    edge_index: Tensor,
    labels: Tensor,
    train: Tensor,
    val: Tensor,
    tests: Sequence[Tensor],
    seed: int,
    hidden: int = 32,
    epochs: int = 300,
    progress: ProgressHook | None = None,
) -> list[ClassifierScore]:
    """Train the case's classifier once (selected on ``val``) and score that one model on each mask of
    ``tests`` (e.g. a validation and a test share of the private nodes)."""
    from sklearn.metrics import f1_score  # on use: keeps the run's start light

    if not tests:
        raise ValueError("give at least one mask to score on")
    torch.manual_seed(seed)
    model = NodeClassifier(CASE_MODELS[check_case(case)], x.shape[1], hidden, int(labels.max()) + 1, dropout=0.5)
    result = train_node_classifier(
        model,
        x,
        edge_index,
        labels,
        labels,
        train,
        val,
        tests[0],
        lr=0.01,
        weight_decay=5e-4,
        epochs=epochs,
        patience=100,
        progress=counts_only(progress),
        task="attribute attack: training the attacker (epochs)",
    )
    with torch.no_grad():  # the selected state (train_node_classifier loaded it, in eval mode)
        probs = model(x, edge_index).softmax(dim=-1)
    scores = []
    for test in tests:
        truth, predicted = labels[test].numpy(), probs[test].argmax(dim=-1).numpy()
        scores.append(
            ClassifierScore(
                float((truth == predicted).mean()),
                float(f1_score(truth, predicted, zero_division=0)),
                result.val_accuracy,
                probs[test, 1].numpy() if probs.shape[1] == 2 else None,
                truth,
                predicted,
            )
        )
    return scores


def classifier_inputs(case: str, z: Tensor, edge_index: Tensor, sens: Tensor, public_mask: Tensor) -> Tensor:
    """``[Z, f(s_Q)]`` for case (a), ``Z`` for case (b) (module docstring)."""
    if check_case(case) == "b":
        return z.float()
    return torch.cat([z.float(), known_attribute_features(edge_index, sens, public_mask, z.shape[0])], dim=1)


def attribute_inference(
    case: str,
    z: Tensor,
    edge_index: Tensor,
    sens: Tensor,
    private_mask: Tensor,
    seed: int,
    balance: bool = False,
    score_on: Tensor | None = None,
    progress: ProgressHook | None = None,
) -> ClassifierScore:
    """Infer s on the private nodes from the release and s_Q (module docstring).

    ``score_on`` (a subset of the private nodes; default: all of them) restricts the nodes scored
    (:func:`attribute_inference_on` scores one attacker on several subsets)."""
    subsets = [private_mask if score_on is None else score_on]
    return attribute_inference_on(case, z, edge_index, sens, private_mask, seed, balance, subsets, progress)[0]


def attribute_inference_on(
    case: str,
    z: Tensor,
    edge_index: Tensor,
    sens: Tensor,
    private_mask: Tensor,
    seed: int,
    balance: bool,
    score_on: Sequence[Tensor],
    progress: ProgressHook | None = None,
) -> list[ClassifierScore]:
    """:func:`attribute_inference` with one attacker (trained on the public nodes with ``seed``) scored on
    each subset of the private nodes in ``score_on``: a data owner scores it on held-out private nodes for
    validation and on the others for the test."""
    public = ~private_mask
    if public.sum() == 0 or private_mask.sum() == 0:
        raise ValueError("attribute inference needs both public and private nodes")
    if torch.unique(sens[public]).numel() < 2:
        raise ValueError("the public nodes carry a single sensitive value: nothing to learn from")
    for subset in score_on:
        if subset.shape != private_mask.shape or bool((subset & public).any()) or not bool(subset.any()):
            raise ValueError("score_on must be a non-empty subset of the private nodes")
    g = torch.Generator().manual_seed(seed)
    x = classifier_inputs(case, z, edge_index, sens, public)
    train, val = _split_known(public, sens, g)
    tests = list(score_on)
    if balance:
        train = balanced_mask(train, sens, g)
        tests = [balanced_mask(t, sens, g) for t in tests]
    return fit_and_score_on(case, x, edge_index, sens.long(), train, val, tests, seed, progress=progress)


def utility(
    case: str,
    z: Tensor,
    edge_index: Tensor,
    y: Tensor,
    sens: Tensor,
    private_mask: Tensor,
    train_mask: Tensor,
    val_mask: Tensor,
    test_mask: Tensor,
    seed: int,
) -> ClassifierScore:
    """Node classification of ``y`` with the same classifier and inputs as the attack."""
    x = classifier_inputs(case, z, edge_index, sens, ~private_mask)
    return fit_and_score(case, x, edge_index, y.long(), train_mask, val_mask, test_mask, seed)


@dataclass(frozen=True)
class AttributeParams(AttackParams):
    representation: str = param(
        "hidden",
        "what the attacker reads per node: hidden (the model's hidden layer; "
        "a released embedding), posteriors, or embeddings",
        choices=("hidden", "posteriors", "embeddings"),
    )
    case: str = param(
        "b",
        "a: the attacker also knows the graph A (GCN on [Z, f(s_Q)]); b: it does not (MLP on Z)",
        choices=tuple(CASE_MODELS),
    )
    known_fraction: float = param(
        0.3,
        "share of the nodes whose attribute the attacker knows, when the graph "
        "does not mark them (private_mask: the others)",
        bound="in (0, 1)",
    )
    balance: bool = param(False, "resample the attacker's training and test nodes to equal class counts")


@register_attack
class AttributeAttack(Attack):
    """Attribute inference (Duddu et al. 2020; PPCVGAE §6.2, cases a and b): the attacker reads a
    per-node representation from the target — the released embedding, or the trained model's hidden
    layer or posteriors — knows the sensitive attribute s of some nodes (``truth.private_mask``
    marks the others; else a seeded ``known_fraction``) and trains the case's classifier on them
    (:func:`attribute_inference`); it is scored on the nodes whose s it does not know.  Score: the
    classifier's probability of s = 1; decision: its prediction.  Binary attributes."""

    name = "attribute"
    family = "attribute"
    description = "sensitive-attribute inference from embeddings, hidden layers or posteriors"
    threat = ThreatModel(
        queries="a representation of every node (released embedding, hidden layer or posteriors)",
        knowledge="the sensitive attribute of the known nodes; in case a also the graph A",
    )
    metrics = METRICS
    Params = AttributeParams
    needs_model = False
    needs_sensitive = True

    def known_split(self, target: Target, seed: int) -> torch.Tensor:
        """The nodes whose attribute the attacker does not know (the evaluation nodes)."""
        marked = getattr(target.truth, "private_mask", None)
        if marked is not None:
            return marked.bool()
        n = target.truth.num_nodes
        order = torch.from_numpy(np.random.default_rng(seed).permutation(n))
        private = torch.ones(n, dtype=torch.bool)
        private[order[: int(round(self.params.known_fraction * n))]] = False
        return private

    def run(self, target: Target, seed: int, progress: ProgressHook | None = None) -> AttackResult:
        self.check(target)
        truth = target.truth
        sens = truth.sens.long()
        if torch.unique(sens).numel() != 2:
            raise ValueError(
                f"the attribute attack scores binary attributes; data.sens has {torch.unique(sens).numel()} values"
            )
        z = target.representation(self.params.representation)
        private = self.known_split(target, seed)
        p = self.params
        score = attribute_inference(
            p.case, z, truth.edge_index, sens, private, seed, balance=p.balance, progress=progress
        )
        metrics = attack_metrics(score.scores, score.truth, score.predicted)
        metrics["attack_f1"] = score.f1
        return AttackResult(
            self.name,
            score.scores,
            score.truth,
            score.predicted,
            metrics,
            self.threat_model(target),
            {
                "representation": "embeddings" if target.embeddings is not None else p.representation,
                "case": p.case,
                "known_nodes": int((~private).sum()),
                "evaluated_nodes": int(score.truth.size),
                "attacker_val_accuracy": score.val_accuracy,
            },
        )
