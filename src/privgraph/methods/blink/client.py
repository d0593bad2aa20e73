"""Blink, node side: ε-link-LDP reports (Blink paper, Algorithm 1).

Node v_i spends ε_d = δ·ε on its degree (Laplace, sensitivity 1) and
ε_a = (1 − δ)·ε on its adjacency list (randomized response flipping each bit
with probability 1/(1 + e^{ε_a})).  Guarantee: ε-link-LDP per adjacency list
(basic composition, Theorem 4.1).

Representation.  The n noisy bits of a node are never materialised: node i
draws a secret 64-bit key and its flip of bit j is ``U(key_i, j) < p_flip``
with U the keyed Philox PRF (:mod:`privgraph.mechanisms.prf`).  Any bit
Ã_ij = A_ij XOR flip_ij can then be evaluated on demand in O(log deg) time,
and the report of every node is fixed once and for all (a one-time release):
evaluating a bit twice gives the same answer.  Memory is O(n + |E|).  (The
object necessarily holds the true edges to evaluate bits; it stands for the
nodes, and the server-side code only calls :meth:`LinkLDPReports.bits` and
reads ``noisy_degrees``.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from privgraph.accounting import Budget, PrivacyGuarantee, TrustModel, Unit, check_share
from privgraph.data.validation import check_graph
from privgraph.mechanisms import RandomSource, check_epsilon
from privgraph.mechanisms.prf import prf_uniform
from privgraph.mechanisms.randomness import integers, laplace

_FLIP_STREAM = 1


def check_degree_share(delta: float) -> float:
    """Blink's δ, the share of ε spent on the degree, lies in [0, 1] (:func:`~privgraph.accounting.check_share`)."""
    return check_share(delta, "Blink's degree privacy parameter delta", closed=True)


def flip_probability(epsilon_a: float) -> float:
    """p_flip = 1 / (1 + e^{ε_a}) = σ(−ε_a), without overflow (ε_a = 0 gives 1/2: no information;
    a large ε_a gives ≈ e^{−ε_a}, tending to 0)."""
    z = math.exp(-epsilon_a)  # ε_a ≥ 0: z ∈ (0, 1], e^{ε_a} never formed
    return z / (1.0 + z)


@dataclass
class LinkLDPReports:
    """The noisy adjacency lists and degrees of all nodes (see module docstring)."""

    num_nodes: int
    epsilon: float
    delta: float
    noisy_degrees: torch.Tensor  # float64 [n], unclipped; NaN when δ = 0 (no degree sent)
    _keys: np.ndarray  # uint64 [n], each node's secret PRF key
    _edge_keys: np.ndarray  # sorted int64 i*n + j over true directed edges
    _csr: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def budgets(self) -> tuple[Budget, Budget]:
        """(degree, adjacency list): δε for the Laplace degree, (1 − δ)ε for randomized response."""
        return Budget(self.epsilon).split(self.delta, "Blink's degree privacy parameter delta", closed=True)

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
        return prf_uniform(self._keys[i], j, stream=_FLIP_STREAM) < self.p_flip

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
            self._csr = (indptr, (self._edge_keys % n).astype(np.int64))
        return self._csr

    def kernel_args(self) -> tuple:
        """``(keys, indptr, indices, p_flip, stream)`` as the compiled kernels take them."""
        indptr, indices = self.csr()
        return self._keys, indptr, indices, self.p_flip, _FLIP_STREAM

    def row(self, i: int) -> np.ndarray:
        """The whole noisy adjacency list of node i (O(n); for small graphs and tests)."""
        return self.bits(np.full(self.num_nodes, i), np.arange(self.num_nodes))

    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(
            Unit.ADJACENCY_LIST,
            TrustModel.LOCAL,
            self.epsilon,
            0.0,
            "Blink LinkLDP (RR + Laplace degree)",
            (
                f"ε_a = (1−δ)ε = {self.epsilon_adjacency:g} on the adjacency list (randomized response), "
                f"ε_d = δε = {self.epsilon_degree:g} on the degree (Laplace, sensitivity 1); basic composition",
            ),
        )


def link_ldp(
    edge_index: torch.Tensor, num_nodes: int, epsilon: float, delta: float, rng: RandomSource
) -> LinkLDPReports:
    """Algorithm 1 for every node at once, on a simple undirected graph (validated: a duplicated
    edge would count twice in the degree and double its sensitivity, so duplicates are refused)."""
    epsilon = check_epsilon(epsilon)
    delta = check_degree_share(delta)
    edge_index = check_graph(edge_index, num_nodes, undirected=True).edge_index
    src, dst = edge_index.cpu().numpy().astype(np.int64)
    edge_keys = np.unique(src * num_nodes + dst)
    degrees = np.bincount(src, minlength=num_nodes).astype(np.float64)
    hi = integers(2**32, (num_nodes,), rng).numpy().astype(np.uint64)
    lo = integers(2**32, (num_nodes,), rng).numpy().astype(np.uint64)
    keys = (hi << np.uint64(32)) | lo
    if delta > 0:
        noise = laplace((num_nodes,), 1.0 / (delta * epsilon), rng)
        noisy = torch.from_numpy(degrees) + noise
    else:  # no budget on degrees: nothing is sent
        noisy = torch.full((num_nodes,), float("nan"), dtype=torch.float64)
    return LinkLDPReports(num_nodes, epsilon, delta, noisy, keys, edge_keys)
