"""GAP-NDP out of core (privgraph.methods.outofcore.gap_ndp) against the registered GAPNode: the same σ, δ, steps and
guarantee, the same draws (so the same trained classifier), the same refusals, and accuracy above chance."""

import math

import numpy as np
import pytest
import torch

from privgraph.data.outofcore import CSRGraph, OutOfCoreGraph, synthetic_graph
from privgraph.data.synthetic import sbm_graph
from privgraph.mechanisms import make_generator
from privgraph.methods import get_method
from privgraph.methods.node_domain import DegreeAboveBound, NeedsNumTrain, out_degrees
from privgraph.methods.outofcore import PIPELINES, gap_ndp
from privgraph.nn.gap import GAPClassifier
from privgraph.train.dpsgd import train_rows_dpsgd

FEW = {"encoder_epochs": 4, "epochs": 4, "batch_size": 32}


@pytest.fixture(scope="module")
def sbm():
    return sbm_graph(num_nodes=300, num_features=24, feature_signal=0.2, avg_degree=8, seed=2)


def bound_of(data) -> int:
    return int(out_degrees(data.edge_index, data.num_nodes).max())


def params_of(data, **extra):
    """D the graph's largest out-degree (the tests' public cap), N its training count (public here)."""
    return {
        "degree_cap": "enforced",
        "max_degree": bound_of(data),
        "num_train": int(data.train_mask.sum()),
        **FEW,
        **extra,
    }


def classifier_state(release) -> dict[str, torch.Tensor]:
    return {k[len("classifier.") :]: v for k, v in release.model_state.items() if k.startswith("classifier.")}


@pytest.mark.parametrize("seed", [0, 1])
def test_replays_the_registered_release(sbm, tmp_path, seed):
    """The pipeline makes the registered release's draws in its order (σ from the same ``calibrate``, the same
    Poisson batches and gradient noise, the hops' noise drawn a row block at a time: one block here), so σ, δ,
    the steps, noise_std and the guarantee are equal and the trained classifier is the same up to float
    rounding: a wrong σ, Δ, q or step count would move the weights by far more than 1e-4."""
    params = params_of(sbm)
    method = get_method("gap-ndp", **params)
    release = method.release(sbm, 3.0, make_generator(seed))
    g = OutOfCoreGraph.from_data(sbm, tmp_path)
    run = gap_ndp(g, 3.0, make_generator(seed), **params)
    assert run.guarantee == release.guarantee and run.guarantee.epsilon == 3.0
    for key in ("noise_multiplier", "noise_std", "delta", "steps", "seed"):
        assert run.details[key] == release.details[key], key
    sigma_h = 2 * run.details["noise_multiplier"]  # hop_noise_ratio = 2
    assert run.details["noise_std"] == pytest.approx(sigma_h * math.sqrt(bound_of(sbm)))
    state = classifier_state(release)
    ours = run.model.state_dict()
    assert set(ours) == set(state)
    for k, v in state.items():
        torch.testing.assert_close(ours[k], v, atol=1e-4, rtol=0), k
    other = gap_ndp(g, 3.0, make_generator(seed + 7), **params).model.state_dict()  # the check can fail
    assert max(float((other[k] - v).abs().max()) for k, v in state.items()) > 1e-2
    assert PIPELINES["gap-ndp"] is gap_ndp


def test_refuses_above_the_bound_and_without_num_train(sbm, tmp_path):
    g = OutOfCoreGraph.from_data(sbm, tmp_path)
    D = bound_of(sbm)
    rng = make_generator(0)
    before = rng.get_state()
    with pytest.raises(DegreeAboveBound) as refused:
        gap_ndp(g, 1.0, rng, **params_of(sbm, max_degree=D - 1))
    with pytest.raises(DegreeAboveBound) as registered:
        get_method("gap-ndp", **params_of(sbm, max_degree=D - 1)).release(sbm, 1.0, make_generator(0))
    assert str(refused.value) == str(registered.value)
    with pytest.raises(NeedsNumTrain):
        gap_ndp(g, 1.0, rng, **params_of(sbm, num_train=None))
    assert torch.equal(rng.get_state(), before)  # refused before any draw
    noiseless = gap_ndp(g, None, make_generator(0), **params_of(sbm, num_train=None))  # claims nothing: N not needed
    assert math.isinf(noiseless.guarantee.epsilon) and noiseless.details["noise_std"] == 0


def test_sample_above_the_bound_claims_nothing_and_bounds_the_degrees(sbm, tmp_path):
    g = OutOfCoreGraph.from_data(sbm, tmp_path)
    D = bound_of(sbm)
    low = gap_ndp(g, 2.0, make_generator(0), **params_of(sbm, max_degree=D - 3, over_bound="sample"))
    assert math.isinf(low.guarantee.epsilon) and low.details["within_bound"] is False
    bounded = CSRGraph.load(g.directory / "gap-bounded")
    assert int(bounded.out_degrees().max()) <= D - 3 < int(g.graph.out_degrees().max())
    # within the bound "sample" samples nothing: the default's model bit for bit, but ε = ∞ stated
    a = gap_ndp(g, 2.0, make_generator(0), **params_of(sbm))
    b = gap_ndp(g, 2.0, make_generator(0), **params_of(sbm, over_bound="sample"))
    assert a.guarantee.epsilon == 2.0 and math.isinf(b.guarantee.epsilon)
    assert all(torch.equal(v, b.model.state_dict()[k]) for k, v in a.model.state_dict().items())


def test_out_degrees_of_the_csr(sbm, tmp_path):
    g = OutOfCoreGraph.from_data(sbm, tmp_path)
    expected = out_degrees(sbm.edge_index, sbm.num_nodes).numpy()
    assert np.array_equal(g.graph.out_degrees(), expected)
    assert np.array_equal(g.graph.out_degrees(block_edges=7), expected)


def test_accuracy_well_above_chance(tmp_path):
    """4 planted classes (chance 0.25): noiseless and at a large ε the classifier on [x⁰ … x^K] is far above it."""
    g = synthetic_graph(3000, 30000, 32, feature_signal=0.3, train_ratio=0.3, seed=0, directory=tmp_path)
    D = int(g.graph.out_degrees().max())
    common = {"degree_cap": "enforced", "max_degree": D, "encoder_epochs": 5, "epochs": 5, "batch_size": 64}
    noiseless = gap_ndp(g, None, make_generator(0), **common)
    assert noiseless.test_accuracy > 0.8, noiseless.test_accuracy
    private = gap_ndp(g, 16.0, make_generator(0), num_train=int(g.train_mask.sum()), **common)
    assert private.details["noise_std"] > 0 and private.test_accuracy > 0.6, private.test_accuracy


def test_rows_may_come_from_a_gather(sbm):
    """train_rows_dpsgd on a callable that gathers the rows trains exactly as on the rows in memory."""
    x, y = sbm.x[:200].float(), sbm.y[:200]

    def trained(rows):
        torch.manual_seed(0)
        net = GAPClassifier(12, 4, 1, 8, 1, 1, 0.0, False)
        train_rows_dpsgd(
            net, rows, y, epochs=2, batch_size=16, lr=0.01, weight_decay=0.0, clip=1.0, noise_multiplier=1.0,
            rng=make_generator(3),
        )  # fmt: skip
        return net.state_dict()

    a, b = trained(x), trained(lambda i: torch.from_numpy(x.numpy()[i.numpy()].copy()))
    assert all(torch.equal(v, b[k]) for k, v in a.items())
