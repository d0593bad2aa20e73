"""Common interface and input validation of feature-level local randomizers.  ε and δ are checked
by :mod:`privgraph.accounting.validation` (re-exported here and from :mod:`privgraph.mechanisms`)."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.accounting.validation import (  # noqa: F401 (re-exported)
    MAX_EPSILON,
    MIN_EPSILON,
    check_delta,
    check_domain,
    check_epsilon,
)
from privgraph.mechanisms.randomness import RandomSource

# the block of rows :meth:`FeatureMechanism.check` converts to float64 at a time (values; 32 MiB)
CHECK_BLOCK_VALUES = 1 << 22


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
        alpha, beta = check_domain(domain)
        self.alpha, self.beta = alpha, beta
        self.clip = bool(clip)
        self.clipped_values = 0

    # ------------------------------------------------------------------ input
    def check(self, x: torch.Tensor) -> int:
        """Check the input is a finite 2-D matrix inside ``[α, β]`` without copying it; returns how
        many values lie outside (allowed only with ``clip=True``; the count is :attr:`clipped_values`).

        The checks compare in float64 (as :meth:`validate` always did) a block of rows at a time,
        so a large float32 matrix is never held twice (LPGNN on FacebookPagePage: 22 470 × 4 714)."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"features must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 2:
            raise ValueError(f"features must be a 2-D (nodes × features) matrix, got shape {tuple(x.shape)}")
        if x.shape[1] == 0:
            raise ValueError("features have zero columns")
        rows = max(1, CHECK_BLOCK_VALUES // x.shape[1])
        n_out = nan = 0
        for block in x.split(rows):
            block = block.to(torch.float64)
            nan += int((~torch.isfinite(block)).sum())
            n_out += int(((block < self.alpha) | (block > self.beta)).sum())
        if nan:
            raise ValueError(f"features contain {nan} non-finite values (NaN or ±inf): refused before any noise")
        if n_out and not self.clip:
            raise ValueError(
                f"{n_out} feature values lie outside the declared domain "
                f"[{self.alpha:g}, {self.beta:g}] (min {x.min().item():g}, max {x.max().item():g}); "
                "normalise the features or pass clip=True to clip them (the clip is reported)"
            )
        self.clipped_values = n_out
        return n_out

    def validate(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`check`, then the input in float64, clipped into ``[α, β]`` when ``clip=True``."""
        n_out = self.check(x)
        x = x.to(torch.float64)
        return x.clamp(self.alpha, self.beta) if n_out else x

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
