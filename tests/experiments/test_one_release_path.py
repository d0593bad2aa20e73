"""One release path: for every registered method, the release the experiment pipeline evaluates in a
trial is the one the Python API (``release_with``, the method's ``privatize``) returns for the same
method, data, ε and random stream — the same tensors, guarantees, field statuses, details and
randomness — and the run's report adds only the task's notes to it."""

import dataclasses

import pytest
import torch
from torch import Tensor

from privgraph.api import release_with
from privgraph.experiments import Experiment, ExperimentSpec
from privgraph.mechanisms import SECURE_NOTE, derive_seed, release_source
from privgraph.methods import METHODS, Task, report_labels
from privgraph.methods.hetedp.nc import EpochEmbeddings
from privgraph.release import json_safe

SMALL = {"num_nodes": 200, "num_features": 16, "avg_degree": 6.0}
SMALL_AUTOENCODER = {"epochs": 5}
SMALL_DPSGD = {"batch_size": 256, "epochs": 1}


def _specs() -> list[tuple[str, dict]]:
    """One or more pipeline settings per registered method (every method appears)."""
    out = []
    for name, cls in METHODS.items():
        if cls.heterogeneous:
            if cls.task == Task.LINK_PREDICTION:
                params = SMALL_DPSGD if name == "hetedp" else {}
                out.append((name, {"task": "lp", "params": params}))
            out.append((name, {"task": "nc", "epsilons": [1.0] if cls.private else [None]}))
            if name == "hetedp":
                out.append(
                    (name, {"task": "nc", "epsilons": [1.0], "params": {"nc_model": "link-vgae", **SMALL_DPSGD}})
                )
        elif cls.task == Task.EMBEDDING:
            out.append((name, {"dataset": "planted", "params": SMALL_AUTOENCODER}))
            if cls.epsilon_optional:
                out.append((name, {"dataset": "planted", "params": SMALL_AUTOENCODER, "epsilons": [1.0]}))
        else:
            kw = {"dataset": "sbm", "synthetic": SMALL, "private_ratio": 0.2 if cls.needs_private_edges else None}
            if "convergence" in {f.name for f in dataclasses.fields(cls.Params)}:  # pHRG: the chain's claim waived
                kw["params"] = {"mcmc_steps": 2000, "convergence": "waive"}  # (the path is what is compared)
            if name in ("gap-ndp", "node-dpsgd"):  # node level: a degree bound above every degree of the graph
                kw["params"] = {"max_degree": SMALL["num_nodes"]}
            out.append((name, kw))
            if name == "lpgnn":
                out.append((name, {**kw, "epsilon_y": 2.0}))
    return out


SPECS = _specs()


def _same(a, b, where: str) -> None:
    """Recursive equality of release contents (tensors exactly, containers by item, objects by ``vars``)."""
    if isinstance(a, Tensor):
        assert isinstance(b, Tensor) and a.shape == b.shape and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: {sorted(a)} != {sorted(b)}"
        for key in a:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        assert type(a) is type(b), where
        _same(vars(a), vars(b), where)
    else:
        assert a == b or (a != a and b != b), f"{where}: {a!r} != {b!r}"  # NaN equals NaN here


def _data_dict(data) -> dict:
    return {str(k): v for k, v in data.to_dict().items()}


def _api_release(exp: Experiment, tdata, eps, k: int, stream: tuple[int, ...]):
    """The API's release for the trial, built from the task's data by the test itself."""
    spec, task, method = exp.spec, exp.task, exp.method
    seed = spec.seed
    if task.name == "nc":
        labels = None if spec.epsilon_y is None else report_labels(tdata, spec.epsilon_y, release_source(seed, 2, k))
        if getattr(method.params, "num_train", "unset") is None:  # node-level DP-SGD: the public split's count
            method = method.with_params(num_train=int(tdata.train_mask.sum()))
        return release_with(method, tdata, eps, seed=seed, stream=stream, labels=labels)
    if task.name == "attribute":
        return release_with(method, tdata, eps, seed=seed, stream=stream, trained=method.train(tdata, seed))
    relation = task.hetero_task
    if task.name == "lp":
        data, (train, _, _) = tdata
        if not method.releases_link_model:
            return release_with(method, data, None, seed=seed, stream=stream)
        n = int(train[relation.edge_type].edge_label_index.shape[1])
        method = method.with_params(edge_type=relation.edge_type, reverse=relation.reverse, edge_count=n)
        return release_with(method, train, eps, seed=seed, stream=stream, training_seed=seed)
    if method.hetero_nc_model() == "link-vgae":
        n = int(tdata[relation.edge_type].edge_index.shape[1])
        method = method.with_params(edge_type=relation.edge_type, reverse=relation.reverse, edge_count=n)
        recorder = EpochEmbeddings(relation.node_type)
        return release_with(method, tdata, eps, seed=seed, stream=stream, training_seed=seed, on_epoch=recorder.record)
    return release_with(method.hetero_nc_release(relation.node_type), tdata, eps, seed=seed, stream=stream)


@pytest.mark.parametrize(("method", "kw"), SPECS, ids=[f"{m}-{i}" for i, (m, _) in enumerate(SPECS)])
def test_the_pipeline_evaluates_the_release_the_api_returns(method, kw):
    spec = ExperimentSpec(method=method, trials=1, **kw)
    exp = Experiment(spec)
    task = exp.task
    eps = spec.epsilons[0]
    k = spec.setting_index(eps)
    tdata = task.trial_data(task.load(), spec.seed)
    released = task.release(tdata, eps, spec.seed, k, exp.method)
    rel = released.release
    assert rel is not None, f"{method}: the pipeline released outside privatize"
    api = _api_release(exp, tdata, eps, k, task.release_stream(k, None))
    assert (rel.method, rel.epsilon, rel.randomness) == (api.method, api.epsilon, api.randomness)
    assert rel.randomness["stream"] == list(task.release_stream(k, None))
    _same(_data_dict(rel.data), _data_dict(api.data), f"{method}.data")
    _same(json_safe(rel.params), json_safe(api.params), f"{method}.params")
    assert rel.report.to_dict() == api.report.to_dict()
    assert rel.fields == api.fields
    assert json_safe(rel.details) == json_safe(api.details)
    _same(rel.model_state, api.model_state, f"{method}.model_state")
    # the run's report is the release's, with only the task's notes added
    assert len(released.report.guarantees) == len(rel.report.guarantees)
    for ran, given in zip(released.report.guarantees, rel.report.guarantees):
        assert (ran.unit, ran.epsilon, ran.delta, ran.trust_model) == (
            given.unit,
            given.epsilon,
            given.delta,
            given.trust_model,
        )
        assert set(given.notes) <= set(ran.notes)


def test_a_secure_run_notes_the_os_source_on_private_guarantees_only_as_the_api_does():
    spec = ExperimentSpec(
        method="lpgnn", dataset="sbm", synthetic=SMALL, trials=1, secure=True, epsilon_y=2.0, epsilons=[1.0]
    )
    exp = Experiment(spec)
    tdata = exp.task.trial_data(exp.task.load(), spec.seed)
    rel = exp.task.release(tdata, 1.0, spec.seed, 0, exp.method).release
    assert rel.randomness == {"mode": "os"}
    assert len(rel.report.guarantees) == 2
    assert all(SECURE_NOTE in g.notes for g in rel.report.guarantees)
    gcn = ExperimentSpec(method="gcn-raw", dataset="sbm", synthetic=SMALL, trials=1, secure=True)
    exp = Experiment(gcn)
    tdata = exp.task.trial_data(exp.task.load(), gcn.seed)
    rel = exp.task.release(tdata, None, gcn.seed, 0, exp.method).release
    assert not any(SECURE_NOTE in g.notes for g in rel.report.guarantees)  # nothing was drawn for it


def test_a_seeded_run_says_its_noise_can_be_regenerated():
    spec = ExperimentSpec(method="rr", dataset="sbm", synthetic=SMALL, trials=1, epsilons=[2.0])
    exp = Experiment(spec)
    result = exp.run()
    notes = result.reports[2.0].guarantees[0].notes
    assert any("REPRODUCIBLE" in n and f"seed {spec.seed} (stream 1, 0)" in n for n in notes)
    assert derive_seed(spec.seed, 1, 0) != spec.seed  # the stream is not the seed itself


def _graph_with_duplicates(copies: int):
    from torch_geometric.data import Data

    g = torch.Generator().manual_seed(0)
    n = 60
    src = torch.randint(0, n, (200,), generator=g)
    dst = (src + torch.randint(1, n, (200,), generator=g)) % n  # no self-loops
    edges = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    edges = torch.cat([edges, edges[:, :copies]], dim=1)  # `copies` edges given twice
    return Data(x=torch.rand(n, 8, generator=g), edge_index=edges, y=torch.arange(n) % 3, feature_domain=(0.0, 1.0))


def test_a_run_on_the_users_graph_states_what_reading_changed_without_its_counts():
    """The run's report of a user's graph says duplicates were merged, not how many (a statistic of it)."""
    reports = []
    for copies in (3, 7):
        spec = ExperimentSpec(method="rr", input=_graph_with_duplicates(copies), trials=1, epsilons=[2.0])
        result = Experiment(spec).run()
        reports.append([n for n in result.reports[2.0].guarantees[0].notes if n.startswith("input graph")])
    assert reports[0] and reports[0] == reports[1]
