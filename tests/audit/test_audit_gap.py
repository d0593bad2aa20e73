"""GAP's white-box audit (privgraph.audit.definitions: the aggregation module on fixed embeddings, the hop-by-hop
Gaussian likelihood ratio): the real GAP-EDP and GAP-NDP are consistent, a copy with a quarter of the noise
(the sensitivity under-counted four times) is caught."""

import math

from privgraph.audit import audit_method
from privgraph.audit.runner import CONSISTENT, VIOLATION
from privgraph.methods.gap import GAPEdge, GAPNode

SAMPLES = 4000


class QuarterNoise(GAPEdge):
    """Miscalibrated: the noise of Δ = √2/4 while the guarantee claims the calibrated ε."""

    def sensitivity(self) -> float:
        return math.sqrt(2) / 4


def test_gap_edp_aggregation_is_consistent_and_a_quarter_of_the_noise_is_caught():
    right = audit_method(None, GAPEdge(encoder_epochs=5), epsilon=1.0, samples=SAMPLES).rows[0]
    assert right.unit == "edge" and right.epsilon == 1.0
    assert right.epsilon_lb <= 1.0 and right.verdict == CONSISTENT, right
    wrong = audit_method(None, QuarterNoise(encoder_epochs=5), epsilon=1.0, samples=SAMPLES).rows[0]
    assert wrong.epsilon_lb > 1.0 and wrong.verdict == VIOLATION, wrong


def test_gap_ndp_within_the_bound_is_consistent_and_the_adversarial_hub_is_refused():
    """The enforced cap (degree_cap=enforced, restricted node-DP, its own unit).  Within the bound (the audit
    graph, degrees ≤ 10; a hub of degree D whose D neighbours are at D): the aggregation is consistent with its
    claim.  The adversarial hub (spokes above D) is refused by the enforced cap, which the row says."""
    rows = audit_method(
        None,
        GAPNode(encoder_epochs=3, epochs=3, batch_size=8, max_degree=10, degree_cap="enforced"),
        epsilon=1.0,
        samples=SAMPLES,
    ).rows
    assert [r.unit for r in rows] == ["node (degree ≤ 10)"] * 2
    assert "10 out-edges" in rows[0].label and "hub within the bound" in rows[1].label
    for row in rows:
        assert row.epsilon == 1.0 and row.epsilon_lb <= 1.0 and row.verdict == CONSISTENT, row
    assert any("refused by this release" in note for note in rows[1].notes)


def test_the_authors_sampling_fails_the_adversarial_hub():
    """The adversarial hub pair (a hub of 2,000 spokes, K = 1, D = 1, σ for (1, δ)), over_bound=sample: the sampling
    redrawn per release, judged against the claim the graph without the hub states (the old code's claim for
    both): ε_LB well above 1 from 500 releases a side."""
    params = {"encoder_epochs": 2, "epochs": 2, "batch_size": 8, "hops": 1, "max_degree": 1, "over_bound": "sample"}
    params["degree_cap"] = "enforced"
    rows = audit_method(None, GAPNode(**params), epsilon=1.0, samples=500).rows
    (cascade,) = [r for r in rows if "spokes above" in r.label]
    assert cascade.epsilon == 1.0 and cascade.epsilon_lb > 2.0 and cascade.verdict == VIOLATION, cascade
