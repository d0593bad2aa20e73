"""One scoring of every attack: ROC-AUC, the attacker's accuracy and advantage, TPR at low FPR,
and, for link attacks, precision and recall at the attacker's estimated number of links.

Conventions: ``scores`` are higher for the positive class (member, link, s = 1); ``truth`` is
0/1; ``predicted`` is the attacker's own decision (a rule it can apply without the ground
truth, stated by each attack).  The advantage is TPR − FPR of that decision (Yeom et al.
2018), which on a balanced evaluation set equals Duddu et al.'s 2·(Acc − 0.5); unlike
2·(Acc − 0.5) it stays meaningful on imbalanced sets (LinkTeller's all pairs).
"""

from __future__ import annotations

import numpy as np

LOW_FPR = {"attack_tpr_at_1fpr": 0.01, "attack_tpr_at_01fpr": 0.001}
METRICS = ("attack_auc", "attack_accuracy", "attack_advantage", *LOW_FPR)
LINK_METRICS = (*METRICS, "attack_precision", "attack_recall")


def _arrays(scores, truth) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=float).ravel()
    t = np.asarray(truth).ravel().astype(int)
    if s.shape != t.shape:
        raise ValueError(f"scores and truth differ in length ({s.size} vs {t.size})")
    if not np.isin(t, (0, 1)).all():
        raise ValueError("truth must be 0/1")
    if t.min() == t.max():
        raise ValueError("the evaluation set holds a single class: an attack cannot be scored on it")
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN or infinity")
    return s, t


def top_k(scores, k: int) -> np.ndarray:
    """0/1 decision: the ``k`` highest scores are positive (ties broken by position, stably)."""
    s = np.asarray(scores, dtype=float).ravel()
    if not 0 <= k <= s.size:
        raise ValueError(f"k must lie in [0, {s.size}], got {k}")
    out = np.zeros(s.size, dtype=int)
    out[np.argsort(-s, kind="stable")[:k]] = 1
    return out


def tpr_at_fpr(scores, truth, fpr: float) -> float:
    """The highest TPR among the thresholds whose FPR is at most ``fpr`` (no interpolation)."""
    from sklearn.metrics import roc_curve  # on use: keeps the run's start light

    s, t = _arrays(scores, truth)
    f, tp, _ = roc_curve(t, s)
    return float(tp[f <= fpr + 1e-12].max())


def attack_metrics(scores, truth, predicted, k: int | None = None) -> dict[str, float]:
    """The shared metrics (module docstring); ``k`` (link attacks): also precision and recall of
    the top ``k`` scores, ``k`` being the attacker's estimate of the number of links."""
    from sklearn.metrics import roc_auc_score  # on use: keeps the run's start light

    s, t = _arrays(scores, truth)
    p = np.asarray(predicted).ravel().astype(int)
    if p.shape != t.shape:
        raise ValueError("predicted and truth differ in length")
    tpr = float(p[t == 1].mean())
    fpr = float(p[t == 0].mean())
    out = {
        "attack_auc": float(roc_auc_score(t, s)),
        "attack_accuracy": float((p == t).mean()),
        "attack_advantage": tpr - fpr,
    }
    out.update({name: tpr_at_fpr(s, t, level) for name, level in LOW_FPR.items()})
    if k is not None:
        hit = top_k(s, k)
        out["attack_precision"] = float(t[hit == 1].mean()) if k > 0 else float("nan")
        out["attack_recall"] = float(hit[t == 1].mean())
    return out


__all__ = ["LINK_METRICS", "LOW_FPR", "METRICS", "attack_metrics", "top_k", "tpr_at_fpr"]
