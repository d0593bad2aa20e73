"""The audit definition of every registered method: its units, their neighbouring inputs, the test.

:func:`definition` chooses a method's function ``(method, AuditInput) →
[Neighbours]`` from the method itself: an explicit override by name where the
method is special (:data:`AUDITS`, ``@audits(name, …)``: HeteroRR's two units,
PPCVGAE's family, HeteDP and its baselines), else by its ``audit_kind`` class
attribute, else by its privacy ``unit`` (:data:`KINDS`, ``@audits_kind(kind, …)``).
A new link-LDP method with ``unit = Unit.ADJACENCY_LIST`` whose reports
implement :class:`privgraph.mechanisms.graph.LinkReports` is thus audited
without touching this package; a test fails when a method is registered
without a definition.  Each ``run`` calls the
method's own release code — :func:`privgraph.api.release`, the path of
:func:`privgraph.privatize` — except PPCVGAE's family, whose guarantee covers
the release *given the trained weights*: there the weights are trained once
and ``run`` is the method's own release step
(:meth:`~privgraph.methods.ppcvgae.method._EmbeddingMethod.release_trained`).

Each unit states the ε the user's request implies for it (``requested``): the
ε asked, or its share by the method's declared split (HeteroRR's ε_f and ε_e,
HeteDP's ε_s = (1 − share)·ε, the label ε, 2ε for a link in two adjacency
lists), never the release's own guarantee.  A unit whose neighbouring inputs
can show anywhere in the release gets a second row on the same releases that
observes all of it (:func:`whole_release_row`).
"""

from privgraph.audit.definitions import (  # register their definitions
    edges,
    features,
    gap,
    gap_node,
    hetero,
    sensitive,
)
from privgraph.audit.definitions.edges import private_edge_unit
from privgraph.audit.definitions.features import audited_node, feature_request, feature_unit, feature_units, label_unit
from privgraph.audit.definitions.hetero import with_hetero_edge
from privgraph.audit.definitions.registry import (
    AUDITS,
    KINDS,
    WHOLE_RELEASE_TEST,
    AuditInput,
    Definition,
    audits,
    audits_kind,
    definition,
    whole_release_row,
)

__all__ = [
    "AUDITS",
    "KINDS",
    "WHOLE_RELEASE_TEST",
    "AuditInput",
    "Definition",
    "audited_node",
    "audits",
    "audits_kind",
    "definition",
    "edges",
    "feature_request",
    "feature_unit",
    "feature_units",
    "features",
    "gap",
    "gap_node",
    "hetero",
    "label_unit",
    "private_edge_unit",
    "sensitive",
    "whole_release_row",
    "with_hetero_edge",
]
