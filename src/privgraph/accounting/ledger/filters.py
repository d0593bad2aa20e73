"""The ledger as a privacy filter: a unit's releases held to its budget when each ε (each release) is chosen
after seeing the earlier outputs (:func:`filter_total`, :func:`filter_fits`).

A data owner picks the next release after the last one, so the fixed-sequence totals of
:func:`~privgraph.accounting.ledger.composition.compose` (the exact Gaussian, RDP and advanced composition of a
sequence fixed in advance) do not bound what the ledger lets through.  A filter does: it refuses the release that
would take the unit over its budget (ε_g, δ_g), fixed in advance, and the whole interaction is (ε_g, δ_g)-DP for
the unit.  Two certificates, each a filter; a release is accepted while either holds:

* **basic** — Σ ε_i ≤ ε_g and Σ δ_i ≤ δ_b: basic composition is a filter for adaptively chosen (ε_i, δ_i)
  (Rogers, Roth, Ullman & Vadhan 2016).  Every release can use it.
* **Rényi** — for an order α of the fixed grid Λ (:data:`~privgraph.accounting.rdp.RDP_ORDERS`), Σ ρ_i(α) with
  ρ_i the release's RDP curve: an adaptively chosen sequence whose RDP at α stays within B is (α, B)-RDP
  (Feldman & Zrnic 2021, the Rényi filter), hence (ε, δ_R/|Λ|)-DP by the RDP conversion (Canonne, Kamath & Steinke 2020,
  Prop. 12); the release is accepted while some order's ε fits.  Curves: a Gaussian's declared event (its
  noise multiplier on the whole data or a Poisson sample: the RDP accountant's curve), a pure ε-DP release's
  min(ε, αε²/2) (Bun & Steinke 2016, Prop. 3.3: the fully adaptive form of advanced composition).  A release with
  neither ((ε, δ) alone: GAP-NDP's accounting, LapGraph, ...) leaves basic composition only.

Their union is a filter of δ_b + δ_R (an interaction's outputs are those of the certificate that accepted every
release in it, the orders' δ_R/|Λ| summed over Λ).  The δ is split in advance, from the budget alone: a δ budget
gives δ_b = δ_R = δ_g/2; an ε-only budget limits no δ (δ_b unlimited) and has a Rényi certificate only at the
ledger's ``advanced_delta`` δ′ (δ_R = δ′).  A unit's reported total is the certificate with the smaller ε, and its
rule says which; the filter's total is never below dp-accounting's for the same sequence fixed in advance.  The
guarantee needs the budget fixed before the first release: :meth:`~privgraph.accounting.Ledger.set_budget` after
releases starts a new filter on the same data (its releases still count).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from privgraph.accounting.budget import Budget
from privgraph.accounting.ledger.spend import Spend

BASIC_FILTER = "basic composition filter (adaptive ε; Rogers, Roth, Ullman & Vadhan 2016)"
RENYI_FILTER = "Rényi filter (adaptive ε; Feldman & Zrnic 2021)"
FILTERS = (
    f"the smaller of the {BASIC_FILTER} (Σ ε, Σ δ within half a δ budget) and the {RENYI_FILTER} of the Gaussian "
    "and pure releases (at half the δ budget, or δ′ for an ε-only budget); basic alone where a release has no "
    "RDP curve"
)


def filter_deltas(budget: Budget | None, advanced_delta: float | None) -> tuple[float | None, float | None]:
    """(δ_b: the δ basic composition may spend, None: not limited; δ_R: the Rényi certificate's δ, None: none)."""
    if budget is not None and budget.delta < 1:
        return budget.delta / 2, budget.delta / 2
    return None, advanced_delta


def renyi_epsilon(spends: Iterable[Spend], delta: float) -> float:
    """ε of the Rényi certificate at δ (the δ split over the grid's orders), ∞ when a release has no RDP curve."""
    import numpy as np

    from privgraph.accounting.rdp import RDP_ORDERS, rdp_orders, rdp_to_epsilon

    gaussian: Counter[tuple[float, float]] = Counter()
    pure: Counter[float] = Counter()
    for s in spends:
        if not math.isfinite(s.epsilon):
            return math.inf
        if s.event is not None:
            gaussian[(s.event["noise_multiplier"], s.event["sampling_rate"])] += s.event["count"]
        elif s.delta == 0:
            pure[s.epsilon] += 1
        else:
            return math.inf  # (ε, δ) alone: no curve
    orders = rdp_orders(1.0, 1.0)[0]  # the fixed grid (the curve of z = 1 is not used)
    total = np.zeros_like(orders)
    with np.errstate(over="ignore", invalid="ignore"):
        for (z, q), count in gaussian.items():
            total = total + count * rdp_orders(z, q)[1]
        for eps, count in pure.items():
            total = total + count * np.minimum(eps, orders * eps * eps / 2)
    total = np.where(np.isnan(total), np.inf, total)
    return rdp_to_epsilon(orders, total, delta / len(RDP_ORDERS))


def _certificates(
    spends: list[Spend], budget: Budget | None, advanced_delta: float | None
) -> list[tuple[float, float, str, bool]]:
    """Each certificate's (ε, δ, rule, whether its δ fits)."""
    delta_b, delta_r = filter_deltas(budget, advanced_delta)
    eps = sum(s.epsilon for s in spends)
    delta = min(1.0, sum(s.delta for s in spends))
    n = len(spends)
    out = [(eps, delta, f"{BASIC_FILTER} over {n}", delta_b is None or delta <= delta_b * (1 + 1e-12))]
    if delta_r is not None and spends:
        rule = f"{RENYI_FILTER} over {n}, {len(_orders())} orders at δ = {delta_r:g}"
        out.append((renyi_epsilon(spends, delta_r), delta_r, rule, True))
    return out


def _orders() -> tuple[float, ...]:
    from privgraph.accounting.rdp import RDP_ORDERS

    return RDP_ORDERS


def filter_total(
    spends: Iterable[Spend], budget: Budget | None = None, advanced_delta: float | None = None
) -> tuple[float, float, str]:
    """(ε, δ, rule) of a unit's releases as the filter totals them: the certificate of smaller ε whose δ fits."""
    spends = list(spends)
    if not spends:
        return 0.0, 0.0, "nothing spent"
    if any(not math.isfinite(s.epsilon) for s in spends):
        return math.inf, min(1.0, sum(s.delta for s in spends)), "not protected (a release with ε = ∞)"
    certs = _certificates(spends, budget, advanced_delta)
    fitting = [c for c in certs if c[3] and math.isfinite(c[0])] or certs[:1]
    eps, delta, rule, _ = min(fitting, key=lambda c: c[0])
    return eps, delta, rule


def filter_fits(spends: Iterable[Spend], budget: Budget, advanced_delta: float | None = None) -> bool:
    """Whether the filter accepts ``spends`` (the last one the release asked for) under ``budget``."""
    spends = list(spends)
    if any(not math.isfinite(s.epsilon) for s in spends):
        return False
    tol = 1e-12 * max(1.0, budget.epsilon)  # ten releases at ε = 0.1 fit a budget of 1
    return any(ok and eps <= budget.epsilon + tol for eps, _, _, ok in _certificates(spends, budget, advanced_delta))


__all__ = ["BASIC_FILTER", "FILTERS", "RENYI_FILTER", "filter_deltas", "filter_fits", "filter_total", "renyi_epsilon"]
