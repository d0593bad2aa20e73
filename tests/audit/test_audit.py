"""privgraph.audit: every method has a definition, tight mechanisms are seen, miscalibrated copies caught.

A miscalibrated copy is a subclass of the real method that releases at 2ε (or with half the noise)
while its guarantee still says ε, or that spends 2ε and says so, or that copies node u's raw features
(label) into another node's row: the audit runs it through the same release code as the real one.
"""

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from privgraph.accounting import Unit
from privgraph.audit import AUDITS, CONSISTENT, KINDS, NO_CLAIM, VIOLATION, audit_graph, audit_method
from privgraph.audit.definitions import audited_node, definition
from privgraph.audit.dpsgd import audit_dpsgd
from privgraph.cli import app
from privgraph.mechanisms.laplace import Laplace
from privgraph.methods import LPGNN, METHODS, Blink, get_method
from privgraph.methods.blink.baselines import RandomizedResponseGraph
from privgraph.methods.heterorr.method import EdgeRand


def doubled(cls):
    """``cls`` releasing at 2ε while claiming ε (the guarantee rewritten after the release)."""

    class Miscalibrated(cls):
        def release(self, data, epsilon, rng, progress=None):
            release = super().release(data, 2 * epsilon, rng, progress)
            release.guarantee = dataclasses.replace(release.guarantee, epsilon=epsilon)
            return release

    return Miscalibrated


def spends_twice(cls):
    """``cls`` releasing at 2ε and saying so (its guarantee states 2ε): honest about itself, not what was asked."""

    class SpendsTwice(cls):
        def release(self, data, epsilon, rng, progress=None):
            return super().release(data, 2 * epsilon, rng, progress)

    return SpendsTwice


class CopiesFeatures(LPGNN):
    """LPGNN whose release also writes the audited node u's raw features into the last node's row."""

    def release(self, data, epsilon, rng, progress=None):
        release = super().release(data, epsilon, rng, progress)
        release.x = release.x.clone()
        release.x[-1] = data.x[audited_node(data)]
        return release


class CopiesLabel(LPGNN):
    """LPGNN with label LDP whose release also writes u's raw label into the last node's reported label."""

    def privatize(self, data, request, rng):
        release = super().privatize(data, request, rng)
        if request.label_epsilon is not None:
            release.data.y_reported[-1] = data.y[audited_node(data)]
        return release


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_registered_method_has_an_audit_definition(name):
    assert callable(definition(name)), f"method {name!r} was registered without an audit definition"


def test_a_new_link_ldp_method_is_audited_by_its_unit_without_touching_the_audit():
    """A link-LDP method registered at run time (``unit = Unit.ADJACENCY_LIST``, reports implementing
    ``LinkReports``) gets the adjacency-list rows from its unit: no entry in ``privgraph.audit``."""
    from privgraph.mechanisms import make_generator
    from privgraph.mechanisms.graph import LinkReports
    from privgraph.methods import register_method

    tables = (dict(AUDITS), dict(KINDS))
    cls = type("AnotherLinkLDP", (RandomizedResponseGraph,), {"name": "another-link-ldp"})
    register_method(cls)
    try:
        assert cls.unit == Unit.ADJACENCY_LIST and definition(cls.name) is definition("rr")
        report = audit_method(None, cls.name, epsilon=1.0, samples=40, seed=2)
        assert (dict(AUDITS), dict(KINDS)) == tables
    finally:
        METHODS.pop(cls.name)
    own, whole = report.rows
    assert own.unit == Unit.ADJACENCY_LIST and own.label == "adjacency list (u's report)" and own.requested == 1.0
    assert whole.label == "link, whole release (2ε)" and whole.requested == 2.0
    assert "likelihood ratio of u's randomized-response bit" in own.test
    release = cls().release(audit_graph(), 1.0, make_generator(0))
    assert isinstance(release.reports, LinkReports)


def cheap(cls) -> dict:
    """Few training epochs and MCMC steps for ``cls``: what the plumbing tests check (the audit runs the
    release and reads its claim) does not depend on how long a model trains."""
    fields = {f.name for f in dataclasses.fields(cls.Params)}
    return {k: v for k, v in {"epochs": 2}.items() if k in fields}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_audit_runs_the_release_and_reads_its_claim(name):
    cls = METHODS[name]
    report = audit_method(None, name, epsilon=2.0 if cls.private else None, samples=6, seed=1, **cheap(cls))
    assert report.rows and not report.violation
    for row in report.rows:
        if cls.private:  # the claim comes from the release's own report, never from the audit
            assert 0 < row.epsilon <= 4.0 + 1e-9, row
            assert row.requested is not None and 0 < row.requested <= 4.0, row  # judged against the ε asked
        else:
            assert row.requested is None, row
        assert row.verdict in (CONSISTENT, NO_CLAIM)
    for unit in (Unit.NODE_FEATURES, Unit.NODE_LABEL):  # u's row and the whole release
        labels = [r.label for r in report.rows if r.unit == unit]
        assert not labels or any(", whole release" in label for label in labels), labels


@pytest.mark.parametrize(
    "name, params, epsilon, samples",
    [
        ("rr", {}, 2.0, 1000),  # randomized response on one bit (u's report about v)
        ("lpgnn", {}, 2.0, 1000),  # multi-bit at the domain's extreme points
        ("lpgnn", {"mechanism": "laplace"}, 2.0, 1000),
    ],
)
def test_tight_mechanisms_reach_half_their_epsilon(name, params, epsilon, samples):
    row = audit_method(None, name, epsilon=epsilon, samples=samples, **params).rows[0]
    assert 0.5 * epsilon <= row.epsilon_lb <= epsilon, row
    assert row.verdict == CONSISTENT


@pytest.mark.parametrize(
    "cls, epsilon, samples",
    [
        (RandomizedResponseGraph, 1.0, 1000),
        (LPGNN, 1.0, 1000),
        (Blink, 1.5, 200),
        (EdgeRand, 1.0, 1000),
    ],
)
def test_epsilon_doubled_is_caught_and_the_real_method_is_not(cls, epsilon, samples):
    wrong = audit_method(None, doubled(cls)(), epsilon=epsilon, samples=samples).rows[0]
    assert wrong.epsilon == epsilon and wrong.epsilon_lb > epsilon and wrong.verdict == VIOLATION, wrong
    right = audit_method(None, cls(), epsilon=epsilon, samples=samples).rows[0]
    assert right.epsilon_lb <= epsilon and right.verdict == CONSISTENT, right


def test_laplace_with_half_the_noise_is_caught(monkeypatch):
    assert audit_method(None, "lpgnn", epsilon=1.0, samples=1000, mechanism="laplace").rows[0].verdict == CONSISTENT
    scale = Laplace.scale
    monkeypatch.setattr(Laplace, "scale", lambda self, d: 0.5 * scale(self, d))
    row = audit_method(None, "lpgnn", epsilon=1.0, samples=1000, mechanism="laplace").rows[0]
    assert row.epsilon_lb > 1.0 and row.verdict == VIOLATION, row


def test_dpsgd_with_half_the_noise_is_caught(monkeypatch):
    import privgraph.train.dpsgd as dpsgd

    right = audit_dpsgd(1.0, samples=60_000)
    assert right.epsilon_lb <= 1.0 and right.verdict == CONSISTENT
    randn = dpsgd.randn
    monkeypatch.setattr(dpsgd, "randn", lambda *a, **k: 0.5 * randn(*a, **k))
    wrong = audit_dpsgd(1.0, samples=60_000)
    assert wrong.epsilon_lb > 1.0 and wrong.verdict == VIOLATION, wrong


def test_non_private_and_zero_epsilon_claims():
    raw = audit_method(None, "gcn-raw", samples=100).rows[0]  # the features are released as they are
    assert raw.verdict == NO_CLAIM and raw.epsilon_lb == pytest.approx(raw.ceiling)
    rnd = audit_method(None, "gcn-rnd", samples=100).rows[0]  # ε = 0: the release ignores the features
    assert rnd.epsilon == 0 and rnd.epsilon_lb == 0 and rnd.verdict == CONSISTENT


def test_link_ldp_rows_the_unit_and_the_whole_release():
    rows = audit_method(None, "rr", epsilon=1.0, samples=200).rows
    assert [r.epsilon for r in rows] == [1.0, 2.0]  # u's list: ε; the link changes two lists: 2ε
    assert rows[0].samples == rows[1].samples == 200


def test_label_unit_with_label_ldp():
    rows = audit_method(None, "lpgnn", epsilon=2.0, samples=600, label_epsilon=2.0).rows
    label = [r for r in rows if r.label == "node label"][0]
    assert label.epsilon == 2.0 and 1.0 <= label.epsilon_lb <= 2.0


def test_audit_is_reproducible_from_its_seed():
    a, b = (audit_method(None, "lpgnn", epsilon=1.0, samples=50, seed=3).rows[0] for _ in range(2))
    assert (a.epsilon_lb, a.fpr, a.fnr) == (b.epsilon_lb, b.fpr, b.fnr)


def test_delta_is_refused_for_a_pure_method_and_set_for_a_gaussian_one():
    with pytest.raises(ValueError, match="pure"):
        audit_method(None, "rr", epsilon=1.0, delta=1e-5, samples=6)
    row = audit_method(None, "hetedp-features", epsilon=1.0, delta=1e-3, samples=6).rows[0]
    assert row.delta == 1e-3


def test_audit_on_the_users_graph():
    data = audit_graph(seed=2, num_nodes=30)
    report = audit_method(data, get_method("edgerand"), epsilon=1.0, samples=20)
    assert report.input == "user graph" and report.rows[0].verdict == CONSISTENT


def test_cli_audit_table_json_and_exit_codes(monkeypatch):
    runner = CliRunner()
    ok = runner.invoke(app, ["audit", "rr", "--epsilon", "1", "--samples", "100"])
    assert ok.exit_code == 0, ok.output
    assert "ε_LB" in ok.output and "consistent" in ok.output
    js = runner.invoke(app, ["audit", "lpgnn", "--epsilon", "1", "--samples", "50", "--format", "json"])
    assert js.exit_code == 0
    payload = json.loads(js.stdout[js.stdout.index("{") :])
    assert payload["rows"][0]["unit"] == "node feature vector" and payload["violation"] is False
    assert runner.invoke(app, ["audit", "rr"]).exit_code == 2  # a private method needs --epsilon
    assert runner.invoke(app, ["audit", "rr", "--epsilon", "1", "--delta", "1e-5"]).exit_code == 2
    monkeypatch.setattr(Laplace, "scale", lambda self, d: 0.1 * d / self.epsilon)
    bad = runner.invoke(app, ["audit", "lpgnn", "--epsilon", "1", "--samples", "400", "--param", "mechanism=laplace"])
    assert bad.exit_code == 1 and "VIOLATION" in bad.output


def test_reports_stay_in_memory(tmp_path):
    from privgraph.api import privatize

    rel = privatize(audit_graph(), "blink", epsilon=1.0, seed=0)
    assert rel.reports is not None
    path, meta = rel.save(tmp_path / "g.pt")
    assert "reports" not in json.loads(meta.read_text())


def test_hetedp_papers_calibration_is_caught_and_the_default_is_not():
    """HeteDP's calibration='paper' (λ = 0.01, Δ = 2 unenforced) states ε = ∞; the audit tests the ε
    the paper claims for it and finds it violated, on the same inputs where the default is consistent."""
    wrong = audit_method(None, "hetedp-features", epsilon=1.0, samples=400, calibration="paper").rows[0]
    assert "NOT DP" in wrong.label and wrong.epsilon == 1.0
    assert wrong.epsilon_lb > 1.0 and wrong.verdict == VIOLATION, wrong
    right = audit_method(None, "hetedp-features", epsilon=1.0, samples=400).rows[0]
    assert right.epsilon_lb <= 1.0 and right.verdict == CONSISTENT, right


def test_featurerr_released_code_accounting_is_caught_against_the_papers_epsilon():
    """FeatureRR's accounting='released-code' (each feature ε_i = d·θ_i·ε) states its composed total; the
    audit tests the ε the paper claims per vector and finds it violated, where Theorem 3's accounting is
    consistent on the same inputs."""
    wrong = audit_method(None, "featurerr", epsilon=1.0, samples=400, accounting="released-code").rows[0]
    assert "NOT ε-LDP" in wrong.label and wrong.epsilon == 1.0
    assert wrong.epsilon_lb > 1.0 and wrong.verdict == VIOLATION, wrong
    right = audit_method(audit_graph(0, num_features=4), "featurerr", epsilon=1.0, samples=400).rows[
        0
    ]  # wrong's inputs
    assert right.epsilon_lb <= 1.0 and right.verdict == CONSISTENT, right


def test_ppcvgae_papers_noise_is_caught_against_its_claim():
    """PPCVGAE's calibration='paper' (σ² = max(γ(Δν) − 1, 0)) states ε = ∞; the audit tests the (ε, δ) the
    paper claims and finds it violated, where the default calibration is consistent."""
    wrong = audit_method(None, "ppcvgae", epsilon=0.5, samples=2000, calibration="paper").rows[0]
    assert "NOT DP" in wrong.label and wrong.epsilon == 0.5
    assert wrong.epsilon_lb > 0.5 and wrong.verdict == VIOLATION, wrong
    right = audit_method(None, "ppcvgae", epsilon=0.5, samples=2000).rows[0]
    assert right.epsilon_lb <= 0.5 and right.verdict == CONSISTENT, right


def test_hetedp_authors_gradient_step_is_caught_and_dpsgd_is_not():
    """The authors' step (gradient_step='paper') rescales its noise to norm 1: against the ε the paper
    claims for the same σ the white-box step audit finds a violation, at ε = 1 as at ε = 0.1 (the noise
    does not grow); eq. 22's step is consistent on the same canaries."""
    for eps in (1.0, 0.1):
        wrong = audit_dpsgd(eps, samples=3000, gradient_step="paper")
        assert "NOT DP" in wrong.label and wrong.epsilon_lb > max(3.0, eps) and wrong.verdict == VIOLATION, wrong
    right = audit_dpsgd(1.0, samples=3000)
    assert right.epsilon_lb <= 1.0 and right.verdict == CONSISTENT, right


def test_hetedp_end_to_end_row_tests_the_claimed_epsilon_s_for_the_authors_step():
    row = audit_method(None, "hetedp", epsilon=1.0, samples=6, epochs=1, gradient_step="paper").rows[0]
    assert "gradient_step=paper, NOT DP" in row.label
    assert row.epsilon == pytest.approx(0.5, rel=1e-3)  # ε_s = (1 − ε_f/ε)·ε, which the paper claims
    assert row.requested == 0.5  # the split declared by feature_share, not read back from the release
    default = audit_method(None, "hetedp", epsilon=1.0, samples=6, epochs=1).rows[0]
    assert "NOT DP" not in default.label and default.epsilon == pytest.approx(row.epsilon)


@pytest.mark.parametrize("cls, samples", [(LPGNN, 600), (RandomizedResponseGraph, 100)])
def test_a_method_that_spends_twice_the_epsilon_asked_and_says_so_is_caught(cls, samples):
    """Audited at ε, a release at 2ε that states 2ε is a VIOLATION (its claim is not what was asked), on every
    row; with enough samples ε_LB also exceeds the ε asked.  The real method is consistent on the same samples."""
    wrong = audit_method(None, spends_twice(cls)(), epsilon=1.0, samples=samples).rows
    for row in wrong:
        asked = 2.0 if "2ε" in row.label else 1.0  # the link's whole-release row: two lists, 2ε
        assert row.verdict == VIOLATION and row.epsilon == 2 * asked and row.requested == asked, row
        assert f"the release claims {2 * asked:g} where {asked:g} was asked" in row.notes, row.notes
    if cls is LPGNN:
        assert wrong[0].epsilon_lb > 1.0 and any("ε_LB" in n and "above the 1 asked" in n for n in wrong[0].notes)
    right = audit_method(None, cls(), epsilon=1.0, samples=samples).rows
    assert [r.requested for r in right] == [r.requested for r in wrong]
    assert all(r.epsilon == r.requested and r.verdict == CONSISTENT for r in right), right


def test_cli_exits_1_when_the_claim_is_not_the_epsilon_asked(monkeypatch):
    """``privgraph audit`` of a registered copy that spends 2ε and says so: exit status 1, the reason in the row."""
    cls = type("SpendsTwiceLPGNN", (spends_twice(LPGNN),), {"name": "lpgnn-spends-twice"})
    monkeypatch.setitem(METHODS, cls.name, cls)  # audited by its unit: no entry in privgraph.audit
    out = CliRunner().invoke(app, ["audit", cls.name, "--epsilon", "1", "--samples", "20", "--format", "json"])
    assert out.exit_code == 1, out.output
    payload = json.loads(out.stdout[out.stdout.index("{") :])
    row = payload["rows"][0]
    assert payload["violation"] and row["requested"] == 1.0 and row["epsilon"] == 2.0 and row["verdict"] == VIOLATION
    assert "the release claims 2 where 1 was asked" in row["notes"]


def test_a_copy_of_u_s_raw_features_in_another_row_is_caught_on_the_whole_release_row():
    """u's own row cannot see a copy of u's features in another node's row; the whole-release row can."""
    own, whole = audit_method(None, CopiesFeatures(), epsilon=1.0, samples=200).rows
    assert own.label == "node feature vector" and own.verdict == CONSISTENT, own
    assert whole.label == "node feature vector, whole release" and whole.unit == Unit.NODE_FEATURES
    assert whole.requested == 1.0 and whole.epsilon_lb > 1.0 and whole.verdict == VIOLATION, whole
    real = audit_method(None, LPGNN(), epsilon=1.0, samples=200).rows
    assert [r.verdict for r in real] == [CONSISTENT, CONSISTENT], real


def test_a_copy_of_u_s_raw_label_in_another_row_is_caught_on_the_whole_release_row():
    rows = {r.label: r for r in audit_method(None, CopiesLabel(), epsilon=1.0, samples=200, label_epsilon=1.0).rows}
    assert rows["node label"].verdict == CONSISTENT, rows["node label"]
    whole = rows["node label, whole release"]
    assert whole.requested == 1.0 and whole.epsilon_lb > 1.0 and whole.verdict == VIOLATION, whole


@pytest.mark.parametrize(
    "name, params, label_epsilon, requested",
    [
        ("heterorr", {"epsilon_f": 0.5, "epsilon_e": 0.25}, None, [0.5, 0.5, 0.25, 0.25]),  # its declared split
        ("featurerr", {"control": "constant-input"}, None, [0.0, 0.0]),  # the control's release ignores x: 0-LDP
        ("lpgnn", {}, 2.0, [1.0, 1.0, 2.0, 2.0]),  # features at ε, labels at the label ε
    ],
)
def test_the_epsilon_asked_per_unit_follows_the_methods_declared_split(name, params, label_epsilon, requested):
    rows = audit_method(None, name, epsilon=1.0, samples=6, label_epsilon=label_epsilon, **params).rows
    assert [r.requested for r in rows] == requested, rows
    assert all(r.epsilon == r.requested and r.verdict == CONSISTENT for r in rows), rows


@pytest.mark.parametrize("name", ["gap-edp", "gap-ndp", "node-dpsgd", "hetedp", "ppcvgae"])
def test_delta_is_accepted_for_every_method_that_declares_one(name, monkeypatch):
    """--delta is set through the parameter the method declares (Method.delta_param), not a hand-kept list."""
    from privgraph.methods import get_method
    from privgraph.request import ReleaseRequest, with_delta

    method = with_delta(get_method(name), 1e-6)
    assert method.params.delta == 1e-6 and method.dp_delta() == 1e-6
    seen = {}

    def fake_audit(data, method, *, epsilon, delta, **kwargs):
        seen["method"] = ReleaseRequest.build(method, epsilon=epsilon, delta=delta).method
        raise ValueError("stop before the releases")

    monkeypatch.setattr("privgraph.audit.audit_method", fake_audit)
    res = CliRunner().invoke(app, ["audit", name, "--epsilon", "1", "--delta", "1e-6"])
    assert res.exit_code == 2 and "stop before the releases" in res.output and "pure" not in res.output
    assert seen["method"].dp_delta() == 1e-6


def test_delta_is_refused_for_blinks_degree_share():
    with pytest.raises(ValueError, match="pure ε-DP"):
        audit_method(None, "blink", epsilon=1.0, delta=0.3, samples=6)
    res = CliRunner().invoke(app, ["audit", "blink", "--epsilon", "1", "--param", "delta=0.3"])
    assert res.exit_code == 2 and "`delta` is now `degree_share`" in res.output
