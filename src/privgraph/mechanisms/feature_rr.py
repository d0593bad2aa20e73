"""FeatureRR's randomizer (HeteroRR, Section III-A, eq. 8–9, Algorithm 1).

Feature ``i`` gets the budget ``ε_i = θ_i·ε`` (``Σθ_i = 1``).  Its value, scaled
to ``[0, 1]``, is discretised to ``t ∈ {1, …, k}`` (``t/k`` with
``(t−1)/k ≤ z ≤ t/k``) and reported as ``u/k`` with the discretised
exponential rule

    P(u | t) = exp(−|u − t| / (kσ_i)) / C_t,   C_t = Σ_u exp(−|u − t| / (kσ_i)).

Calibration: σ_i is not taken from Theorem 3 but solved from the mechanism's
own ``k×k`` transition matrix — the largest ``λ = 1/(kσ_i)`` whose worst-case
log-probability ratio ``max_u max_{t,t'} log P(u|t)/P(u|t')`` equals ``ε_i``
(bisection; the ratio is increasing in λ) — and verified after solving.
Theorem 3's proof drops the normalisers ``C_t``; they cancel at the extreme
pair ``(t, t') = (1, k)`` because ``C_1 = C_k``, and the computed solution
coincides with Theorem 3's ``σ_i = (k−1)/(kε_i)`` (tested), so the paper's
bound is tight, not loose.  A feature with ``ε_i = 0`` is reported uniformly
at random.  Guarantee: ε-LDP per node feature vector by basic composition
over the features (the paper's proof says "strong composition"; it is the
basic one that it uses).

The authors' released code (github.com/khangtran2020/DPGNN, ``feature_level_mir.py``,
``feature_level_ppi.py``, ``Utils/FaRR.py``) does not compose to ε: it encodes each
of the ``r`` features in ``l`` bits and keeps bit ``j`` of feature ``i`` with
probability ``sigmoid(r·ε·θ_i·(l − j)/l − μ)``, ``μ = ε((l+1)r + 1)/(4rl)`` —
the per-feature scale is ``r·θ_i·ε`` (≈ ε per feature), not ``θ_i·ε``, and the
total loss of a node's vector is ``Σ_{i,j} |logit_ij|``
(:func:`released_code_loss`: ≈ 3rε for l = 9).  ``budget_scale = d`` reproduces
that scale with the randomizer above (each feature ``ε_i = d·θ_i·ε``, capped at
:data:`~privgraph.mechanisms.base.MAX_EPSILON`), for the controlled experiment
only: its guarantee states the true total ``Σ_i ε_i`` and that it is not ε-LDP.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from privgraph.accounting import PrivacyGuarantee
from privgraph.mechanisms.base import MAX_EPSILON, FeatureMechanism, worst_case_log_ratio
from privgraph.mechanisms.randomness import RandomSource, uniform

BIN_VALUES = ("upper", "endpoints")
"""The server's value for bin t: the paper's t/k, or (t − 1)/(k − 1) (see :meth:`FeatureRR.bin_values`)."""


def check_bins(bins: int) -> int:
    """The number of bins k must be an integer >= 2."""
    if isinstance(bins, bool) or int(bins) != bins or bins < 2:
        raise ValueError(f"the number of bins k must be an integer >= 2, got {bins!r}")
    return int(bins)


def released_code_loss(d: int, bits: int, epsilon: float, shares: torch.Tensor | None = None) -> float:
    """Privacy loss of one node's vector under the authors' released FeatureRR code (module docstring).

    Bit ``j`` of feature ``i`` is kept with probability ``sigmoid(x_ij)``, ``x_ij = d·ε·θ_i·(bits − j)/bits − μ``,
    ``μ = ε((bits+1)d + 1)/(4·d·bits)``; a bit flip with keep probability ``sigmoid(x)`` is ``|x|``-LDP, and
    the bits are independent, so the vector's loss is ``Σ_{i,j} |x_ij|`` (basic composition, tight for RR)."""
    theta = (
        torch.full((d,), 1.0 / d, dtype=torch.float64)
        if shares is None
        else torch.as_tensor(shares, dtype=torch.float64).flatten()
    )
    if theta.numel() != d:
        raise ValueError(f"shares must have d = {d} entries, got {theta.numel()}")
    mu = epsilon * ((bits + 1) * d + 1) / (4 * d * bits)
    weight = (bits - torch.arange(bits, dtype=torch.float64)) / bits  # (l − j)/l, j = 0 … l−1
    logits = d * epsilon * theta[:, None] * weight[None, :] - mu
    return float(logits.abs().sum())


def transition_matrix(lam: torch.Tensor, k: int) -> torch.Tensor:
    """``P[..., t, u] = P(u | t)`` of eq. 8 for each ``λ = 1/(kσ)`` (indices 0-based)."""
    grid = torch.arange(k, dtype=torch.float64)
    dist = (grid[:, None] - grid[None, :]).abs()
    logits = -lam.to(torch.float64)[..., None, None] * dist
    return torch.softmax(logits, dim=-1)


def calibrate_lambda(budgets: torch.Tensor, k: int, tol: float = 1e-12, chunk: int = 1024) -> torch.Tensor:
    """Per budget ε_i, the largest λ with worst-case log ratio ≤ ε_i (bisection on the exact ratio).
    Memoised per (distinct budgets, k): a release at the same ε and shares is calibrated once."""
    budgets = budgets.to(torch.float64)
    unique, inverse = torch.unique(budgets, return_inverse=True)
    out = torch.tensor(_calibrate_unique(tuple(unique.tolist()), int(k), float(tol), int(chunk)), dtype=torch.float64)
    return out[inverse]


@lru_cache(maxsize=1024)
def _calibrate_unique(budgets: tuple[float, ...], k: int, tol: float, chunk: int) -> tuple[float, ...]:
    """:func:`calibrate_lambda` of distinct budgets (a tuple: hashable, immutable for the cache)."""
    unique = torch.tensor(budgets, dtype=torch.float64)
    out = torch.zeros_like(unique)
    for s in range(0, unique.numel(), chunk):
        eps = unique[s : s + chunk]
        lo = torch.zeros_like(eps)
        hi = eps / (k - 1) * 2.0 + 1e-12  # Theorem 3's value is eps/(k−1); bracket generously
        while True:
            too_small = worst_case_log_ratio(transition_matrix(hi, k)) < eps
            if not too_small.any():
                break
            hi = torch.where(too_small, hi * 2.0, hi)
        for _ in range(200):
            mid = (lo + hi) / 2.0
            ok = worst_case_log_ratio(transition_matrix(mid, k)) <= eps
            lo, hi = torch.where(ok, mid, lo), torch.where(ok, hi, mid)
            if float((hi - lo).max()) <= tol * max(1.0, float(hi.max())):
                break
        out[s : s + chunk] = torch.where(eps > 0, lo, torch.zeros_like(lo))
    return tuple(out.tolist())


class FeatureRR(FeatureMechanism):
    """Discretised exponential randomizer with per-feature budgets ``θ_i·ε``."""

    name = "featurerr"

    def __init__(
        self,
        epsilon: float,
        shares: torch.Tensor,
        bins: int = 2,
        domain: tuple[float, float] = (0.0, 1.0),
        clip: bool = False,
        debias: bool = False,
        budget_scale: float = 1.0,
        values: str = "upper",
    ):
        super().__init__(epsilon, domain, clip)
        if values not in BIN_VALUES:
            raise ValueError(f"values must be one of {', '.join(BIN_VALUES)}, got {values!r}")
        self.values = values
        self.debias = bool(debias)
        self.budget_scale = float(budget_scale)
        if not (math.isfinite(self.budget_scale) and self.budget_scale >= 1.0):
            raise ValueError(f"budget_scale must be a finite number >= 1, got {budget_scale!r}")
        bins = check_bins(bins)
        shares = torch.as_tensor(shares, dtype=torch.float64).flatten()
        if shares.numel() == 0 or not torch.isfinite(shares).all() or (shares < 0).any():
            raise ValueError("budget shares θ must be finite and non-negative")
        if abs(float(shares.sum()) - 1.0) > 1e-6:
            raise ValueError(f"budget shares θ must sum to 1 (got {float(shares.sum()):.6g})")
        self.k = bins
        self.shares = shares
        # budget_scale > 1: the released code's per-feature scale (not ε-LDP, see guarantee); capped so that
        # every flip probability stays realisable with 53-bit uniforms
        self.budgets = (self.epsilon * self.budget_scale * shares).clamp(max=MAX_EPSILON)
        self.lam = calibrate_lambda(self.budgets, self.k)
        self.achieved = worst_case_log_ratio(transition_matrix(self.lam, self.k))
        if (self.achieved > self.budgets * (1 + 1e-9) + 1e-12).any():  # verification of the calibration
            raise RuntimeError("FeatureRR calibration failed: a feature exceeds its budget")

    @property
    def sigma(self) -> torch.Tensor:
        """The noise scales σ_i = 1/(kλ_i) (inf for a feature with no budget)."""
        return torch.where(self.lam > 0, 1.0 / (self.k * self.lam), torch.full_like(self.lam, math.inf))

    def discretize(self, x: torch.Tensor) -> torch.Tensor:
        """Bin index ``t − 1 ∈ {0, …, k−1}`` of each value (Alg. 1, lines 7–11)."""
        z = (x - self.alpha) / (self.beta - self.alpha)
        return (torch.ceil(z * self.k) - 1).clamp(0, self.k - 1).to(torch.long)

    def perturb(self, x: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        x = self.validate(x)
        n, d = x.shape
        if d != self.shares.numel():
            raise ValueError(f"FeatureRR has {self.shares.numel()} budget shares but the features have {d} columns")
        cdf = transition_matrix(self.lam, self.k).cumsum(dim=-1)  # [d, t, u]
        cdf[..., -1] = 1.0
        out = torch.empty((n, d), dtype=torch.float32)
        block = max(1, (1 << 23) // (d * self.k))
        feature = torch.arange(d)
        for s in range(0, n, block):
            t = self.discretize(x[s : s + block])
            rows = cdf[feature[None, :], t]  # [block, d, k]
            u = uniform(tuple(t.shape), rng)
            bucket = (rows < u[..., None]).sum(dim=-1).clamp(max=self.k - 1)
            out[s : s + block] = (bucket + 1).to(torch.float32) / self.k
        return out

    def bin_values(self) -> torch.Tensor:
        """The value on [0, 1] the server gives bin t = 1 … k: ``t/k`` (``"upper"``, eq. 8's domain
        {1/k, …, 1}) or ``(t − 1)/(k − 1)`` (``"endpoints"``: 0 and 1 stay 0 and 1, exact for binary
        features).  An affine relabelling of the outputs: post-processing, the same guarantee."""
        t = torch.arange(1, self.k + 1, dtype=torch.float64)
        return t / self.k if self.values == "upper" else (t - 1) / (self.k - 1)

    def unbiased_values(self) -> torch.Tensor:
        """``f[i, u]`` with ``Σ_u P(u|t) f[i, u] = v_t`` for every bin t (``v`` = :meth:`bin_values`): the
        inverse of feature i's channel applied to the bin values (a feature with ε_i = 0 gets their mean)."""
        p = transition_matrix(self.lam, self.k)
        values = self.bin_values()
        f = torch.full((self.lam.numel(), self.k), float(values.mean()), dtype=torch.float64)
        informative = self.lam > 0
        if informative.any():
            f[informative] = torch.linalg.solve(p[informative], values.expand(int(informative.sum()), -1))
        return f

    def estimate(self, reports: torch.Tensor) -> torch.Tensor:
        """Server side (post-processing).  ``debias=False``: the reported bins' values (:meth:`bin_values`;
        ``"upper"``: the reports u/k as the paper trains on them); ``debias=True``: the unbiased estimate of
        the discretised value (channel inversion)."""
        index = (reports.to(torch.float64) * self.k).round().long().clamp(1, self.k) - 1
        if self.debias:
            f = self.unbiased_values()
            values = f.gather(1, index.T).T if reports.dim() == 2 else f[0, index]
        else:
            values = self.bin_values()[index]
        return self.alpha + values * (self.beta - self.alpha)

    def guarantee(self):
        g = super().guarantee()
        if self.budget_scale != 1.0:
            total = float(self.budgets.sum())
            return PrivacyGuarantee(
                g.unit,
                g.trust_model,
                total,
                g.delta,
                g.mechanism,
                g.notes
                + (
                    f"NOT {self.epsilon:g}-LDP: per-feature budgets ε_i = {self.budget_scale:g}·θ_i·ε (each capped at "
                    f"{MAX_EPSILON:g}), the scale of the authors' released code, which does not compose to ε; "
                    f"basic composition over the features gives {total:.4g}, the ε stated here (k={self.k} bins)",
                ),
            )
        return g.with_note(
            f"k={self.k} bins; feature i gets ε_i = θ_i·ε (max {float(self.budgets.max()):.3g}, "
            f"min {float(self.budgets.min()):.3g}); each exactly ε_i-LDP by the worst-case log ratio of its "
            "transition matrix (computed and verified); basic composition over features gives ε"
        )
