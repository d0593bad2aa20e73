import math

import pytest

from privgraph.accounting import NON_PRIVATE, PrivacyGuarantee, PrivacyReport, TrustModel, Unit, compose


def g(eps, delta=0.0, unit=Unit.NODE_FEATURES, trust=TrustModel.LOCAL):
    return PrivacyGuarantee(unit, trust, eps, delta, "m")


def test_basic_composition_adds_epsilon_and_delta():
    c = compose([g(1.0, 1e-6), g(0.5, 2e-6)])
    assert c.epsilon == pytest.approx(1.5) and c.delta == pytest.approx(3e-6)
    assert "basic sequential composition" in c.notes


def test_composition_rejects_mixed_trust_models_and_units():
    with pytest.raises(ValueError, match="trust"):
        compose([g(1.0), g(1.0, trust=TrustModel.CENTRAL)])
    with pytest.raises(ValueError, match="different units"):
        compose([g(1.0), g(1.0, unit=Unit.NODE_LABEL)])
    with pytest.raises(ValueError):
        compose([])


def test_report_composes_per_unit_and_per_node():
    report = PrivacyReport([g(1.0), g(2.0, unit=Unit.NODE_LABEL), g(0.5)])
    by_unit = report.by_unit()
    assert by_unit[Unit.NODE_FEATURES].epsilon == pytest.approx(1.5)
    assert by_unit[Unit.NODE_LABEL].epsilon == pytest.approx(2.0)
    assert report.per_node.epsilon == pytest.approx(3.5)
    restored = PrivacyReport.from_dict(report.to_dict())
    assert restored.per_node.epsilon == pytest.approx(3.5)
    assert any("total per node" in line for line in report.lines())


def test_guarantee_validation_and_serialisation():
    with pytest.raises(ValueError):
        PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.LOCAL, -1.0)
    with pytest.raises(ValueError):
        PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.LOCAL, 1.0, 1.5)
    with pytest.raises(ValueError):
        PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.LOCAL, math.nan)
    assert not NON_PRIVATE.is_private
    assert NON_PRIVATE.to_dict()["epsilon"] == "inf"
    assert PrivacyGuarantee.from_dict(NON_PRIVATE.to_dict()).epsilon == math.inf
    assert "LDP" in g(1.0).describe() and "(1, 1e-05)" in g(1.0, 1e-5).describe()


def test_plain_summary_states_a_huge_epsilon_without_overflow():
    """e^ε overflows a float above ε ≈ 709.8 (a vacuous guarantee, e.g. FeatureRR's released-code budgets)."""
    g = PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.LOCAL, 9452.3, 0.0, "featurerr")
    text = PrivacyReport([g]).plain_summary()
    assert "e^9452" in text and "(ε = 9452.3)" in text
    small = PrivacyReport([PrivacyGuarantee(Unit.NODE_FEATURES, TrustModel.LOCAL, 1.0)]).plain_summary()
    assert "factor 2.72" in small
