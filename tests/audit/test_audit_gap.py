"""GAP's white-box audit (privgraph.audit.definitions: the aggregation module on fixed embeddings, the hop-by-hop
Gaussian likelihood ratio): the real GAP-EDP and GAP-NDP are consistent, a copy with a quarter of the noise
(the sensitivity under-counted four times) is caught."""

import math

from privgraph.audit import audit
from privgraph.audit.runner import CONSISTENT, VIOLATION
from privgraph.methods.gap import GAPEdge, GAPNode

SAMPLES = 4000


class QuarterNoise(GAPEdge):
    """Miscalibrated: the noise of Δ = √2/4 while the guarantee claims the calibrated ε."""

    def sensitivity(self) -> float:
        return math.sqrt(2) / 4


def test_gap_edp_aggregation_is_consistent_and_a_quarter_of_the_noise_is_caught():
    right = audit(GAPEdge(encoder_epochs=5), 1.0, samples=SAMPLES).rows[0]
    assert right.unit == "edge" and right.epsilon == 1.0
    assert right.epsilon_lb <= 1.0 and right.verdict == CONSISTENT, right
    wrong = audit(QuarterNoise(encoder_epochs=5), 1.0, samples=SAMPLES).rows[0]
    assert wrong.epsilon_lb > 1.0 and wrong.verdict == VIOLATION, wrong


def test_gap_ndp_aggregation_is_consistent():
    row = audit(GAPNode(encoder_epochs=3, epochs=3, batch_size=8, max_degree=3), 1.0, samples=SAMPLES).rows[0]
    assert row.unit == "node (features, label and edges)" and "3 kept out-edges" in row.label
    assert row.epsilon_lb <= 1.0 and row.verdict == CONSISTENT, row
