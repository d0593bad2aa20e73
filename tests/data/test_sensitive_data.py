"""Graphs with a sensitive attribute (PPCVGAE §6.1): loaders, splits, errors."""

import os
from pathlib import Path

import pytest
import torch

from privgraph.data import DATA_ENV, DatasetUnavailableError, load_sensitive

SHARED = os.environ.get(DATA_ENV)


def _has(folder: str) -> bool:
    return bool(SHARED) and (Path(SHARED) / folder / "raw").is_dir()


def _check_common(d, n, features, directed_edges, table1_edges):
    assert d.num_nodes == n and d.x.shape == (n, features)
    assert d.edge_index.shape[1] == directed_edges
    assert (directed_edges + n) // 2 == table1_edges  # the paper's Table 1 counts NIFTY's A + I
    assert (d.edge_index[0] != d.edge_index[1]).all()
    assert set(d.y.unique().tolist()) == {0, 1} and set(d.sens.unique().tolist()) == {0, 1}
    assert float(d.x.min()) >= 0.0 and float(d.x.max()) <= 1.0
    assert int(d.private_mask.sum()) == round(0.7 * n)
    assert (d.train_mask.sum(), d.val_mask.sum(), d.test_mask.sum()) == pytest.approx(
        (0.5 * n, 0.3 * n, 0.2 * n), abs=2
    )
    assert not (d.train_mask & d.val_mask).any() and not (d.val_mask & d.test_mask).any()


@pytest.mark.skipif(not _has("German"), reason="German raw files not available")
def test_german_counts():
    d = load_sensitive("german")
    _check_common(d, 1000, 26, 43484, 22242)
    assert d.sensitive_name == "Gender" and int(d.sens.sum()) == 310  # Female = 1
    assert int(d.y.sum()) == 700 and "Gender" not in d.feature_names and "PurposeOfLoan" not in d.feature_names
    again = load_sensitive("german")
    assert torch.equal(again.private_mask, d.private_mask) and torch.equal(again.train_mask, d.train_mask)
    assert not torch.equal(load_sensitive("german", seed=1).private_mask, d.private_mask)


@pytest.mark.skipif(not _has("Bail"), reason="Bail raw files not available")
def test_bail_counts():
    d = load_sensitive("recidivism")
    _check_common(d, 18876, 17, 623740, 321308)
    assert d.name == "Recidivism" and d.sensitive_name == "WHITE" and "WHITE" not in d.feature_names


def test_pokec_format_parses_ids_labels_and_unlabelled(tmp_path):
    raw = tmp_path / "Pokec" / "raw"
    raw.mkdir(parents=True)
    rows = ["user_id,region,gender,AGE,I_am_working_in_field"]
    for i in range(40):
        rows.append(f"{100 + i},{i % 2},{i % 3 % 2},{20 + i},{-1 if i % 10 == 0 else i % 4}")
    (raw / "region_job.csv").write_text("\n".join(rows) + "\n")
    (raw / "region_job_relationship.txt").write_text("100\t101\n101\t100\n102\t150\n103\t999\n104\t104\n")
    d = load_sensitive("pokec-z", root=tmp_path)
    assert d.num_nodes == 40 and d.x.shape == (40, 2)
    assert {tuple(p) for p in d.edge_index.T.tolist()} == {(0, 1), (1, 0)}  # unknown ids and self-loops dropped
    assert set(d.y.tolist()) == {-1, 0, 1}  # labels > 1 → 1, −1 unlabelled
    unlabelled = d.y < 0
    assert not (d.train_mask | d.val_mask | d.test_mask)[unlabelled].any()


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="unknown sensitive attribute dataset 'cora'"):
        load_sensitive("cora", root=tmp_path)
    with pytest.raises(DatasetUnavailableError, match="not found"):
        load_sensitive("german", root=tmp_path)
    with pytest.raises(ValueError, match="private_ratio"):
        load_sensitive("german", root=tmp_path, private_ratio=1.0)
    raw = tmp_path / "Credit" / "raw"
    raw.mkdir(parents=True)
    (raw / "credit.csv").write_text("NoDefaultNextMonth,Age,Married\n1,1,0\n0,0,1\n")
    with pytest.raises(DatasetUnavailableError, match="edge file"):
        load_sensitive("credit", root=tmp_path)
    raw = tmp_path / "German" / "raw"
    raw.mkdir(parents=True)
    (raw / "german.csv").write_text("Gender,Age\nMale,3\nFemale,4\n")
    (raw / "german_edges.txt").write_text("0 1\n")
    with pytest.raises(ValueError, match="GoodCustomer"):
        load_sensitive("german", root=tmp_path)
