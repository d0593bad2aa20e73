"""privgraph: privacy-preserving learning on graphs.

Subpackages follow the data flow of the design notes:
``data`` (loading, splits, synthetic graphs) → ``mechanisms`` (local
randomizers with unbiased estimators) → ``methods`` (published systems such as
LPGNN) → ``nn`` / ``train`` (models and trainers) → ``experiments`` (runner,
results store, plots).  Every mechanism and method returns a
:class:`~privgraph.accounting.PrivacyGuarantee`.
"""

from privgraph.accounting import PrivacyGuarantee, PrivacyReport

__version__ = "0.1.0"

__all__ = ["PrivacyGuarantee", "PrivacyReport", "__version__"]
