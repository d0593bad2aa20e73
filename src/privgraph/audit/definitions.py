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
and ``run`` is the method's own release step (:meth:`release_trained`).

Each unit states the ε the user's request implies for it (``requested``): the
ε asked, or its share by the method's declared split (HeteroRR's ε_f and ε_e,
HeteDP's ε_s = (1 − share)·ε, the label ε, 2ε for a link in two adjacency
lists), never the release's own guarantee.  A unit whose neighbouring inputs
can show anywhere in the release gets a second row on the same releases that
observes all of it (:func:`whole_release_row`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData

from privgraph.accounting import PrivacyGuarantee, Unit, compose
from privgraph.audit.neighbours import (
    Neighbours,
    claimed_guarantee,
    clamped_sum,
    feature_domain,
    first_column,
    link_report,
    link_report_score,
    non_adjacent_pair,
    projection,
    released_pair,
    released_pair_and_degrees,
    whole_release,
    with_link,
    with_row,
)
from privgraph.mechanisms import RandomSource, derive_seed, make_generator
from privgraph.methods import Method
from privgraph.request import ReleaseRequest

Definition = Callable[[Method, "AuditInput"], list[Neighbours]]
AUDITS: dict[str, Definition] = {}  # overrides by method name (a special method)
KINDS: dict[str, Definition] = {}  # by Method.audit_kind, or by Method.unit (a Unit)


def _register(table: dict[str, Definition], keys: tuple[str, ...], what: str) -> Callable[[Definition], Definition]:
    def wrap(fn: Definition) -> Definition:
        for key in keys:
            if key in table:
                raise TypeError(f"{what} {key!r} has two audit definitions")
            table[key] = fn
        return fn

    return wrap


def audits(*names: str) -> Callable[[Definition], Definition]:
    """Register ``fn`` as the audit definition of the methods ``names`` (an override of their unit's)."""
    return _register(AUDITS, names, "method")


def audits_kind(*kinds: str) -> Callable[[Definition], Definition]:
    """Register ``fn`` as the audit definition of every method whose ``audit_kind`` (or, without one,
    whose ``unit``) is one of ``kinds``."""
    return _register(KINDS, kinds, "audit kind")


@dataclass
class AuditInput:
    """The graph the neighbouring inputs are built on, and how the method is released: the audit's
    :class:`~privgraph.ReleaseRequest` (its ε, label ε and device; each release draws from its own stream of
    ``seed``)."""

    data: Data | HeteroData
    request: ReleaseRequest
    seed: int = 0

    @property
    def epsilon(self) -> float | None:
        return self.request.epsilon

    @property
    def label_epsilon(self) -> float | None:
        return self.request.label_epsilon


def _release(method: Method, inp: AuditInput, data: Any, rng: RandomSource, labels: bool = False) -> Any:
    """One release of ``data`` as the audit's request asks, drawn from ``rng`` (with its label ε: ``labels``)."""
    from privgraph.api import release

    label_epsilon = inp.label_epsilon if labels else None
    return release(data, inp.request.but(method=method, label_epsilon=label_epsilon, rng=rng))


def _homogeneous(method: Method, data: Any) -> Data:
    if not isinstance(data, Data):
        raise TypeError(f"{method.name} is audited on a torch_geometric.data.Data, got {type(data).__name__}")
    return data


def whole_release_row(
    own: Neighbours,
    test: str,
    observe: Callable[[Any], np.ndarray] | None = None,
    label: str | None = None,
    **changes: Any,
) -> Neighbours:
    """A second row on ``own``'s releases (the same ``run``: the same inputs, the same releases) that observes
    the whole release (default :func:`~privgraph.audit.neighbours.whole_release` of ``rel.data``), scored by a
    logistic regression fitted on the selection half; ``changes`` replace other fields (unit, claim, …)."""
    return replace(
        own,
        label=label or own.label.replace(own.unit, f"{own.unit}, whole release", 1),
        test=test,
        observe=observe or (lambda rel: whole_release(rel.data)),
        score=None,
        notes=list(changes.pop("notes", own.notes)),
        **changes,
    )


WHOLE_RELEASE_TEST = (
    "logistic regression on the whole release (each node's row sums of every released field, its degrees)"
)


# ---------------------------------------------------------------- node features and labels
def audited_node(data: Data) -> int:
    """The node whose features (or label) change: the first training node that is not public."""
    public = getattr(data, "public_node_mask", None)
    train = getattr(data, "train_mask", torch.ones(data.num_nodes, dtype=torch.bool))
    ok = train & (~public if public is not None else True)
    if not bool(ok.any()):
        raise ValueError("the audit needs a training node that is not public")
    return int(ok.nonzero()[0])


def feature_request(method: Method, inp: AuditInput) -> float | None:
    """The ε asked for the feature unit: HeteroRR's ``epsilon_f`` when given, else the audit's ε; 0 under the
    experimental control ``control='constant-input'`` (its release ignores x: 0-LDP, as it states)."""
    if inp.epsilon is None:
        return None
    if getattr(method.params, "control", "none") != "none":
        return 0.0
    return getattr(method.params, "epsilon_f", None) or inp.epsilon


def feature_units(method: Method, inp: AuditInput, u: int | None = None) -> list[Neighbours]:
    """The feature unit's two rows: node u's released row, and the whole release."""
    own = feature_unit(method, inp, u)
    return [own, whole_release_row(own, f"x_u = all α vs all β; {WHOLE_RELEASE_TEST}")]


def feature_unit(method: Method, inp: AuditInput, u: int | None = None) -> Neighbours:
    """One node's feature vector at the two extreme points of the declared domain (u's released row)."""
    data = _homogeneous(method, inp.data)
    u = audited_node(data) if u is None else u
    lo, hi = feature_domain(data)
    d = data.x.shape[1]
    worlds = (with_row(data, u, torch.full((d,), lo)), with_row(data, u, torch.full((d,), hi)))
    gaussian = getattr(method.params, "mechanism", None) == "gaussian"
    score = projection(np.ones(d)) if gaussian else clamped_sum(lo, hi)
    test = (
        "⟨x̃_u, 1⟩ (the Gaussian likelihood ratio)"
        if gaussian
        else "Σ_j clamp(x̃_uj, α, β) (the likelihood ratio of multi-bit, one-bit, Laplace, Duchi)"
    )
    claim, label, notes, requested = None, "node feature vector", [], feature_request(method, inp)
    if getattr(method.params, "accounting", None) == "released-code":  # FeatureRR's opt-in mode (not ε-LDP)
        from privgraph.accounting import TrustModel

        claim = _nominal_claim(
            PrivacyGuarantee(
                Unit.NODE_FEATURES, TrustModel.LOCAL, requested, 0.0, "the paper's claim for FeatureRR (Theorem 3)"
            )
        )
        label = "node feature vector — accounting=released-code, NOT ε-LDP: vs the paper's claimed ε"
        notes = ["accounting='released-code' states the composed total Σε_i; the row tests the ε the paper claims"]
    return Neighbours(
        Unit.NODE_FEATURES,
        label,
        f"x_u = all α vs all β; {test}",
        lambda side, rng: _release(method, inp, worlds[side], rng),
        lambda rel: rel.data.x[u].detach().double().numpy(),
        score,
        claim,
        notes,
        requested,
    )


def _nominal_claim(claimed: PrivacyGuarantee) -> Callable[[Any], PrivacyGuarantee]:
    """A row's claim fixed to ``claimed`` — the (ε, δ) a paper claims for an opt-in mode whose own
    release states a larger ε (or none) — instead of the release's stated guarantee."""
    return lambda rel: claimed


def label_unit(method: Method, inp: AuditInput) -> Neighbours:
    """One training node's label, 0 vs 1, through label LDP (``label_epsilon``)."""
    data = _homogeneous(method, inp.data)
    u = audited_node(data)
    worlds = []
    for label in (0, 1):
        w = data.clone()
        w.y = data.y.clone()
        w.y[u] = label
        worlds.append(w)
    return Neighbours(
        Unit.NODE_LABEL,
        "node label",
        "y_u = 0 vs 1; [ỹ_u = 1] − [ỹ_u = 0] (the k-ary RR likelihood ratio)",
        lambda side, rng: _release(method, inp, worlds[side], rng, labels=True),
        lambda rel: np.array([float(rel.data.y_reported[u] == 1) - float(rel.data.y_reported[u] == 0)]),
        first_column,
        requested=inp.label_epsilon,
    )


def _label_units(method: Method, inp: AuditInput) -> list[Neighbours]:
    """The label unit's two rows (u's reported label, the whole release) when labels are privatized too
    (``label_epsilon``), else none."""
    if inp.label_epsilon is None:
        return []
    own = label_unit(method, inp)
    return [own, whole_release_row(own, f"y_u = 0 vs 1; {WHOLE_RELEASE_TEST}")]


@audits_kind(Unit.NODE_FEATURES)
def _features(method: Method, inp: AuditInput) -> list[Neighbours]:
    return [*feature_units(method, inp), *_label_units(method, inp)]


# ---------------------------------------------------------------- adjacency lists (link LDP)
@audits_kind(Unit.ADJACENCY_LIST)
def _adjacency_list(method: Method, inp: AuditInput) -> list[Neighbours]:
    """u's report about v (the unit: u's list), and the whole released graph at (u, v) against 2ε."""
    data = _homogeneous(method, inp.data)
    u, v = non_adjacent_pair(data.edge_index, data.num_nodes)
    worlds = (data, with_link(data, u, v))
    base = worlds[0].edge_index

    def run(side: int, rng: RandomSource) -> Any:
        return _release(method, inp, worlds[side], rng)

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
    return [own, whole, *_label_units(method, inp)]


# ---------------------------------------------------------------- private edges (central)
def _private_edge_worlds(method: Method, inp: AuditInput, isolate: bool) -> tuple[int, int, tuple[Data, Data], Any]:
    """(u, v, (D₀, D₁), the ε asked): the private edge (u, v) absent, then present, between private-eligible
    nodes.  ``isolate``: on the graph whose only private-eligible nodes are u and v (V̄ = {u, v}, a public
    declaration) and every other edge public."""
    from privgraph.data.annotations import private_nodes

    data = _homogeneous(method, inp.data)
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
        return _release(method, inp, worlds[side], rng)

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
    return [private_edge_unit(method, inp, exact=True), *_label_units(method, inp)]


@audits_kind("private-edge-learned")
def _private_edge_learned(method: Method, inp: AuditInput) -> list[Neighbours]:
    """The private edge on the audit graph (the released graph at the pair and the degrees) and, where the
    private-eligible set is declared (EdgeRR; privHRG's every edge is private), the sharp V̄ = {u, v} row."""
    pair = [private_edge_unit(method, inp, exact=True, isolate=True)] if method.needs_private_edges else []
    return [private_edge_unit(method, inp, exact=False), *pair, *_label_units(method, inp)]


@audits("heterorr")
def _heterorr(method: Method, inp: AuditInput) -> list[Neighbours]:
    edges = [private_edge_unit(method, inp, exact=False), private_edge_unit(method, inp, exact=True, isolate=True)]
    return [*feature_units(method, inp), *edges, *_label_units(method, inp)]


# ---------------------------------------------------------------- sensitive attribute (PPCVGAE)
@audits("ppcvgae", "vgae", "dpgcn")
def _sensitive(method: Method, inp: AuditInput) -> list[Neighbours]:
    """The candidates s and s′ (s′ flips every private node), released by the method's release step from
    weights trained once on s: PPCVGAE's guarantee covers the release given the weights (Definition 2)."""
    from privgraph.methods import PPCVGAE
    from privgraph.methods.ppcvgae.embedding import check_sensitive
    from privgraph.methods.ppcvgae.privacy import flip_candidate

    data = _homogeneous(method, inp.data)
    check_sensitive(data)
    worlds = (data, data.clone())
    worlds[1].sens = flip_candidate(data.sens, data.private_mask)
    trained = method.train(data, derive_seed(inp.seed, 98))
    if isinstance(method, PPCVGAE):  # (model, candidate, trace): the candidate is the flip of the input's s
        trained = [(trained[0], flip_candidate(w.sens, w.private_mask), *trained[2:]) for w in worlds]
    else:
        trained = [trained, trained]
    method.check_release_epsilon(inp.epsilon)
    means = [
        method.release_trained(t, w, None, None).z.detach().double().numpy().ravel() for t, w in zip(trained, worlds)
    ]
    notes = [
        "the weights are trained once on s and held fixed (the guarantee's scope); training on s′ "
        "instead would be a different release, not covered by the guarantee"
    ]
    claim, label = None, "sensitive attribute (s vs s′)"
    if getattr(method.params, "calibration", None) == "paper":  # PPCVGAE's opt-in paper noise (not DP)
        from privgraph.accounting import TrustModel

        claim = _nominal_claim(
            PrivacyGuarantee(
                Unit.SENSITIVE_ATTRIBUTE,
                TrustModel.CENTRAL,
                inp.epsilon,
                float(method.params.delta),
                "the paper's claim for its noise (§5)",
            )
        )
        label = "sensitive attribute (s vs s′) — calibration=paper, NOT DP: vs the paper's claimed (ε, δ)"
        notes.append("calibration='paper' states ε = ∞ (and its exact δ); the row tests the (ε, δ) the paper claims")
    return [
        Neighbours(
            Unit.SENSITIVE_ATTRIBUTE,
            label,
            "candidates s vs s′; ⟨z − μ(s), μ(s′) − μ(s)⟩ (the Gaussian likelihood ratio)",
            lambda side, rng: method.release_trained(trained[side], worlds[side], inp.epsilon, rng),
            lambda rel: rel.z.detach().double().numpy().ravel() - means[0],
            projection(means[1] - means[0]),
            claim,
            notes,
        )
    ]


# ---------------------------------------------------------------- GAP's aggregation perturbation
def _hop_residual_statistic(reference: torch.Tensor, rows: torch.Tensor, owners: torch.Tensor) -> Callable:
    """Observation of a GAP :class:`~privgraph.methods.gap.AggregationRelease`: Σ_k Σ_i ⟨s^k_{rows_i} −
    (Aᵀx^{k−1})_{rows_i}, x^{k−1}_{owners_i}⟩, A the ``reference`` graph (the world without the unit) and x^{k−1}
    the release's own previous table — the Gaussian log-likelihood ratio of the K hops, hop by hop
    (adaptive composition): the other world adds x^{k−1}_{owner} to row ``row`` of hop k's mean."""
    from privgraph.methods.gap import neighbour_sum

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

    data, _ = validate_graph(_homogeneous(method, inp.data), undirected=True, self_loops=False)
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


HUB_SPOKES = 2000  # the adversarial hub's spokes (the reviewer's pair: 2,000 spokes, D = 1)
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
        Unit.NODE_WITH_EDGES,
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
        Unit.NODE_WITH_EDGES,
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
    """GAP-NDP's aggregation module, white-box (:data:`GAP_AUDIT_NOTE`), on node-removal pairs:

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
    from privgraph.audit.graphs import hub_above_bound, hub_within_bound
    from privgraph.data.validation import validate_graph
    from privgraph.methods.node_domain import DegreeAboveBound, within_bound

    p = method.params
    d = p.max_degree
    data, _ = validate_graph(_homogeneous(method, inp.data), undirected=True, self_loops=False)
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


# ---------------------------------------------------------------- heterogeneous graphs
def _protected_relation(method: Method, data: HeteroData) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
    if hasattr(method, "resolve_relations"):
        return method.resolve_relations(data)
    et = data.edge_types[0]
    back = [r for r in data.edge_types if r[0] == et[2] and r[2] == et[0] and r != et]
    return et, (back[0] if back else et)


def with_hetero_edge(data: HeteroData, edge_type: tuple, reverse: tuple, u: int, v: int) -> HeteroData:
    """``data`` with the edge (u, v) of ``edge_type`` (and (v, u) of its reverse) added."""
    out = data.clone()
    out[edge_type].edge_index = torch.cat([data[edge_type].edge_index, torch.tensor([[u], [v]])], dim=1)
    if reverse != edge_type:
        out[reverse].edge_index = torch.cat([data[reverse].edge_index, torch.tensor([[v], [u]])], dim=1)
    return out


def _hetero_pair(data: HeteroData, edge_type: tuple) -> tuple[int, int]:
    present = set(map(tuple, data[edge_type].edge_index.t().tolist()))
    for u in range(data[edge_type[0]].num_nodes):
        for v in range(data[edge_type[2]].num_nodes):
            if (u, v) not in present:
                return u, v
    raise ValueError(f"every pair of {edge_type} is an edge: the audit needs one to add")


@audits("hetedp", "rgcn", "hgt", "metapath2vec")
def _hetero_edge(method: Method, inp: AuditInput) -> list[Neighbours]:
    """One edge of the protected relation (a canary) present or absent; each sample a whole release
    (many short runs).  HeteDP: the released model's score μ_u·μ_v of the canary pair."""
    from privgraph.methods.hetedp.method import score_links

    data = inp.data
    if not isinstance(data, HeteroData):
        raise TypeError(f"{method.name} is audited on a HeteroData, got {type(data).__name__}")
    edge_type, reverse = _protected_relation(method, data)
    u, v = _hetero_pair(data, edge_type)
    worlds = (data, with_hetero_edge(data, edge_type, reverse, u, v))
    pair = torch.tensor([[u], [v]])
    label = f"edge of {edge_type[1] if edge_type[1] != 'to' else '-'.join(edge_type[::2])}"
    claim, notes, requested = None, [], inp.epsilon
    if getattr(method, "releases_link_model", False):  # HeteDP: its edge ε and its own link model
        requested = _hetedp_edge_request(method, data, edge_type, reverse, inp.epsilon)
        if method.params.topology == "message-passing":
            raise ValueError(
                "hetedp in message-passing mode claims no edge-level ε (its ε covers one example's "
                "loss term) and its release cannot be scored without the protected edges: audit "
                "topology='edge' or 'node'"
            )
        observe = lambda rel: score_links(rel, pair).double().numpy()  # noqa: E731
        test = "canary edge absent vs present; the released model's score μ_u·μ_v of the canary pair"
        if method.params.gradient_step == "paper":  # the authors' step (not DP): vs the ε_s the paper claims
            from privgraph.accounting import TrustModel

            unit, delta = f"edge of {edge_type}", float(method.params.delta)

            def claim(rel: Any) -> PrivacyGuarantee:
                return PrivacyGuarantee(
                    unit,
                    TrustModel.CENTRAL,
                    rel.details["dpsgd"]["epsilon_s"],
                    delta,
                    "the paper's claim for its DP-SGD (eq. 22)",
                )

            label += " — gradient_step=paper, NOT DP: vs the paper's claimed ε_s"
            notes = [
                "gradient_step='paper' states no guarantee (ε = ∞); the row tests the ε_s the accountant "
                "gives for its σ, rate and steps, which the paper claims"
            ]
    else:

        def observe(rel: Any) -> np.ndarray:
            released = rel.data[edge_type].edge_index
            return np.array([float(((released[0] == u) & (released[1] == v)).any())])

        test = "edge absent vs present; (u, v) in the released graph"
    return [
        Neighbours(
            f"edge of {edge_type}",
            label,
            test,
            lambda side, rng: _release(method, inp, worlds[side], rng),
            observe,
            first_column,
            claim,
            notes,
            requested,
        )
    ]


def _hetedp_edge_request(
    method: Method, data: HeteroData, edge_type: tuple, reverse: tuple, epsilon: float | None
) -> float | None:
    """HeteDP's declared split: ε_s = (1 − feature_share)·ε when the link encoder reads node features
    (features='noisy' and a type it reads has x), else ε_s = ε."""
    from privgraph.methods.hetedp.topology import message_relations

    if epsilon is None:
        return None
    p = method.params
    relations = message_relations(list(data.edge_types), edge_type, reverse, p.topology)
    read = {edge_type[0], edge_type[2], *(et[0] for et in relations)}
    reads_features = p.features == "noisy" and any("x" in data[t] for t in read)
    return (1 - p.feature_share) * epsilon if reads_features else epsilon


@audits("hetedp-features")
def _hetero_features(method: Method, inp: AuditInput) -> list[Neighbours]:
    """One node's feature vector at ±C/√d·1 (L2 distance 2C, the clipped release's sensitivity).

    With ``calibration="paper"`` (not DP: the release states ε = ∞) the row is audited against the
    (ε, δ) the paper claims for it, so its verdict shows the claim fails; the inputs are the same
    (C = 1: distance 2, the paper's assumed Δ, which the unclipped release does not even enforce)."""
    data = inp.data
    if not isinstance(data, HeteroData):
        raise TypeError(f"{method.name} is audited on a HeteroData, got {type(data).__name__}")
    types = list(method.params.node_types or [t for t in data.node_types if "x" in data[t]])
    t = types[0]
    d = data[t].x.shape[1]
    c = float(method.params.clip_bound)
    worlds = []
    for sign in (-1.0, 1.0):
        w = data.clone()
        w[t].x = data[t].x.clone()
        w[t].x[0] = sign * c / np.sqrt(d)
        worlds.append(w)
    claim, label, notes = None, f"node feature vector ({t})", []
    if getattr(method.params, "calibration", "clipped") == "paper":
        from privgraph.accounting import TrustModel

        claim = _nominal_claim(
            PrivacyGuarantee(
                Unit.NODE_FEATURES,
                TrustModel.CENTRAL,
                inp.epsilon,
                float(method.params.delta),
                "the paper's claim for its calibration (eq. 14)",
            )
        )
        label = f"node feature vector ({t}) — calibration=paper, NOT DP: vs the paper's claimed ε"
        notes = ["calibration='paper' states no guarantee (ε = ∞); the row tests the (ε, δ) the paper claims"]
    own = Neighbours(
        Unit.NODE_FEATURES,
        label,
        "x_u = −C/√d·1 vs +C/√d·1; ⟨x̃_u, 1⟩ (the Gaussian likelihood ratio)",
        lambda side, rng: _release(method, inp, worlds[side], rng),
        lambda rel: rel.data[t].x[0].detach().double().numpy(),
        projection(np.ones(d)),
        claim,
        notes,
    )
    return [own, whole_release_row(own, f"x_u = −C/√d·1 vs +C/√d·1; {WHOLE_RELEASE_TEST}")]


def definition(method: str | Method | type[Method]) -> Definition:
    """The audit definition of ``method`` (a registered name, a method or its class): the override of its
    name, else that of its ``audit_kind``, else that of its ``unit`` (a clear error when it has none)."""
    if isinstance(method, str):
        from privgraph.methods import METHODS

        if method not in METHODS:
            raise ValueError(f"method {method!r} has no audit definition (privgraph.audit.definitions)")
        method = METHODS[method]
    cls = method if isinstance(method, type) else type(method)
    if cls.name in AUDITS:
        return AUDITS[cls.name]
    if cls.audit_kind is not None:
        if cls.audit_kind not in KINDS:
            raise ValueError(f"method {cls.name!r}: no audit definition of kind {cls.audit_kind!r}")
        return KINDS[cls.audit_kind]
    if not cls.heterogeneous and cls.unit in KINDS:
        return KINDS[cls.unit]
    raise ValueError(f"method {cls.name!r} has no audit definition (privgraph.audit.definitions)")
