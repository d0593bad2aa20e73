"""One release request: every entry point builds the same typed ReleaseRequest, one function
releases it, and a method is given by name, Params or built, with its parameters apart from the request's."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.data import Data

import privgraph as pg
import privgraph.api
import privgraph.audit
import privgraph.experiments.release
from privgraph.experiments import ExperimentSpec, config_hash, run_experiment
from privgraph.experiments.store import TrialRecord, decode, encode
from privgraph.methods import Blink, Method, MethodParams, method_class, param, register_method
from privgraph.methods.blink.method import BlinkParams
from privgraph.request import Randomness, ReleaseRequest, Shared
from privgraph.transforms import Privatize


class Captured(Exception):
    """Raised by a stand-in for the release function, once it has seen the request."""


@pytest.fixture(scope="module")
def graph(sbm) -> Data:
    return sbm(num_nodes=80, num_classes=3, num_features=8, avg_degree=4.0, seed=2)


@pytest.fixture
def capture(monkeypatch):
    """Replace ``privgraph.api.release`` (and the names it was imported under) by a stand-in that keeps the
    request it is given and stops there; returns the list of requests."""
    seen: list[ReleaseRequest] = []

    def stand_in(data, request):
        seen.append(request)
        raise Captured

    monkeypatch.setattr(privgraph.api, "release", stand_in)
    monkeypatch.setattr(privgraph.transforms, "release", stand_in)
    monkeypatch.setattr(privgraph.experiments.release, "release", stand_in)
    return seen


def test_every_entry_point_builds_the_same_request(graph, capture, invoke, tmp_path):
    expected = ReleaseRequest.build("lpgnn", epsilon=1.0, seed=0, mechanism="laplace")
    with pytest.raises(Captured):
        pg.privatize(graph, "lpgnn", epsilon=1.0, seed=0, mechanism="laplace")
    with pytest.raises(Captured):
        Privatize("lpgnn", epsilon=1.0, seed=0, mechanism="laplace")(graph)
    spec = ExperimentSpec(
        method="lpgnn", params={"mechanism": "laplace"}, epsilons=[1.0], trials=1, synthetic={"num_nodes": 60}
    )
    with pytest.raises(Captured):  # the pipeline's spec: trial 0's stream of its first ε
        run_experiment(spec)
    args = ["--param", "mechanism=laplace", "--reproducible", "--seed", "0", "-o", tmp_path / "r.pt"]
    code, text, error = invoke("release", "lpgnn", "--epsilon", "1", *args)
    assert isinstance(error, Captured), text
    api, transform, pipeline, cli = capture
    assert api == expected and transform == expected and cli == expected
    assert pipeline == expected.but(seed=0, stream=(1, 0))  # the pipeline's one stream per release of a trial
    assert api.method.params.mechanism == "laplace" and api.randomness == Randomness(seed=0)


def test_the_audit_builds_the_request_its_releases_share(monkeypatch):
    seen = []

    def stop(method):
        def units(m, inp):
            seen.append(inp.request)
            raise Captured

        return units

    monkeypatch.setattr("privgraph.audit.runner.definition", stop)
    with pytest.raises(Captured):
        pg.audit_method(None, "lpgnn", epsilon=1.0, label_epsilon=2.0, seed=4, mechanism="laplace", device="cpu")
    assert seen == [
        ReleaseRequest.build("lpgnn", epsilon=1.0, label_epsilon=2.0, seed=4, device="cpu", mechanism="laplace")
    ]


def test_the_same_seed_gives_bit_identical_releases_on_every_path(graph):
    request = ReleaseRequest.build("lpgnn", epsilon=1.0, seed=7, mechanism="laplace")
    internal = privgraph.api.release(graph, request)
    api = pg.privatize(graph, "lpgnn", epsilon=1.0, seed=7, mechanism="laplace")
    whole = pg.privatize(graph, request)
    transform = Privatize("lpgnn", epsilon=1.0, seed=7, mechanism="laplace")(graph)
    for out in (api.data, whole.data, transform):
        assert torch.equal(out.x, internal.data.x)
    assert api.report.to_dict() == internal.report.to_dict() == transform.privacy_report.to_dict()
    other = pg.privatize(graph, "lpgnn", epsilon=1.0, seed=8, mechanism="laplace")
    assert not torch.equal(other.data.x, internal.data.x)  # the seed, not a constant, made them equal


def test_a_method_is_given_by_name_params_or_built(graph):
    by_name = pg.privatize(graph, "blink", epsilon=2.0, seed=0, variant="hard")
    by_params = pg.privatize(graph, BlinkParams(variant="hard"), epsilon=2.0, seed=0)
    built = pg.privatize(graph, Blink(variant="hard"), epsilon=2.0, seed=0)
    for rel in (by_params, built):
        assert rel.method == "blink" and rel.params == by_name.params
        assert torch.equal(rel.data.edge_index, by_name.data.edge_index)
    assert Privatize(BlinkParams(variant="hard"), epsilon=2.0).method == Blink(variant="hard")
    assert ReleaseRequest.build(Blink(variant="hard"), epsilon=2.0) == ReleaseRequest.build(
        "blink", epsilon=2.0, variant="hard"
    )
    with pytest.raises(TypeError, match="not with a built method"):
        pg.privatize(graph, Blink(), epsilon=2.0, variant="hard")
    with pytest.raises(TypeError, match="not with a Params object"):
        pg.privatize(graph, BlinkParams(), epsilon=2.0, variant="hard")
    gap = method_class("gap-edp").Params  # shared by gap-inf and gap-edp: which method is meant is not said
    with pytest.raises(TypeError, match="parameters of 2 methods"):
        pg.privatize(graph, gap(), epsilon=1.0)
    with pytest.raises(TypeError, match="give it alone"):
        pg.privatize(graph, ReleaseRequest.build("blink", epsilon=2.0), seed=0)


def test_delta_is_the_claims_and_is_refused_where_there_is_none():
    request = ReleaseRequest.build("hetedp-features", epsilon=1.0, delta=1e-4)
    assert request.delta == 1e-4 and request.method.params.delta == 1e-4
    assert ReleaseRequest.build("hetedp-features", epsilon=1.0).delta == method_class("hetedp-features")().dp_delta()
    with pytest.raises(ValueError, match="pure ε-DP"):
        ReleaseRequest.build("blink", epsilon=1.0, delta=1e-5)


@pytest.mark.parametrize(
    ("method", "epsilon", "message"),
    [
        ("lpgnn", None, "lpgnn is private: give epsilon"),
        ("mlp", 1.0, "mlp is a non-private baseline: it takes no epsilon"),
    ],
)
def test_the_one_epsilon_rule_says_the_same_everywhere(graph, invoke, tmp_path, method, epsilon, message):
    kw = {} if epsilon is None else {"epsilon": epsilon}
    for entry in (
        lambda: pg.privatize(graph, method, **kw),
        lambda: Privatize(method, **kw),
        lambda: pg.audit_method(None, method, **kw),
        lambda: ReleaseRequest.build(method, **kw),
        lambda: ExperimentSpec(method=method, epsilons=[epsilon], trials=1).validate(),
    ):
        with pytest.raises(ValueError) as err:
            entry()
        assert str(err.value) == message
    eps = [] if epsilon is None else ["--epsilon", str(epsilon)]
    commands = [["audit", method, *eps]]
    if epsilon is not None:  # without --epsilon, run and release take the default ε of a private method
        commands += [["run", method, *eps], ["release", method, *eps, "-o", tmp_path / "r.pt"]]
    for args in commands:
        code, text, _ = invoke(*args)
        assert code == 2 and text == f"error: {message}", (args, text)


def test_one_label_epsilon_name_everywhere(graph, invoke):
    rel = pg.privatize(graph, "lpgnn", epsilon=1.0, label_epsilon=2.0, seed=0)
    assert "y_reported" in rel.data and float(rel.data.label_epsilon) == 2.0
    assert Privatize("lpgnn", epsilon=1.0, label_epsilon=2.0).request.label_epsilon == 2.0
    assert ExperimentSpec(method="lpgnn", label_epsilon=2.0).label_epsilon == 2.0
    with pytest.raises(ValueError, match="label_epsilon applies to node-classification methods"):
        ReleaseRequest.build("ppcvgae", label_epsilon=1.0)
    code, text, _ = invoke("run", "lpgnn", "--label-epsilon", "0")
    assert code == 2 and "label_epsilon must be finite" in text


def test_method_parameters_cannot_take_the_requests_names():
    for name in ("seed", "device", "ledger", "epsilon", "label_epsilon", "rng", "progress"):
        params = dataclasses.make_dataclass(
            "P", [(name, int, param(0, "a parameter named like the request's"))], bases=(MethodParams,), frozen=True
        )
        cls = type("Clash", (Method,), {"name": f"clash-{name}", "Params": params})
        with pytest.raises(TypeError, match=f"parameter {name!r} is a release request's own keyword"):
            register_method(cls)
    delta = dataclasses.make_dataclass("D", [("delta", float, param(0.1, "δ"))], bases=(MethodParams,), frozen=True)
    with pytest.raises(TypeError, match="'delta'"):  # delta only as the δ of the claim (delta_param)
        register_method(type("ClashDelta", (Method,), {"name": "clash-delta", "Params": delta}))
    assert not any(name.startswith("clash") for name in pg.list_methods())
    with pytest.raises(TypeError, match="blink does not share trained"):
        ReleaseRequest.build("blink", epsilon=1.0, shared=Shared(trained=object()))


def test_a_stored_label_epsilon_keeps_its_setting_and_its_old_record_name():
    # the hash privgraph gave this setting when the field was still called epsilon_y (its older stores resume)
    assert config_hash(ExperimentSpec(method="lpgnn", label_epsilon=2.0, trials=2), 1.0, 0) == "56106271c4f6f103"
    assert config_hash(ExperimentSpec(method="lpgnn", trials=2), 1.0, 0) == "7392329da8f97b70"
    record = TrialRecord("r", "lpgnn", "sbm", "gcn", None, 1.0, 2.0, 0, 0, {}, {}, {}, 0.1)
    line = json.loads(encode(record))
    assert line["label_epsilon"] == 2.0 and "epsilon_y" not in line
    line["epsilon_y"] = line.pop("label_epsilon")  # a line an older privgraph wrote
    assert decode(json.dumps(line).encode()) == record


def test_the_audit_is_exported_without_shadowing_its_subpackage():
    assert pg.audit_method is privgraph.audit.audit_method and "audit_method" in pg.__all__
    assert "ReleaseRequest" in pg.__all__ and pg.ReleaseRequest is ReleaseRequest
    assert T.Compose([Privatize("lpgnn", epsilon=1.0)])  # the transform still composes


def test_the_pipeline_and_compare_take_a_params_object_or_a_built_method():
    by_name = ExperimentSpec(method="blink", params={"variant": "soft"}, epsilons=[1.0], trials=1)
    for given in (BlinkParams(variant="soft"), Blink(variant="soft")):
        spec = ExperimentSpec(method=given, epsilons=[1.0], trials=1)
        assert spec.method == "blink" and spec.params == {"variant": "soft"}
        assert config_hash(spec, 1.0) == config_hash(by_name, 1.0)  # one identity, however the method was given
    from privgraph.experiments.compare import build_grid

    grid, _ = build_grid([Blink(variant="soft"), "rr"], epsilons=[1.0], trials=1, attack=None)
    keys = {s.spec.method: s.key for s in grid.settings}
    named, _ = build_grid(["blink", "rr"], epsilons=[1.0], trials=1, attack=None, params={"blink": {"variant": "soft"}})
    assert keys == {s.spec.method: s.key for s in named.settings}


def test_privatize_repr_is_what_older_processed_datasets_recorded():
    """PyG compares a pre_transform's repr with the one stored beside a processed dataset."""
    assert repr(Privatize("lpgnn", epsilon=1, seed=0, mechanism="laplace")) == (
        "Privatize(method='lpgnn', epsilon=1, label_epsilon=None, mechanism='laplace', seed=0, compose=False)"
    )


def test_epsilon_is_one_option_type_in_every_command(invoke, tmp_path):
    """``--epsilon``: numbers or none everywhere; release and audit release once, so take one value."""
    for args in (["audit", "rr"], ["release", "rr", "-o", tmp_path / "r.pt"]):
        code, text, _ = invoke(*args, "--epsilon", "1", "--epsilon", "2")  # `--epsilon 1 2` once expanded
        assert code == 2 and text == "error: --epsilon: this command releases once: give one value", text
        code, text, _ = invoke(*args, "--epsilon", "x")
        assert code == 2 and "--epsilon 'x': give numbers" in text, text
