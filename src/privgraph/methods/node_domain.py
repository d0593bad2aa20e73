"""The enforced degree cap of node-level DP (GAP-NDP's ``degree_cap="enforced"``, node-dpsgd): restricted
node-DP, its refusal, and the public number of training nodes.

**Restricted node-DP.**  The guarantee holds only between neighbouring graphs (one node and its edges added or
removed) that *both* have every out-degree ≤ D, D a cap the data owner enforces (never a statistic of the
graph).  It is **not node-DP on arbitrary graphs**: the refusal of a graph above D is itself data-dependent (G
within D releases, G plus a node joined to a node at D is refused: δ ≥ 1), and re-running with other D's reveals
the largest degree by bisection.  Its claims are stated on their own unit, ``node (degree ≤ D)``
(:meth:`~privgraph.accounting.Unit.restricted_node`), which a ledger never composes as a node's.  GAP-NDP's
default, the soft cap with a Propose-Test-Release test (:mod:`privgraph.mechanisms.soft_cap`), is node-DP on
every graph and refuses nothing; ``mlp-ndp`` reads no edge.

**Within the cap** (proofs beside the code: :mod:`privgraph.methods.gap`, :mod:`privgraph.methods.node_dpsgd`):

* GAP-NDP, hop k: row w of Aᵀx^{k−1} changes only for w ∈ out(v), by the unit vector x^{k−1}_v: ℓ₂
  sensitivity √D, exactly (a node with D out-edges attains it).
* node-dpsgd: the loss terms that read v are v's own and its ≤ K out-neighbours': K+1 terms, each clipped to
  C, so the clipped sum moves by at most 2(K+1)C (Daigavane et al.'s Δ), exactly the accountant's input.

**Above the cap.**  The random per-node sampling (the authors' ``BoundOutDegree``, Daigavane et al.'s Ĝ) has a
freed-slot cascade: removing v frees a slot at each in-neighbour u of v, which then keeps another edge u → w,
moving w's sum; measured on a 2,000-spoke hub (K = 1, D = 1, σ for (1, 10⁻⁵)), ε_LB ≈ 3
(``privgraph audit gap-ndp --param degree_cap=enforced --param over_bound=sample …``).  Day, Li & Lyu's
edge-addition (SIGMOD 2016) bounds the node sensitivity of the degree histogram only: on the path a–b–c–d–e–f
(D = 1) G keeps {ab, cd, ef} and G − a keeps {bc, de}.  Degree-dependent weights without a test have unbounded
global sensitivity.  (An earlier version argued that *no* projection can be node-DP above D, from a hub whose
spokes sit at the bound; that counterexample fails — a spoke can meet the bound by dropping its edge to the hub
— and bounded global sensitivity is sufficient, not necessary: Kasiviswanathan, Nissim, Raskhodnikova & Smith,
TCC 2013, and Blocki, Blum, Datta & Sheffet, ITCS 2013, reach node-DP on all graphs through local or smooth
sensitivity and a private test, as the soft cap does.)

**So the enforced cap refuses a graph above D** (:class:`DegreeAboveBound`), before any noise is drawn or any
model trained; it is for the curator only.  ``over_bound="sample"`` instead releases the authors' sampling
with **no** node-level guarantee (ε = ∞) stated on every graph (a claim stated only within the cap would tell
from the report whether the graph is); on a graph within the cap it trains the default's model, bit for bit.

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
        "sensitivity bounded for every input: docs/methods/gap.md, 'Enforced cap'); nothing was released, no "
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
