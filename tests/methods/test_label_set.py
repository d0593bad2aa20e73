"""Label LDP's k is the declared public label set, never read from the private labels."""

from __future__ import annotations

import pytest
import torch

import privgraph as pg
from privgraph.data import sbm_graph
from privgraph.mechanisms import randomized_response
from privgraph.methods import report_labels
from privgraph.transforms import LabelRR


def _graph():
    data = sbm_graph(num_nodes=40, num_classes=3, num_features=4, avg_degree=3.0, seed=0)
    assert data.num_classes == 3  # the generator declares its label set
    return data


def _first_train(data) -> int:
    return int(data.train_mask.nonzero()[0])


def test_a_new_class_in_the_labels_does_not_change_k():
    data, other = _graph(), _graph()
    other.y = other.y.clone()
    other.y[_first_train(other)] = 2 if int(other.y.max()) < 2 else int(other.y.max())  # a class in the set
    data.num_classes = other.num_classes = 5  # declared larger than any label: k stays 5, not max(y) + 1
    for d in (data, other):
        rel = pg.privatize(d, "lpgnn", epsilon=2.0, label_epsilon=1.0, seed=0)
        assert rel.data.num_classes == 5 and any("5-ary randomized response" in ln for ln in rel.report.lines())
    a = pg.privatize(data, "lpgnn", epsilon=2.0, label_epsilon=1.0, seed=0)
    b = pg.privatize(other, "lpgnn", epsilon=2.0, label_epsilon=1.0, seed=0)
    assert a.report.lines() == b.report.lines() and a.metadata() == b.metadata()


def test_k_is_never_read_from_the_labels():
    data = _graph()
    del data.num_classes
    with pytest.raises(ValueError, match="never read from the private labels"):
        report_labels(data, 1.0, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="declare k"):
        pg.privatize(data, "lpgnn", epsilon=2.0, label_epsilon=1.0, seed=0)
    assert report_labels(data, 1.0, torch.Generator().manual_seed(0), num_classes=7).mechanism.k == 7
    assert LabelRR(1.0, num_classes=6, seed=0)(data.clone()).num_classes == 6


@pytest.mark.parametrize("label", [10**12, -3, 3])
def test_a_label_outside_the_declared_set_is_refused_before_any_noise(monkeypatch, label):
    data = _graph()
    data.y = data.y.clone()
    data.y[_first_train(data)] = label
    drawn = []
    original = randomized_response.RandomizedResponse.perturb
    monkeypatch.setattr(
        randomized_response.RandomizedResponse, "perturb", lambda *a, **k: drawn.append(1) or original(*a, **k)
    )

    def released(*args, **kwargs):
        drawn.append("release")
        raise AssertionError("the method's release ran before the labels were checked")

    lpgnn = pg.methods.METHODS["lpgnn"]
    monkeypatch.setattr(lpgnn, "release", released)
    with pytest.raises(ValueError, match=r"outside the declared label set 0\.\.2 \(num_classes=3\)") as err:
        pg.privatize(data, "lpgnn", epsilon=2.0, label_epsilon=1.0, seed=0)
    assert str(label) not in str(err.value).replace("0..2", "").replace("=3", "")  # the label is not echoed
    assert "\n" not in str(err.value) and not drawn
    with pytest.raises(ValueError, match="outside the declared label set"):
        report_labels(data, 1.0, torch.Generator().manual_seed(0))
    assert not drawn


def test_a_test_label_is_not_collected_so_not_checked():
    data = _graph()
    data.y = data.y.clone()
    data.y[int(data.test_mask.nonzero()[0])] = 9  # test nodes report nothing: no refusal, k stays declared
    assert report_labels(data, 1.0, torch.Generator().manual_seed(0)).mechanism.k == 3


def test_a_registry_dataset_declares_its_schema():
    from privgraph.data.registry import get_dataset

    assert {k: get_dataset(k, "homogeneous").classes for k in ("cora", "citeseer", "pubmed")} == {
        "cora": 7,
        "citeseer": 6,
        "pubmed": 3,
    }


def test_num_classes_option(tmp_path, invoke):
    edges = tmp_path / "g.csv"
    labels = tmp_path / "y.txt"
    rows = [(i, (i + 1) % 20) for i in range(20)] + [(i, (i + 5) % 20) for i in range(20)]
    edges.write_text("".join(f"{a},{b}\n" for a, b in rows))
    labels.write_text("".join(f"{i % 2}\n" for i in range(20)))
    out = tmp_path / "rel.pt"
    common = ["release", "lpgnn", "-o", out, "--epsilon", "2", "--label-epsilon", "1", "--input", edges]
    common += ["--labels", labels, "--features", _features(tmp_path), "--domain", "0,1", "--seed", "0"]
    code, output, _ = invoke(*common)
    assert code == 2 and "--num-classes" in output, output
    code, output, _ = invoke(*common, "--num-classes", "4")
    assert code == 0, output
    assert pg.load_release(out).data.num_classes == 4
    code, output, _ = invoke("release", "lpgnn", "-o", tmp_path / "other.pt", "--epsilon", "2", "--num-classes", "4")
    assert code == 2 and "give --input" in output, output


def _features(tmp_path):
    import numpy as np

    path = tmp_path / "x.npy"
    np.save(path, np.random.default_rng(0).random((20, 3)).astype(np.float32))
    return path
