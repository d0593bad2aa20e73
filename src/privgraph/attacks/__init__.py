"""Attacks that audit a release: sensitive-attribute inference on embeddings."""

from privgraph.attacks.attribute import (
    CASE_MODELS,
    ClassifierScore,
    attribute_inference,
    balanced_mask,
    check_case,
    known_attribute_features,
    utility,
)

__all__ = ["CASE_MODELS", "ClassifierScore", "attribute_inference", "balanced_mask", "check_case",
           "known_attribute_features", "utility"]
