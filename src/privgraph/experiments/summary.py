"""Aggregation of trials: mean, standard deviation and 95% confidence interval."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
from scipy import special  # stdtrit, not scipy.stats: a run's start stays light

from privgraph.experiments.store import TrialRecord


def mean_ci(values: Iterable[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, sample std, half-width of the Student-t confidence interval)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        raise ValueError("no values")
    mean = float(v.mean())
    if v.size == 1:
        return mean, 0.0, float("nan")
    std = float(v.std(ddof=1))
    half = float(special.stdtrit(v.size - 1, 0.5 + level / 2) * std / math.sqrt(v.size))  # Student-t quantile
    return mean, std, half


def releases(r: TrialRecord) -> int:
    """How many releases of the same data a trial's setting made: the candidates of a selection on
    validation (each at the setting's ε, so it spent ``releases``·ε per unit), else 1."""
    return max(1, int((r.config or {}).get("selection_releases") or 1))


def spent_epsilon(r: TrialRecord) -> float | None:
    """The total ε the setting of ``r`` spent: its ε times :func:`releases` (None without noise)."""
    return None if r.epsilon is None else r.epsilon * releases(r)


def setting_key(r: TrialRecord) -> tuple:
    return (
        r.dataset,
        r.method,
        r.model,
        r.mechanism,
        r.epsilon,
        r.label_epsilon,
        (r.config.get("attack") or {}).get("name"),
    )


def summarize(records: Iterable[TrialRecord], metric: str = "accuracy") -> list[dict[str, Any]]:
    """One summary row per setting (dataset, method, model, mechanism, ε, ε_y)."""
    groups: dict[tuple, list[TrialRecord]] = defaultdict(list)
    for r in records:
        groups[setting_key(r)].append(r)
    rows = []
    for (dataset, method, model, mechanism, eps, eps_y, _), rs in groups.items():
        mean, std, half = mean_ci(r.metrics[metric] for r in rs)
        rows.append(
            {
                "dataset": dataset,
                "method": method,
                "model": model,
                "mechanism": mechanism,
                "epsilon": eps,
                "epsilon_spent": spent_epsilon(rs[0]),  # eps × releases: what a tuned setting spent per unit
                "releases": releases(rs[0]),
                "label_epsilon": eps_y,
                "metric": metric,
                "mean": mean,
                "std": std,
                "ci95": half,
                "trials": len(rs),
                "hyperparameters": rs[0].config.get("hyperparameters"),
                "tuned": rs[0].config.get("tuned", False),
                "release_options": rs[0].config.get("release_options") or {},
                "privacy": rs[0].guarantee,
            }
        )
    return rows
