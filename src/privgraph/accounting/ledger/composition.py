"""Composition of one unit's spends over a ledger's releases (:func:`compose`).

One unit's spends fall in three groups whose totals add up (basic composition across
the groups, sound for any mix):

* **Gaussian releases with public parameters** — each spend carries the event its method declared before
  the noise, ``{"kind": "gaussian", "noise_multiplier": z, "count": k, "sampling_rate": q}`` (z = noise
  std over L2 sensitivity, from ε, δ and public parameters only), totalled at δ_G = Σ δ_i of the group.
  On the whole data (q = 1) they compose exactly: Gaussians of multipliers z_i are one Gaussian of
  μ = √(Σ k_i/z_i²) (μ-GDP, Dong, Roth & Su 2022), whose ε(δ_G) is exact (Balle & Wang 2018;
  :func:`~privgraph.accounting.rdp.gaussian_epsilon`, what dp-accounting's PLD accountant approaches).
  With a Poisson-subsampled one, their Rényi-DP curves add up (Mironov 2017, Prop. 1; Mironov, Talwar &
  Zhang 2019) and convert to ε (Canonne, Kamath & Steinke 2020), the computation of dp-accounting's
  ``RdpAccountant`` (:mod:`privgraph.accounting.rdp`).  The total is the smaller of that and basic
  composition.
* **Pure ε-DP releases** (δ = 0): basic composition (Σ ε_i, 0), or — with the ledger's ``advanced_delta``
  δ′ — advanced composition when it is smaller: ε = Σ ε_i·tanh(ε_i/2) + √(2 ln(1/δ′) Σ ε_i²) at δ = δ′
  (Kairouz, Oh & Viswanath 2015, Thm. 3.5; the heterogeneous form of Dwork, Rothblum & Vadhan 2010).
* **Everything else** (an (ε, δ) release without an event, a Gaussian whose parameters are not public, a
  spend the report raised above its declaration): basic sequential composition (Dwork & Roth, Thm. 3.16):
  ε and δ add up, δ capped at 1.

These are the totals of a sequence fixed in advance.  The ledger's budgets use their privacy-filter forms,
valid when each release is chosen after seeing the earlier outputs
(:mod:`~privgraph.accounting.ledger.filters`); :func:`compose` states what the same releases would total had
they been fixed in advance.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from privgraph.accounting.ledger.spend import Spend

BASIC = "basic sequential composition (ε and δ add up; Dwork & Roth, Thm. 3.16)"
COMPOSITION = BASIC  # the rule where nothing tighter applies
RDP = "Rényi DP of the Gaussian releases (dp-accounting's RdpAccountant computation)"
GDP = "exact composition of the Gaussian releases on the whole data (μ-GDP, the analytic Gaussian's ε(δ))"
ADVANCED = "advanced composition of the pure ε-DP releases at δ′ (Kairouz, Oh & Viswanath 2015, Thm. 3.5)"


def advanced_epsilon(epsilons: Iterable[float], delta_prime: float) -> float:
    """ε of the adaptive composition of pure ε_i-DP mechanisms at δ′ (Kairouz, Oh & Viswanath 2015, Thm. 3.5):
    Σ ε_i·tanh(ε_i/2) + √(2 ln(1/δ′)·Σ ε_i²)."""
    eps = [float(e) for e in epsilons]
    if not 0 < delta_prime < 1:
        raise ValueError(f"advanced composition needs δ′ in (0, 1), got {delta_prime}")
    return sum(e * math.tanh(e / 2) for e in eps) + math.sqrt(2 * math.log(1 / delta_prime) * sum(e * e for e in eps))


def compose(spends: Iterable[Spend], advanced_delta: float | None = None) -> tuple[float, float, str]:
    """(ε, δ, rule) of one unit's spends (module docstring): the Gaussian releases by RDP, the pure ones by
    advanced composition at ``advanced_delta`` when smaller, the rest by basic composition; the groups add up."""
    spends = list(spends)
    if any(not math.isfinite(s.epsilon) for s in spends):
        return math.inf, min(1.0, sum(s.delta for s in spends)), "not protected (a release with ε = ∞)"
    kinds = [
        "gaussian" if s.event is not None and s.epsilon > 0 else "pure" if s.delta == 0 else "other" for s in spends
    ]
    gaussian = [s for s, k in zip(spends, kinds) if k == "gaussian"]
    pure = [s for s, k in zip(spends, kinds) if k == "pure" and s.epsilon > 0]
    other = [s for s, k in zip(spends, kinds) if k == "other"]
    eps = sum(s.epsilon for s in other)
    delta = sum(s.delta for s in other)
    rules = [f"basic over {len(other)}"] if other else []
    if gaussian:
        g_eps, g_delta, rule = _compose_gaussian(gaussian)
        rules.append(rule)
        eps, delta = eps + g_eps, delta + g_delta
    if pure:
        p_eps, p_delta = sum(s.epsilon for s in pure), 0.0
        rule = f"basic over {len(pure)} pure"
        if advanced_delta is not None and len(pure) > 1:
            adv = advanced_epsilon([s.epsilon for s in pure], advanced_delta)
            if adv < p_eps:
                p_eps, p_delta, rule = adv, advanced_delta, f"advanced at δ′ = {advanced_delta:g} over {len(pure)} pure"
        rules.append(rule)
        eps, delta = eps + p_eps, delta + p_delta
    return eps, min(1.0, delta), " + ".join(rules) if rules else "nothing spent"


def _compose_gaussian(spends: list[Spend]) -> tuple[float, float, str]:
    """(ε, δ_G, rule) of Gaussian releases at δ_G = Σ δ_i: on the whole data (q = 1), the exact composition
    (μ-GDP, μ = √(Σ k_i/z_i²): :func:`~privgraph.accounting.rdp.gaussian_epsilon`); with a subsampled one,
    RDP; basic composition when that is smaller."""
    from privgraph.accounting.rdp import composed_epsilon, gaussian_epsilon  # NumPy and SciPy, only here

    basic, g_delta = sum(s.epsilon for s in spends), min(1.0, sum(s.delta for s in spends))
    events: list[dict[str, Any]] = [s.event for s in spends if s.event is not None]
    n = len(spends)
    if not 0 < g_delta < 1:
        return basic, g_delta, f"basic over {n} Gaussian"
    if all(e["sampling_rate"] == 1 for e in events):
        mu = math.sqrt(sum(e["count"] / e["noise_multiplier"] ** 2 for e in events))
        tight, rule = gaussian_epsilon(mu, g_delta), f"exact Gaussian composition (μ-GDP) over {n} Gaussian"
    else:
        parts = tuple((e["noise_multiplier"], e["sampling_rate"], e["count"]) for e in events)
        tight, rule = composed_epsilon(parts, g_delta), f"RDP over {n} Gaussian"
    if tight < basic:
        return tight, g_delta, rule
    return basic, g_delta, f"basic over {n} Gaussian (no tighter)"


__all__ = ["ADVANCED", "BASIC", "COMPOSITION", "GDP", "RDP", "advanced_epsilon", "compose"]
