"""Common interface and input validation of feature-level local randomizers.  ε and δ are checked
by :mod:`privgraph.accounting.validation` (re-exported here and from :mod:`privgraph.mechanisms`)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.validation import MAX_EPSILON, check_delta, check_epsilon  # noqa: F401 (re-exported)
from privgraph.mechanisms.randomness import RandomSource


def worst_case_log_ratio(probabilities: torch.Tensor) -> torch.Tensor:
    """Exact privacy loss of a discrete mechanism from its transition probabilities.

    ``probabilities[..., x, y] = P(y | x)`` (leading dimensions batch several
    mechanisms).  Returns ``max_y max_{x,x'} log P(y|x)/P(y|x')`` per batch
    entry: an output impossible for every input is ignored, one impossible for
    some inputs only gives ``inf``.
    """
    p = probabilities.to(torch.float64)
    hi = p.amax(dim=-2)
    lo = p.amin(dim=-2)
    ratio = torch.where(hi > 0, hi.log() - lo.log(), torch.zeros_like(hi))
    return ratio.amax(dim=-1)


class FeatureMechanism(ABC):
    """A local randomizer applied by every node to its feature vector.

    Each node's vector ``x ∈ [α, β]^d`` is perturbed independently (one row of
    the input matrix per node, vectorised over all rows) and the server
    applies :meth:`estimate`, an unbiased estimator (the *rectifier*) with
    ``E[estimate(perturb(x))] = x``.  Values outside the declared domain raise
    a ``ValueError`` unless ``clip=True``, in which case they are clipped and
    the count is stated in :meth:`guarantee`.
    """

    name: str = "mechanism"

    def __init__(self, epsilon: float, domain: tuple[float, float] = (0.0, 1.0), clip: bool = False):
        self.epsilon = check_epsilon(epsilon)
        alpha, beta = (float(v) for v in domain)
        if not (math.isfinite(alpha) and math.isfinite(beta) and alpha < beta):
            raise ValueError(f"domain must be a finite interval [alpha, beta] with alpha < beta, got {domain}")
        self.alpha, self.beta = alpha, beta
        self.clip = bool(clip)
        self.clipped_values = 0

    # ------------------------------------------------------------------ input
    def validate(self, x: torch.Tensor) -> torch.Tensor:
        """Check the input is a finite 2-D matrix inside ``[α, β]`` (or clip it)."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"features must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 2:
            raise ValueError(f"features must be a 2-D (nodes × features) matrix, got shape {tuple(x.shape)}")
        if x.shape[1] == 0:
            raise ValueError("features have zero columns")
        x = x.to(torch.float64)
        if torch.isnan(x).any():
            raise ValueError("features contain NaN")
        outside = (x < self.alpha) | (x > self.beta)
        n_out = int(outside.sum())
        if n_out:
            if not self.clip:
                raise ValueError(
                    f"{n_out} feature values lie outside the declared domain "
                    f"[{self.alpha:g}, {self.beta:g}] (min {x.min().item():g}, max {x.max().item():g}); "
                    "normalise the features or pass clip=True to clip them (the clip is reported)"
                )
            x = x.clamp(self.alpha, self.beta)
        self.clipped_values = n_out
        return x

    def to_unit(self, x: torch.Tensor) -> torch.Tensor:
        """The domain [α, β] mapped affinely onto [−1, 1] (the numeric mechanisms' input)."""
        return 2.0 * (x - self.alpha) / (self.beta - self.alpha) - 1.0

    def from_unit(self, u: torch.Tensor) -> torch.Tensor:
        """The inverse of :meth:`to_unit` (keeps estimates unbiased: it is affine)."""
        return self.alpha + (u + 1.0) * (self.beta - self.alpha) / 2.0

    # -------------------------------------------------------------- interface
    @abstractmethod
    def perturb(self, x: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        """The nodes' reports: one perturbed row per node."""

    @abstractmethod
    def estimate(self, reports: torch.Tensor) -> torch.Tensor:
        """Unbiased estimate of the original features from the reports."""

    def privatize(self, x: torch.Tensor, rng: RandomSource) -> torch.Tensor:
        """Perturb on the nodes, then rectify on the server (float32 result)."""
        return self.estimate(self.perturb(x, rng)).to(torch.float32)

    def _notes(self) -> tuple[str, ...]:
        notes: list[str] = [
            f"declared feature domain [{self.alpha:g}, {self.beta:g}] must be public (fixed before seeing data)"
        ]
        if self.clip:
            # how many values were clipped is data-dependent and not covered by the guarantee: it stays on
            # the mechanism (clipped_values), never in the report that travels with the release
            notes.append("input values outside the domain are clipped into it before perturbation")
        return tuple(notes)

    def guarantee(self) -> PrivacyGuarantee:
        """ε-LDP per node feature vector (pure unless a subclass says otherwise)."""
        return PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.LOCAL, self.epsilon, 0.0, self.name, self._notes())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g}, domain=[{self.alpha:g}, {self.beta:g}])"
