"""A data owner's ledger: every release of one dataset, its spend per privacy unit, and a budget.

Each release is accounted alone (its :class:`~privgraph.accounting.PrivacyReport`); a :class:`Ledger`
adds them up.  It is one JSON file per dataset holding, for every release, the method, its
parameters, the (ε, δ) it spent per unit with the mechanism event that produced it, the time, the file
written and the guarantee's description — never a statistic of the data (a count printed is a release
too), except the graph's node count, which the ledger treats as public (its fingerprint).

Fails closed.  A budget names only units privgraph knows (:class:`~privgraph.accounting.Unit`; anything
else is refused with the list).  A ledger is bound to one dataset: its name, and a public fingerprint of
the graph recorded by the first release (the node count; with ``content_hash=True`` also a SHA-256 of the
graph's tensors, which the owner chooses to record: it lets anyone holding a candidate graph confirm that
it is exactly this one).  A release is refused, before any noise, when the ledger has no dataset name or
the graph's fingerprint differs.  A damaged file (not JSON, not a ledger, missing ``entries``) is one
:class:`LedgerError` line.

Units form a hierarchy (:data:`~privgraph.accounting.guarantee.UNIT_HIERARCHY`): a node-level release
(unit ``"node (features, label and edges)"``) also spends, by group privacy at distance 2, the edge,
feature-vector, adjacency-list, label and sensitive-attribute budgets.  Fails closed per unit, matched
exactly: every unit the budget limits (those named; with ``"*"`` every known unit and the dataset's relations)
that a release neither spends nor covers counts ε = ∞ (:func:`expand`): a release of a part is not node-DP,
and what a release does not name it may write in clear.

The ledger's ideas, one module each:

* :mod:`~privgraph.accounting.ledger.spend` — what a release spends per unit (:class:`Spend`, its Gaussian
  event) and what the unit hierarchy adds (:func:`expand`);
* :mod:`~privgraph.accounting.ledger.filters` — the privacy filter that holds a unit's releases to its budget
  when each is chosen after the last (:func:`filter_total`: the Rényi filter, basic composition);
* :mod:`~privgraph.accounting.ledger.composition` — one unit's spends composed as a sequence fixed in advance
  (:func:`compose`: exact Gaussian/RDP, advanced, basic);
* :mod:`~privgraph.accounting.ledger.totals` — the budget per unit, the totals held to it (:class:`Total`);
* :mod:`~privgraph.accounting.ledger.entries` — one release's record (:class:`Entry`: pending, done, failed);
* :mod:`~privgraph.accounting.ledger.fingerprint` — the dataset's public fingerprint;
* :mod:`~privgraph.accounting.ledger.storage` — the file: format, validation, lock, atomic write;
* :mod:`~privgraph.accounting.ledger.book` — the :class:`Ledger` itself, and the order of events of a release.
"""

from privgraph.accounting.ledger.book import Ledger
from privgraph.accounting.ledger.composition import ADVANCED, BASIC, COMPOSITION, GDP, RDP, advanced_epsilon, compose
from privgraph.accounting.ledger.entries import DONE, FAILED, PENDING, Entry
from privgraph.accounting.ledger.errors import BudgetExceeded, LedgerError
from privgraph.accounting.ledger.filters import BASIC_FILTER, RENYI_FILTER, filter_fits, filter_total
from privgraph.accounting.ledger.fingerprint import CONTENT_FIELDS, content_digest, fingerprint_of
from privgraph.accounting.ledger.spend import GAUSSIAN, Spend, expand, gaussian_event, spends_of
from privgraph.accounting.ledger.storage import FORMAT
from privgraph.accounting.ledger.totals import ANY_UNIT, Remaining, Total

__all__ = [
    "CONTENT_FIELDS",
    "DONE",
    "FAILED",
    "FORMAT",
    "GAUSSIAN",
    "PENDING",
    "ADVANCED",
    "ANY_UNIT",
    "BASIC",
    "COMPOSITION",
    "GDP",
    "RDP",
    "BASIC_FILTER",
    "RENYI_FILTER",
    "BudgetExceeded",
    "Entry",
    "Ledger",
    "LedgerError",
    "Spend",
    "Remaining",
    "Total",
    "advanced_epsilon",
    "compose",
    "content_digest",
    "expand",
    "filter_fits",
    "filter_total",
    "fingerprint_of",
    "gaussian_event",
    "spends_of",
]
