"""Multi-bit and one-bit feature mechanisms (LPGNN, Sajadmanesh & Gatica-Perez, CCS 2021; Algorithm 1 of
Sajadmanesh's talk "Privacy-Preserving Deep Learning over Graphs" (2020)).

Multi-bit: each node samples ``m`` of its ``d`` features uniformly without
replacement and reports each sampled feature through the one-bit mechanism
with budget ``ε/m``, mapped to ±1; unsampled features are reported as 0.
The server's rectifier (the talk's "Approximation of Graph Convolution")

    x'_u = d(β−α)/(2m) · (e^{ε/m}+1)/(e^{ε/m}−1) · x*_u + (α+β)/2

is unbiased.  One-bit is the special case ``m = d`` (every feature with ε/d).
"""

from __future__ import annotations

import math

import torch
from scipy.special import expit

from privgraph.mechanisms.base import FeatureMechanism
from privgraph.mechanisms.randomness import RandomSource, bernoulli, sample_subsets


def optimal_m(epsilon: float, d: int) -> int:
    """Proposition 3.5: m* = max(1, min(d, ⌊ε/2.18⌋))."""
    return max(1, min(d, int(math.floor(epsilon / 2.18))))


class MultiBit(FeatureMechanism):
    """Multi-bit mechanism; ``m=None`` uses the optimal m* of Proposition 3.5."""

    name = "multibit"

    def __init__(
        self,
        epsilon: float,
        domain: tuple[float, float] = (0.0, 1.0),
        m: int | None = None,
        clip: bool = False,
    ):
        super().__init__(epsilon, domain, clip)
        if m is not None and (int(m) != m or m < 1):
            raise ValueError(f"sampling parameter m must be a positive integer, got {m!r}")
        self.m = None if m is None else int(m)
        self._last_d: int | None = None

    def sample_size(self, d: int) -> int:
        """The number m of features each node reports."""
        if self.m is None:
            return optimal_m(self.epsilon, d)
        if self.m > d:
            raise ValueError(f"m={self.m} exceeds the number of features d={d}")
        return self.m

    def one_probability(self, x: torch.Tensor, m: int) -> torch.Tensor:
        """P(t_i = 1) of Algorithm 1, line 4, for a sampled coordinate:
        1/(e^a+1) + s·(e^a−1)/(e^a+1) = σ(−a) + s·tanh(a/2) with a = ε/m (no overflow)."""
        a = self.epsilon / m
        scaled = (x - self.alpha) / (self.beta - self.alpha)
        return float(expit(-a)) + scaled * math.tanh(a / 2.0)

    def coordinate_probabilities(self, x: torch.Tensor, d: int) -> torch.Tensor:
        """Marginal law of one output coordinate: P(x*_i = −1, 0, +1) stacked on the last dim."""
        m = self.sample_size(d)
        p = self.one_probability(x.to(torch.float64), m)
        s = m / d
        return torch.stack([s * (1 - p), torch.full_like(p, 1 - s), s * p], dim=-1)

    def sparse_reports(self, x: torch.Tensor, rng: RandomSource) -> tuple[torch.Tensor, torch.Tensor]:
        """Algorithm 1 for every node: the ``m`` sampled columns of each row (n × m) and their
        ±1 bits (float32).  Only the sampled values are read in float64 (and clipped when
        ``clip=True``): the n × d input is never copied."""
        self.check(x)
        n, d = x.shape
        m = self.sample_size(d)
        self._last_d = d
        cols = sample_subsets(n, d, m, rng)
        sampled = x.gather(1, cols).to(torch.float64)
        if self.clip:
            sampled = sampled.clamp(self.alpha, self.beta)
        bits = bernoulli(self.one_probability(sampled, m), rng).to(torch.float32) * 2.0 - 1.0
        return cols, bits

    def perturb(self, x: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        cols, bits = self.sparse_reports(x, rng)
        out = torch.zeros(x.shape, dtype=torch.float32)
        out.scatter_(1, cols, bits)
        return out

    def rectifier(self, d: int) -> tuple[float, float]:
        """The rectifier's scale and offset: ``x' = scale · x* + offset`` (module docstring)."""
        m = self.sample_size(d)
        scale = d * (self.beta - self.alpha) / (2.0 * m) / math.tanh(self.epsilon / (2.0 * m))  # (e^a+1)/(e^a−1)
        return scale, (self.alpha + self.beta) / 2.0

    def estimate(self, reports: torch.Tensor) -> torch.Tensor:
        scale, offset = self.rectifier(reports.shape[1])
        return reports.to(torch.float64) * scale + offset

    def privatize(self, x: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        """``estimate(perturb(x))`` in float32, value for value, without the dense reports or a
        float64 copy: a report is −1, 0 or +1, so the estimate takes three values, each rounded
        once from float64 as :meth:`estimate` followed by ``.to(float32)`` rounds it."""
        cols, bits = self.sparse_reports(x, rng)
        scale, offset = self.rectifier(x.shape[1])
        values = (torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64) * scale + offset).to(torch.float32)
        out = torch.full(x.shape, float(values[1]), dtype=torch.float32)
        out.scatter_(1, cols, torch.where(bits > 0, values[2], values[0]))
        return out

    def log_prob(self, report: torch.Tensor, x: torch.Tensor) -> float:
        """Exact log P[M(x) = report] for one node (used to audit the guarantee)."""
        x = x.to(torch.float64).flatten()
        report = report.flatten()
        d = x.numel()
        m = self.sample_size(d)
        support = report != 0
        if int(support.sum()) != m:
            return -math.inf
        log_subset = -(math.lgamma(d + 1) - math.lgamma(m + 1) - math.lgamma(d - m + 1))
        p = self.one_probability(x[support], m)
        ones = report[support] > 0
        return log_subset + float(torch.where(ones, p.log(), (1 - p).log()).sum())

    def guarantee(self):
        g = super().guarantee()
        if self._last_d is not None:
            m = self.sample_size(self._last_d)
            g = g.with_note(f"m={m} of d={self._last_d} features reported per node, each with ε/m={self.epsilon / m:g}")
        return g


class OneBit(MultiBit):
    """One-bit mechanism on every feature with budget ε/d (multi-bit with m = d)."""

    name = "onebit"

    def __init__(self, epsilon: float, domain: tuple[float, float] = (0.0, 1.0), clip: bool = False):
        super().__init__(epsilon, domain, m=None, clip=clip)

    def sample_size(self, d: int) -> int:
        return d
