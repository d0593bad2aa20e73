"""The bounded-degree domain of node-level DP (GAP-NDP, node-dpsgd): what the degree bound D promises, why a
graph above it is refused by default, and the public number of training nodes.

**The domain.**  Node-level DP here is *bounded-degree node-DP* (Kasiviswanathan, Nissim, Raskhodnikova &
Smith, TCC 2013; Blocki, Blum, Datta & Sheffet, ITCS 2013, "restricted sensitivity"): the guarantee holds for
every pair of neighbouring graphs (one node and its edges added or removed) that *both* have every out-degree
≤ D.  D is a **public promise of the data owner** — a cap the platform enforces (a friend limit, a follow
cap), or a bound known before the data are read — never a statistic of the graph.  On such graphs no edge is
dropped: the graph the mechanism aggregates over is the input, and the part two neighbouring graphs differ in
is exactly the node v and its ≤ D out-edges (and its in-edges, which only reach v's own row or loss term).

**Within the domain** (proofs beside the code: :mod:`privgraph.methods.gap`, :mod:`privgraph.methods.node_dpsgd`):

* GAP-NDP, hop k: row w of Aᵀx^{k−1} changes only for w ∈ out(v), by the unit vector x^{k−1}_v: ℓ₂
  sensitivity √D, exactly (a node with D out-edges attains it).  v's own row is present on one side only; it
  is read only as v's own example by the classifier's DP-SGD (whose add/remove analysis holds for any
  content of the example) and, normalised, as the unit vector x^k_v in the next hop (counted above).
* node-dpsgd: the loss terms that read v are v's own and its ≤ K out-neighbours': K+1 terms, each clipped to
  C, so the clipped sum moves by at most 2(K+1)C (Daigavane et al.'s Δ), exactly the accountant's input.

**Above the bound no projection can do this.**  Let Π map any graph to one with degrees ≤ D, and be the
identity on graphs already within D (every sound-looking projection is; otherwise it throws away data that
needs no bounding).  Take a hub v joined to N spokes u₁ … u_N, each with D further neighbours of its own.
In G − v every degree is ≤ D, so Π keeps every edge; in G each spoke has D + 1 edges and must lose one, and
v can keep at most D of its own, so at least N − D spokes drop an edge u_i – w: the sums (or loss terms) at
≥ N − D nodes other than v change, and the sensitivity grows with N — it is not bounded by any function of
D.  Projections that are not the identity within D fare no better in practice: Day, Li & Lyu's
edge-addition (SIGMOD 2016; edges in a fixed order, an edge kept iff both endpoints are below D) bounds the
node sensitivity of the *degree histogram*, not of the kept edge set: on the path a–b–c–d–e–f (order ab <
bc < … < ef, D = 1) G keeps {ab, cd, ef} and G − a keeps {bc, de} — every edge changes, and a longer path
changes every row.  Sampling D edges per node at random (the authors' ``BoundOutDegree``, Daigavane et al.'s
Ĝ) has the same freed-slot cascade: removing v frees a slot at each in-neighbour u of v, which then keeps
another edge u → w, moving w's sum; measured on a 2,000-spoke hub (K = 1, D = 1, σ for (1, 10⁻⁵)), ε_LB ≈ 3
(``privgraph audit gap-ndp --param over_bound=sample …``, docs/methods/gap.md).  Degree-dependent weights
(1/deg, GCN's normalisation, min(1, D/deg)) fail the same way: removing a hub changes every neighbour's
degree, and the changes add up coherently at shared targets.

**So by default a graph with an out-degree above D is refused** (:class:`DegreeAboveBound`), before any noise
is drawn or any model trained.  The refusal reveals one bit — that some out-degree exceeds D — about a graph
outside the promised domain, where no claim is made; it is for the curator only (do not publish it).  What to
do: give as D a cap the data owner enforces (the graph then never exceeds it), or bound the degrees by a
*public, data-independent* rule before the data reach the curator (the owner's own cap), or opt into
``over_bound="sample"``: the authors' random per-node sampling, whose release claims **no** node-level
guarantee (ε = ∞, the reason in the notes) on any graph — a claim stated only within the bound would tell from
the report whether the graph is.  On a graph within the bound ``"sample"`` trains the default's model, bit for
bit (no edge is sampled and no randomness drawn); only the stated guarantee differs.

**The training-node count** (``num_train``) is a public parameter, as HeteDP's ``edge_count``: it sets the
sampling rate, the number of steps, σ and the default δ.  It is required with ε (refused before any noise
without it); the data's own count never sets σ or δ.
"""

from __future__ import annotations

import torch
from torch import Tensor

from privgraph.param_checks import whole_num_train as check_num_train  # noqa: F401 (re-exported)

OVER_BOUND_MODES = ("refuse", "sample")

OVER_BOUND_HELP = (
    "a graph with an out-degree above the bound: refuse (nothing released, the default: the guarantee is proven "
    "on graphs within the bound) or sample (the authors' random per-node sampling, NO node-level guarantee on "
    "such a graph, so ε = ∞ stated on every graph); on a graph within the bound both train the same model"
)

NUM_TRAIN_HELP = (
    "N: a PUBLIC number of training nodes (their count if you treat it as public, or a public bound): it sets "
    "the sampling rate, the steps T, σ and the default δ, never read from the data (required with ε)"
)


class DegreeAboveBound(ValueError):
    """A graph outside the bounded-degree domain, refused before any noise (module docstring)."""


class NeedsNumTrain(ValueError):
    """A private release without the public ``num_train``."""


def out_degrees(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Every node's out-degree (self-loops not counted)."""
    src = edge_index[0, edge_index[0] != edge_index[1]].cpu()
    return torch.bincount(src, minlength=num_nodes)


def within_bound(edge_index: Tensor, num_nodes: int, bound: int) -> bool:
    """Whether every out-degree is at most ``bound``."""
    degrees = out_degrees(edge_index, num_nodes)
    return degrees.numel() == 0 or int(degrees.max()) <= bound


def refusal(method: str, bound: int, name: str = "max_degree") -> DegreeAboveBound:
    """The default's refusal of a graph above the bound (no degree of the graph is named in it)."""
    return DegreeAboveBound(
        f"{method}: the graph has a node with more than {name}={bound} out-edges, outside the bounded-degree "
        f"domain its node-level guarantee is proven on (no projection onto degree ≤ {bound} has a node "
        "sensitivity bounded for every input: docs/methods/gap.md, 'Degree bound'); nothing was released, no "
        "noise drawn. This refusal depends on the graph (it says that some degree exceeds the bound): for the "
        f"curator only, do not publish it. Give as {name} a public cap that the data owner enforces, or bound "
        "the degrees by a public rule before the data reach the curator, or release with no node-level "
        "guarantee (--param over_bound=sample: ε = ∞)"
    )


def in_domain(method: str, data, bound: int, over_bound: str) -> bool:
    """Whether every out-degree of ``data`` is ≤ ``bound``; a graph above it is refused with ``over_bound=
    "refuse"`` (:func:`refusal`, before any noise) and answers False with ``"sample"`` (no guarantee)."""
    if within_bound(data.edge_index, data.num_nodes, bound):
        return True
    if over_bound == "refuse":
        raise refusal(method, bound)
    return False


def needs_num_train(method: str) -> NeedsNumTrain:
    return NeedsNumTrain(
        f"{method} needs num_train=N, a public number of training nodes (their count if you treat it as public, "
        "or a public bound): it fixes the sampling rate, the steps, σ and the default δ, which must not be read "
        "from the data"
    )


def check_mode(over_bound: str) -> None:
    if over_bound not in OVER_BOUND_MODES:
        raise ValueError(f"over_bound must be one of {OVER_BOUND_MODES}, got {over_bound!r}")


NO_GUARANTEE_NOTE = (
    "NO node-level guarantee (ε = ∞): over_bound=sample claims none on any graph, since on a graph with an "
    "out-degree above the bound D the random per-node sampling is not node-level DP (removing a node frees a slot "
    "at each of its in-neighbours, which then keep another edge, so more than D rows or K+1 loss terms move: the "
    "freed-slot cascade, docs/methods/gap.md); whether this graph is within the bound is not stated (a statistic "
    "of the graph); the stated σ is the one a release within the bound has"
)


def claims_guarantee(over_bound: str) -> bool:
    """Whether a release states its node-level (ε, δ): with ``"refuse"`` (a graph above the bound never reaches
    the release); never with ``"sample"``, whatever the graph — a guarantee stated only on graphs within the bound
    would tell from the report alone whether the graph is (as EdgeRR's ``convergence="waive"`` states ∞ whether
    or not its chain passed)."""
    return over_bound == "refuse"


__all__ = [
    "NO_GUARANTEE_NOTE",
    "claims_guarantee",
    "NUM_TRAIN_HELP",
    "OVER_BOUND_HELP",
    "OVER_BOUND_MODES",
    "DegreeAboveBound",
    "NeedsNumTrain",
    "check_mode",
    "check_num_train",
    "in_domain",
    "needs_num_train",
    "out_degrees",
    "refusal",
    "within_bound",
]
