"""The one budget object: shares split ε exactly and are checked in one place, k releases
compose, and a run names each ε's setting once."""

import pytest

from privgraph.accounting import Budget, PrivacyGuarantee, TrustModel, check_share
from privgraph.experiments import ExperimentSpec
from privgraph.methods.blink.client import check_degree_share


def test_a_split_spends_exactly_the_budget_and_keeps_delta():
    first, second = Budget(2.0, 1e-5).split(0.3, "feature_share (ε_f/ε)")
    assert (first.epsilon, second.epsilon) == (0.3 * 2.0, (1.0 - 0.3) * 2.0)
    assert first.epsilon + second.epsilon == pytest.approx(2.0) and first.delta == second.delta == 1e-5
    none, all_of_it = Budget(4.0).split(0.0, "Blink's degree privacy parameter delta", closed=True)
    assert (none.epsilon, all_of_it.epsilon) == (0.0, 4.0)


@pytest.mark.parametrize(
    "share, closed", [(0.0, False), (1.0, False), (-0.1, True), (1.5, True), (float("nan"), True), ("abc", False)]
)
def test_a_share_outside_its_interval_is_refused_with_its_name(share, closed):
    with pytest.raises(ValueError, match="mcmc_share"):
        check_share(share, "mcmc_share", closed=closed)


def test_the_methods_share_one_check():
    with pytest.raises(ValueError, match=r"degree_share \(the share of ε spent on the degree\) must lie in \[0, 1\]"):
        check_degree_share(1.5)
    # a method's share parameter: its declared bound (privgraph.param_checks, the same words before torch)
    with pytest.raises(ValueError, match=r"feature_share must lie in \(0, 1\)"):
        ExperimentSpec(method="hetedp", task="lp", params={"feature_share": 1.0}).validate()
    with pytest.raises(ValueError, match=r"mcmc_share must lie in \(0, 1\)"):
        ExperimentSpec(method="edgerr", params={"mcmc_share": 0.0}).validate()


def test_k_releases_compose_and_the_guarantee_states_them():
    assert Budget(0.5, 1e-5).times(5) == Budget(2.5, 5e-5)
    assert Budget(1.0, 0.4).times(3).delta == 1.0
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="releases"):
            Budget(1.0).times(bad)
    g = PrivacyGuarantee("adjacency list", TrustModel.LOCAL, 2.0).repeated(5, "chosen among 5")
    assert (g.epsilon, g.delta, g.notes) == (10.0, 0.0, ("chosen among 5",))
    with pytest.raises(ValueError, match="epsilon"):
        Budget(float("inf"))


def test_each_epsilon_names_one_setting():
    with pytest.raises(ValueError, match="epsilon 1 is given more than once"):
        ExperimentSpec(method="lpgnn", epsilons=[1.0, 2.0, 1.0]).validate()
    spec = ExperimentSpec(method="lpgnn", epsilons=[0.5, 2.0])
    spec.validate()
    assert [spec.setting_index(e) for e in (0.5, 2.0)] == [0, 1]
