"""Graph mechanisms for link LDP: what each node sends about its adjacency list, behind one protocol.

Every local mechanism on adjacency lists returns a *reports* object, the reports as the untrusted
server received them (a method's ``Release.reports``), implementing :class:`LinkReports`:

* :meth:`~LinkReports.report` — node u's report about v as an observation vector, centred on the
  world without the link (what :mod:`privgraph.audit` observes for the adjacency-list unit);
* :meth:`~LinkReports.log_likelihood_ratio` — the log-likelihood ratio of that observation between
  "no link" and "link" under the mechanism (set to ``None`` where the mechanism does not know it:
  the audit then fits a logistic regression), described by :attr:`~LinkReports.score_description`;
* :meth:`~LinkReports.guarantee` — the ε-link-LDP guarantee per adjacency list.

The server-side reads are each mechanism's own (:meth:`RandomizedResponseReports.bits` and
``noisy_degrees``, :meth:`LaplaceAdjacencyReports.rows` / ``pair_sums``, the degree vectors).

The mechanisms (each collected from a *validated* simple undirected graph, given as its directed
edge arrays ``src, dst``; the methods validate with :func:`privgraph.data.validation.check_graph`):

* :class:`RandomizedResponseReports` (Blink, Algorithm 1; RR, SymRR, DPRR, Solitude): keyed-PRF
  randomized response on each adjacency list with ε_a = (1 − s)ε, plus a Laplace degree with
  ε_d = sε.  The n noisy bits of node i are never materialised: node i draws a secret 64-bit key
  and its flip of bit j is ``U(key_i, j) < p_flip`` with U the keyed Philox PRF
  (:mod:`privgraph.mechanisms.prf`), so any bit Ã_ij = A_ij XOR flip_ij is evaluated on demand in
  O(log deg) time and the report is fixed once and for all.  Memory O(n + |E|).  (The object holds
  the true edges to evaluate bits; it stands for the nodes.)
* :class:`LaplaceAdjacencyReports` (L-DpGCN): Laplace(1/ε) on each adjacency entry, lazily evaluable
  the same way (inverse-CDF Laplace of the keyed PRF uniform).
* :class:`DegreeVectorReports` (LDPGen): noisy degree vectors towards a partition of the nodes,
  Laplace per entry (:func:`noisy_degree_vectors`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np
import torch

from privgraph.accounting import Budget, PrivacyGuarantee, TrustModel, Unit, check_share
from privgraph.mechanisms.base import check_epsilon
from privgraph.mechanisms.prf import prf_uniform
from privgraph.mechanisms.randomness import RandomSource, integers, laplace

FLIP_STREAM = 1
LAPLACE_STREAM = 2


@runtime_checkable
class LinkReports(Protocol):
    """The reports of a link-LDP mechanism as the server received them (module docstring)."""

    score_description: ClassVar[str]

    def report(self, u: int, v: int, edges: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Node u's report about v, centred on the world whose directed edges are ``edges`` (no (u, v))."""
        ...

    def log_likelihood_ratio(self, observations: np.ndarray) -> np.ndarray:
        """The log-likelihood ratio (up to an affine map) of each row of :meth:`report`'s observations,
        ``[samples, k]``, between "no link" and "link".  A mechanism that does not know it sets
        ``log_likelihood_ratio = None`` (the audit then fits a logistic regression)."""
        ...

    def guarantee(self) -> PrivacyGuarantee: ...


def laplace_unit_llr(x: np.ndarray) -> np.ndarray:
    """Laplace with means 0 vs 1, log-likelihood ratio per unit of ε: clamp(2x − 1, −1, 1)."""
    return np.clip(2.0 * x - 1.0, -1.0, 1.0)


def _edge_keys(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> np.ndarray:
    """The sorted distinct keys i·n + j of the directed edges: a sort and a comparison of neighbours,
    O(E log E) (numpy's ``np.unique`` hashes int64 keys first, and is ~50× slower at 10⁷ keys)."""
    keys = np.asarray(src, dtype=np.int64) * num_nodes  # one array, added to and sorted in place
    keys += np.asarray(dst, dtype=np.int64)
    keys.sort()
    if keys.size > 1:
        new = keys[1:] != keys[:-1]
        if not new.all():
            keys = keys[np.concatenate(([True], new))]
    return keys


# ---------------------------------------------------------------- randomized response + Laplace degree
def check_degree_share(degree_share: float) -> float:
    """Blink's degree share s (``degree_share``), the share of ε spent on the degree, lies in [0, 1]
    (:func:`~privgraph.accounting.check_share`)."""
    return check_share(degree_share, "Blink's degree_share (the share of ε spent on the degree)", closed=True)


def flip_probability(epsilon_a: float) -> float:
    """p_flip = 1 / (1 + e^{ε_a}) = σ(−ε_a), without overflow (ε_a = 0 gives 1/2: no information;
    a large ε_a gives ≈ e^{−ε_a}, tending to 0)."""
    z = math.exp(-epsilon_a)  # ε_a ≥ 0: z ∈ (0, 1], e^{ε_a} never formed
    return z / (1.0 + z)


@dataclass
class RandomizedResponseReports:
    """The noisy adjacency lists and degrees of all nodes (module docstring)."""

    num_nodes: int
    epsilon: float
    degree_share: float
    noisy_degrees: torch.Tensor  # float64 [n], unclipped; NaN when degree_share = 0 (no degree sent)
    _keys: np.ndarray  # uint64 [n], each node's secret PRF key
    _edge_keys: np.ndarray  # sorted int64 i*n + j over true directed edges
    _csr: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _symmetric: bool | None = field(default=None, repr=False)  # True: the edges were validated undirected

    score_description: ClassVar[str] = "likelihood ratio of u's randomized-response bit about v and its Laplace degree"

    @classmethod
    def from_edges(
        cls,
        src: np.ndarray,
        dst: np.ndarray,
        num_nodes: int,
        epsilon: float,
        degree_share: float,
        rng: RandomSource,
        symmetric: bool | None = None,
    ) -> RandomizedResponseReports:
        """Algorithm 1 for every node at once, on the simple undirected graph with directed edges ``src, dst``
        (``symmetric=True``: the caller has validated that, and :meth:`is_symmetric` need not check it)."""
        epsilon = check_epsilon(epsilon)
        degree_share = check_degree_share(degree_share)
        src = np.asarray(src, dtype=np.int64)
        degrees = np.bincount(src, minlength=num_nodes).astype(np.float64)
        hi = integers(2**32, (num_nodes,), rng).numpy().astype(np.uint64)
        lo = integers(2**32, (num_nodes,), rng).numpy().astype(np.uint64)
        keys = (hi << np.uint64(32)) | lo
        if degree_share > 0:
            noise = laplace((num_nodes,), 1.0 / (degree_share * epsilon), rng)
            noisy = torch.from_numpy(degrees) + noise
        else:  # no budget on degrees: nothing is sent
            noisy = torch.full((num_nodes,), float("nan"), dtype=torch.float64)
        return cls(num_nodes, epsilon, degree_share, noisy, keys, _edge_keys(src, dst, num_nodes), _symmetric=symmetric)

    def budgets(self) -> tuple[Budget, Budget]:
        """(degree, adjacency list): sε for the Laplace degree, (1 − s)ε for randomized response."""
        return Budget(self.epsilon).split(
            self.degree_share, "Blink's degree_share (the share of ε spent on the degree)", closed=True
        )

    @property
    def epsilon_degree(self) -> float:
        return self.budgets()[0].epsilon

    @property
    def epsilon_adjacency(self) -> float:
        return self.budgets()[1].epsilon

    @property
    def p_flip(self) -> float:
        return flip_probability(self.epsilon_adjacency)

    def _is_edge(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        key = i.astype(np.int64) * self.num_nodes + j.astype(np.int64)
        pos = np.searchsorted(self._edge_keys, key)
        pos = np.minimum(pos, max(len(self._edge_keys) - 1, 0))
        return (self._edge_keys[pos] == key) if len(self._edge_keys) else np.zeros(key.shape, dtype=bool)

    def flips(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Whether node i flipped its bit about node j."""
        i, j = np.broadcast_arrays(np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64))
        return prf_uniform(self._keys[i], j, stream=FLIP_STREAM) < self.p_flip

    def bits(self, i, j) -> np.ndarray:
        """Ã_ij: node i's reported bit about node j (vectorised over pairs; Ã_ii = 0)."""
        i, j = np.broadcast_arrays(np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64))
        if i.size and (i.min() < 0 or j.min() < 0 or i.max() >= self.num_nodes or j.max() >= self.num_nodes):
            raise IndexError("node index out of range")
        return (self._is_edge(i, j) ^ self.flips(i, j)) & (i != j)

    def evidence(self, i, j) -> np.ndarray:
        """Number of ones among (Ã_ij, Ã_ji): the evidence state 0, 1 or 2."""
        return self.bits(i, j).astype(np.int8) + self.bits(j, i).astype(np.int8)

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """The true edges as CSR ``(indptr, indices)`` (column indices sorted per row),
        for the compiled pair kernels (:mod:`privgraph.methods.blink.kernels`)."""
        if self._csr is None:
            n = self.num_nodes
            indptr = np.searchsorted(self._edge_keys, np.arange(n + 1, dtype=np.int64) * n).astype(np.int64)
            self._csr = (indptr, self._edge_keys % n)
        return self._csr

    def is_symmetric(self) -> bool:
        """Whether every true edge (i, j) has its (j, i): then the compiled kernels read A_ji as A_ij
        (checked once by sorting the reversed keys, O(E log E), unless the constructor was told)."""
        if self._symmetric is None:
            n, keys = self.num_nodes, self._edge_keys
            reverse = np.sort((keys % n) * n + keys // n)  # the keys of (j, i), sorted like the keys
            self._symmetric = bool(np.array_equal(reverse, keys))
        return self._symmetric

    def kernel_args(self) -> tuple:
        """``(keys, indptr, indices, p_flip, stream)`` as the compiled kernels take them."""
        indptr, indices = self.csr()
        return self._keys, indptr, indices, self.p_flip, FLIP_STREAM

    def row(self, i: int) -> np.ndarray:
        """The whole noisy adjacency list of node i (O(n); for small graphs and tests)."""
        return self.bits(np.full(self.num_nodes, i), np.arange(self.num_nodes))

    def report(self, u: int, v: int, edges: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """[Ã_uv, d̃_u − d_u⁰] (the degree term is 0 when no degree is sent)."""
        bit = float(self.bits(np.array([u]), np.array([v]))[0])
        degree = float(self.noisy_degrees[u])
        base = float((np.asarray(edges[0]) == u).sum())
        return np.array([bit, 0.0 if math.isnan(degree) else degree - base])

    def log_likelihood_ratio(self, observations: np.ndarray) -> np.ndarray:
        ea, ed = self.epsilon_adjacency, self.epsilon_degree
        return ea * (2.0 * observations[:, 0] - 1.0) + ed * laplace_unit_llr(observations[:, 1])

    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(
            Unit.ADJACENCY_LIST,
            TrustModel.LOCAL,
            self.epsilon,
            0.0,
            "Blink LinkLDP (RR + Laplace degree)",
            (
                f"ε_a = (1−s)ε = {self.epsilon_adjacency:g} on the adjacency list (randomized response), "
                f"ε_d = sε = {self.epsilon_degree:g} on the degree (Laplace, sensitivity 1); basic composition",
            ),
        )


# ---------------------------------------------------------------- Laplace on each adjacency entry
@dataclass
class LaplaceAdjacencyReports:
    """Every node's adjacency list plus Laplace(1/ε) per entry, lazily evaluable:
    node i's noise on entry j is the inverse-CDF Laplace of its keyed PRF
    uniform U(key_i, j), so two passes over the reports see the same values."""

    num_nodes: int
    epsilon: float
    _keys: np.ndarray
    _adjacency_keys: np.ndarray

    score_description: ClassVar[str] = "likelihood ratio of u's Laplace entry about v"

    @classmethod
    def from_edges(
        cls, src: np.ndarray, dst: np.ndarray, num_nodes: int, epsilon: float, rng: RandomSource
    ) -> LaplaceAdjacencyReports:
        """The reports of the simple undirected graph with directed edges ``src, dst``."""
        epsilon = check_epsilon(epsilon)
        keys = integers(2**62, (num_nodes,), rng).numpy().astype(np.uint64)  # each node's secret noise key
        return cls(num_nodes, epsilon, keys, np.sort(np.asarray(src, dtype=np.int64) * num_nodes + dst))

    def rows(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows start:stop: A_ij + Laplace(1/ε) (−∞ on the diagonal: nodes do not report themselves)."""
        n = self.num_nodes
        rows = np.arange(start, min(stop, n))
        values = self._laplace(self._keys[rows, None], np.arange(n)[None, :])
        self._add_adjacency(values, rows)
        values[rows - start, rows] = -np.inf
        return rows, values

    def _laplace(self, keys: np.ndarray, entries: np.ndarray) -> np.ndarray:
        """Laplace(1/ε) noise of the nodes with ``keys`` on ``entries``: inverse CDF of the keyed PRF uniform."""
        u = prf_uniform(keys, entries, stream=LAPLACE_STREAM) - 0.5
        return -np.sign(u) * np.log1p(-2.0 * np.abs(u)) / self.epsilon

    def _add_adjacency(self, values: np.ndarray, rows: np.ndarray) -> None:
        """Add A's rows ``rows`` (consecutive) to ``values`` in place."""
        n = self.num_nodes
        lo, hi = np.searchsorted(self._adjacency_keys, [rows[0] * n, (rows[-1] + 1) * n])
        k = self._adjacency_keys[lo:hi]
        values[k // n - rows[0], k % n] += 1.0

    def pair_sums(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows start:stop of Ã + Ãᵀ: entry (i, j) is Ã_ij + Ã_ji, i's and j's reports on the pair
        (−∞ on the diagonal).  A is symmetric, so Ãᵀ's rows are A's rows plus node j's noise on i."""
        rows, values = self.rows(start, stop)
        values += self._laplace(self._keys[None, :], rows[:, None])
        self._add_adjacency(values, rows)
        return rows, values

    def report(self, u: int, v: int, edges: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """[Ã_uv] (the world without the link has mean 0)."""
        _, values = self.rows(u, u + 1)
        return np.array([float(values[0, v])])

    def log_likelihood_ratio(self, observations: np.ndarray) -> np.ndarray:
        return laplace_unit_llr(observations[:, 0])

    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(
            Unit.ADJACENCY_LIST,
            TrustModel.LOCAL,
            self.epsilon,
            0.0,
            "Laplace on each adjacency entry",
            ("Laplace(1/ε) on each of the n − 1 entries: one link changes one entry by 1 (L1 sensitivity 1)",),
        )


# ---------------------------------------------------------------- noisy degree vectors (LDPGen)
def noisy_degree_vectors(
    edge_index: torch.Tensor | np.ndarray, groups: np.ndarray, k: int, epsilon: float, rng: RandomSource
) -> np.ndarray:
    """δ̃_u = (|N(u) ∩ G_1|, …, |N(u) ∩ G_k|) + Laplace(1/ε)^k for every node u (L1 sensitivity 1)."""
    n = groups.size
    src, dst = np.asarray(edge_index)
    counts = np.zeros((n, k))
    np.add.at(counts, (src, groups[dst]), 1.0)
    return counts + laplace((n, k), 1.0 / epsilon, rng).numpy()


@dataclass
class DegreeVectorReports:
    """What the server received in LDPGen's two rounds: every node's noisy degree vector towards the
    round-1 groups and towards the round-2 clusters (Laplace(2/ε) per entry), and both partitions."""

    round1: np.ndarray  # [n, k₀]
    round2: np.ndarray  # [n, k₁]
    groups: np.ndarray  # [n] round-1 group of each node
    clusters: np.ndarray  # [n] round-2 cluster of each node
    epsilon_round: float  # ε/2

    score_description: ClassVar[str] = (
        "likelihood ratio of u's two Laplace degree-vector entries towards v's group and cluster"
    )

    @property
    def epsilon(self) -> float:
        return 2.0 * self.epsilon_round

    def report(self, u: int, v: int, edges: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """[δ̃¹_u[g(v)] − c¹, δ̃²_u[C(v)] − c²] (c: the counts of the world without the link)."""
        src, dst = (np.asarray(e) for e in edges)
        neighbours = dst[src == u]
        c1 = float((self.groups[neighbours] == self.groups[v]).sum())
        c2 = float((self.clusters[neighbours] == self.clusters[v]).sum())
        return np.array([self.round1[u, self.groups[v]] - c1, self.round2[u, self.clusters[v]] - c2])

    def log_likelihood_ratio(self, observations: np.ndarray) -> np.ndarray:
        return laplace_unit_llr(observations).sum(axis=1)

    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(
            Unit.ADJACENCY_LIST,
            TrustModel.LOCAL,
            self.epsilon,
            0.0,
            "LDPGen (two rounds of Laplace degree vectors)",
            (
                f"ε/2 = {self.epsilon_round:g} per round, Laplace on each group count (L1 sensitivity 1); "
                "basic composition",
            ),
        )
