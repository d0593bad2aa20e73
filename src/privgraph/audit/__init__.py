"""Empirical lower bounds on ε for every method, checked against its claim (``privgraph audit``).

    import privgraph as pg
    report = pg.audit_method(None, "blink", epsilon=2.0, samples=2000)   # None: the small synthetic graph
    for row in report.rows: print(row.label, row.epsilon, row.epsilon_lb, row.verdict)

:mod:`~privgraph.audit.bounds` turns a test's errors into ε_LB (Clopper–Pearson),
:mod:`~privgraph.audit.neighbours` and :mod:`~privgraph.audit.definitions` say
what each method's units, neighbouring inputs and tests are,
:mod:`~privgraph.audit.runner` runs them, :mod:`~privgraph.audit.dpsgd` audits
the DP-SGD step HeteDP trains with, :mod:`~privgraph.audit.node_dpsgd` node-level DP-SGD's step.
"""

from privgraph.audit.bounds import (
    CONFIDENCE,
    choose_threshold,
    clopper_pearson_upper,
    epsilon_lower_bound,
    evaluate_threshold,
    max_epsilon_lower_bound,
    split_half_test,
)
from privgraph.audit.definitions import AUDITS, KINDS, AuditInput, audits, audits_kind, definition
from privgraph.audit.graphs import audit_graph, audit_hetero_graph
from privgraph.audit.neighbours import Neighbours
from privgraph.audit.node_dpsgd import audit_node_dpsgd_step  # also registers node-dpsgd's definition
from privgraph.audit.runner import (
    CONSISTENT,
    DEFAULT_SAMPLES,
    NO_CLAIM,
    VIOLATION,
    AuditReport,
    AuditRow,
    audit_method,
    audit_units,
)

__all__ = [
    "AUDITS",
    "AuditInput",
    "AuditReport",
    "AuditRow",
    "CONFIDENCE",
    "CONSISTENT",
    "DEFAULT_SAMPLES",
    "KINDS",
    "NO_CLAIM",
    "Neighbours",
    "VIOLATION",
    "audit_method",
    "audit_graph",
    "audit_node_dpsgd_step",
    "audit_hetero_graph",
    "audit_units",
    "audits",
    "audits_kind",
    "choose_threshold",
    "clopper_pearson_upper",
    "definition",
    "epsilon_lower_bound",
    "evaluate_threshold",
    "max_epsilon_lower_bound",
    "split_half_test",
]
