"""k-ary randomized response (Warner 1965; Kairouz et al. 2016) for labels."""

from __future__ import annotations

import math

import torch
from scipy.special import expit

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.mechanisms.base import check_epsilon
from privgraph.mechanisms.randomness import RandomSource, integers, uniform


class RandomizedResponse:
    """Keep the true category with probability e^ε/(e^ε+k−1), else report one
    of the other k−1 uniformly.  ε-LDP per value; the loss is exactly ε.
    """

    name = "randomized-response"

    def __init__(self, epsilon: float, num_classes: int, unit: str = Unit.NODE_LABEL):
        self.epsilon = check_epsilon(epsilon)
        if int(num_classes) != num_classes or num_classes < 2:
            raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
        self.k = int(num_classes)
        self.unit = unit

    @property
    def keep_probability(self) -> float:
        """e^ε/(e^ε+k−1) = σ(ε − ln(k−1)) (no overflow)."""
        return float(expit(self.epsilon - math.log(self.k - 1)))

    @property
    def other_probability(self) -> float:
        """P(report j | true i) for one j ≠ i: 1/(e^ε+k−1), computed directly (1 − p rounds to 0 at large ε)."""
        return float(expit(math.log(self.k - 1) - self.epsilon)) / (self.k - 1)

    def transition_matrix(self) -> torch.Tensor:
        """T[i, j] = P(report j | true i)."""
        p = self.keep_probability
        q = self.other_probability
        return torch.full((self.k, self.k), q, dtype=torch.float64).fill_diagonal_(p)

    def perturb(self, y: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        if y.dim() != 1:
            raise ValueError("labels must be a 1-D tensor of class indices")
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= self.k):
            raise ValueError(f"labels must lie in [0, {self.k - 1}]")
        keep = uniform((y.numel(),), rng) < self.keep_probability
        # a uniform *other* class: shift by 1..k-1 modulo k
        other = (y + 1 + integers(self.k - 1, (y.numel(),), rng)) % self.k
        return torch.where(keep, y, other)

    def estimate_one_hot(self, reports: torch.Tensor) -> torch.Tensor:
        """Unbiased estimate of the one-hot true labels: onehot(y')·T⁻¹."""
        onehot = torch.nn.functional.one_hot(reports, self.k).to(torch.float64)
        return onehot @ torch.linalg.inv(self.transition_matrix())

    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(self.unit, TrustModel.LOCAL, self.epsilon, 0.0, f"{self.k}-ary randomized response")
