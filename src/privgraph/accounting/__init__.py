"""Privacy guarantees and their composition; the RDP accountant of DP-SGD; ε and δ validation."""

from privgraph.accounting.budget import Budget, check_share
from privgraph.accounting.guarantee import (
    NON_PRIVATE,
    PrivacyGuarantee,
    PrivacyReport,
    TrustModel,
    Unit,
    compose,
    unprotected,
)
from privgraph.accounting.rdp import RDP_ORDERS, noise_multiplier_for, rdp_epsilon
from privgraph.accounting.validation import MAX_EPSILON, check_delta, check_epsilon

__all__ = [
    "Budget",
    "check_share",
    "NON_PRIVATE",
    "PrivacyGuarantee",
    "PrivacyReport",
    "TrustModel",
    "Unit",
    "compose",
    "unprotected",
    "RDP_ORDERS",
    "noise_multiplier_for",
    "rdp_epsilon",
    "MAX_EPSILON",
    "check_delta",
    "check_epsilon",
]
