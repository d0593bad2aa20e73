"""Neighbouring inputs per privacy unit, what the audit observes of a release, and the test's score.

A :class:`Neighbours` is one audited unit of one method: two inputs D₀, D₁
that differ in exactly that unit, a ``run(side, rng)`` that releases one of
them through the method's own code (:func:`privgraph.api.release`, the
path of :func:`privgraph.privatize`, or the method's release step where the
guarantee covers that step only), an ``observe`` that reads the released
quantity about the unit, and a ``score``: the likelihood-ratio statistic of
the claimed mechanism where it is known, else ``None`` — a logistic
regression fitted on the selection half (:mod:`privgraph.audit.runner`) — and the ε the
user's request implies for the unit (``requested``), which the row is judged against.

The units (the issue's list, the design notes' neighbouring relations):

* node feature vector — one node's features at the two extreme points of the
  declared domain (all α vs all β; for clipped Gaussian releases ±C/√d·1).  One
  row observes u's row; a second observes the whole release (:func:`whole_release`),
  which catches a release that shows u's features anywhere else;
* node label — one training node's label 0 vs 1 (with ``label_epsilon``): u's
  reported label, and the whole release;
* adjacency list — one link (u, v) flipped.  The unit is u's list, so the
  audit observes *u's report* as the server received it
  (:attr:`~privgraph.release.PrivateRelease.reports`).  The input graph is
  undirected: the flip also changes v's list, so a second row observes the
  whole released graph at (u, v) against 2ε (two lists, basic composition);
* private edge — one private edge (u, v) present or absent;
* edge of a relation (HeteDP) — one protected edge (a canary) present or absent;
* sensitive attribute — the candidates s and s′ (PPCVGAE's Definition 2), the
  release step given the trained weights (what the guarantee covers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, HeteroData

from privgraph.accounting import PrivacyGuarantee
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.graph import LinkReports

Observation = np.ndarray


class _Asked:
    """The default of :attr:`Neighbours.requested`: the ε the audit was asked for, as it is."""

    def __repr__(self) -> str:
        return "ASKED"


ASKED = _Asked()


@dataclass
class Neighbours:
    """One audited unit (module docstring)."""

    unit: str  # the unit as the method's report names it (the claimed guarantee is looked up by it)
    label: str  # what the table shows
    test: str  # the distinguishing test, in words
    run: Callable[[int, RandomSource], Any]  # side 0/1, randomness → one release (or release step)
    observe: Callable[[Any], Observation]  # a release → 1-D float features
    score: Callable[[np.ndarray], np.ndarray] | None = None  # [N, F] → [N]; None: learned on the selection half
    claim: Callable[[Any], PrivacyGuarantee | None] | None = None  # default: the release's guarantee for ``unit``
    notes: list[str] = field(default_factory=list)
    # the ε the user's request implies for this unit, derived from the ε asked and the method's declared split
    # (never read back from the release's guarantee); ASKED: the audit's ε as it is; None: nothing was asked
    # (a non-private method, an optional ε left out): the row is judged against its claim
    requested: float | None | _Asked = ASKED


def claimed_guarantee(release: Any, unit: str) -> PrivacyGuarantee | None:
    """The guarantee a release states for ``unit`` (composed when several): ``None`` when it states none
    (then the audit reports "no claim").  Heterogeneous units match by prefix ("edge of (…)")."""
    report = getattr(release, "report", None)
    if report is None:  # a release step (PPCVGAE's EmbeddingRelease) carries its guarantee directly
        g = getattr(release, "guarantee", None)
        return g if g is not None and g.unit == unit else None
    units = report.by_unit()
    if unit in units:
        return units[unit]
    for name, g in units.items():
        if name.startswith(unit):
            return g
    return None


# ---------------------------------------------------------------- the audited nodes
def non_adjacent_pair(
    edge_index: Tensor, num_nodes: int, allowed: Tensor | None = None, avoid: Tensor | None = None
) -> tuple[int, int]:
    """The first pair u < v (u not in ``avoid``, both in ``allowed``) without a link in either direction."""
    present = set(map(tuple, edge_index.t().tolist()))
    allowed = torch.ones(num_nodes, dtype=torch.bool) if allowed is None else allowed.to(torch.bool)
    avoid = torch.zeros(num_nodes, dtype=torch.bool) if avoid is None else avoid.to(torch.bool)
    for u in range(num_nodes):
        if not allowed[u] or avoid[u]:
            continue
        for v in range(u + 1, num_nodes):
            if allowed[v] and (u, v) not in present and (v, u) not in present:
                return u, v
    raise ValueError("the graph has no pair of (private-eligible) nodes without a link: the audit needs one to flip")


def with_link(data: Data, u: int, v: int, private: bool = False) -> Data:
    """``data`` with the undirected link (u, v) added (both directions; marked private when ``private``)."""
    out = data.clone()
    pair = torch.tensor([[u, v], [v, u]], dtype=data.edge_index.dtype)
    out.edge_index = torch.cat([data.edge_index, pair], dim=1)
    mask = getattr(data, "private_edge_mask", None)
    if mask is not None:
        out.private_edge_mask = torch.cat([mask.to(torch.bool), torch.full((2,), private)])
    elif private:
        raise ValueError("a private edge needs data.private_edge_mask")
    return out


def feature_domain(data: Data) -> tuple[float, float]:
    lo, hi = (float(v) for v in getattr(data, "feature_domain", (0.0, 1.0)))
    return lo, hi


def with_isolated_node(data: Data) -> Data:
    """``data`` with one more node v = n: no edges, in no training set (a test node), every per-node tensor
    extended by a row of zeros (node-level DP's neighbour of G − v = ``data``)."""
    n, out = data.num_nodes, data.clone()
    for key, value in data.items():
        if torch.is_tensor(value) and value.dim() >= 1 and value.shape[0] == n and not key.startswith("edge"):
            row = torch.ones_like(value[:1]) if key == "test_mask" else torch.zeros_like(value[:1])
            out[key] = torch.cat([value, row])
    out.num_nodes = n + 1
    return out


def with_row(data: Data, u: int, row: Tensor) -> Data:
    out = data.clone()
    out.x = data.x.clone()
    out.x[u] = row.to(out.x.dtype)
    return out


# ---------------------------------------------------------------- observations
def released_pair(data: Data, u: int, v: int) -> np.ndarray:
    """The released graph at the pair: [A(u→v), A(v→u), w(u→v), w(v→u)] (edge weights, Soft's P_uv;
    absent pairs 0)."""
    dense = getattr(data, "dense_adjacency", None)
    if dense is not None:
        row_u, row_v = dense.rows(u, u + 1)[0], dense.rows(v, v + 1)[0]
        w_uv, w_vu = float(row_u[v]), float(row_v[u])
        return np.array([w_uv > 0, w_vu > 0, w_uv, w_vu], dtype=np.float64)
    ei = data.edge_index
    weight = getattr(data, "edge_weight", None)
    out = np.zeros(4)
    for k, (a, b) in enumerate(((u, v), (v, u))):
        hit = ((ei[0] == a) & (ei[1] == b)).nonzero().flatten()
        if hit.numel():
            out[k] = 1.0
            out[2 + k] = float(weight[hit].sum()) if weight is not None else float(hit.numel())
    return out


def released_pair_and_degrees(data: Data, u: int, v: int) -> np.ndarray:
    """:func:`released_pair` plus the released degrees of u and v and the released number of links."""
    ei = data.edge_index
    deg = torch.bincount(ei[0], minlength=data.num_nodes)
    return np.concatenate([released_pair(data, u, v), [float(deg[u]), float(deg[v]), float(ei.shape[1])]])


def whole_release(data: Data | HeteroData) -> np.ndarray:
    """Every released field of ``data`` as one fixed-length vector: the observation of a whole-release row.

    For each store (a ``Data``'s one; a ``HeteroData``'s node and edge types): each node's row sum of every
    node-level tensor, each node's released out- and in-degree (``edge_index``) and the sums of the
    edge-level tensors (``edge_*``: weights, attributes) over its out-edges, a dense adjacency's weighted
    degrees, every other tensor flattened and every number as it is.  Under the audit's extreme-point inputs
    (x_u all α vs all β) a copy of u's row into any other row moves that row's sum, so the row sums keep what
    a copy shows at a size that does not grow with the number of features."""
    from privgraph.nn.dense import BlockwiseAdjacency

    parts: list[np.ndarray] = []
    for store in data.stores:
        key = getattr(store, "_key", None)
        if isinstance(key, tuple):  # an edge type of a HeteroData: (source, relation, destination)
            sizes: tuple[int, int] | None = (data[key[0]].num_nodes, data[key[2]].num_nodes)
        elif key is None and isinstance(data, HeteroData):  # a HeteroData's graph-level store
            sizes = None
        else:
            n = data.num_nodes if key is None else store.num_nodes
            sizes = (n, n)
        edges = store.get("edge_index")
        for name in sorted(store.keys()):
            value = store[name]
            if name == "edge_index":
                parts += [np.bincount(value[k].numpy(), minlength=sizes[k]).astype(np.float64) for k in (0, 1)]
            elif isinstance(value, BlockwiseAdjacency):  # Blink-Soft's dense P
                parts.append(value.degree().double().numpy())
            elif torch.is_tensor(value) and name.startswith("edge_") and edges is not None:
                per_edge = value.detach().reshape(value.shape[0], -1).double().sum(1)
                parts.append(torch.zeros(sizes[0], dtype=torch.float64).index_add_(0, edges[0], per_edge).numpy())
            elif torch.is_tensor(value) and sizes is not None and value.dim() and value.shape[0] == sizes[0]:
                parts.append(value.detach().reshape(value.shape[0], -1).double().sum(1).numpy())
            else:
                try:
                    flat = value.detach().double().numpy() if torch.is_tensor(value) else value
                    parts.append(np.asarray(flat, dtype=np.float64).ravel())
                except (TypeError, ValueError):
                    raise TypeError(
                        f"the whole-release observation cannot read the released field {name!r} "
                        f"({type(value).__name__})"
                    ) from None
    return np.concatenate(parts) if parts else np.zeros(0)


def first_column(values: np.ndarray) -> np.ndarray:
    """Score: the first observed feature (an indicator or a scalar whose threshold test is the LR test)."""
    return values[:, 0]


def clamped_sum(lo: float, hi: float) -> Callable[[np.ndarray], np.ndarray]:
    """Score Σ_j clamp(y_j, α, β): the log-likelihood ratio (up to an affine map) of Laplace, multi-bit,
    one-bit and Duchi at the extreme points all-α / all-β, and a threshold-equivalent one per
    coordinate for the other bounded mechanisms."""
    return lambda values: np.clip(values, lo, hi).sum(axis=1)


def projection(direction: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Score ⟨y, x₁ − x₀⟩: the Gaussian mechanism's log-likelihood ratio (up to an affine map)."""
    d = np.asarray(direction, dtype=np.float64).ravel()
    return lambda values: values @ d


# ---------------------------------------------------------------- link-LDP reports
def _link_reports(reports: Any) -> LinkReports:
    if not isinstance(reports, LinkReports):
        raise TypeError(
            f"no audit observation for reports of type {type(reports).__name__}: "
            "link-LDP reports implement privgraph.mechanisms.graph.LinkReports"
        )
    return reports


def link_report(reports: Any, u: int, v: int, base_edges: Tensor) -> np.ndarray:
    """Node u's report about the link (u, v) as the server received it, centred on world 0
    (:meth:`privgraph.mechanisms.graph.LinkReports.report`; ``base_edges``: world 0's edges)."""
    src, dst = base_edges
    return _link_reports(reports).report(u, v, (src.cpu().numpy(), dst.cpu().numpy()))


def link_report_score(reports: Any) -> tuple[Callable[[np.ndarray], np.ndarray] | None, str]:
    """The log-likelihood ratio of u's report between "no link" and "link" under the claimed
    mechanism, and its description; ``None`` (a logistic regression) where the mechanism does not know it."""
    reports = _link_reports(reports)
    return reports.log_likelihood_ratio, reports.score_description  # log_likelihood_ratio may be None
