"""Privacy guarantees and their composition."""

from privgraph.accounting.guarantee import (
    NON_PRIVATE,
    PrivacyGuarantee,
    PrivacyReport,
    TrustModel,
    Unit,
    compose,
    unprotected,
)

__all__ = ["NON_PRIVATE", "PrivacyGuarantee", "PrivacyReport", "TrustModel", "Unit", "compose", "unprotected"]
