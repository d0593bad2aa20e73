"""Laplace mechanism on the whole feature vector (Dwork et al., 2006)."""

from __future__ import annotations

import torch

from privgraph.mechanisms.base import FeatureMechanism
from privgraph.mechanisms.randomness import RandomSource, laplace


class Laplace(FeatureMechanism):
    """x + Lap(Δ₁/ε)^d with L1 sensitivity Δ₁ = d(β−α) over the domain [α, β]^d.

    The estimator is the identity (the noise has mean zero).
    """

    name = "laplace"

    def scale(self, d: int) -> float:
        return d * (self.beta - self.alpha) / self.epsilon

    def perturb(self, x: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        x = self.validate(x)
        self._last_d = x.shape[1]
        return x + laplace(tuple(x.shape), self.scale(x.shape[1]), rng)

    def estimate(self, reports: torch.Tensor) -> torch.Tensor:
        return reports.to(torch.float64)

    def guarantee(self):
        return (
            super()
            .guarantee()
            .with_note("continuous noise sampled in floating point (inverse CDF); see Mironov (CCS 2012)")
        )
