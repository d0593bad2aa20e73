"""No report carries a number computed from private data that no noise covers.

For every registered method and each of its units, the neighbouring inputs of the method's audit
definition (:mod:`privgraph.audit.definitions`: the unit's two worlds, released through the
method's own code) are released with the same seed, and everything a recipient reads besides the
released tensors — the report's lines, the guarantees and the release JSON (parameters, field
statuses, randomness; the diagnostics are withheld by default) — must be identical.  A count, a
sampling rate or a sensitivity read from the private data would differ between the two worlds.
"""

from __future__ import annotations

import json
from dataclasses import fields as dataclass_fields

import pytest
import torch
from torch_geometric.data import Data, HeteroData

from privgraph.audit.definitions import AuditInput, definition
from privgraph.audit.runner import default_input
from privgraph.mechanisms import make_generator
from privgraph.methods import METHODS, Task
from privgraph.release import DIAGNOSTICS_WITHHELD, PUBLIC, PrivateRelease
from privgraph.request import ReleaseRequest

EPSILON = 2.0
SHORT = {  # keep the slow ones short (the report's wording does not depend on these)
    "edgerr": {"mcmc_steps": 300},
    "privhrg": {"mcmc_steps": 300},
    "heterorr": {},  # the default max(1000·n, 2·10⁵) moves: 300 do not pass EdgeRR's convergence check here
    "ppcvgae": {"epochs": 5},
    "vgae": {"epochs": 5},
    "dpgcn": {"epochs": 5},
    "hetedp": {"epochs": 1, "batch_size": 30},
}


def _method(name: str):
    cls = METHODS[name]
    method = cls(**SHORT.get(name, {}))
    data = default_input(method)
    if getattr(method.params, "edge_type", "unset") is None:  # as privgraph.audit sets HeteDP up on that graph
        from privgraph.audit.graphs import HETERO_EDGE_TYPE

        method = method.with_params(edge_type=HETERO_EDGE_TYPE, edge_count=60)
    if getattr(method.params, "num_train", "unset") is None:  # node-level DP-SGD's public N, as the audit sets it
        method = method.with_params(num_train=int(data.train_mask.sum()))
    return method, data


def _public_view(release) -> dict:
    """What a recipient reads besides the released tensors."""
    if isinstance(release, PrivateRelease):
        return {"lines": release.report.lines(), "json": release.metadata()}
    return {"guarantee": release.guarantee.to_dict()}  # an embedding release step (PPCVGAE's family)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_neighbours_get_identical_reports(name):
    method, data = _method(name)
    label = 1.0 if METHODS[name].task == Task.NODE_CLASSIFICATION and not METHODS[name].heterogeneous else None
    request = ReleaseRequest.build(method, epsilon=EPSILON if METHODS[name].private else None, label_epsilon=label)
    inp = AuditInput(data, request)
    runs = {}
    for nb in definition(name)(method, inp):
        runs.setdefault(id(nb.run), nb)
    assert runs, f"{name} has no audited unit"
    for nb in runs.values():
        views = [_public_view(nb.run(side, make_generator(11))) for side in (0, 1)]
        assert views[0] == views[1], f"{name}, unit {nb.label}: the report differs between neighbours"


# ---------------------------------------------------------------------------- whole releases, saved
# For every registered method, a graph D and a neighbour under the method's own relation (edge unit: one edge
# added, a duplicate of an edge and a self-loop; node unit: one isolated node; label unit: one label changed to
# another class; private-edge unit: one private edge added; feature unit: one node's features; sensitive attribute:
# one private node's value) are released through ``privgraph.privatize`` with the same seed and saved; the files
# written, the JSON beside them, the report's lines and notes, the id map and the data file's plain values and
# public tensors must be identical.  Only what the noise covers (the privatized tensors) may differ.

FAST = {"epochs": 1, "encoder_epochs": 1, "batch_size": 8, "hidden": 4}  # wherever a method has them


def _fast_method(name: str):
    method, data = _method(name)
    names = {f.name for f in dataclass_fields(method.Params)}
    fast = {k: v for k, v in FAST.items() if k in names and k not in SHORT.get(name, {})}
    return (method.with_params(**fast) if fast else method), data


def _added(data, pairs: list[tuple[int, int]], private: bool = False):
    out = data.clone()
    out.edge_index = torch.cat([data.edge_index, torch.tensor(pairs, dtype=data.edge_index.dtype).t()], dim=1)
    if getattr(data, "private_edge_mask", None) is not None:
        out.private_edge_mask = torch.cat([data.private_edge_mask.bool(), torch.full((len(pairs),), private)])
    return out


def _relation(method, data) -> list[tuple[str, object]]:
    """(what changed, the neighbour) under ``method``'s unit."""
    from privgraph.accounting import Unit
    from privgraph.audit.definitions.hetero import _hetero_pair, _protected_relation, with_hetero_edge
    from privgraph.audit.neighbours import non_adjacent_pair, with_isolated_node
    from privgraph.release import hides_node_set

    unit = method.unit
    if isinstance(data, HeteroData):
        if unit.startswith(Unit.EDGE):
            edge_type, reverse = _protected_relation(method, data)
            return [
                (
                    "one edge of the relation added",
                    with_hetero_edge(data, edge_type, reverse, *_hetero_pair(data, edge_type)),
                )
            ]
        node_type = data.node_types[0]
        out = data.clone()
        out[node_type].x = data[node_type].x.clone()
        out[node_type].x[0] = 1.0 - out[node_type].x[0]
        return [(f"one {node_type}'s features", out)]
    if hides_node_set(unit):
        return [("one isolated node added", with_isolated_node(data))]
    u, v = non_adjacent_pair(data.edge_index, data.num_nodes)
    a, b = (int(i) for i in data.edge_index[:, 0])
    if unit in (Unit.EDGE, Unit.ADJACENCY_LIST):
        return [
            ("one edge added", _added(data, [(u, v), (v, u)])),
            ("a duplicate edge", _added(data, [(a, b), (b, a)])),
            ("a self-loop", _added(data, [(u, u)])),
        ]
    if unit == Unit.PRIVATE_EDGE:
        return [("one private edge added", _added(data, [(u, v), (v, u)], private=True))]
    if unit == Unit.SENSITIVE_ATTRIBUTE:
        out = data.clone()
        node = int(data.private_mask.nonzero()[0])
        out.sens = data.sens.clone()
        out.sens[node] = 1 - out.sens[node]
        return [("one private node's sensitive attribute", out)]
    out = data.clone()
    out.x = data.x.clone()
    out.x[0] = 1.0 - out.x[0]  # within the declared domain [0, 1]
    return [("one node's features", out)]


def _label_neighbour(data):
    out = data.clone()
    out.y = data.y.clone()
    node = int(data.train_mask.nonzero()[0])
    out.y[node] = (out.y[node] + 1) % int(data.num_classes)  # another class of the declared label set
    return [("one label changed", out)]


def _saved_view(rel, folder) -> dict:
    """Everything a recipient of the saved release reads but the privatized tensors."""
    path, report = rel.save(folder / "rel.pt")
    payload = torch.load(path)
    public = {name for name, status in rel.fields.items() if status == PUBLIC}

    def plain(value, key=""):
        if isinstance(value, dict):
            return {k: plain(v, k) for k, v in value.items()}
        if torch.is_tensor(value):
            return value.tolist() if key in public else "tensor"  # a public field: as given on both sides
        return value

    ids = folder / "rel.pt.ids.csv"
    return {
        "files": sorted(p.name for p in folder.iterdir()),
        "json": _without_checksums(json.loads(report.read_text())),
        "lines": rel.report.lines(),
        "notes": [list(g.notes) for g in rel.report.guarantees],
        "ids": ids.read_text() if ids.exists() else None,
        "payload": plain(payload),
    }


def _without_checksums(metadata: dict) -> dict:
    """The report without its files' checksums: each is a function of its file (the noisy release itself), so
    covered by the noise as the file is; a file's row count is kept where it is not one of the noisy ones (the
    id map's rows, the public node count of a release that publishes its node set)."""
    out = dict(metadata)
    checksums = out.pop("checksums", {})
    out["id map rows"] = {name: entry.get("rows") for name, entry in checksums.items() if name.endswith(".ids.csv")}
    return out


def _release_view(method, data, label, folder):
    import privgraph as pg

    if isinstance(data, Data):
        data = data.clone()
        data.node_ids = [f"v{i}" for i in range(data.num_nodes)]
    folder.mkdir(parents=True)
    eps = EPSILON if method.private else None
    rel = pg.privatize(data, method, epsilon=eps, label_epsilon=label, seed=5)
    if not isinstance(rel, PrivateRelease):  # pragma: no cover - every method's privatize gives one
        raise AssertionError(f"{method.name}'s privatize gave a {type(rel).__name__}")
    return _saved_view(rel, folder)


# PPCVGAE calibrates σ² to Δμ = ‖μ(s) − μ(s′)‖ of weights trained on the data, and its notes quote Δμ, σ² and Δν:
# its guarantee holds given the weights (the paper's Definition 2), so whole releases of two neighbours, whose
# weights differ, quote different numbers (the weights-fixed comparison above passes)
GIVEN_WEIGHTS = {"ppcvgae"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="σ² from weights trained on s"))
        if n in GIVEN_WEIGHTS
        else n
        for n in sorted(METHODS)
    ],
)
def test_saved_releases_of_neighbours_read_the_same(name, tmp_path):
    method, data = _fast_method(name)
    cls = METHODS[name]
    label_ldp = cls.task == Task.NODE_CLASSIFICATION and not cls.heterogeneous and "y" not in cls.private_fields
    label = 1.0 if label_ldp else None
    pairs = _relation(method, data) + (_label_neighbour(data) if label_ldp else [])
    base = _release_view(method, data, label, tmp_path / "D")
    for i, (what, neighbour) in enumerate(pairs):
        other = _release_view(method, neighbour, label, tmp_path / f"N{i}")
        for key in base:
            assert base[key] == other[key], f"{name}, {what}: the release's {key} differs between neighbours"


# the store's fields measured on the data as given (MEASURED_NOTE, printed under every table): not a release
MEASURED = {"metrics", "wall_time", "peak_rss_mib", "created_at", "run_id"}


def _few_epochs(method) -> dict:
    """The task's training at its shortest: an embedding release trains no model of the task's own."""
    if method.task == Task.EMBEDDING:
        return {}
    return {"epochs": 1} if method.heterogeneous else {"epochs": 1, "patience": 1}


def _stored(method, data, label, db, diagnostics: bool = False) -> list[dict]:
    from dataclasses import asdict

    from privgraph.experiments import ExperimentSpec, ResultsStore, run_experiment

    spec = ExperimentSpec(
        method=method.name,
        params={k: v for k, v in method.params.to_dict().items() if v != getattr(type(method.params)(), k)},
        input=data,
        epsilons=[EPSILON] if method.private else [],
        label_epsilon=label,
        trials=1,
        hyperparameters=_few_epochs(method),
        diagnostics=diagnostics,
    )
    run_experiment(spec, ResultsStore(db))
    return [{k: v for k, v in asdict(r).items() if k not in MEASURED} for r in ResultsStore(db).records()]


@pytest.mark.parametrize(
    ("name", "label"),
    # a heterogeneous method runs on the registry's (public) graphs only, never on an input (no neighbour to give)
    [(n, None) for n in sorted(METHODS) if n not in GIVEN_WEIGHTS and not METHODS[n].heterogeneous]
    + [("lpgnn", 1.0)],  # label LDP: one method
)
def test_stored_records_of_neighbours_are_the_same(name, label, tmp_path):
    method, data = _fast_method(name)
    base = _stored(method, data, label, tmp_path / "D.jsonl")
    assert base and all(r["config"]["release"] == DIAGNOSTICS_WITHHELD for r in base)
    for i, (what, neighbour) in enumerate(_relation(method, data) + (_label_neighbour(data) if label else [])):
        other = _stored(method, neighbour, label, tmp_path / f"N{i}.jsonl")
        for key in base[0]:
            assert base[0][key] == other[0][key], f"{name}, {what}: the stored record's {key} differs"
    if name == "edgerr":  # the curator's copy keeps EdgeRR's exact private-edge count, which tells them apart
        (_, neighbour), *_ = _relation(method, data)
        kept = [
            _stored(method, d, label, tmp_path / f"diag{i}.jsonl", True)[0] for i, d in enumerate((data, neighbour))
        ]
        assert kept[0]["config"]["release"]["private_edges"] + 1 == kept[1]["config"]["release"]["private_edges"]
