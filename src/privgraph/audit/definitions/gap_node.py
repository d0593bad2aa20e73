"""GAP-NDP's soft cap audited white-box (the aggregation module with its PTR test, on fixed unit rows) on the
adversarial neighbour pairs of the soft cap's design; and ``mlp-ndp``, black-box (a training node
removed, the released classifier's logits on its features)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from privgraph.accounting import Unit
from privgraph.audit.definitions.features import audited_node
from privgraph.audit.definitions.registry import AuditInput, audits, homogeneous, release
from privgraph.audit.neighbours import Neighbours, first_column
from privgraph.mechanisms import derive_seed
from privgraph.mechanisms import soft_cap as sc
from privgraph.methods import Method

SOFT_NOTE = (
    "white-box audit of the aggregation module with its PTR test (soft cap) on fixed unit rows: the adversary sees "
    "the pass bit and every hop's noisy sum; the encoder and the classifier (DP-SGD) are audited in audit/dpsgd.py"
)


def _graph(pairs: list[tuple[int, int]], n: int, x: torch.Tensor) -> Data:
    ei = torch.tensor(pairs, dtype=torch.long).t() if pairs else torch.empty(2, 0, dtype=torch.long)
    return Data(x=x, edge_index=sc.clean_simple_graph(ei, n), num_nodes=n)


def _isolate(data: Data, v: int) -> Data:
    """G − v: v's edges removed (v stays as an isolated row, which no soft-cap quantity reads)."""
    out = data.clone()
    out.edge_index = data.edge_index[:, (data.edge_index[0] != v) & (data.edge_index[1] != v)]
    return out


def _aligned(n: int, width: int, v: int, sign: float = 1.0) -> torch.Tensor:
    """x_v = sign·e, every other row −sign·e: the worst case of Lemma 1 (ΔF's coefficients have one sign each)."""
    x = torch.zeros(n, width)
    x[:, 0] = -sign
    x[v, 0] = sign
    return x


def _lr_statistic(small: Data, big: Data, v: int, max_degree: int) -> Callable[[Any], np.ndarray]:
    """Σ_k ⟨s^k − F_{G−v}(x^{k−1}), F_G(x^{k−1}) − F_{G−v}(x^{k−1})⟩ over the rows w ≠ v (the Gaussian
    likelihood ratio of the hops, hop by hop, on the release's own previous tables), and the pass bit."""
    n = int(big.num_nodes)
    w_small = sc.sender_weights(sc.degrees(small.edge_index, n), max_degree)
    w_big = sc.sender_weights(sc.degrees(big.edge_index, n), max_degree)

    def observe(rel: Any) -> np.ndarray:
        total = 0.0
        for prev, noisy in zip(rel.tables[:-1], rel.sums, strict=False):
            mean0 = sc.soft_capped_sum(prev, small.edge_index.to(prev.device), w_small)
            mean1 = sc.soft_capped_sum(prev, big.edge_index.to(prev.device), w_big)
            direction, residual = mean1 - mean0, noisy - mean0
            direction[v] = 0
            total += float((residual * direction).sum())
        return np.array([total, float(bool(rel.passed))])

    return observe


def _pair(method: Method, inp: AuditInput, small: Data, big: Data, v: int, label: str, notes: list[str]) -> Neighbours:
    x0 = big.x
    worlds = (small, big)
    return Neighbours(
        Unit.NODE_WITH_EDGES,
        label,
        "node v removed vs present; the hops' Gaussian likelihood ratio on rows w ≠ v (0 when the test fails: no hop)",
        lambda side, rng: method.release_aggregation(x0, worlds[side], inp.epsilon, rng),
        _lr_statistic(small, big, v, method.params.max_degree),
        first_column,
        None,
        notes,
    )


def _pass_bit_pair(method: Method, inp: AuditInput, small: Data, big: Data, label: str, notes: list[str]) -> Neighbours:
    worlds = (small, big)
    return Neighbours(
        Unit.NODE_WITH_EDGES,
        label,
        "the released pass bit (both sides release; P[pass] within e^{ε_t})",
        lambda side, rng: method.release_aggregation(big.x, worlds[side], inp.epsilon, rng),
        lambda rel: np.array([float(bool(rel.passed))]),
        first_column,
        None,
        notes,
    )


def refusal_pair(d: int, width: int) -> tuple[Data, Data, int]:
    """The old refusal's pair: G, a star whose centre 0 has degree D (every degree ≤ D), and G + v, v = D + 1
    joined to the centre (degree D + 1)."""
    n = d + 2
    x = _aligned(n, width, d + 1)
    leaves = [(0, i) for i in range(1, d + 1)]
    return _graph(leaves, n, x), _graph([*leaves, (0, d + 1)], n, x), d + 1


def shared_leaves_pair(d: int, spokes: int, width: int) -> tuple[Data, Data, int]:
    """Hub 0 + K_{N,D}: the hub joined to the N side (each then of degree D + 1), the D side shared by all, rows
    aligned: uncovered for large N (ΔF ≫ Λ√D), so k*(G) = 0 and the release must fall back."""
    side_n, side_d = range(1, spokes + 1), range(spokes + 1, spokes + 1 + d)
    n = 1 + spokes + d
    pairs = [(a, b) for a in side_n for b in side_d]
    x = _aligned(n, width, 0)
    return _graph(pairs, n, x), _graph([*pairs, *((0, a) for a in side_n)], n, x), 0


def clique_pair(d: int, width: int) -> tuple[Data, Data, int]:
    """K_{D+1} with x_v = −e, x_u = e (v = 0): one hop's sum moves by √D, the best white-box pair for the hop
    sensitivity on covered graphs."""
    n = d + 1
    x = _aligned(n, width, 0, sign=-1.0)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    big = _graph(pairs, n, x)
    return _isolate(big, 0), big, 0


def soft_rows(method: Method, inp: AuditInput, data: Data) -> list[Neighbours]:
    """The soft cap's rows: the audit graph's largest-degree node removed (on the encoder's x⁰), the refusal
    pair (its pass bit), hub + shared leaves (must fall back), and the clique."""
    p = method.params
    d, width = p.max_degree, p.hidden
    notes = [SOFT_NOTE]
    w = int(torch.bincount(data.edge_index[0], minlength=data.num_nodes).argmax())
    graph = data.clone()
    graph.x = method.embeddings(data, derive_seed(inp.seed, 97))
    rows = [_pair(method, inp, _isolate(graph, w), graph, w, "node (GAP-NDP soft cap, audit graph)", notes)]
    small, big, _ = refusal_pair(d, width)
    rows.append(_pass_bit_pair(method, inp, small, big, f"node (GAP-NDP soft cap, refusal pair: D = {d})", notes))
    spokes = max(8, min(4 * d, 20_000 // d))  # uncovered at small D (k* = 0: the release falls back)
    small, big, v = shared_leaves_pair(d, spokes, width)
    label = f"node (GAP-NDP soft cap, hub + K_{{{spokes},{d}}} shared leaves)"
    rows.append(_pair(method, inp, small, big, v, label, notes))
    small, big, v = clique_pair(d, width)
    rows.append(_pair(method, inp, small, big, v, f"node (GAP-NDP soft cap, clique K_{d + 1})", notes))
    return rows


@audits("mlp-ndp")
def _mlp_node(method: Method, inp: AuditInput) -> list[Neighbours]:
    """A training node removed (its features zeroed and its training slot dropped: it is no example) vs present;
    the released classifier's logits on its features (a learned test).  No edge is read."""
    data = homogeneous(method, inp.data)
    v = audited_node(data)
    small = data.clone()
    small.x = data.x.clone()
    small.x[v] = 0
    small.train_mask = data.train_mask.clone()
    small.train_mask[v] = False
    worlds = (small, data)
    query = data.x[v : v + 1].to(torch.float32)

    def observe(rel: Any) -> np.ndarray:
        net = method.load_model(rel, 0)  # type: ignore[attr-defined]
        with torch.no_grad():
            return net(query, torch.empty(2, 0, dtype=torch.long)).double().flatten().numpy()

    return [
        Neighbours(
            Unit.NODE_WITH_EDGES,
            "node (features and label; no edge is read)",
            "training node removed vs present; the released model's logits on its features (learned test)",
            lambda side, rng: release(method, inp, worlds[side], rng),
            observe,
        )
    ]


__all__ = ["clique_pair", "refusal_pair", "shared_leaves_pair", "soft_rows"]
