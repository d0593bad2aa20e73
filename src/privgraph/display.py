"""How a metric is written in every table (``run``, ``attack``, ``compare``, ``demo``): an AUC as a fraction
(``0.82``: 0.5 = chance), the rates (accuracy, F1, TPR, advantage) as a percentage (``92.3``)."""

from __future__ import annotations

import math


def is_auc(metric: str) -> bool:
    """An area under the ROC curve (``attack_auc``, ``roc_auc``): written as a fraction, 0.5 = chance."""
    return metric == "auc" or metric.endswith("_auc")


def format_metric(metric: str, mean: float, half: float = math.nan) -> str:
    """``mean`` (± ``half``, the 95 % CI's half-width, unless NaN): an AUC as ``0.82 ± 0.02``, any other
    metric as a percentage ``92.3 ± 1.4``."""
    scale, digits = (1, 2) if is_auc(metric) else (100, 1)
    text = f"{scale * mean:.{digits}f}"
    return text if math.isnan(half) else f"{text} ± {scale * half:.{digits}f}"


UNITS_NOTE = "accuracy and rates in %, AUC as a fraction (0.5 = chance)"
