"""Node-level membership inference against a node classifier (Duddu et al. 2020, "Quantifying
Privacy Leakage in Graph Embedding", arXiv 2010.00906; "Membership inference attack" in Sajadmanesh's
talk "Privacy-Preserving Deep Learning over Graphs" (2020)).

A trained GNN is more confident on its training nodes than on unseen ones.  The members are the
target's training nodes (``truth.train_mask``), the non-members its test nodes (``truth.test_mask``);
validation nodes, used for model selection, are in neither set.  The evaluation set is balanced:
``n = min(#members, #non-members, max_candidates)`` of each, drawn with ``default_rng(seed)``.

* ``membership-confidence`` (unsupervised): score = the node's highest posterior.
* ``membership-shadow`` (supervised): a shadow model trained like the target on an auxiliary graph
  teaches a binary classifier what members' sorted posterior vectors look like.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from privgraph.attacks.base import (
    Attack,
    AttackParams,
    AttackResult,
    Target,
    ThreatModel,
    fit_quietly,
    register_attack,
)
from privgraph.attacks.metrics import METRICS, attack_metrics, top_k
from privgraph.data import stratified_split
from privgraph.mechanisms import derive_seed
from privgraph.methods.base import param
from privgraph.progress import ProgressHook, Stages

# the shadow attack's stages, as its progress shows them
SHADOW_STAGES = ("training the shadow model on the auxiliary graph", "training the attack classifier")

MIN_SHADOW_NODES = 20


def membership_candidates(
    truth: Data, max_candidates: int | None, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The balanced evaluation set: node indices and their truth (1 = member: ``train_mask``,
    0 = non-member: ``test_mask``), ``min(#members, #non-members, max_candidates)`` of each."""
    train, test = getattr(truth, "train_mask", None), getattr(truth, "test_mask", None)
    if train is None or test is None:
        raise ValueError(
            "membership inference needs the target's split: truth.train_mask (members) and "
            "truth.test_mask (non-members)"
        )
    train, test = train.bool(), test.bool()
    if (train & test).any():
        raise ValueError("truth.train_mask and truth.test_mask overlap: a node cannot be member and non-member")
    members, others = train.nonzero().flatten().numpy(), test.nonzero().flatten().numpy()
    if members.size == 0 or others.size == 0:
        raise ValueError(
            f"membership inference needs members and non-members; the target has {members.size} "
            f"training and {others.size} test nodes"
        )
    n = min(members.size, others.size, max_candidates or members.size)
    nodes = np.concatenate([rng.choice(members, n, replace=False), rng.choice(others, n, replace=False)])
    return nodes, np.repeat([1, 0], n)


def sorted_posteriors(posteriors: Tensor, width: int) -> np.ndarray:
    """Each row sorted in descending order, zero-padded to ``width`` columns (class-agnostic
    features that a shadow with fewer classes can share)."""
    rows = posteriors.sort(dim=1, descending=True).values.double().cpu().numpy()
    return np.pad(rows, ((0, 0), (0, width - rows.shape[1])))


@dataclass(frozen=True)
class MembershipParams(AttackParams):
    max_candidates: int | None = param(
        None, "at most this many members and as many non-members (default: all of the smaller set)", bound=">= 1"
    )


@dataclass(frozen=True)
class ShadowParams(MembershipParams):
    shadow_nodes: int | None = param(
        None,
        "size of the attacker's auxiliary graph, sampled from the nodes the "
        "target did not train on (default: all of them)",
        bound=f">= {MIN_SHADOW_NODES}",  # to split it
    )
    classifier_iterations: int = param(500, "training iterations of the attacker's binary MLP classifier", bound=">= 1")


class MembershipAttack(Attack):
    """Shared by both attacks: the balanced candidates, the scoring and the result."""

    family = "membership"
    metrics = METRICS
    needs_model = True

    def candidates(self, target: Target, seed: int) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
        self.check(target)
        rng = np.random.default_rng(seed)
        return (*membership_candidates(target.truth, self.params.max_candidates, rng), rng)

    def result(
        self, target: Target, scores: np.ndarray, truth: np.ndarray, predicted: np.ndarray, **details: object
    ) -> AttackResult:
        return AttackResult(
            self.name,
            scores,
            truth,
            predicted,
            attack_metrics(scores, truth, predicted),
            self.threat_model(target),
            {"candidates": int(truth.size), "members": int(truth.sum()), **details},
        )


@register_attack
class MembershipConfidence(MembershipAttack):
    """Confidence attack (Duddu et al. 2020; the LPGNN talk): score = the node's highest posterior.
    Decision without membership labels: the attacker knows half the candidates are members and
    thresholds at their median score (the top half are called members)."""

    name = "membership-confidence"
    description = "membership inference from the highest posterior (unsupervised threshold)"
    threat = ThreatModel(
        queries="the posteriors of the candidate nodes (black-box inference API)",
        knowledge="the candidate nodes; that half of them are members (the threshold rule)",
    )
    Params = MembershipParams

    def run(self, target: Target, seed: int, progress: ProgressHook | None = None) -> AttackResult:
        nodes, truth, _ = self.candidates(target, seed)
        scores = target.posteriors()[torch.from_numpy(nodes)].max(dim=1).values.double().cpu().numpy()
        return self.result(
            target,
            scores,
            truth,
            top_k(scores, truth.size // 2),
            decision="member iff the score is in the top half of the candidates (median threshold)",
        )


@register_attack
class MembershipShadow(MembershipAttack):
    """Shadow attack (Duddu et al. 2020; the LPGNN talk): the attacker holds an auxiliary graph disjoint
    from the target's training nodes and from the evaluated candidates (features, labels, edges;
    by default every other node: the validation nodes and the unevaluated test nodes), splits it, trains a shadow model
    with the target's method, ε and recipe (``target.shadow``), and trains a binary MLP on the
    shadow's sorted posteriors of its own members (train nodes) vs non-members (test nodes),
    balanced.  Score: the MLP's probability of membership on the target's sorted posteriors;
    decision: the MLP's own (probability ≥ 0.5)."""

    name = "membership-shadow"
    description = "membership inference by a classifier trained on a shadow model's posteriors"
    threat = ThreatModel(
        queries="the posteriors of the candidate nodes (black-box inference API)",
        knowledge="an auxiliary graph disjoint from the target's training nodes (features, labels, "
        "edges) and the target's method, ε and training recipe (to train a shadow model)",
    )
    Params = ShadowParams

    def auxiliary_graph(self, truth: Data, candidates: np.ndarray, rng: np.random.Generator, seed: int) -> Data:
        """The subgraph induced by (a sample of) the nodes the target did not train on and the attack
        does not evaluate (else the attacker would know those candidates are non-members), with its
        own split."""
        outside = ~truth.train_mask.bool()
        outside[torch.from_numpy(candidates)] = False
        available = outside.nonzero().flatten().numpy()
        size = self.params.shadow_nodes
        if size is not None and size > available.size:
            raise ValueError(
                f"shadow_nodes={size} exceeds the {available.size} nodes the target did not train on "
                "and the attack does not evaluate"
            )
        nodes = np.sort(rng.choice(available, size, replace=False)) if size is not None else available
        aux = truth.subgraph(torch.from_numpy(nodes))
        counts = torch.bincount(aux.y[aux.y >= 0])
        if nodes.size < MIN_SHADOW_NODES or (counts[counts > 0] < 2).any():
            raise ValueError(
                f"the auxiliary graph ({nodes.size} nodes, class counts {counts.tolist()}) is too small "
                f"to split: need at least {MIN_SHADOW_NODES} nodes and 2 per class"
            )
        return stratified_split(aux, 0.5, 0.25, seed=seed)

    def run(self, target: Target, seed: int, progress: ProgressHook | None = None) -> AttackResult:
        from sklearn.neural_network import MLPClassifier  # on use: keeps the run's start light

        nodes, truth, rng = self.candidates(target, seed)
        if target.shadow is None:
            raise ValueError(
                f"the {target.method} target cannot train a shadow model (target.shadow is None); "
                "use membership-confidence"
            )
        stages = Stages(progress, f"{self.name} attack", SHADOW_STAGES)
        stages.start(SHADOW_STAGES[0])
        aux = self.auxiliary_graph(target.truth, nodes, rng, derive_seed(seed, 1))
        shadow = target.shadow(aux, derive_seed(seed, 2))
        stages.start(SHADOW_STAGES[1])
        s_nodes, s_truth = membership_candidates(aux, None, rng)
        s_post, t_post = shadow.posteriors()[torch.from_numpy(s_nodes)], target.posteriors()[torch.from_numpy(nodes)]
        width = max(s_post.shape[1], t_post.shape[1])
        clf = MLPClassifier(
            hidden_layer_sizes=(64,), max_iter=self.params.classifier_iterations, random_state=derive_seed(seed, 3)
        )
        features = sorted_posteriors(s_post, width)
        fit_quietly(clf, features, s_truth)
        scores = clf.predict_proba(sorted_posteriors(t_post, width))[:, 1]
        stages.finish()
        return self.result(
            target,
            scores,
            truth,
            (scores >= 0.5).astype(int),
            decision="the attack classifier's own (membership probability >= 0.5)",
            shadow_nodes=int(aux.num_nodes),
            shadow_edges=int(aux.edge_index.shape[1]),
            shadow_candidates=int(s_truth.size),
            attack_classifier_train_accuracy=float(clf.score(features, s_truth)),
            **{f"shadow_{k}": float(v) for k, v in shadow.utility.items()},
        )


__all__ = [
    "MembershipAttack",
    "MembershipConfidence",
    "MembershipParams",
    "MembershipShadow",
    "ShadowParams",
    "membership_candidates",
    "sorted_posteriors",
]
