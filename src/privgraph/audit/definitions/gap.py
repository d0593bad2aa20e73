"""GAP's aggregation perturbation, audited white-box: an edge added (GAP-EDP, GAP-INF) and a node removed
(GAP-NDP: within the bound, a hub at the bound, and the adversarial hub above it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, Unit
from privgraph.audit.definitions.registry import AuditInput, audits, homogeneous
from privgraph.audit.neighbours import Neighbours, first_column, non_adjacent_pair, with_link
from privgraph.mechanisms import derive_seed
from privgraph.methods import Method


def _hop_residual_statistic(reference: torch.Tensor, rows: torch.Tensor, owners: torch.Tensor) -> Callable:
    """Observation of a GAP :class:`~privgraph.mechanisms.aggregation.AggregationRelease`: Σ_k Σ_i ⟨s^k_{rows_i} −
    (Aᵀx^{k−1})_{rows_i}, x^{k−1}_{owners_i}⟩, A the ``reference`` graph (the world without the unit) and x^{k−1}
    the release's own previous table — the Gaussian log-likelihood ratio of the K hops, hop by hop
    (adaptive composition): the other world adds x^{k−1}_{owner} to row ``row`` of hop k's mean."""
    from privgraph.mechanisms.aggregation import neighbour_sum

    def observe(rel: Any) -> np.ndarray:
        total = 0.0
        for prev, noisy in zip(rel.tables[:-1], rel.sums, strict=True):
            residual = noisy - neighbour_sum(prev, reference.to(prev.device))
            total += float((residual[rows] * prev[owners]).sum())
        return np.array([total])

    return observe


GAP_AUDIT_NOTE = (
    "white-box audit of the aggregation module (Algorithm 1) on the encoder's embeddings, trained once and held "
    "fixed: the adversary sees every hop's noisy sum and uses the exact likelihood-ratio statistic; a black-box "
    "run of the whole pipeline (accuracy, posteriors) is far too weak a test to reach the claimed ε"
)


@audits("gap-edp", "gap-inf")
def _gap_edge(method: Method, inp: AuditInput) -> list[Neighbours]:
    """One undirected link u – v added: the K noisy hop sums of GAP-EDP on fixed embeddings (both worlds share
    them: the encoder reads no edge), observed through :func:`_hop_residual_statistic` on rows v and u."""
    from privgraph.data.validation import validate_graph

    data, _ = validate_graph(homogeneous(method, inp.data), undirected=True, self_loops=False)
    u, v = non_adjacent_pair(data.edge_index, data.num_nodes)
    worlds = (data, with_link(data, u, v))
    x0 = method.embeddings(data, derive_seed(inp.seed, 97))
    observe = _hop_residual_statistic(data.edge_index, torch.tensor([v, u]), torch.tensor([u, v]))
    return [
        Neighbours(
            Unit.EDGE,
            "edge (GAP aggregation, K hops)",
            "link u – v added; Σ_k ⟨s^k_v − (Aᵀx^{k−1})_v, x^{k−1}_u⟩ + ⟨s^k_u − (Aᵀx^{k−1})_u, x^{k−1}_v⟩ "
            "(the Gaussian likelihood ratio, hop by hop)",
            lambda side, rng: method.release_aggregation(x0, worlds[side], inp.epsilon, rng),
            observe,
            first_column,
            None,
            [GAP_AUDIT_NOTE],
        )
    ]


HUB_SPOKES = 2000  # the adversarial hub's spokes (a hub of 2,000 spokes at D = 1: the sampling bound's worst case)
HUB_NODES = 40_000  # … fewer when D is large, so that a release stays small: spokes·(D + 1) ≤ this


def _without(data: Data, v: int) -> Data:
    """``data`` with node v's edges removed (v stays as an isolated row: its own row is never compared)."""
    out = data.clone()
    out.edge_index = data.edge_index[:, (data.edge_index[0] != v) & (data.edge_index[1] != v)]
    return out


def _unit_rows(num_nodes: int, width: int, seed: int) -> torch.Tensor:
    """Random unit vectors: the aggregation's bound holds for any embeddings of norm 1 (the encoder's x⁰)."""
    gen = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(num_nodes, width, generator=gen), dim=-1)


def _node_removal(
    method: Method, inp: AuditInput, data: Data, v: int, x0: torch.Tensor, label: str, notes: list[str]
) -> Neighbours:
    """Side 0: ``data`` with v's edges removed; side 1: ``data``.  Each release runs the method's own
    aggregation step (its degree check, and with ``over_bound="sample"`` its sampling redrawn per release);
    the statistic is the hop-by-hop Gaussian likelihood ratio of the rows of v's out-neighbours in ``data``
    against side 0's graph, which is within the bound (its aggregation reads the input)."""
    worlds = (_without(data, v), data)
    out = data.edge_index[1, data.edge_index[0] == v]
    observe = _hop_residual_statistic(worlds[0].edge_index, out, torch.full_like(out, v))
    return Neighbours(
        method.claim_unit(),  # type: ignore[attr-defined]
        label,
        "node v removed vs present; Σ_k Σ_{r ∈ out(v)} ⟨s^k_r − (A′ᵀx^{k−1})_r, x^{k−1}_v⟩, A′ the graph without "
        "v (the Gaussian likelihood ratio within the bound)",
        lambda side, rng: method.release_aggregation(x0, worlds[side], inp.epsilon, rng),
        observe,
        first_column,
        None,
        notes,
    )


def _cascade(
    method: Method, inp: AuditInput, data: Data, spokes: int, x0: torch.Tensor, notes: list[str]
) -> Neighbours:
    """The adversarial pair (:func:`~privgraph.audit.graphs.hub_above_bound`): side 0 the graph without the
    hub (within the bound, the release's claim), side 1 with it.  The statistic is minus the likelihood ratio of
    the leaves' rows against side 0's graph: a leaf's row loses x_u when its spoke u drops the leaf's edge — the
    freed-slot cascade that Δ = √D does not count."""
    d = method.params.max_degree
    leaves = torch.arange(1 + spokes, 1 + spokes * (d + 1))
    owners = 1 + (leaves - 1 - spokes) // d
    worlds = (_without(data, 0), data)
    residual = _hop_residual_statistic(worlds[0].edge_index, leaves, owners)
    _, delta = method.calibrate(worlds[0], inp.epsilon)

    def calibrated_for(rel: Any) -> PrivacyGuarantee:  # sample states ε = ∞ on every graph: judged against σ's (ε, δ)
        return replace(rel.guarantee, epsilon=float(inp.epsilon), delta=delta)

    return Neighbours(
        method.claim_unit(),  # type: ignore[attr-defined]
        f"node (GAP-NDP, hub of {spokes} spokes above D = {d}: over_bound=sample, its sampling redrawn per release)",
        "hub removed vs present; −Σ_k Σ_{leaves w} ⟨s^k_w − (A′ᵀx^{k−1})_w, x^{k−1}_{spoke(w)}⟩, A′ the graph without "
        "the hub (a leaf's row loses its spoke's x when the spoke keeps the hub's edge instead)",
        lambda side, rng: method.release_aggregation(x0, worlds[side], inp.epsilon, rng),
        lambda rel: -residual(rel),
        first_column,
        calibrated_for,
        notes,
    )


@audits("gap-ndp")
def _gap_node(method: Method, inp: AuditInput) -> list[Neighbours]:
    """GAP-NDP's aggregation module, white-box (:data:`GAP_AUDIT_NOTE`).  The soft cap (the default): the pairs of
    :func:`~privgraph.audit.definitions.gap_node.soft_rows`.  The enforced cap, on node-removal pairs:

    * the audit graph's node of largest degree removed (when the graph is within the bound D);
    * a hub within the bound (:func:`~privgraph.audit.graphs.hub_within_bound`: hub, spokes and their shared
      neighbours all of degree exactly D, the worst case of Δ = √D);
    * the adversarial hub (:func:`~privgraph.audit.graphs.hub_above_bound`: every spoke above the bound, the
      graph without the hub within it).  The default (``over_bound="refuse"``) refuses the graph with the hub
      before any noise, so the pair is not released and the row is a note; with ``over_bound="sample"`` the
      row measures the authors' per-node sampling against the claim the graph without the hub states —
      the claim the old sampling made for both — and exceeds it (the freed-slot cascade).

    The encoder is held fixed (random unit embeddings on the hub graphs: the bound holds for any), so the
    rows test the aggregation's share of the composed guarantee against the whole claim (a valid, looser
    lower bound).  ``num_train`` is the audit graph's (:mod:`privgraph.audit.runner` sets it)."""
    from privgraph.audit.definitions.gap_node import soft_rows
    from privgraph.audit.graphs import hub_above_bound, hub_within_bound
    from privgraph.data.validation import validate_graph
    from privgraph.methods.node_domain import DegreeAboveBound, within_bound

    p = method.params
    d = p.max_degree
    data, _ = validate_graph(homogeneous(method, inp.data), undirected=True, self_loops=False)
    if not method.enforced:  # type: ignore[attr-defined]
        return soft_rows(method, inp, data)
    notes = [
        GAP_AUDIT_NOTE,
        "the encoder and the classifier (DP-SGD) are not audited here (audit/dpsgd.py audits DP-SGD)",
    ]
    units = []
    if within_bound(data.edge_index, data.num_nodes, d):
        w = int(torch.bincount(data.edge_index[0], minlength=data.num_nodes).argmax())
        x0 = method.embeddings(data, derive_seed(inp.seed, 97))
        label = f"node (GAP-NDP aggregation, K hops, {int((data.edge_index[0] == w).sum())} out-edges)"
        units.append(_node_removal(method, inp, data, w, x0, label, notes))
    within = hub_within_bound(d, derive_seed(inp.seed, 95))
    x0 = _unit_rows(within.num_nodes, p.hidden, derive_seed(inp.seed, 94))
    label = f"node (GAP-NDP aggregation, hub within the bound: degree D = {d}, its {d} neighbours at D)"
    spokes = max(1, min(HUB_SPOKES, HUB_NODES // (d + 1)))
    above = hub_above_bound(d, spokes, derive_seed(inp.seed, 93))
    try:
        method.check_domain(above)
    except DegreeAboveBound:
        refused = (
            f"the adversarial pair — a hub of {spokes} spokes, each above the bound D = {d}, removed — is refused by "
            "this release (over_bound=refuse: DegreeAboveBound before any noise; the refusal is outside the "
            "bounded-degree domain the claim is for); --param over_bound=sample audits the authors' sampling on it"
        )
        return [*units, _node_removal(method, inp, within, 0, x0, label, [*notes, refused])]
    units.append(_node_removal(method, inp, within, 0, x0, label, notes))
    cascade_notes = [
        *notes,
        "over_bound=sample states ε = ∞ on every graph; the row is judged against the (ε, δ) its σ is calibrated "
        "for, which the old sampling claimed for both graphs",
    ]
    x_above = _unit_rows(above.num_nodes, p.hidden, derive_seed(inp.seed, 92))
    units.append(_cascade(method, inp, above, spokes, x_above, cascade_notes))
    return units
