"""Local randomizers.  Each: validated parameters and input domain, a
``perturb`` driven by an explicit generator, an unbiased ``estimate`` and a
``guarantee()``."""

from __future__ import annotations

from privgraph.mechanisms.base import MAX_EPSILON, FeatureMechanism, check_delta, check_epsilon
from privgraph.mechanisms.gaussian import AnalyticGaussian, analytic_gaussian_sigma, gaussian_delta
from privgraph.mechanisms.laplace import Laplace
from privgraph.mechanisms.multibit import MultiBit, OneBit, optimal_m
from privgraph.mechanisms.numeric import (
    DuchiFeatures,
    HybridFeatures,
    PiecewiseFeatures,
    PMSubFeatures,
    ThreeOutputFeatures,
)
from privgraph.mechanisms.randomized_response import RandomizedResponse
from privgraph.mechanisms.randomness import (
    SECURE_NOTE,
    RandomSource,
    SecureRandom,
    derive_seed,
    make_generator,
    release_source,
    reproducible_note,
)

FEATURE_MECHANISMS: dict[str, type[FeatureMechanism]] = {
    "multibit": MultiBit,
    "onebit": OneBit,
    "laplace": Laplace,
    "gaussian": AnalyticGaussian,
    "duchi": DuchiFeatures,
    "piecewise": PiecewiseFeatures,
    "hybrid": HybridFeatures,
    "three-output": ThreeOutputFeatures,
    "pm-sub": PMSubFeatures,
}


def get_feature_mechanism(name: str, epsilon: float, **kwargs) -> FeatureMechanism:
    """Build a feature mechanism by name (a key of :data:`FEATURE_MECHANISMS`)."""
    try:
        cls = FEATURE_MECHANISMS[name]
    except KeyError:
        raise ValueError(f"unknown mechanism {name!r}; choose from {sorted(FEATURE_MECHANISMS)}") from None
    if cls is not AnalyticGaussian:
        kwargs.pop("delta", None)
    return cls(epsilon, **kwargs)


__all__ = [
    "FEATURE_MECHANISMS",
    "AnalyticGaussian",
    "FeatureMechanism",
    "Laplace",
    "MAX_EPSILON",
    "MultiBit",
    "OneBit",
    "RandomSource",
    "RandomizedResponse",
    "SECURE_NOTE",
    "SecureRandom",
    "analytic_gaussian_sigma",
    "check_delta",
    "check_epsilon",
    "derive_seed",
    "gaussian_delta",
    "get_feature_mechanism",
    "make_generator",
    "optimal_m",
    "release_source",
    "reproducible_note",
]
