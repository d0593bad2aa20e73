"""Audits of node-level DP-SGD (:mod:`privgraph.methods.node_dpsgd`).

:func:`audit_node_dpsgd_step` is white-box, in the Dirac-canary style of :mod:`privgraph.audit.dpsgd`: full
batch (m = N, so ρ = K+1 at every step), every one of the T noisy sums observed, and a canary node whose
presence moves K+1 per-node gradient terms — as many as the degree bound actually lets it reach: its own
and one per out-edge :func:`~privgraph.methods.node_dpsgd.bound_degree` keeps of a star with 3K out-edges.
In D₁ each of those terms is 3C·e_k (clipped to C·e_k), in D₀ the canary's own term is 0 and its
out-neighbours' are −3C·e_k (their gradients flip without its features): the sum moves by (2K+1)C on
coordinate k, against the noise std σ·2(K+1)C that σ from
:func:`~privgraph.accounting.node_level.node_level_noise_multiplier` gets.  Coordinate k of the T sums is
one sample for canary k, many canaries share a call, and the test is the Gaussian likelihood ratio (the
sum over the steps).  A copy that ignores the degree (``noise_std`` taking Δ = C) is caught.

The black-box definition registered for ``privgraph audit node-dpsgd`` (:func:`_node_dpsgd`) releases the
whole training on the audit graph with the audited node present or zeroed out (features 0, edges removed,
its slot kept) and observes the released model's logits on that node's input.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from privgraph.accounting import TrustModel, Unit
from privgraph.accounting.node_level import node_level_noise_multiplier
from privgraph.audit.bounds import CONFIDENCE, split_half_test
from privgraph.audit.definitions.features import audited_node
from privgraph.audit.definitions.registry import AuditInput, audits, homogeneous, release
from privgraph.audit.dpsgd import StepAuditRow
from privgraph.audit.neighbours import Neighbours
from privgraph.audit.runner import judge
from privgraph.mechanisms import check_delta, check_epsilon, derive_seed, make_generator
from privgraph.methods import Method
from privgraph.methods.node_dpsgd import aggregate, bound_degree, noise_std
from privgraph.train import dpsgd

CHUNK = 256  # canaries per call


def reached_terms(max_degree: int, seed: int) -> int:
    """1 + the out-degree :func:`bound_degree` leaves a node that has 3K + 1 out-edges in the input."""
    fan = 3 * max_degree + 1
    star = torch.stack([torch.zeros(fan, dtype=torch.long), torch.arange(1, fan + 1)])
    kept = bound_degree(star, max_degree, make_generator(derive_seed(seed, 2)))
    return 1 + int((kept[0] == 0).sum())


def _sums(side: int, count: int, terms: int, steps: int, std: float, clip: float, seed: int) -> np.ndarray:
    out = []
    for c, start in enumerate(range(0, count, CHUNK)):
        k = min(CHUNK, count - start)
        basis = 3 * clip * torch.eye(k, dtype=torch.float64)
        own = basis if side else torch.zeros_like(basis)
        neighbours = basis if side else -basis
        grads = {"w": torch.cat([own, neighbours.repeat(terms - 1, 1)])}
        rng = make_generator(derive_seed(seed, side, c))
        total = torch.zeros(k, dtype=torch.float64)
        for _ in range(steps):
            noisy, _ = dpsgd.clipped_noisy_gradient(grads, clip, std, 1.0, rng)
            total += noisy["w"]
        out.append(total.numpy())
    return np.concatenate(out)


def audit_node_dpsgd_step(
    epsilon: float,
    delta: float = 1e-5,
    max_degree: int = 5,
    steps: int = 1,
    samples: int = 100_000,
    clip: float = 1.0,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    noise_std_of: Callable[[float, int, float], float] = noise_std,
) -> StepAuditRow:
    """Audit the node-level step at (ε, δ) with ``samples`` canaries per input (module docstring);
    ``noise_std_of(σ, K, C)`` is the step's noise std (a miscalibrated copy is audited by replacing it)."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if samples < 4 or steps < 1 or max_degree < 0:
        raise ValueError("need samples >= 4, steps >= 1 and max_degree >= 0")
    start = time.perf_counter()
    terms = reached_terms(max_degree, seed)
    n = max_degree + 1  # full batch over the K+1 terms a node can reach: ρ = K+1 at every step
    sigma = node_level_noise_multiplier(epsilon, delta, n, n, max_degree, steps)
    std = noise_std_of(sigma, max_degree, clip)
    scores = [_sums(side, samples, terms, steps, std, clip, seed) for side in (0, 1)]
    outcome, ceiling = split_half_test(scores[0], scores[1], delta, confidence)
    result, reasons = judge(epsilon, outcome.epsilon_lb, epsilon)
    return StepAuditRow(
        "node-dpsgd step",
        Unit.restricted_node(max_degree),
        f"one node reaching {terms} loss terms (K = {max_degree}; Dirac canary)",
        TrustModel.CENTRAL,
        epsilon,
        epsilon,
        delta,
        outcome.epsilon_lb,
        samples,
        samples - samples // 2,
        outcome.fpr,
        outcome.fnr,
        ceiling,
        "canary absent (own term 0, neighbours' −C·e_k) vs present (C·e_k on all its terms); Σ_t of its "
        "coordinate of the T noisy sums (the Gaussian likelihood ratio)",
        result,
        time.perf_counter() - start,
        [f"σ = {sigma:.4g} from the node-level accountant for m = N = K+1 and T = {steps}", *reasons],
        steps=steps,
        noise_multiplier=sigma,
    )


def zeroed_out(data, v: int):
    """``data`` with node v's features 0 and its edges removed (its slot, label and split kept)."""
    out = data.clone()
    out.x = data.x.clone()
    out.x[v] = 0
    keep = (data.edge_index[0] != v) & (data.edge_index[1] != v)
    out.edge_index = data.edge_index[:, keep]
    for name in ("edge_weight", "private_edge_mask"):
        if name in data:
            out[name] = data[name][keep]
    return out


@audits("node-dpsgd")
def _node_dpsgd(method: Method, inp: AuditInput) -> list[Neighbours]:
    """The audited node present or zeroed out; each sample a whole training; the released model's logits on
    the node's input (aggregated over the input graph, a constant of the test)."""
    data = homogeneous(method, inp.data)
    v = audited_node(data)
    worlds = (zeroed_out(data, v), data)
    p = method.params
    query = aggregate(data.x.to(torch.float32), data.edge_index, p.conv, p.aggregation)[v : v + 1]

    def observe(rel) -> np.ndarray:
        net = method.load_model(rel.model_state)
        with torch.no_grad():
            return net.head(query).double().flatten().numpy()

    return [
        Neighbours(
            method.claim_unit(),
            f"node (features, label and edges), restricted node-DP (degree ≤ {p.max_degree})",
            "node zeroed out vs present; the released model's logits on its input (learned test)",
            lambda side, rng: release(method, inp, worlds[side], rng),
            observe,
            notes=[adversarial_pair_note(method)],
        )
    ]


def adversarial_pair_note(method: Method, spokes: int = 60) -> str:
    """What the release does with the adversarial pair (a hub whose spokes are all above K, removed): the
    default refuses the graph with the hub before training; ``over_bound="sample"`` releases it with ε = ∞
    (the freed-slot cascade moves far more than K+1 loss terms: ``tests/methods/test_node_dpsgd.py``)."""
    from privgraph.audit.graphs import hub_above_bound
    from privgraph.methods.node_domain import DegreeAboveBound

    try:
        method.check_domain(hub_above_bound(method.params.max_degree, spokes))
    except DegreeAboveBound:
        return (
            f"the adversarial pair (a hub of {spokes} spokes, each above K = {method.params.max_degree}, removed) is "
            "refused by this release before training (over_bound=refuse; outside the bounded-degree domain)"
        )
    return (
        f"over_bound=sample: the adversarial pair (a hub of {spokes} spokes above K) is released with ε = ∞; the "
        "paper's sampled Ĝ moves more than K+1 loss terms there (not measured as an ε_LB here)"
    )


__all__ = ["audit_node_dpsgd_step", "reached_terms", "zeroed_out"]
