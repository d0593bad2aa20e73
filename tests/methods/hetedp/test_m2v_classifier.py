"""metapath2vec's node classifier as method parameters: ``classifier`` (logistic regression or a
linear SVM) and ``train_share`` (MAGNN's evaluation protocol: a random share of the labelled
nodes trains it); bad values, the masks, the default path unchanged, the stored rows' hashes kept."""

import functools
import math

import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.svm import LinearSVC
from torch_geometric.data import HeteroData

from privgraph.data.hetero import load_hetero
from privgraph.experiments import ExperimentSpec, config_hash, run_experiment
from privgraph.experiments.tasks import hetero_nc as tasks_module
from privgraph.methods import get_method
from privgraph.methods.hetedp import baselines


@functools.lru_cache(maxsize=1)
def _sbm_labels() -> torch.Tensor:
    return load_hetero("sbm", seed=0)["paper"].y


def _fake_embeddings(edge_index_dict, metapath, num_nodes_dict, seed, epochs=10, walks=None):
    """Noisy one-hot labels of the synthetic graph's papers (something for the classifier to learn)."""
    y = _sbm_labels()
    k = int(y.max()) + 1
    noise = torch.randn(num_nodes_dict["paper"], k, generator=torch.Generator().manual_seed(seed))
    return {"paper": torch.nn.functional.one_hot(y, k).float() + 0.8 * noise}


def _graph(n: int = 400, classes: int = 4) -> HeteroData:
    data = HeteroData()
    y = torch.arange(n) % classes
    y[::10] = -1  # unlabelled nodes: never split
    data["paper"].y, data["paper"].num_nodes = y, n
    return data


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"classifier": "forest"}, "classifier must be one of"),
        ({"classifier": "SVM"}, "classifier must be one of"),
        ({"train_share": 0.0}, "train_share must be"),
        ({"train_share": 1.0}, "train_share must be"),
        ({"train_share": 1.5}, "train_share must be"),
        ({"train_share": -0.2}, "train_share must be"),
        ({"train_share": True}, "train_share must be"),
        ({"train_share": "0.8"}, "train_share must be"),
    ],
)
def test_bad_values_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        get_method("metapath2vec", **bad)


def test_the_parameters_are_refused_where_they_mean_nothing():
    with pytest.raises(ValueError, match="leave split at its default"):
        ExperimentSpec(method="metapath2vec", task="nc", split="hetedp", params={"train_share": 0.8}).validate()
    for params in ({"classifier": "svm"}, {"train_share": 0.8}):
        with pytest.raises(ValueError, match="node-classification parameters"):
            ExperimentSpec(method="metapath2vec", task="lp", params=params).validate()
    ExperimentSpec(method="metapath2vec", task="nc", split="hetedp", params={"classifier": "svm"}).validate()
    ExperimentSpec(method="metapath2vec", task="lp").validate()


def test_defaults_and_walks():
    p = get_method("metapath2vec").params
    assert (p.classifier, p.train_share, p.validation_share()) == ("logistic", None, None)
    assert p.walks() == baselines.WalkSettings()  # the new parameters are not walk settings
    assert get_method("metapath2vec", train_share=0.8).params.validation_share() == pytest.approx(0.05)
    assert get_method("metapath2vec", train_share=0.96).params.validation_share() == pytest.approx(0.02)


@pytest.mark.parametrize("share", [0.8, 0.4, 0.2])
@pytest.mark.parametrize("classifier, kind", [("svm", LinearSVC), ("logistic", LogisticRegression)])
def test_train_share_masks_partition_the_labelled_nodes(share, classifier, kind):
    data = _graph()
    labelled = data["paper"].y >= 0
    n = int(labelled.sum())
    z = torch.randn(data["paper"].num_nodes, 6, generator=torch.Generator().manual_seed(0))
    params = get_method("metapath2vec", classifier=classifier, train_share=share).params
    clf, (train, val, test) = tasks_module._m2v_classifier(z, data, "paper", 3, "random", params)
    assert isinstance(clf, kind)
    assert not (train & val).any() and not (train & test).any() and not (val & test).any()
    assert torch.equal(train | val | test, labelled)  # covers the labelled nodes, no unlabelled one
    assert abs(int(train.sum()) - share * n) < 1  # the training share, within rounding
    assert abs(int(val.sum()) - params.validation_share() * n) < 1
    again = tasks_module._m2v_classifier(z, data, "paper", 3, "random", params)[1]
    other = tasks_module._m2v_classifier(z, data, "paper", 4, "random", params)[1]
    assert torch.equal(again[0], train) and not torch.equal(other[0], train)  # from the trial's seed


def test_without_train_share_the_masks_are_the_tasks_split():
    data = _graph()
    z = torch.randn(data["paper"].num_nodes, 6, generator=torch.Generator().manual_seed(0))
    params = get_method("metapath2vec", classifier="svm").params
    _, masks = tasks_module._m2v_classifier(z, data, "paper", 5, "hetedp", params)
    assert all(torch.equal(a, b) for a, b in zip(masks, tasks_module._nc_masks(data, "paper", 5, "hetedp")))


def test_the_default_path_gives_the_result_of_the_logistic_regression_on_the_split(monkeypatch):
    """Both parameters at their defaults: LogisticRegression(max_iter=3000) on the task's split, as
    before the parameters existed (recomputed here the way the task used to)."""
    monkeypatch.setattr(baselines, "metapath2vec_embeddings", _fake_embeddings)
    res = run_experiment(ExperimentSpec(method="metapath2vec", task="nc", trials=2))
    data = load_hetero("sbm", seed=0)
    y = data["paper"].y
    for record in res.records:
        seed = record.trial
        z = _fake_embeddings(None, None, {"paper": data["paper"].num_nodes}, seed)["paper"]
        train, _, test = tasks_module._nc_masks(data, "paper", seed)
        predicted = LogisticRegression(max_iter=3000).fit(z[train].numpy(), y[train].numpy()).predict(z[test].numpy())
        assert record.metrics["micro_f1"] == pytest.approx(f1_score(y[test], predicted, average="micro"), abs=1e-12)
        assert record.metrics["macro_f1"] == pytest.approx(f1_score(y[test], predicted, average="macro"), abs=1e-12)
        assert record.config["params"]["classifier"] == "logistic" and record.config["params"]["train_share"] is None


def test_svm_and_train_share_reach_the_task(monkeypatch):
    monkeypatch.setattr(baselines, "metapath2vec_embeddings", _fake_embeddings)
    seen = []
    real = tasks_module._m2v_classifier

    def spy(z, data, target, seed, split, params):
        clf, masks = real(z, data, target, seed, split, params)
        seen.append((type(clf), [int(m.sum()) for m in masks]))
        return clf, masks

    monkeypatch.setattr(tasks_module, "_m2v_classifier", spy)
    res = run_experiment(
        ExperimentSpec(method="metapath2vec", task="nc", trials=1, params={"classifier": "svm", "train_share": 0.8})
    )
    ((kind, sizes),) = seen
    assert kind is LinearSVC and sizes[0] == math.floor(0.8 * sum(sizes))
    assert 0 <= res.records[0].metrics["micro_f1"] <= 1


def test_the_stored_rows_keep_their_configuration_hashes():
    """The rows of benchmarks/results/hetedp_m2v.jsonl (and hetedp.jsonl) were stored before these
    parameters existed: left at their defaults they do not enter the hash."""
    assert (
        config_hash(ExperimentSpec(method="metapath2vec", task="nc", dataset="acm", split="hetedp"), None)
        == "eac0c7e48e8b1642"
    )
    assert (
        config_hash(ExperimentSpec(method="metapath2vec", task="nc", dataset="dblp-magnn"), None) == "6b504bc0a65cdf6b"
    )
