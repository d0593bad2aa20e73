"""The ledger's two errors: a release over budget, and a ledger that cannot be used."""

from __future__ import annotations


class BudgetExceeded(ValueError):
    """A release would spend more than the ledger's budget of a unit (raised before any noise)."""


class LedgerError(ValueError):
    """The ledger cannot be used: a damaged file, an unknown unit, another dataset or graph (one line)."""


__all__ = ["BudgetExceeded", "LedgerError"]
