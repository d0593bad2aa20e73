"""Privacy guarantees and their composition; a ledger of releases against a budget; the RDP accountant
of DP-SGD; ε and δ validation.

The names are imported lazily (PEP 562), so ε validation (:mod:`privgraph.accounting.validation`)
is read without loading NumPy and SciPy: the command line checks its ε before any heavy import."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as the docs and type checkers see them; _LAZY imports them at runtime
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
    from privgraph.accounting.ledger import BudgetExceeded, Ledger, LedgerError, Spend, gaussian_event
    from privgraph.accounting.rdp import RDP_ORDERS, noise_multiplier_for, rdp_epsilon
    from privgraph.accounting.validation import (
        MAX_EPSILON,
        MIN_EPSILON,
        check_delta,
        check_domain,
        check_epsilon,
        check_epsilons,
    )


_LAZY = {
    "Budget": "budget",
    "check_share": "budget",
    "NON_PRIVATE": "guarantee",
    "PrivacyGuarantee": "guarantee",
    "PrivacyReport": "guarantee",
    "TrustModel": "guarantee",
    "Unit": "guarantee",
    "compose": "guarantee",
    "unprotected": "guarantee",
    "BudgetExceeded": "ledger",
    "Ledger": "ledger",
    "LedgerError": "ledger",
    "gaussian_event": "ledger",
    "Spend": "ledger",
    "RDP_ORDERS": "rdp",
    "noise_multiplier_for": "rdp",
    "rdp_epsilon": "rdp",
    "MAX_EPSILON": "validation",
    "MIN_EPSILON": "validation",
    "check_domain": "validation",
    "check_delta": "validation",
    "check_epsilon": "validation",
    "check_epsilons": "validation",
}

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
    "BudgetExceeded",
    "Ledger",
    "LedgerError",
    "Spend",
    "gaussian_event",
    "RDP_ORDERS",
    "noise_multiplier_for",
    "rdp_epsilon",
    "MAX_EPSILON",
    "MIN_EPSILON",
    "check_domain",
    "check_delta",
    "check_epsilon",
    "check_epsilons",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"privgraph.accounting.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'privgraph.accounting' has no attribute {name!r}")
