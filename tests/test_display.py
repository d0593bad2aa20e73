"""One scale for each metric in every table: an AUC as a fraction (0.5 = chance) in ``attack``/``run``,
``compare`` and ``demo`` alike, the accuracy as a percentage."""

from __future__ import annotations

import io
import math
from types import SimpleNamespace

from privgraph.cli.console import PipeConsole
from privgraph.cli.render import result_table
from privgraph.display import format_metric, is_auc
from privgraph.experiments.compare import CompareRow, Comparison
from privgraph.experiments.demo import demo_table

AUC, AUC_CI, ACC, ACC_CI = 0.734, 0.021, 0.923, 0.014


def _text(table) -> str:
    file = io.StringIO()
    PipeConsole(file=file, width=200).print(table)
    return file.getvalue()


def test_an_auc_is_a_fraction_and_a_rate_a_percentage():
    assert is_auc("attack_auc") and is_auc("roc_auc") and not is_auc("accuracy") and not is_auc("attack_advantage")
    assert format_metric("attack_auc", AUC, AUC_CI) == "0.73 ± 0.02"
    assert format_metric("roc_auc", AUC) == "0.73"
    assert format_metric("accuracy", ACC, ACC_CI) == "92.3 ± 1.4"
    assert format_metric("attack_tpr_at_1fpr", 0.05, math.nan) == "5.0"


def test_the_attack_compare_and_demo_tables_write_the_same_auc_alike():
    row = {"epsilon": 1.0, "label_epsilon": None, "trials": 3, "dataset": "sbm"}
    summary = [
        {**row, "metric": "accuracy", "mean": ACC, "ci95": ACC_CI},
        {**row, "metric": "attack_auc", "mean": AUC, "ci95": AUC_CI},
    ]
    attack_run = SimpleNamespace(
        summary=lambda: summary,
        attack={"name": "link-stealing"},
        spec=SimpleNamespace(method="lpgnn", dataset="sbm"),
        model="gcn",
        columns=["accuracy", "attack_auc"],
    )
    attack_text = _text(result_table(attack_run)[0])
    compare_text = _text(
        Comparison(
            "sbm",
            [1.0],
            "link-stealing",
            [CompareRow("node features", "lpgnn", "gcn", {1.0: (ACC, ACC_CI, 3)}, {1.0: (AUC, AUC_CI, 3)})],
        ).markdown()
    )
    results = [SimpleNamespace(spec=SimpleNamespace(method="lpgnn"), summary=lambda: summary)]
    demo_text = _text(demo_table(results, "attack_auc")) + _text(demo_table(results))
    for text in (attack_text, compare_text, demo_text):
        assert "0.73 ± 0.02" in text and "73.4" not in text, text
        assert "92.3 ± 1.4" in text, text
    assert "%, AUC 0–1, mean ± 95% CI" in " ".join(attack_text.split())  # the title says which scale is which
