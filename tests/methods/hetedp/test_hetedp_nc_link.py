"""HeteDP node classification on the link model's embeddings: the authors'
topologyDP_nc.py rebuilt as opt-in settings — nc_model="link-vgae", the paper's optimistic epoch
selection nc_selection="best-test" (never the default, labelled), the authors' posterior sample."""

import dataclasses
import math

import numpy as np
import pytest
import torch

import privgraph.methods.hetedp.nc as nc_module
from privgraph.accounting import PrivacyReport
from privgraph.data import hetero_sbm_graph
from privgraph.data.hetero import TASKS, node_inputs
from privgraph.experiments import ExperimentSpec, run_experiment
from privgraph.methods import get_method
from privgraph.methods.hetedp.method import HeteDPParams
from privgraph.methods.hetedp.nc import EpochEmbeddings, check_nc_options, classify_epochs, select_epoch, standardize
from privgraph.train.dpsgd import DPSGDConfig
from privgraph.train.link_prediction import LinkInputs, train_link_model_dp

LINK = {"nc_model": "link-vgae", "epochs": 3, "batch_size": 128}


def test_defaults_are_the_han_and_the_validation_selection():
    p = HeteDPParams()
    assert (p.nc_model, p.nc_selection, p.nc_embedding) == ("han", "validation", "mean")


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"nc_model": "vgae"}, "nc_model must be one of"),
        ({"nc_model": "link-vgae", "nc_selection": "test"}, "nc_selection must be one of"),
        ({"nc_model": "link-vgae", "nc_embedding": "mode"}, "nc_embedding must be one of"),
        ({"nc_selection": "best-test"}, "apply with nc_model='link-vgae' only"),  # the HAN has no epochs to pick
        ({"nc_embedding": "sample"}, "apply with nc_model='link-vgae' only"),
    ],
)
def test_bad_or_meaningless_values_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        get_method("hetedp", **bad)


def test_the_options_are_refused_for_link_prediction():
    for params in ({"nc_model": "link-vgae"}, {"nc_model": "link-vgae", "nc_selection": "best-test"}):
        with pytest.raises(ValueError, match="node-classification parameters"):
            ExperimentSpec(method="hetedp", task="lp", params=params).validate()
    ExperimentSpec(method="hetedp", task="nc", params={"nc_model": "link-vgae", "nc_selection": "best-test"}).validate()
    check_nc_options("han", "validation", "mean")


def test_link_vgae_needs_the_target_type_on_the_protected_relation(monkeypatch):
    from privgraph.data import dataset_info, registry

    info = registry.get_dataset("sbm", registry.HETEROGENEOUS)
    subject = dataclasses.replace(info, hetero=dataclasses.replace(info.hetero, node_type="subject"))
    monkeypatch.setitem(dataset_info._REGISTRY, (registry.HETEROGENEOUS, "sbm"), subject)
    with pytest.raises(ValueError, match="not an endpoint"):
        ExperimentSpec(method="hetedp", task="nc", params=LINK).build()


def _recorded(*epochs: torch.Tensor) -> EpochEmbeddings:
    rec = EpochEmbeddings("paper")
    for e, z in enumerate(epochs, start=1):
        rec.epochs.append(e)
        rec.mu.append(z)
        rec.logstd.append(torch.zeros_like(z))
    return rec


def test_validation_picks_on_validation_and_best_test_reads_the_test_labels():
    """Epoch 1 separates the validation nodes only, epoch 2 the test nodes only: the honest rule
    reports epoch 1's (poor) test score, the paper's rule epoch 2's, and says it read the test labels."""
    n, k = 300, 3
    y = torch.arange(n) % k
    train, val, test = (torch.zeros(n, dtype=torch.bool) for _ in range(3))
    train[:100], val[100:150], test[150:] = True, True, True
    noise = torch.randn(n, 8, generator=torch.Generator().manual_seed(0))
    onehot = torch.nn.functional.one_hot(y, k).float() * 10
    first, second = noise.clone(), noise.clone()
    first[train | val, :k] += onehot[train | val]
    second[train | test, :k] += onehot[train | test]
    rec = _recorded(first, second)
    honest, val_score = classify_epochs(rec, y, (train, val, test), "validation", "mean", 0)
    optimistic, _ = classify_epochs(rec, y, (train, val, test), "best-test", "mean", 0)
    assert honest["epoch"] == 1 and optimistic["epoch"] == 2
    assert honest["selected_on_test"] == 0 and optimistic["selected_on_test"] == 1
    assert optimistic["micro_f1"] > 0.95 > 0.6 > honest["micro_f1"]
    assert val_score == honest["val_micro_f1"] > 0.95


def test_select_epoch_takes_the_first_best_as_the_authors_loop():
    assert select_epoch([0.1, 0.5, 0.5], [0.9, 0.2, 0.9], "validation") == 1
    assert select_epoch([0.1, 0.5, 0.5], [0.9, 0.2, 0.9], "best-test") == 0  # `if test_mi > best_test_mic`
    with pytest.raises(ValueError, match="nc_selection"):
        select_epoch([0.1], [0.2], "test")


def test_sample_adds_the_posterior_noise_and_mean_does_not():
    mu = torch.randn(50, 4, generator=torch.Generator().manual_seed(1))
    rec = _recorded(mu)
    assert torch.equal(rec.embeddings("mean", 0)[0], mu)
    drawn = rec.embeddings("sample", 7)[0]
    assert torch.allclose(
        drawn - mu, torch.randn(50, 4, generator=torch.Generator().manual_seed(7)), atol=1e-6
    )  # σ = 1
    assert torch.equal(drawn, rec.embeddings("sample", 7)[0])


def test_standardize_zeroes_constant_dimensions():
    z = torch.cat([torch.arange(6.0).view(-1, 1), torch.ones(6, 1)], dim=1)
    out = standardize(z)
    assert np.isfinite(out).all() and (out[:, 1] == 0).all()
    assert out[:, 0].mean() == pytest.approx(0) and out[:, 0].std(ddof=1) == pytest.approx(1)


def test_on_epoch_sees_each_epoch_and_changes_nothing():
    data = hetero_sbm_graph(seed=0)
    edge = TASKS["sbm"].edge_type
    inputs = LinkInputs.build(node_inputs(data))
    config = DPSGDConfig(epochs=3, batch_size=128, edge_count=int(data[edge].edge_index.shape[1]))
    seen = []
    plain = train_link_model_dp(inputs, data[edge].edge_index, edge, 1.0, 1e-5, config, 0)
    hooked = train_link_model_dp(
        inputs, data[edge].edge_index, edge, 1.0, 1e-5, config, 0, on_epoch=lambda e, model: seen.append(e)
    )
    assert seen == [1, 2, 3]
    for (name, a), (_, b) in zip(plain.model.state_dict().items(), hooked.model.state_dict().items()):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("step", ["dpsgd", "paper"])
def test_the_task_classifies_the_link_models_embeddings(monkeypatch, kept_links, step):
    """The released payload holds the target type's μ after each epoch — the last one is the final
    model's μ — and the evaluation classifies exactly those (not a HAN's)."""
    classified = []

    def spy_classify(recorded, y, masks, selection, embedding, seed):
        classified.append([z.clone() for z in recorded.embeddings(embedding, seed)])
        return real_nc(recorded, y, masks, selection, embedding, seed)

    real_nc = nc_module.classify_epochs
    monkeypatch.setattr(nc_module, "classify_epochs", spy_classify)
    res = run_experiment(
        ExperimentSpec(
            method="hetedp",
            task="nc",
            epsilons=[1.0],
            trials=1,
            params={**LINK, "gradient_step": step},
            diagnostics=True,
        )
    )
    (link,), (epochs,) = kept_links, classified
    assert len(epochs) == 3
    target = TASKS["sbm"].node_type
    every = torch.arange(link.inputs.x[target].shape[0])
    with torch.no_grad():
        final_mu, _ = link.result.model(target, *link.inputs.rows(target, every))
    assert torch.allclose(epochs[-1], final_mu)
    record = res.records[0]
    assert record.metrics["epoch"] in (1, 2, 3) and record.metrics["selected_on_test"] == 0
    assert "validation" in record.config["release"]["nc"]["epoch_selection"]


def test_the_guarantee_of_the_authors_step_says_not_dp():
    res = run_experiment(
        ExperimentSpec(
            method="hetedp",
            task="nc",
            epsilons=[1.0],
            trials=1,
            params={**LINK, "gradient_step": "paper", "nc_selection": "best-test"},
            diagnostics=True,
        )
    )
    record = res.records[0]
    edge = [g for g in PrivacyReport.from_dict(record.guarantee).guarantees if g.unit.startswith("edge of")]
    assert len(edge) == 1 and math.isinf(edge[0].epsilon)
    assert "NOT differentially private" in " ".join(edge[0].notes)
    assert record.metrics["selected_on_test"] == 1
    assert "optimistic" in record.config["release"]["nc"]["epoch_selection"]
    ours = run_experiment(ExperimentSpec(method="hetedp", task="nc", epsilons=[1.0], trials=1, params=LINK))
    edge = [g for g in PrivacyReport.from_dict(ours.records[0].guarantee).guarantees if g.unit.startswith("edge of")]
    assert edge[0].epsilon == pytest.approx(0.5, rel=1e-3)  # ε_s = (1 − ε_f/ε)·ε, edge mode: edge-level DP


def test_the_authors_step_reads_the_batch_gradient_the_per_example_sum_gave():
    """gradient_step='paper' takes one backward pass of the summed loss instead of summing per-example
    gradients (the step only reads their sum): the same gradient, up to rounding."""
    from torch.func import grad, vmap

    from privgraph.nn.hetero import RelationalVGAEEncoder
    from privgraph.train.link_prediction import example_loss

    data = hetero_sbm_graph(seed=0)
    src, _, dst = TASKS["sbm"].edge_type
    inputs = LinkInputs.build(node_inputs(data), data.edge_index_dict, [("author", "to", "paper")])
    torch.manual_seed(0)
    model = RelationalVGAEEncoder({t: v.shape[1] for t, v in inputs.x.items()}, [src, dst], list(inputs.means), 8, 4)
    params = {k: p.detach() for k, p in model.named_parameters()}
    g = torch.Generator().manual_seed(1)
    rows = (
        inputs.rows(src, torch.randint(0, 300, (16, 3), generator=g)),
        inputs.rows(dst, torch.randint(0, 200, (16, 3), generator=g)),
        torch.randn(16, 6, 4, generator=g),
    )

    def loss(p, s, d, draws):
        return example_loss(model, p, src, dst, s, d, draws, 0.01)

    summed = {k: v.sum(0) for k, v in vmap(grad(loss), in_dims=(None, 0, 0, 0))(params, *rows).items()}
    batch = grad(lambda p, *r: vmap(loss, in_dims=(None, 0, 0, 0))(p, *r).sum())(params, *rows)
    for k in summed:
        assert torch.allclose(summed[k], batch[k], atol=1e-5), k
