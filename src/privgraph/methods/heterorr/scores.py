"""FeatureRR's per-feature budget shares (HeteroRR §III-A, eq. 5–7, Alg. 1 lines 4–6).

* Importance ``α_i = |SHAP(z_i)| / ‖SHAP(z)‖₁`` (eq. 6): mean absolute SHAP value
  (``shap.LinearExplainer``, summed over classes) of a logistic-regression model
  trained on *public* nodes only — the paper's "model trained on a publicly
  available dataset"; no private feature vector is read.
* Sensitivity ``β_i = |z_i − ẑ_i| / ‖z − ẑ‖₁`` (eq. 5), with ``ẑ = g(x̂)`` the
  embedding of the input whose sensitive features are masked (set to 0),
  aggregated over the public nodes.  The embedding ``g`` is the identity here
  (node features are used as they are); without declared sensitive features
  the sensitivity is uniform (``β_i = 1/d``), and the release says so.
* ``θ_i = γα_i + (1−γ)[β_min + (β_max − β_i)]`` (eq. 7), normalised to sum to 1.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import torch

_IMPORTANCE: dict[str, np.ndarray] = {}  # importance_scores' memo: digest of the public nodes' x and y → α
_IMPORTANCE_SIZE = 64


def importance_scores(x_public: torch.Tensor, y_public: torch.Tensor, seed: int = 0) -> np.ndarray:
    """α of eq. 6 from a logistic regression on public nodes, explained by ``shap``.

    Memoised on the public nodes' features and labels: the fit (lbfgs draws nothing, so ``seed`` cannot change
    it) and its linear SHAP values are deterministic, so repeated releases of one graph fit once."""
    x = np.ascontiguousarray(x_public.detach().cpu().numpy().astype(np.float64))
    y = np.ascontiguousarray(y_public.detach().cpu().numpy())
    if x.shape[0] < 2 or np.unique(y).size < 2:
        raise ValueError("importance scores need at least two public nodes of two different classes")
    key = hashlib.sha256(b"|".join([str((x.shape, y.dtype.str)).encode(), x.tobytes(), y.tobytes()])).hexdigest()
    if key not in _IMPORTANCE:
        if len(_IMPORTANCE) >= _IMPORTANCE_SIZE:
            _IMPORTANCE.pop(next(iter(_IMPORTANCE)))  # the oldest
        _IMPORTANCE[key] = _importance(x, y)
    return _IMPORTANCE[key].copy()


def _importance(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """α of eq. 6, computed (:func:`importance_scores` memoises it)."""
    import shap
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(solver="lbfgs", max_iter=1000).fit(x, y)
    values = np.abs(np.asarray(shap.LinearExplainer(model, x).shap_values(x)))
    if values.ndim == 3:  # (nodes, features, classes)
        values = values.sum(axis=2)
    per_feature = values.mean(axis=0)
    total = per_feature.sum()
    return per_feature / total if total > 0 else np.full(x.shape[1], 1.0 / x.shape[1])


def sensitivity_scores(x_public: torch.Tensor, sensitive: Sequence[int] | None) -> tuple[np.ndarray, bool]:
    """β of eq. 5 with the identity embedding; returns ``(β, declared)`` (uniform when none declared)."""
    d = x_public.shape[1]
    if not sensitive:
        return np.full(d, 1.0 / d), False
    idx = np.asarray(sorted(set(int(i) for i in sensitive)), dtype=np.int64)
    if idx.min() < 0 or idx.max() >= d:
        raise ValueError(f"sensitive feature indices must lie in [0, {d}), got {list(sensitive)}")
    x = x_public.detach().cpu().numpy().astype(np.float64)
    masked = x.copy()
    masked[:, idx] = 0.0
    change = np.abs(x - masked).sum(axis=0)  # Σ over public nodes of |z_i − ẑ_i|
    total = change.sum()
    if total == 0:
        return np.full(d, 1.0 / d), False
    return change / total, True


def check_gamma(gamma: float) -> float:
    """γ of eq. 7 must lie in [0, 1]."""
    gamma = float(gamma)
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    return gamma


def budget_shares(alpha: np.ndarray, beta: np.ndarray, gamma: float) -> np.ndarray:
    """θ of eq. 7, normalised (Alg. 1, line 5)."""
    gamma = check_gamma(gamma)
    alpha, beta = np.asarray(alpha, np.float64), np.asarray(beta, np.float64)
    if alpha.shape != beta.shape:
        raise ValueError("importance and sensitivity scores must have one entry per feature each")
    theta = gamma * alpha + (1.0 - gamma) * (beta.min() + (beta.max() - beta))
    total = theta.sum()
    if not total > 0:
        return np.full(alpha.size, 1.0 / alpha.size)
    return theta / total
