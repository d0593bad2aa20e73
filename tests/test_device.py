"""The device argument (privgraph.device): spelling, presence, the context the API enters, and — where
a CUDA GPU is present — that a release's noise does not depend on the device."""

from __future__ import annotations

import pytest
import torch

import privgraph as pg
from privgraph.data.synthetic import sbm_graph
from privgraph.device import (
    DEVICE_ENV,
    DeviceError,
    current_device,
    on_device,
    parse_device,
    resolve_device,
    to_device,
)

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA GPU here")


@pytest.mark.parametrize("spec, canonical", [("cpu", "cpu"), (" CUDA ", "cuda"), ("cuda:1", "cuda:1"), ("mps", "mps")])
def test_parse_device_accepts_the_four_spellings(spec, canonical):
    assert parse_device(spec) == canonical


@pytest.mark.parametrize("spec", ["gpu", "cuda:x", "cpu:0", "mps:1", "", "cuda:"])
def test_parse_device_refuses_others_in_one_line(spec):
    with pytest.raises(DeviceError, match="use cpu, cuda, cuda:N") as err:
        parse_device(spec)
    assert "\n" not in str(err.value)


def test_resolve_device_defaults_to_the_environment_then_the_cpu(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    assert resolve_device(None) == torch.device("cpu")
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert resolve_device(None) == torch.device("cpu")
    monkeypatch.setenv(DEVICE_ENV, "tpu")
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        resolve_device(None)
    with pytest.raises(TypeError, match="str or torch.device"):
        resolve_device(0)


@pytest.mark.skipif(CUDA, reason="checks the error on a machine without CUDA")
def test_cuda_without_a_gpu_is_one_clear_error(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "cuda")
    with pytest.raises(DeviceError, match=r"'cuda' \(from \$PRIVGRAPH_DEVICE\) asked for, .* sees no CUDA GPU"):
        current_device()
    with pytest.raises(DeviceError, match="sees no CUDA GPU"):
        pg.privatize(sbm_graph(num_nodes=60, seed=0), "lpgnn", epsilon=1.0, seed=0, device=torch.device("cuda"))


def test_on_device_nests_and_restores(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    with on_device("cpu") as outer:
        assert outer == torch.device("cpu") == current_device()
        with on_device(None) as inner:  # None keeps the enclosing choice
            assert inner == outer
    assert current_device() == torch.device("cpu")


def test_to_device_moves_nested_inputs():
    inputs = {"a": torch.ones(2), "b": {"c": torch.zeros(1)}}
    moved = to_device(inputs, torch.device("cpu"))
    assert moved["a"].device.type == "cpu" and moved["b"]["c"].device.type == "cpu"
    assert to_device(None) is None


def test_the_cpu_path_releases_and_trains_as_without_a_device():
    """``device="cpu"`` goes through the same code (moves, the context) and changes nothing."""
    data = sbm_graph(num_nodes=120, seed=1)
    plain = pg.privatize(data, "lpgnn", epsilon=1.0, seed=4)
    on_cpu = pg.privatize(data, "lpgnn", epsilon=1.0, seed=4, device="cpu")
    assert torch.equal(plain.data.x, on_cpu.data.x)
    a = pg.fit(plain, seed=0, epochs=20)
    b = pg.fit(on_cpu, seed=0, epochs=20, device=torch.device("cpu"))
    assert a.test_accuracy == b.test_accuracy
    assert next(b.model.parameters()).device.type == "cpu"


# --- on a CUDA GPU: the noise is the CPU's, the training runs on the GPU ------------------------------


def _close_accuracy(a: float, b: float) -> bool:
    """Training differs by floating-point rounding (and the order of GPU atomics) only."""
    return abs(a - b) <= 0.05


@needs_cuda
@pytest.mark.parametrize(
    "method, params",
    [("lpgnn", {}), ("blink", {"variant": "hard"}), ("blink", {"variant": "hybrid"}), ("blink", {"variant": "soft"})],
)
def test_cuda_release_has_the_cpu_noise_and_trains_on_the_gpu(method, params):
    data = sbm_graph(num_nodes=300, seed=2)
    cpu = pg.privatize(data, method, epsilon=2.0, seed=7, **params)
    gpu = pg.privatize(data, method, epsilon=2.0, seed=7, device="cuda", **params)
    for key in cpu.data.keys():
        left, right = cpu.data[key], gpu.data[key]
        if torch.is_tensor(left):
            assert right.device.type == "cpu", key  # releases come back on the CPU
            assert torch.equal(left, right), key  # bit-identical noise
    fit_cpu = pg.fit(cpu, seed=0, epochs=50)
    fit_gpu = pg.fit(gpu, seed=0, epochs=50, device="cuda")
    assert next(fit_gpu.model.parameters()).device.type == "cuda"
    assert _close_accuracy(fit_cpu.test_accuracy, fit_gpu.test_accuracy)


@needs_cuda
def test_cuda_embedding_release_adds_the_cpu_noise():
    from privgraph.data.synthetic import sensitive_sbm_graph

    data = sensitive_sbm_graph(num_nodes=200, seed=3)
    params = {"epochs": 30}
    cpu = pg.privatize(data, "ppcvgae", epsilon=1.0, seed=5, **params)
    gpu = pg.privatize(data, "ppcvgae", epsilon=1.0, seed=5, device="cuda", **params)
    sigma = cpu.details["noise_std"]
    assert gpu.data.z.device.type == "cpu"
    # the same noise draw: the releases differ by the trained mean's rounding, far less than one noise std
    # (independent draws would differ by about sigma * sqrt(2) per coordinate)
    assert float((cpu.data.z - gpu.data.z).abs().max()) < 0.1 * sigma


@needs_cuda
def test_cuda_dpsgd_noise_is_drawn_on_the_cpu():
    from privgraph.mechanisms import make_generator
    from privgraph.train.dpsgd import noisy_mean

    summed = {"w": torch.zeros(4, 3)}
    cpu = noisy_mean(summed, 2.0, 10.0, make_generator(3))
    gpu = noisy_mean({"w": summed["w"].cuda()}, 2.0, 10.0, make_generator(3))
    assert gpu["w"].device.type == "cuda"
    # the same draw; only the division by the batch size runs on the GPU (its rounding may differ by an ulp)
    torch.testing.assert_close(gpu["w"].cpu(), cpu["w"], rtol=0, atol=1e-6)
    other = noisy_mean(summed, 2.0, 10.0, make_generator(4))["w"]
    assert float((other - cpu["w"]).abs().max()) > 1e-2  # another draw is far


@needs_cuda
def test_cuda_attack_queries_the_gpu_target():
    data = sbm_graph(num_nodes=200, seed=4)
    rel = pg.privatize(data, "blink", epsilon=8.0, seed=1, variant="hard")
    trained = pg.fit(rel, seed=0, epochs=50, device="cuda")
    result = pg.attack(trained, "linkteller", truth=data, seed=0, device="cuda", nodes=40)
    assert 0.0 <= result.metrics["attack_auc"] <= 1.0


@needs_cuda
def test_cuda_hetedp_link_model_has_the_cpu_guarantee_and_noise_stream():
    from privgraph.data.synthetic import hetero_sbm_graph

    data = hetero_sbm_graph(seed=0)
    params = {"edge_type": ("paper", "to", "author"), "epochs": 2, "batch_size": 64, "edge_count": 900}
    cpu = pg.privatize(data, "hetedp", epsilon=2.0, seed=3, **params)
    gpu = pg.privatize(data, "hetedp", epsilon=2.0, seed=3, device="cuda", **params)
    assert [g.describe() for g in cpu.report.guarantees] == [g.describe() for g in gpu.report.guarantees]
    for t in data.node_types:  # the released (noisy) features: drawn on the CPU, bit-identical
        assert torch.equal(cpu.data[t].x, gpu.data[t].x), t
    for name, weight in gpu.model_state.items():  # DP-SGD on the GPU: the same draws, rounding only
        assert weight.device.type == "cpu"
        torch.testing.assert_close(weight, cpu.model_state[name], rtol=1e-3, atol=1e-3)
