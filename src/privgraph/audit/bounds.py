"""From a distinguishing test's errors to a lower bound on ε (Jagielski et al. 2020, §3).

An (ε, δ)-DP mechanism M and neighbouring inputs D₀, D₁: any test that says
"D₁" on a region S has FPR = P[M(D₀) ∈ S] and FNR = P[M(D₁) ∉ S] with

    FPR + e^ε·FNR ≥ 1 − δ   and   FNR + e^ε·FPR ≥ 1 − δ,

so ε ≥ log((1 − δ − FNR)/FPR) and ε ≥ log((1 − δ − FPR)/FNR).  With upper
confidence bounds on both rates (Clopper–Pearson, each at level α/2 so that
both hold together with probability ≥ 1 − α), the larger of the two
right-hand sides is a (1 − α)-confidence lower bound ε_LB.

The test's threshold (and its direction) is chosen on one half of the
samples (:func:`choose_threshold`) and the rates are counted on the other
(:func:`evaluate_threshold`): choosing and estimating on the same samples
would bias the rates down and the bound up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95


def clopper_pearson_upper(errors: np.ndarray | int, trials: int, alpha: float) -> np.ndarray:
    """One-sided (1 − ``alpha``) Clopper–Pearson upper bound on a rate from ``errors`` out of ``trials``."""
    from scipy.stats import beta  # on use: keeps the run's start light

    k = np.asarray(errors, dtype=np.float64)
    if trials <= 0:
        raise ValueError("need at least one trial")
    upper = beta.ppf(1.0 - alpha, k + 1.0, trials - k)
    return np.where(k >= trials, 1.0, upper)


def epsilon_from_rates(fpr: np.ndarray | float, fnr: np.ndarray | float, delta: float) -> np.ndarray:
    """max(log((1 − δ − FNR)/FPR), log((1 − δ − FPR)/FNR), 0) for (upper bounds on) the two rates."""
    fpr, fnr = np.asarray(fpr, dtype=np.float64), np.asarray(fnr, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where((1 - delta - fnr > 0) & (fpr > 0), np.log((1 - delta - fnr) / fpr), 0.0)
        b = np.where((1 - delta - fpr > 0) & (fnr > 0), np.log((1 - delta - fpr) / fnr), 0.0)
    return np.maximum(np.maximum(a, b), 0.0)


def epsilon_lower_bound(
    false_positives: np.ndarray | int,
    negatives: int,
    false_negatives: np.ndarray | int,
    positives: int,
    delta: float = 0.0,
    confidence: float = CONFIDENCE,
) -> np.ndarray:
    """The (``confidence``) lower bound ε_LB from the error counts of one test (module docstring):
    ``false_positives`` out of ``negatives`` samples of D₀, ``false_negatives`` out of ``positives`` of D₁."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must lie in [0, 1), got {delta}")
    alpha = (1.0 - confidence) / 2.0  # Bonferroni: both rates' bounds hold together
    fpr = clopper_pearson_upper(false_positives, negatives, alpha)
    fnr = clopper_pearson_upper(false_negatives, positives, alpha)
    return epsilon_from_rates(fpr, fnr, delta)


@dataclass(frozen=True)
class Threshold:
    """The test "say D₁ when ``sign``·score ≥ ``sign``·``value``"."""

    value: float
    sign: int  # +1: high scores mean D₁; −1: low scores do

    def says_one(self, scores: np.ndarray) -> np.ndarray:
        return self.sign * np.asarray(scores, dtype=np.float64) >= self.sign * self.value


def _candidate_errors(s0: np.ndarray, s1: np.ndarray, sign: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every distinct value t of sign·score: false positives (#s0 ≥ t) and false negatives (#s1 < t)."""
    a, b = np.sort(sign * s0), np.sort(sign * s1)
    values = np.unique(np.concatenate([a, b]))
    fp = a.size - np.searchsorted(a, values, side="left")
    fn = np.searchsorted(b, values, side="left")
    return values, fp, fn


def choose_threshold(
    scores0: np.ndarray, scores1: np.ndarray, delta: float = 0.0, confidence: float = CONFIDENCE
) -> Threshold:
    """The threshold and direction maximising ε_LB on these (selection) samples."""
    s0, s1 = np.asarray(scores0, dtype=np.float64), np.asarray(scores1, dtype=np.float64)
    if s0.size == 0 or s1.size == 0:
        raise ValueError("need samples of both inputs")
    best, choice = -1.0, Threshold(math.inf, 1)
    for sign in (1, -1):
        values, fp, fn = _candidate_errors(s0, s1, sign)
        bounds = epsilon_lower_bound(fp, s0.size, fn, s1.size, delta, confidence)
        i = int(np.argmax(bounds))
        if bounds[i] > best:
            best, choice = float(bounds[i]), Threshold(float(sign * values[i]), sign)
    return choice


@dataclass(frozen=True)
class TestOutcome:
    """A threshold's errors on the evaluation samples and the bound they give."""

    threshold: Threshold
    false_positives: int
    negatives: int
    false_negatives: int
    positives: int
    epsilon_lb: float

    @property
    def fpr(self) -> float:
        return self.false_positives / self.negatives

    @property
    def fnr(self) -> float:
        return self.false_negatives / self.positives


def evaluate_threshold(
    threshold: Threshold, scores0: np.ndarray, scores1: np.ndarray, delta: float = 0.0, confidence: float = CONFIDENCE
) -> TestOutcome:
    """Count the threshold's errors on fresh (evaluation) samples and turn them into ε_LB."""
    fp = int(threshold.says_one(scores0).sum())
    fn = int((~threshold.says_one(scores1)).sum())
    eps = float(epsilon_lower_bound(fp, len(scores0), fn, len(scores1), delta, confidence))
    return TestOutcome(threshold, fp, len(scores0), fn, len(scores1), eps)


def split_half_test(
    scores0: np.ndarray, scores1: np.ndarray, delta: float = 0.0, confidence: float = CONFIDENCE
) -> tuple[TestOutcome, float]:
    """The audit's test on one sample of scores per input: the threshold chosen on the first half of
    each, its errors counted on the second half.  Returns the outcome and the ceiling (the largest
    ε_LB that many evaluation samples can show)."""
    h0, h1 = len(scores0) // 2, len(scores1) // 2
    threshold = choose_threshold(scores0[:h0], scores1[:h1], delta, confidence)
    outcome = evaluate_threshold(threshold, scores0[h0:], scores1[h1:], delta, confidence)
    return outcome, max_epsilon_lower_bound(min(outcome.negatives, outcome.positives), delta, confidence)


def max_epsilon_lower_bound(samples: int, delta: float = 0.0, confidence: float = CONFIDENCE) -> float:
    """The largest ε_LB any test can show with ``samples`` evaluation samples per input (no errors at
    all): the audit's ceiling, reported beside every bound."""
    return float(epsilon_lower_bound(0, samples, 0, samples, delta, confidence))
