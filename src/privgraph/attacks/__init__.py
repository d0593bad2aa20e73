"""Attacks that audit a method: membership inference, link stealing, LinkTeller, a link predictor's own
score (link-score), attribute inference.

Every attack is registered in :data:`ATTACKS` (``privgraph attack NAME``, :func:`privgraph.attack`),
runs against a :class:`Target` (a model trained on a method's release as ``privgraph run`` trains
it, or a released embedding), states its :class:`ThreatModel`, and returns an
:class:`AttackResult` scored by :func:`~privgraph.attacks.metrics.attack_metrics`.  The targets of the
heterogeneous methods (HeteDP, RGCN, HGT, metapath2vec) and the views of their graph the attacks read:
:mod:`privgraph.attacks.hetero`.
"""

from privgraph.attacks import link, membership  # noqa: E402, F401 (the modules register their attacks)
from privgraph.attacks.attribute import (
    CASE_MODELS,
    AttributeAttack,
    ClassifierScore,
    attribute_inference,
    balanced_mask,
    check_case,
    known_attribute_features,
    utility,
)
from privgraph.attacks.base import ATTACKS, Attack, AttackParams, AttackResult, Target, ThreatModel, get_attack
from privgraph.attacks.metrics import LINK_METRICS, METRICS, attack_metrics, top_k, tpr_at_fpr
from privgraph.attacks.target import embedding_target, target_from_fit, train_target

__all__ = [
    "ATTACKS",
    "Attack",
    "AttackParams",
    "AttackResult",
    "AttributeAttack",
    "CASE_MODELS",
    "link",
    "membership",
    "ClassifierScore",
    "LINK_METRICS",
    "METRICS",
    "Target",
    "ThreatModel",
    "attack_metrics",
    "attribute_inference",
    "balanced_mask",
    "check_case",
    "embedding_target",
    "get_attack",
    "known_attribute_features",
    "target_from_fit",
    "top_k",
    "tpr_at_fpr",
    "train_target",
    "utility",
]
