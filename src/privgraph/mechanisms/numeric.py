"""Numeric LDP randomizers for bounded values (the feature baselines of HeteroRR).

One-dimensional randomizers on ``[−1, 1]``, each unbiased (``E[M(x)] = x``):

* :class:`Duchi1D` — Duchi et al.: output ``±C``, ``C = (e^ε+1)/(e^ε−1)``,
  ``P(+C) = 1/2 + x(e^ε−1)/(2(e^ε+1))`` (Wang et al. ICDE'19, Alg. 1).
* :class:`Piecewise` — Wang et al.'s piecewise mechanism (PM, Alg. 2) and
  Zhao et al.'s sub-optimal variant PM-SUB (IoT-J'20), one family: output in
  ``[−C, C]`` with density ``p = e^ε·p₀`` on a window ``[l(x), r(x)]`` of width
  ``w`` and ``p₀`` elsewhere.  Mass and unbiasedness give
  ``p₀ = 1/(2C + (e^ε−1)w)`` and the window centre ``x/((e^ε−1)p₀w)``; the window
  reaching ``C`` at ``x = 1`` gives ``C = (1 + w/2)(e^ε−1)w / ((e^ε−1)w − 2)``.
  With ``t = e^{ε/2}`` and ``w = 2(e^ε+t)/(t(e^ε−1))`` this is PM
  (``C = (t+1)/(t−1)``); with ``t = e^{ε/3}`` it is PM-SUB
  (``C = (e^ε+t)(t+1)/(t(e^ε−1))``).  The density ratio is ``e^ε`` by
  construction (tested).
* :class:`HybridMechanism` — Wang et al.: PM with probability ``1 − e^{−ε/2}``
  and Duchi otherwise when ``ε > 0.61``, Duchi alone below.
* :class:`ThreeOutput` — Zhao et al.'s three-output structure: outputs
  ``{−C, 0, C}``, probabilities piecewise linear in ``x`` between the anchors
  ``x ∈ {−1, 0, 1}``.  The original paper's closed form is not
  reproduced; here the anchors are *derived*: at ``x = 1``,
  ``P(C) = e^ε·P(−C)`` and ``P(0) = b``; at ``x = 0``, ``P(0) = z``; unbiasedness
  gives ``C = 1/(P(C|1) − P(−C|1))``.  For a given ``b`` the worst-case
  variance ``C²(1 − P(0|x)) − x²`` decreases in ``z``, so ``z`` takes its largest
  value allowed by every pairwise ratio (``z = min(e^ε b, 1 − 2P(−C|1))``) and
  ``b`` minimises the worst-case variance (1-D search).  Small ε gives ``b = 0``:
  Duchi's binary mechanism, as Zhao et al. find below ``ln 2``.  The exact
  privacy loss is computed from the transition probabilities (tested).

Multi-dimensional use (Wang et al. Alg. 4, also Zhao et al.): each node samples
``k = max(1, min(d, ⌊ε/2.5⌋))`` of its ``d`` features without replacement,
reports each with ``ε/k``, and the server scales by ``d/k`` (unbiased; the
others are reported as 0).  Guarantee: ε-LDP per feature vector (basic
composition over the ``k`` reported coordinates; the sampling is
data-independent).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
from scipy.special import expit

from privgraph.mechanisms.base import FeatureMechanism
from privgraph.mechanisms.randomness import RandomSource, sample_subsets, uniform


class ScalarMechanism:
    """An unbiased ε-LDP randomizer of one value in ``[−1, 1]``."""

    name = "scalar"
    continuous = True  # floating-point continuous noise (Mironov caveat); False: finitely many outputs

    def sample(self, x: torch.Tensor, epsilon: float, rng: RandomSource) -> torch.Tensor:
        raise NotImplementedError

    def variance(self, x: torch.Tensor, epsilon: float) -> torch.Tensor:
        """``Var[M(x)]`` (for tests and for choosing between mechanisms)."""
        raise NotImplementedError


class Duchi1D(ScalarMechanism):
    name = "duchi"
    continuous = False

    @staticmethod
    def magnitude(epsilon: float) -> float:
        """C = (e^ε+1)/(e^ε−1) = 1/tanh(ε/2)."""
        return 1.0 / math.tanh(epsilon / 2.0)

    def plus_probability(self, x: torch.Tensor, epsilon: float) -> torch.Tensor:
        """1/2 + x(e^ε−1)/(2(e^ε+1)) = 1/2 + x·tanh(ε/2)/2."""
        return 0.5 + x * (math.tanh(epsilon / 2.0) / 2.0)

    def sample(self, x, epsilon, rng):
        c = self.magnitude(epsilon)
        plus = uniform(tuple(x.shape), rng) < self.plus_probability(x, epsilon)
        return torch.where(plus, c, -c).to(torch.float64)

    def variance(self, x, epsilon):
        return self.magnitude(epsilon) ** 2 - x**2


class Piecewise(ScalarMechanism):
    """PM (``t_power = 1/2``) or PM-SUB (``t_power = 1/3``); see the module docstring."""

    def __init__(self, t_power: float = 0.5):
        if not 0 < t_power < 1:
            raise ValueError(f"t_power must lie in (0, 1), got {t_power}")
        self.t_power = float(t_power)
        self.name = "piecewise" if t_power == 0.5 else f"piecewise(t=e^{t_power:g}ε)"

    def parameters(self, epsilon: float) -> tuple[float, float, float]:
        """``(C, w, p₀)``: output range, window width, low density."""
        e = math.exp(epsilon)
        t = math.exp(self.t_power * epsilon)
        w = 2.0 * (e + t) / (t * (e - 1.0))
        c = (1.0 + w / 2.0) * (e - 1.0) * w / ((e - 1.0) * w - 2.0)
        p0 = 1.0 / (2.0 * c + (e - 1.0) * w)
        return c, w, p0

    def window(self, x: torch.Tensor, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
        c, w, p0 = self.parameters(epsilon)
        centre = x / ((math.exp(epsilon) - 1.0) * p0 * w)
        return centre - w / 2.0, centre + w / 2.0

    def density(self, y: torch.Tensor, x: torch.Tensor, epsilon: float) -> torch.Tensor:
        """Output density at ``y`` given ``x`` (0 outside ``[−C, C]``)."""
        c, w, p0 = self.parameters(epsilon)
        lo, hi = self.window(x, epsilon)
        inside = (y >= lo) & (y <= hi)
        dens = torch.where(inside, p0 * math.exp(epsilon), p0)
        return torch.where(y.abs() <= c, dens, torch.zeros_like(dens))

    def sample(self, x, epsilon, rng):
        c, w, p0 = self.parameters(epsilon)
        lo, _ = self.window(x, epsilon)
        shape = tuple(x.shape)
        in_window = uniform(shape, rng) < p0 * math.exp(epsilon) * w
        u = uniform(shape, rng)
        inside = lo + u * w
        outside = -c + u * (2.0 * c - w)  # uniform on [−C, C] minus the window, by a shift past it
        outside = torch.where(outside >= lo, outside + w, outside)
        return torch.where(in_window, inside, outside)

    def variance(self, x, epsilon):
        c, w, p0 = self.parameters(epsilon)
        lo, hi = self.window(x, epsilon)
        second = p0 * (2.0 * c**3 / 3.0) + p0 * (math.exp(epsilon) - 1.0) * (hi**3 - lo**3) / 3.0
        return second - x**2


class HybridMechanism(ScalarMechanism):
    name = "hybrid"
    EPSILON_STAR = 0.61

    def __init__(self):
        self.pm, self.duchi = Piecewise(0.5), Duchi1D()

    def pm_probability(self, epsilon: float) -> float:
        return -math.expm1(-epsilon / 2.0) if epsilon > self.EPSILON_STAR else 0.0

    def sample(self, x, epsilon, rng):
        use_pm = uniform(tuple(x.shape), rng) < self.pm_probability(epsilon)
        return torch.where(use_pm, self.pm.sample(x, epsilon, rng), self.duchi.sample(x, epsilon, rng))

    def variance(self, x, epsilon):
        a = self.pm_probability(epsilon)
        second = a * (self.pm.variance(x, epsilon) + x**2) + (1 - a) * self.duchi.magnitude(epsilon) ** 2
        return second - x**2


@lru_cache(maxsize=256)
def three_output_anchors(epsilon: float, grid: int = 4001) -> tuple[float, float, float, float]:
    """``(P(C|1), P(0|1), P(−C|1), P(0|0))`` minimising the worst-case variance (module docstring)."""
    e = math.exp(epsilon)  # finite for ε ≤ MAX_EPSILON
    b = np.linspace(0.0, 1.0, grid, endpoint=False)
    c = (1.0 - b) * float(expit(-epsilon))  # (1 − b)/(1 + e^ε)
    a = (1.0 - b) * float(expit(epsilon))  # e^ε·c
    z = np.minimum(np.minimum(e * b, 1.0 - 2.0 * c), 1.0)
    mag2 = 1.0 / (a - c) ** 2
    # Var(x) = C²(1 − z) + x·C²(z − b) − x² on [0, 1]: maximum at x* = clip(C²(z − b)/2, 0, 1)
    xs = np.clip(mag2 * (z - b) / 2.0, 0.0, 1.0)
    worst = mag2 * (1.0 - z) + xs * mag2 * (z - b) - xs**2
    i = int(np.argmin(worst))
    return float(a[i]), float(b[i]), float(c[i]), float(z[i])


class ThreeOutput(ScalarMechanism):
    name = "three-output"
    continuous = False

    def magnitude(self, epsilon: float) -> float:
        a, _, c, _ = three_output_anchors(float(epsilon))
        return 1.0 / (a - c)

    def probabilities(self, x: torch.Tensor, epsilon: float) -> torch.Tensor:
        """``P(−C), P(0), P(C)`` stacked on the last dimension."""
        a, b, c, z = three_output_anchors(float(epsilon))
        s = x.abs()
        towards = (1 - s) * (1 - z) / 2 + s * a  # output with the sign of x
        away = (1 - s) * (1 - z) / 2 + s * c
        zero = (1 - s) * z + s * b
        pos = x >= 0
        return torch.stack([torch.where(pos, away, towards), zero, torch.where(pos, towards, away)], dim=-1)

    def sample(self, x, epsilon, rng):
        p = self.probabilities(x, epsilon)
        u = uniform(tuple(x.shape), rng)
        out = torch.where(u < p[..., 0], -1.0, torch.where(u < p[..., 0] + p[..., 1], 0.0, 1.0))
        return out.to(torch.float64) * self.magnitude(epsilon)

    def variance(self, x, epsilon):
        p = self.probabilities(x, epsilon)
        return self.magnitude(epsilon) ** 2 * (1 - p[..., 1]) - x**2


def sampled_dimensions(epsilon: float, d: int) -> int:
    """Wang et al. (ICDE'19) Alg. 4: k = max(1, min(d, ⌊ε/2.5⌋))."""
    return max(1, min(d, int(math.floor(epsilon / 2.5))))


class SampledNumeric(FeatureMechanism):
    """A :class:`ScalarMechanism` on ``k`` sampled features per node, ε/k each (Alg. 4)."""

    scalar: ScalarMechanism

    def __init__(self, epsilon: float, domain: tuple[float, float] = (0.0, 1.0), clip: bool = False):
        super().__init__(epsilon, domain, clip)
        self._last: tuple[int, int] | None = None

    def perturb(self, x: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        x = self.validate(x)
        n, d = x.shape
        k = sampled_dimensions(self.epsilon, d)
        self._last = (k, d)
        cols = sample_subsets(n, d, k, rng)
        values = self.scalar.sample(self.to_unit(x.gather(1, cols)), self.epsilon / k, rng)
        out = torch.zeros((n, d), dtype=torch.float64)
        out.scatter_(1, cols, values)
        return out

    def estimate(self, reports: torch.Tensor) -> torch.Tensor:
        d = reports.shape[1]
        k = sampled_dimensions(self.epsilon, d)
        return self.from_unit(reports.to(torch.float64) * (d / k))

    def guarantee(self):
        g = super().guarantee()
        if self._last is not None:
            k, d = self._last
            g = g.with_note(
                f"{self.scalar.name}: k={k} of d={d} features reported per node, ε/k={self.epsilon / k:g} "
                "each (Wang et al. ICDE'19 Alg. 4; basic composition)"
            )
        if self.scalar.continuous:
            g = g.with_note("continuous noise sampled in floating point (Mironov 2012 caveat)")
        return g


class PiecewiseFeatures(SampledNumeric):
    name = "piecewise"
    scalar = Piecewise(0.5)


class PMSubFeatures(SampledNumeric):
    name = "pm-sub"
    scalar = Piecewise(1.0 / 3.0)


class HybridFeatures(SampledNumeric):
    name = "hybrid"
    scalar = HybridMechanism()


class ThreeOutputFeatures(SampledNumeric):
    name = "three-output"
    scalar = ThreeOutput()


class DuchiFeatures(FeatureMechanism):
    """Duchi et al.'s multi-dimensional mechanism (as in Wang et al. ICDE'19, Alg. 3).

    ``v_j = ±1`` with ``P(+1) = (1 + x_j)/2``; the output ``t ∈ {−B, B}^d`` is uniform
    on ``{t : t·v > 0}`` with probability ``e^ε/(e^ε+1)`` and on ``{t : t·v < 0}``
    otherwise (``t`` uniform on the cube, negated when on the wrong side).  For
    odd ``d``, ``B = (e^ε+1)/(e^ε−1) · 2^{d−1}/C(d−1, (d−1)/2)`` makes the output
    unbiased.  Even ``d`` is padded with one constant-0 coordinate (so no tie
    ``t·v = 0`` can occur) and the pad is dropped: same guarantee, unbiased.
    """

    name = "duchi"

    @staticmethod
    def bound(epsilon: float, d_odd: int) -> float:
        if d_odd % 2 == 0:
            raise ValueError("B is defined here for odd dimension")
        m = d_odd - 1
        log_ratio = m * math.log(2.0) - (math.lgamma(m + 1) - 2 * math.lgamma(m // 2 + 1))
        return math.exp(log_ratio) / math.tanh(epsilon / 2.0)  # (e^ε+1)/(e^ε−1) = 1/tanh(ε/2)

    def perturb(self, x: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        x = self.validate(x)
        n, d = x.shape
        unit = self.to_unit(x)
        if d % 2 == 0:
            unit = torch.cat([unit, torch.zeros((n, 1), dtype=unit.dtype)], dim=1)
        dd = unit.shape[1]
        out = torch.empty((n, d), dtype=torch.float64)
        right_side = float(expit(self.epsilon))  # e^ε/(e^ε+1)
        b = self.bound(self.epsilon, dd)
        block = max(1, (1 << 22) // dd)
        for s in range(0, n, block):
            xs = unit[s : s + block]
            v = torch.where(uniform(tuple(xs.shape), rng) < (1.0 + xs) / 2.0, 1.0, -1.0)
            t = torch.where(uniform(tuple(xs.shape), rng) < 0.5, 1.0, -1.0)
            positive = (t * v).sum(dim=1) > 0
            want_positive = uniform((xs.shape[0],), rng) < right_side
            t = torch.where((positive != want_positive)[:, None], -t, t)
            out[s : s + block] = b * t[:, :d]
        return out

    def estimate(self, reports: torch.Tensor) -> torch.Tensor:
        return self.from_unit(reports.to(torch.float64))
