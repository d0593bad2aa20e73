"""Heterogeneous graphs (HeteDP and its baselines): an edge of the protected relation, and one node's feature
vector at ±C/√d·1."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch_geometric.data import HeteroData

from privgraph.accounting import PrivacyGuarantee, Unit
from privgraph.audit.definitions.registry import (
    WHOLE_RELEASE_TEST,
    AuditInput,
    audits,
    nominal_claim,
    release,
    whole_release_row,
)
from privgraph.audit.neighbours import Neighbours, first_column, projection
from privgraph.methods import Method


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
            lambda side, rng: release(method, inp, worlds[side], rng),
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

        claim = nominal_claim(
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
        lambda side, rng: release(method, inp, worlds[side], rng),
        lambda rel: rel.data[t].x[0].detach().double().numpy(),
        projection(np.ones(d)),
        claim,
        notes,
    )
    return [own, whole_release_row(own, f"x_u = −C/√d·1 vs +C/√d·1; {WHOLE_RELEASE_TEST}")]
