"""Choosing a release parameter on validation, and what that choice costs.

Blink's degree share `degree_share` and HeteDP's ε_f/ε change the release itself, so each
candidate value is a release of the same data: k candidates at ε each spend
k·ε by basic composition — valid only because every candidate draws its own
randomness (``docs/privacy.md``).  :func:`select_on_validation` runs the
candidates, keeps the best validation score and the chosen candidate's
release (which then serves as trial 0's, so it is not released again), and
:meth:`Selection.note` states the cost for the guarantees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from privgraph.accounting import PrivacyGuarantee, Unit
from privgraph.progress import ProgressHook

T = TypeVar("T")


@dataclass
class Selection(Generic[T]):
    """The chosen parameter values, every candidate's validation score, and the chosen release."""

    chosen: dict[str, Any]
    scores: list[tuple[dict[str, Any], float]]
    release: T
    metric: str = "validation accuracy"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def candidates(self) -> int:
        return len(self.scores)

    def note(self, epsilon: float | None) -> str:
        """The selection's privacy cost, for every guarantee of the runs that use it (``None``: releases
        without noise, e.g. PPCVGAE's, which have no guarantee to spend)."""
        chosen = ", ".join(f"{k}={v:g}" for k, v in self.chosen.items())
        k = self.candidates
        if epsilon is None:
            return f"{chosen} was chosen on {self.metric} among {k} candidate releases on trial 0 (without noise)"
        return (
            f"{chosen} was chosen on {self.metric} among {k} candidate releases on trial 0, each at ε = "
            f"{epsilon:g}: the ε stated is their total, {k}×ε = {k * epsilon:g} (basic composition, valid "
            "because every candidate drew its own randomness) on the same data"
        )

    def spent(self, guarantee: PrivacyGuarantee, epsilon: float | None) -> PrivacyGuarantee:
        """``guarantee`` (one candidate's) as what the selection spends on its unit: every candidate released
        it again (:meth:`~privgraph.accounting.PrivacyGuarantee.repeated`), except the node labels, collected
        once and shared by the candidates."""
        if epsilon is None or guarantee.unit == Unit.NODE_LABEL or not guarantee.is_private:
            return guarantee.with_note(self.note(epsilon))
        return guarantee.repeated(self.candidates, self.note(epsilon))


def select_on_validation(
    candidates: Sequence[dict[str, Any]],
    evaluate: Callable[[int, dict[str, Any]], tuple[float, T]],
    metric: str = "validation accuracy",
    progress: ProgressHook | None = None,
    label: str = "choosing",
) -> Selection[T]:
    """``evaluate(i, values)`` releases candidate ``i`` (its own randomness stream) and returns its
    validation score and the release; the first best score wins."""
    if not candidates:
        raise ValueError("no candidates to choose from")
    scores: list[tuple[dict[str, Any], float]] = []
    best: tuple[float, int, T] | None = None
    for i, values in enumerate(candidates):
        if progress is not None:
            progress(label, i, len(candidates))
        score, release = evaluate(i, values)
        scores.append((dict(values), score))
        if best is None or score > best[0]:
            best = (score, i, release)
    if progress is not None:
        progress(label, len(candidates), len(candidates))
    assert best is not None
    return Selection(dict(candidates[best[1]]), scores, best[2], metric)
