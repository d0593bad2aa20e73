"""HeteDP NC's nc_inputs (the ACM gap): the authors' featDP.py inputs to the link model —
a HAN per type trained on the training labels (degree bins for the other types), noise redrawn every
epoch, the embedding of the CLEAN features handed on. Opt-in, refused where it does not apply, and
stated as NOT DP for the features."""

import math

import numpy as np
import pytest
import torch

import privgraph as pg
import privgraph.methods.hetedp.nc as nc_module
import privgraph.nn.hetero as hetero_nn
from privgraph.accounting import PrivacyReport, Unit
from privgraph.data import hetero_sbm_graph
from privgraph.data.hetero import TASKS, metapath_graph
from privgraph.experiments import ExperimentSpec, run_experiment
from privgraph.methods import get_method
from privgraph.methods.hetedp.method import HeteDPParams
from privgraph.methods.hetedp.nc import degree_bins, featdp_embedding

LINK = {"nc_model": "link-vgae", "epochs": 2, "batch_size": 128, "topology": "message-passing"}


@pytest.fixture
def short_han(monkeypatch):
    monkeypatch.setattr(nc_module, "FEATDP_EPOCHS", 3)  # the authors' 100 epochs, cut for time


def _run(inputs: str, eps: float | None = 1.0):
    return run_experiment(
        ExperimentSpec(
            method="hetedp", task="nc", epsilons=[eps], trials=1, params={**LINK, "nc_inputs": inputs}, diagnostics=True
        )
    )


def test_the_default_is_the_release_and_the_option_is_refused_where_it_does_not_apply():
    assert HeteDPParams().nc_inputs == "release"
    with pytest.raises(ValueError, match="nc_inputs must be one of"):
        get_method("hetedp", nc_model="link-vgae", topology="message-passing", nc_inputs="han")
    with pytest.raises(ValueError, match="apply with nc_model='link-vgae' only"):  # the HAN pipeline
        get_method("hetedp", topology="message-passing", nc_inputs="authors-han")
    for topology in ("edge", "node"):  # the HAN's metapaths read the protected relation
        with pytest.raises(ValueError, match="message-passing"):
            get_method("hetedp", nc_model="link-vgae", topology=topology, nc_inputs="authors-han")
    with pytest.raises(ValueError, match="node-classification parameters"):
        ExperimentSpec(method="hetedp", task="lp", params={**LINK, "nc_inputs": "authors-han"}).validate()
    with pytest.raises(ValueError, match="node-classification parameters.*a release"):  # never silently ignored
        method = get_method("hetedp", edge_type=("paper", "to", "author"), **{**LINK, "nc_inputs": "authors-han"})
        pg.privatize(hetero_sbm_graph(seed=0), method, epsilon=1.0, seed=0)


def test_degree_bins_are_the_authors_get_label():
    """data/dataprepro.py get_label, copied: bins of width (max − min)/C from 0, strict bounds."""

    def get_label(degress, num_nodes, num_classes):
        labels = torch.zeros(num_nodes, dtype=int)
        splst = torch.div(degress.max() - degress.min(), num_classes)
        for i in range(num_classes):
            if i == num_classes - 1:
                labels[np.where(degress > (splst * i))[0]] = int(i)
            else:
                labels[np.where((degress > (splst * i)) & (degress < (splst * (i + 1))))[0]] = int(i)
        return labels

    g = torch.Generator().manual_seed(0)
    for degree in (torch.randint(1, 40, (500,), generator=g).float(), torch.tensor([3.0, 6, 9, 12, 5, 7])):
        assert torch.equal(degree_bins(degree, 3), get_label(degree, degree.numel(), 3))


class _Recording(hetero_nn.HANClassifier):
    seen: list = []

    def forward(self, x_dict, edge_index_dict):
        _Recording.seen.append(("train", x_dict[self.target].clone()))
        return super().forward(x_dict, edge_index_dict)

    def embed(self, x_dict, edge_index_dict):
        if not self.training:
            _Recording.seen.append(("eval", x_dict[self.target].clone()))
        return super().embed(x_dict, edge_index_dict)


def test_noise_is_redrawn_each_epoch_and_the_clean_features_are_embedded(monkeypatch, short_han):
    data = hetero_sbm_graph(seed=0)
    graph = metapath_graph(data, "sbm", 0)
    x, y = data["paper"].x.float(), data["paper"].y
    train = torch.zeros(300, dtype=torch.bool)
    train[:60] = True
    monkeypatch.setattr(hetero_nn, "HANClassifier", _Recording)
    _Recording.seen = []
    z = featdp_embedding(x, graph, "paper", y, train, 0.5, seed=3)
    (train1, a), (train2, b), (train3, c), (mode, clean) = _Recording.seen
    assert (train1, train2, train3, mode) == ("train", "train", "train", "eval")
    assert not torch.equal(a, x) and not torch.equal(a, b) and not torch.equal(b, c)  # noisy, redrawn
    assert float((a - x).std()) == pytest.approx(0.5, rel=0.05)
    assert torch.equal(clean, x)  # what is handed on: the embedding of the clean features
    assert z.shape == (300, nc_module.FEATDP_HIDDEN)
    # only the training labels are read: other labels changed, the same embedding
    y2 = y.clone()
    y2[~train] = (y2[~train] + 1) % int(y.max() + 1)
    assert torch.equal(featdp_embedding(x, graph, "paper", y2, train, 0.5, seed=3), z)


@pytest.mark.parametrize("inputs", ["authors-han", "authors-han-target"])
def test_the_option_replaces_exactly_those_inputs(kept_links, short_han, inputs):
    """Against the release's inputs (same seed, same ε): the replaced types read a 64-dim HAN
    embedding, every other type exactly what the release gave it."""
    _run("release")
    _run(inputs)
    base, link = kept_links
    target = TASKS["sbm"].node_type
    expected = [target] if inputs == "authors-han-target" else list(base.inputs.x)
    assert link.details["inputs"]["replaced"] == expected
    assert set(link.inputs.x) == set(base.inputs.x)
    for t, x in link.inputs.x.items():
        if t in expected:
            assert x.shape == (base.inputs.x[t].shape[0], nc_module.FEATDP_HIDDEN)
        else:
            assert torch.equal(x, base.inputs.x[t]), t
    # DP-SGD as the release's: the same σ, rate and steps (its input layers have other shapes)
    for k in ("epsilon_s", "noise_multiplier"):
        assert link.details["dpsgd"][k] == base.details["dpsgd"][k]


def test_the_guarantee_says_not_dp_for_the_features_and_names_the_label_use(short_han):
    for eps in (1.0, None):
        record = _run("authors-han", eps).records[0]
        guarantees = PrivacyReport.from_dict(record.guarantee).guarantees
        features = [g for g in guarantees if g.unit == Unit.NODE_FEATURES]
        assert len(features) == 1 and math.isinf(features[0].epsilon)
        notes = " ".join(features[0].notes)
        assert "NOT differentially private" in notes and "CLEAN" in notes and "TRAINING labels" in notes
        edge = [g for g in guarantees if g.unit != Unit.NODE_FEATURES]
        if eps is None:
            assert not edge
        else:
            (edge,) = edge
            assert edge.epsilon == pytest.approx(0.5, rel=1e-3)  # ε_s = (1 − ε_f/ε)·ε, unchanged
            assert "held fixed" in " ".join(edge.notes) and "protected relation" in " ".join(edge.notes)
        assert record.config["release"]["inputs"]["handed_on"].startswith("HAN embedding of the CLEAN")
