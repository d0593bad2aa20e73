"""Links: a link in an adjacency list (link LDP, and the whole released graph against 2ε), and a private edge
of the curator's graph (central: EdgeRand, EdgeRR, privHRG, HeteroRR)."""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, Unit, compose
from privgraph.audit.definitions.features import feature_units, label_units
from privgraph.audit.definitions.registry import (
    AuditInput,
    audits,
    audits_kind,
    homogeneous,
    release,
    whole_release_row,
)
from privgraph.audit.neighbours import (
    Neighbours,
    claimed_guarantee,
    first_column,
    link_report,
    link_report_score,
    non_adjacent_pair,
    released_pair,
    released_pair_and_degrees,
    with_link,
)
from privgraph.mechanisms import RandomSource, derive_seed, make_generator
from privgraph.methods import Method


@audits_kind(Unit.ADJACENCY_LIST)
def _adjacency_list(method: Method, inp: AuditInput) -> list[Neighbours]:
    """u's report about v (the unit: u's list), and the whole released graph at (u, v) against 2ε."""
    data = homogeneous(method, inp.data)
    u, v = non_adjacent_pair(data.edge_index, data.num_nodes)
    worlds = (data, with_link(data, u, v))
    base = worlds[0].edge_index

    def run(side: int, rng: RandomSource) -> Any:
        return release(method, inp, worlds[side], rng)

    probe = run(0, make_generator(derive_seed(inp.seed, 99)))
    if probe.reports is None:
        raise TypeError(f"{method.name}'s release carries no reports (Release.reports) to audit")
    score, test = link_report_score(probe.reports)
    own = Neighbours(
        Unit.ADJACENCY_LIST,
        "adjacency list (u's report)",
        f"link (u, v) absent vs present; {test}",
        run,
        lambda rel: link_report(rel.reports, u, v, base),
        score,
    )

    def two_lists(rel: Any) -> PrivacyGuarantee | None:
        g = claimed_guarantee(rel, Unit.ADJACENCY_LIST)
        return None if g is None else compose([g, g], unit="link (both endpoints' adjacency lists)")

    whole = whole_release_row(
        own,
        "link (u, v) absent vs present; logistic regression on the released graph at (u, v)",
        lambda rel: released_pair(rel.data, u, v),
        "link, whole release (2ε)",
        unit="link (both endpoints' adjacency lists)",
        claim=two_lists,
        requested=None if inp.epsilon is None else 2 * inp.epsilon,
        notes=["the link changes u's and v's lists: the release is 2ε-DP for it by basic composition"],
    )
    return [own, whole, *label_units(method, inp)]


# ---------------------------------------------------------------- private edges (central)
def _private_edge_worlds(method: Method, inp: AuditInput, isolate: bool) -> tuple[int, int, tuple[Data, Data], Any]:
    """(u, v, (D₀, D₁), the ε asked): the private edge (u, v) absent, then present, between private-eligible
    nodes.  ``isolate``: on the graph whose only private-eligible nodes are u and v (V̄ = {u, v}, a public
    declaration) and every other edge public."""
    from privgraph.data.annotations import private_nodes

    data = homogeneous(method, inp.data)
    if getattr(data, "private_edge_mask", None) is None:
        raise ValueError(f"{method.name} is audited on a graph with private edges (data.private_edge_mask)")
    u, v = non_adjacent_pair(data.edge_index, data.num_nodes, allowed=None if isolate else private_nodes(data))
    if isolate:
        data = data.clone()
        data.private_edge_mask = torch.zeros(data.edge_index.shape[1], dtype=torch.bool)
        data.private_node_mask = torch.zeros(data.num_nodes, dtype=torch.bool)
        data.private_node_mask[[u, v]] = True
    # HeteroRR's ε_e when given (its declared split), else the ε asked
    requested = None if inp.epsilon is None else getattr(method.params, "epsilon_e", None) or inp.epsilon
    return u, v, (data, with_link(data, u, v, private=True)), requested


def private_edge_unit(method: Method, inp: AuditInput, exact: bool, isolate: bool = False) -> Neighbours:
    """One private edge (u, v), present or absent, between private-eligible nodes.

    ``isolate`` (exact): V̄ = {u, v} and every other edge public (:func:`_private_edge_worlds`), the sharp test
    of a method that spreads the private edges' counts over pairs of V̄ (EdgeRR): (u, v) is then the one
    private-eligible pair, Algorithm 3 releases one count, 0 or 1, and (u, v) is released with probability
    E[clamp(count + Laplace(1/ε), 0, 1)]: q = (1 − e^(−ε))/(2ε) absent, 1 − q present, so the indicator
    shows at most log((1 − q)/q), 0.77 at ε = 1, and a smaller noise shows more."""
    u, v, worlds, requested = _private_edge_worlds(method, inp, isolate)

    def run(side: int, rng: RandomSource) -> Any:
        return release(method, inp, worlds[side], rng)

    if isolate:
        return Neighbours(
            Unit.PRIVATE_EDGE,
            "private edge, V̄ = {u, v}",
            "private edge (u, v) absent vs present, u and v the only private-eligible nodes and every other edge "
            "public; (u, v) in the released graph",
            run,
            lambda rel: released_pair(rel.data, u, v),
            first_column,
            requested=requested,
        )
    if exact:
        return Neighbours(
            Unit.PRIVATE_EDGE,
            "private edge",
            "private edge (u, v) absent vs present; "
            "(u, v) in the released graph (EdgeRand: its randomized-response bit's likelihood ratio)",
            run,
            lambda rel: released_pair(rel.data, u, v),
            first_column,
            requested=requested,
        )
    return Neighbours(
        Unit.PRIVATE_EDGE,
        "private edge",
        "private edge (u, v) absent vs present; logistic "
        "regression on the released graph at (u, v), the degrees of u, v and the number of links",
        run,
        lambda rel: released_pair_and_degrees(rel.data, u, v),
        requested=requested,
    )


@audits_kind(Unit.PRIVATE_EDGE)
def _private_edge_exact(method: Method, inp: AuditInput) -> list[Neighbours]:
    return [private_edge_unit(method, inp, exact=True), *label_units(method, inp)]


@audits_kind("private-edge-learned")
def _private_edge_learned(method: Method, inp: AuditInput) -> list[Neighbours]:
    """The private edge on the audit graph (the released graph at the pair and the degrees) and, where the
    private-eligible set is declared (EdgeRR; privHRG's every edge is private), the sharp V̄ = {u, v} row."""
    pair = [private_edge_unit(method, inp, exact=True, isolate=True)] if method.needs_private_edges else []
    return [private_edge_unit(method, inp, exact=False), *pair, *label_units(method, inp)]


@audits("heterorr")
def _heterorr(method: Method, inp: AuditInput) -> list[Neighbours]:
    edges = [private_edge_unit(method, inp, exact=False), private_edge_unit(method, inp, exact=True, isolate=True)]
    return [*feature_units(method, inp), *edges, *label_units(method, inp)]
