"""GAP-NDP's soft cap audited on the adversarial pairs of the soft cap's design, through the audit runner
(privgraph.audit.definitions.gap_node): every pair releases on both sides and stays within its claim; a copy whose
hops have a quarter of the noise is caught on the clique; the hub + shared leaves falls back; the old refusal pair
releases on both sides with pass-bit probabilities within e^{ε_t}; mlp-ndp reads no edge."""

import math
from types import SimpleNamespace

import pytest

from privgraph.audit import audit_method
from privgraph.audit.definitions import gap_node
from privgraph.audit.runner import CONSISTENT, VIOLATION, audit_units
from privgraph.mechanisms import make_generator
from privgraph.mechanisms import soft_cap as sc
from privgraph.methods.gap import GAPNode
from privgraph.methods.node_domain import DegreeAboveBound

FAST = {"encoder_epochs": 2, "epochs": 2, "batch_size": 8, "hidden": 4, "hops": 1}
SMALL_D = {"max_degree": 10, "ptr_lambda": 2.0, "test_share": 0.5}


class FortiethHopNoise(GAPNode):
    """Miscalibrated: the hops' noise of sensitivity Λ√D/40 while the claim is the calibrated ε."""

    def sensitivity(self) -> float:
        return super().sensitivity() / 40


def _k_star(data):
    return sc.distance_to_uncovered(sc.degrees(data.edge_index, data.num_nodes), 10, 2.0)


def test_every_soft_cap_pair_releases_and_is_consistent():
    rows = audit_method(None, GAPNode(**FAST, **SMALL_D), epsilon=4.0, samples=40).rows
    assert len(rows) == 4 and all(r.unit == "node (features, label and edges)" for r in rows)
    assert "audit graph" in rows[0].label and "refusal pair" in rows[1].label
    assert "shared leaves" in rows[2].label and "clique K_11" in rows[3].label
    for row in rows:
        assert row.epsilon == 4.0 and row.epsilon_lb <= 4.0 and row.verdict == CONSISTENT, row


def test_the_clique_pair_catches_a_fortieth_of_the_hop_noise():
    """K_11 with x_v = −e, x_u = e: one hop's mean moves by √D = ‖ΔF‖ exactly (≤ Λ√D); with the hop noise
    divided by 40 (the pair moves by √D, a third of the calibrated 3√D) the likelihood-ratio row exceeds the
    claim, with the calibrated noise it does not (the hops hold most of the budget: hop_noise_ratio = 0.05)."""
    small, big, v = gap_node.clique_pair(10, 4)
    w = sc.sender_weights(sc.degrees(big.edge_index, 11), 10)
    w0 = sc.sender_weights(sc.degrees(small.edge_index, 11), 10)
    diff = sc.soft_capped_sum(big.x, big.edge_index, w) - sc.soft_capped_sum(big.x, small.edge_index, w0)
    diff[v] = 0
    assert float(diff.norm()) == pytest.approx(math.sqrt(10))
    inp = SimpleNamespace(epsilon=1.0)
    params = {**FAST, **SMALL_D, "ptr_lambda": 3.0, "num_train": 10, "delta": 0.02, "hop_noise_ratio": 0.05}
    rows = {}
    for name, cls in (("right", GAPNode), ("wrong", FortiethHopNoise)):
        method = cls(**params)
        unit = gap_node._pair(method, inp, small, big, v, "clique", [])
        (rows[name],) = audit_units(method, [unit], 0, 400, seed=1, epsilon=1.0)
    assert rows["right"].epsilon_lb <= 1.0 and rows["right"].verdict == CONSISTENT, rows["right"]
    assert rows["wrong"].epsilon_lb > 1.0 and rows["wrong"].verdict == VIOLATION, rows["wrong"]


def test_hub_with_shared_leaves_falls_back():
    """Hub + K_{40,10}, rows aligned: the pair is uncovered (ΔF > Λ√D), k*(G) = 0 and k*(G − hub) = 0, so the
    test passes with probability δ_t exactly on either side (pass_probability) and the release runs no hop."""
    small, big, v = gap_node.shared_leaves_pair(10, 40, 4)
    n = big.num_nodes
    w = sc.sender_weights(sc.degrees(big.edge_index, n), 10)
    w0 = sc.sender_weights(sc.degrees(small.edge_index, n), 10)
    diff = sc.soft_capped_sum(big.x, big.edge_index, w) - sc.soft_capped_sum(big.x, small.edge_index, w0)
    diff[v] = 0
    assert float(diff.norm()) > 1.5 * math.sqrt(10)
    for side in (small, big):
        k = sc.distance_to_uncovered(sc.degrees(side.edge_index, n), 10, 1.5)
        assert k == 0 and sc.pass_probability(k, 0.5, 1e-3) == pytest.approx(1e-3)
    method = GAPNode(**FAST, max_degree=10, test_share=0.5, num_train=10, delta=2e-3)
    passed = [method.release_aggregation(big.x, big, 4.0, make_generator(s)).passed for s in range(200)]
    assert sum(passed) <= 2  # P = δ_t = 10⁻³ a release


def test_the_old_refusal_pair_releases_on_both_sides_within_e_to_the_test_epsilon():
    """G (a star at degree D) and G + v joined to its centre: the enforced cap refused G + v; the soft cap
    releases both, the pass bit's probabilities within e^{ε_t} (k* moves by ≤ 1)."""
    small, big, _ = gap_node.refusal_pair(10, 4)
    method = GAPNode(**FAST, max_degree=10, test_share=0.5, num_train=10)
    eps_t, delta_t = method.test_budget(1.0, method.dp_delta())
    probs = []
    for side in (small, big):
        rel = method.release_aggregation(side.x, side, 1.0, make_generator(0))
        assert rel.passed in (True, False) and len(rel.tables) == 2
        k = sc.distance_to_uncovered(sc.degrees(side.edge_index, side.num_nodes), 10, 1.5)
        probs.append(sc.pass_probability(k, eps_t, delta_t))
    assert max(probs) <= math.exp(eps_t) * min(probs) and max(1 - p for p in probs) <= math.exp(eps_t) * min(
        1 - p for p in probs
    )
    with pytest.raises(DegreeAboveBound):  # the enforced cap (restricted node-DP) still refuses G + v
        GAPNode(**FAST, degree_cap="enforced", max_degree=10).check_domain(big)


def test_mlp_ndp_audit_reads_no_edge_and_is_consistent():
    (row,) = audit_method(None, "mlp-ndp", epsilon=2.0, samples=12, epochs=1, encoder_epochs=1).rows
    assert row.unit == "node (features, label and edges)" and row.verdict == CONSISTENT, row
