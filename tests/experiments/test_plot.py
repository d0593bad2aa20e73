import math

import pytest
from matplotlib.collections import PolyCollection
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator, PercentFormatter

from privgraph.accounting.guarantee import NON_PRIVATE, PrivacyGuarantee, PrivacyReport, TrustModel, Unit, unprotected
from privgraph.experiments.plot import (
    DEFAULT_DIR,
    LineKey,
    build_figure,
    choose_metric,
    guarantee_unit,
    plot_db,
    plot_rows,
)
from privgraph.experiments.store import ResultsStore, TrialRecord
from privgraph.experiments.summary import summarize

PNG = b"\x89PNG\r\n\x1a\n"
EPS = (0.1, 1.0, 8.0)


def record(
    method,
    eps,
    acc,
    unit=Unit.NODE_FEATURES,
    trial=0,
    dataset="cora",
    model="gcn",
    mechanism=None,
    metric="accuracy",
    variant=None,
):
    if eps is None:
        report = PrivacyReport([NON_PRIVATE if unit == Unit.NODE_FEATURES else unprotected(unit, "raw")])
    else:
        report = PrivacyReport([PrivacyGuarantee(unit, TrustModel.LOCAL, eps, 0.0, mechanism or method)])
    return TrialRecord(
        run_id="r",
        method=method,
        dataset=dataset,
        model=model,
        mechanism=mechanism,
        epsilon=eps,
        label_epsilon=None,
        trial=trial,
        seed=trial,
        config={"variant": variant},
        metrics={metric: acc, "val_" + metric: acc},
        guarantee=report.to_dict(),
        wall_time=0.1,
    )


def synthetic(trials=3, dataset="cora"):
    """LPGNN (node features) and Blink (adjacency list) at three ε, plus a non-private GCN."""
    out = []
    for t in range(trials):
        for i, eps in enumerate(EPS):
            out.append(record("lpgnn", eps, 0.5 + 0.1 * i + 0.01 * t, trial=t, dataset=dataset))
            out.append(
                record(
                    "blink",
                    eps,
                    0.4 + 0.1 * i + 0.02 * t,
                    unit=Unit.ADJACENCY_LIST,
                    trial=t,
                    dataset=dataset,
                    variant="hybrid",
                )
            )
        out.append(record("gcn-raw", None, 0.85 + 0.01 * t, trial=t, dataset=dataset))
    return out


def make_db(path, records):
    store = ResultsStore(path)
    for r in records:
        store.add(r)
    return path


def bands(ax):
    return [c for c in ax.collections if isinstance(c, PolyCollection)]


def test_guarantee_unit_reads_the_stored_report():
    r = record("blink", 1.0, 0.5, unit=Unit.ADJACENCY_LIST)
    assert guarantee_unit(r.guarantee) == (Unit.ADJACENCY_LIST, TrustModel.LOCAL)
    assert guarantee_unit({})[0] == "unknown unit"


def test_one_panel_per_unit_with_log_eps_ticks_and_percent_axis():
    fig = build_figure(synthetic())
    axes = fig.get_axes()
    assert len(axes) == 2
    assert [ax.get_title() for ax in axes] == [Unit.NODE_FEATURES, Unit.ADJACENCY_LIST]
    fig.canvas.draw()
    for ax in axes:
        assert ax.get_xscale() == "log"
        assert isinstance(ax.xaxis.get_minor_locator(), NullLocator)
        assert isinstance(ax.xaxis.get_minor_formatter(), NullFormatter)
        assert all(t.get_text() == "" for t in ax.get_xticklabels(minor=True))
        assert isinstance(ax.xaxis.get_major_locator(), FixedLocator)
        assert list(ax.get_xticks()) == list(EPS)
        assert [t.get_text() for t in ax.get_xticklabels()] == ["0.1", "1", "8"]
        assert isinstance(ax.yaxis.get_major_formatter(), PercentFormatter)
        assert len(bands(ax)) == 1  # 3 trials: a CI band for the panel's private curve
        # the non-private baseline: a dashed horizontal line in every panel
        dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert len(dashed) == 1 and dashed[0].get_label().startswith("gcn-raw")
        assert list(dashed[0].get_ydata()) == pytest.approx([0.86, 0.86])
    assert axes[0].get_ylabel() == "accuracy"
    assert axes[0].get_ylim() == axes[1].get_ylim()  # one y scale for the row
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["blink (gcn, hybrid)", "lpgnn (gcn)", "gcn-raw (gcn)"]  # curves, then baselines


def test_band_is_the_95_percent_ci_of_the_trials():
    fig = build_figure(synthetic())
    ax = fig.get_axes()[0]
    (curve,) = [ln for ln in ax.get_lines() if ln.get_label() == "lpgnn (gcn)"]
    assert list(curve.get_ydata()) == pytest.approx([0.51, 0.61, 0.71])
    verts = bands(ax)[0].get_paths()[0].vertices
    half = 4.302652729911275 * 0.01 / math.sqrt(3)  # t_{0.975, 2} · s / √n
    assert verts[:, 1].max() == pytest.approx(0.71 + half)
    assert verts[:, 1].min() == pytest.approx(0.51 - half)


def test_single_trial_has_no_band():
    fig = build_figure(synthetic(trials=1))
    assert all(len(bands(ax)) == 0 for ax in fig.get_axes())


def test_curves_split_by_variant_and_model():
    rs = [
        record("blink", e, 0.5, unit=Unit.ADJACENCY_LIST, variant=v, model=m)
        for e in EPS
        for v in ("hard", "hybrid")
        for m in ("gcn", "sage")
    ]
    (ax,) = build_figure(rs).get_axes()
    assert len(ax.get_lines()) == 4
    assert LineKey("lpgnn", "gcn", "lpgnn-rr").label == "lpgnn-rr (gcn)"
    assert LineKey("lpgnn", "gcn", "gaussian", None, 2.0).label == "lpgnn (gcn, gaussian, ε_y=2)"


def test_metric_choice_and_explicit_metric():
    rs = [record("han-rr", e, 0.7, metric="micro_f1", unit="edge of (a, r, b)") for e in EPS]
    assert choose_metric(rs) == "micro_f1"
    (ax,) = build_figure(rs).get_axes()
    assert "micro f1" in ax.get_ylabel() and ax.get_title() == "edge of (a, r, b)"
    (ax,) = build_figure(rs, metric="val_micro_f1").get_axes()
    assert "val micro f1" in ax.get_ylabel()
    with pytest.raises(ValueError, match="roc_auc"):
        build_figure(rs, metric="roc_auc")


def test_plot_db_writes_one_png_per_dataset(tmp_path):
    db = make_db(tmp_path / "r.db", synthetic() + synthetic(trials=2, dataset="citeseer"))
    paths = plot_db(db, tmp_path / "plots")
    assert paths == [
        tmp_path / "plots" / "privacy_utility_citeseer.png",
        tmp_path / "plots" / "privacy_utility_cora.png",
    ]
    assert all(p.read_bytes()[:8] == PNG for p in paths)
    assert plot_db(db, tmp_path / "plots", dataset="cora", metric="val_accuracy") == [
        tmp_path / "plots" / "privacy_utility_cora_val_accuracy.png"
    ]


def test_plot_db_default_output_is_results_dir(tmp_path, monkeypatch):
    db = make_db(tmp_path / "r.db", synthetic())
    monkeypatch.chdir(tmp_path)
    paths = plot_db(db)
    assert [p.resolve() for p in paths] == [(tmp_path / "results" / "privacy_utility_cora.png").resolve()]
    assert DEFAULT_DIR == paths[0].parent
    assert not list(tmp_path.glob("*.png"))  # nothing in the current directory


def test_plot_db_png_file_output(tmp_path):
    db = make_db(tmp_path / "r.db", synthetic())
    assert plot_db(db, tmp_path / "out" / "fig.png") == [tmp_path / "out" / "fig.png"]
    make_db(db, synthetic(dataset="citeseer"))
    assert sorted(p.name for p in plot_db(db, tmp_path / "fig.png")) == ["fig_citeseer.png", "fig_cora.png"]


def test_plot_db_errors(tmp_path):
    empty = make_db(tmp_path / "empty.db", [])
    with pytest.raises(ValueError, match="no trials"):
        plot_db(empty, tmp_path)
    with pytest.raises(ValueError, match="no results database"):
        plot_db(tmp_path / "missing.db", tmp_path)
    db = make_db(tmp_path / "r.db", synthetic())
    with pytest.raises(ValueError, match="dataset 'pubmed'.*cora"):
        plot_db(db, tmp_path, dataset="pubmed")
    with pytest.raises(ValueError, match="metric 'roc_auc'"):
        plot_db(db, tmp_path, metric="roc_auc")


def test_only_non_private_rows(tmp_path):
    (ax,) = build_figure([record("gcn-raw", None, 0.8, trial=t) for t in range(2)]).get_axes()
    assert [ln.get_linestyle() for ln in ax.get_lines()] == ["--"]


def test_plot_rows_from_summary_keeps_the_demo_working(tmp_path):
    out = plot_rows(summarize(synthetic()), tmp_path / "demo" / "privacy_utility.png")
    assert out == tmp_path / "demo" / "privacy_utility.png" and out.read_bytes()[:8] == PNG
    with pytest.raises(ValueError):
        plot_rows([], tmp_path / "x.png")


def test_percent_ticks_are_distinct_on_a_narrow_range():
    """Accuracies between 97 % and 99.5 % (ticks 0.5 apart): every tick label differs (not 98 %, 98 %, 98 %)."""
    points = [record("lpgnn", e, a, trial=t) for t in range(2) for e, a in zip(EPS, (0.97, 0.98, 0.995))]
    fig = build_figure(points)
    fig.canvas.draw()
    (ax,) = fig.get_axes()
    labels = [t.get_text() for t in ax.get_yticklabels() if ax.get_ylim()[0] <= t.get_position()[1] <= 1.02]
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
