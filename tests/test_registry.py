"""One test over the whole registry: every method, on a small graph of the user's own making
(not a named dataset), through the public API — the report names the unit and ε, the raw
private fields are not in the release, a save/load round trip keeps everything, and the same
seed gives the same release."""

import math

import pytest
import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.utils import erdos_renyi_graph

import privgraph as pg
from privgraph.accounting import Unit
from privgraph.audit.runner import CLAIM_SHORTFALL
from privgraph.methods import METHODS, Task

EPSILON = 2.0
SMALL = {  # keep the slow ones short
    "edgerr": {"mcmc_steps": 1_000_000},  # 500 moves do not pass EdgeRR's convergence check (refused)
    "privhrg": {},
    "featurerr": {"public_fraction": 0.4},
    "heterorr": {"mcmc_steps": 1_000_000, "public_fraction": 0.4},  # long enough for EdgeRR's convergence check
    "ppcvgae": {"epochs": 10},
    "vgae": {"epochs": 10},
    "dpgcn": {"epochs": 10},
    "gap-edp": {"encoder_epochs": 5, "epochs": 5},
    "gap-inf": {"encoder_epochs": 5, "epochs": 5},
    # node level: D, K ≥ every degree of user_graph (90 nodes; refused above the bound), N its 45 training nodes
    "gap-ndp": {"encoder_epochs": 2, "epochs": 2, "batch_size": 16, "max_degree": 90, "num_train": 45},
    "mlp-ndp": {"encoder_epochs": 2, "epochs": 2, "batch_size": 16, "num_train": 45},
    "node-dpsgd": {"epochs": 2, "max_degree": 90, "num_train": 45},
    "hetedp": {"edge_type": ("paper", "written_by", "author"), "epochs": 2, "batch_size": 64, "edge_count": 200},
}


def user_graph(n: int = 90, seed: int = 0) -> Data:
    """What a user might bring: random features in [0, 1], three classes, an undirected graph,
    a split, a private-edge annotation and a binary sensitive attribute."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    edge_index = erdos_renyi_graph(n, 0.08)
    y = torch.randint(0, 3, (n,), generator=g)
    x = (torch.rand(n, 6, generator=g) + 0.3 * torch.nn.functional.one_hot(y, 6)).clamp(0, 1)
    order = torch.randperm(n, generator=g)
    masks = {name: torch.zeros(n, dtype=torch.bool) for name in ("train_mask", "val_mask", "test_mask")}
    masks["train_mask"][order[: n // 2]] = True
    masks["val_mask"][order[n // 2 : 3 * n // 4]] = True
    masks["test_mask"][order[3 * n // 4 :]] = True
    lo, hi = edge_index.min(0).values, edge_index.max(0).values
    private_edge_mask = (lo * 7 + hi) % 4 == 0  # a quarter of the pairs, the same flag both ways
    sens = (torch.rand(n, generator=g) < 0.4).long()
    private_mask = torch.rand(n, generator=g) < 0.7
    return Data(
        x=x,
        edge_index=edge_index,
        y=y,
        sens=sens,
        private_mask=private_mask,
        private_edge_mask=private_edge_mask,
        feature_domain=(0.0, 1.0),  # declared: the feature methods refuse a graph without one
        **masks,
    )


def user_hetero_graph(seed: int = 0) -> HeteroData:
    """A user's heterogeneous graph: papers with features and labels, featureless authors,
    paper–author edges both ways and paper citations."""
    g = torch.Generator().manual_seed(seed)
    papers, authors = 60, 40
    data = HeteroData()
    data["paper"].x = torch.rand(papers, 8, generator=g)
    data["paper"].y = torch.randint(0, 3, (papers,), generator=g)
    data["author"].num_nodes = authors
    pairs = torch.unique(
        torch.stack([torch.randint(0, papers, (150,), generator=g), torch.randint(0, authors, (150,), generator=g)]),
        dim=1,
    )
    data["paper", "written_by", "author"].edge_index = pairs
    data["author", "writes", "paper"].edge_index = pairs.flip(0)
    cites = torch.unique(torch.randint(0, papers, (2, 80), generator=g), dim=1)
    data["paper", "cites", "paper"].edge_index = cites[:, cites[0] != cites[1]]
    return data


def privatize(name: str, data: Data | HeteroData | None = None, seed: int = 0):
    cls = METHODS[name]
    if data is None:
        data = user_hetero_graph() if cls.heterogeneous else user_graph()
    return pg.privatize(data, name, epsilon=EPSILON if cls.private else None, seed=seed, **SMALL.get(name, {}))


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        if a.is_floating_point():
            return a.shape == b.shape and torch.allclose(a, b, atol=1e-5, rtol=1e-5)  # CPU float rounding
        return torch.equal(a, b)
    return type(a) is type(b)


def _tensors_equal(x: Data | HeteroData, y: Data | HeteroData) -> bool:
    if isinstance(x, HeteroData):
        stores = list(zip(x.node_stores + x.edge_stores, y.node_stores + y.edge_stores))
        return len(x.node_stores + x.edge_stores) == len(y.node_stores + y.edge_stores) and all(
            a._key == b._key and _tensors_equal(a, b) for a, b in stores
        )
    return set(x.keys()) == set(y.keys()) and all(_same(x[k], y[k]) for k in x.keys())


def _raw_fields(data: Data | HeteroData) -> dict[str, torch.Tensor]:
    """Every input tensor by its field name (``type.field`` in a HeteroData)."""
    if isinstance(data, HeteroData):
        out = {}
        for store in data.node_stores + data.edge_stores:
            key = store._key if isinstance(store._key, str) else "__".join(store._key)
            out.update({f"{key}.{k}": v for k, v in store.items() if isinstance(v, torch.Tensor)})
        return out
    return {k: v for k, v in data.items() if isinstance(v, torch.Tensor)}


def assert_declared_is_spent(name, planned, by_unit) -> None:
    """Two-sided: every unit the report spends is declared, every declared unit is spent, with the same δ
    and the same ε (an accountant calibrated by bisection may state up to CLAIM_SHORTFALL below it)."""
    planned = {s.unit: s for s in planned}
    spent_units = {u: g for u, g in by_unit.items() if not (g.epsilon == 0 and g.delta == 0)}
    assert set(spent_units) <= set(planned), f"{name} spends on {sorted(spent_units)} but declares {sorted(planned)}"
    for unit, declared in planned.items():
        assert unit in by_unit, f"{name} declares {unit!r} but its report does not name it"
        spent = by_unit[unit]
        assert spent.delta == pytest.approx(declared.delta, rel=1e-12, abs=0), (name, unit, spent.delta, declared.delta)
        assert spent.epsilon <= declared.epsilon * (1 + 1e-9) + 1e-12, (name, unit, spent.epsilon, declared.epsilon)
        assert spent.epsilon >= declared.epsilon * (1 - CLAIM_SHORTFALL), (name, unit, spent.epsilon, declared.epsilon)


@pytest.mark.parametrize(
    "name, params",
    [
        ("lpgnn", {"mechanism": "gaussian"}),  # the mechanism's default δ, declared
        ("lpgnn", {"mechanism": "gaussian", "delta": 1e-3}),
        ("gap-edp", {"encoder_epochs": 2, "epochs": 2}),  # the auto δ from the public node count
        ("gap-edp", {"encoder_epochs": 2, "epochs": 2, "delta": 1e-6}),
        ("blink", {"degree_share": 0.3}),
    ],
)
def test_declared_delta_is_the_released_delta(name, params):
    data = user_graph()
    rel = pg.privatize(data, name, epsilon=EPSILON, seed=0, **params)
    assert_declared_is_spent(name, METHODS[name](**params).planned_spend(EPSILON, data=data), rel.report.by_unit())


def test_every_method_declares_its_dp_delta_parameter():
    """The δ of a method's claim is named by one declaration (Method.delta_param): never Blink's or DPRR's share."""
    declared = {name for name, cls in METHODS.items() if cls.delta_param is not None and cls.private}
    assert declared == {
        "featureldp", "gap-edp", "gap-ndp", "hetedp", "hetedp-features", "lpgnn", "mlp-ndp", "node-dpsgd", "ppcvgae"
    }  # fmt: skip
    for name in ("blink", "dprr"):
        assert METHODS[name].delta_param is None and METHODS[name]().dp_delta() == 0.0
        with pytest.raises(ValueError, match="`delta` is now `degree_share`.*DP's δ is 0"):
            pg.privatize(user_graph(), name, epsilon=4, delta=0.3)


def test_the_registry_lists_every_system():
    listed = pg.list_methods()
    for name in ("lpgnn", "blink", "rr", "edgerr", "lapgraph", "heterorr", "featurerr", "ppcvgae", "vgae", "dpgcn"):
        assert name in listed
    entry = listed["blink"]
    assert entry["unit"] == "adjacency list" and entry["task"] == Task.NODE_CLASSIFICATION.value
    assert {p["name"]: p["default"] for p in entry["parameters"]}["variant"] == "hard"
    assert all(p["help"] for e in listed.values() for p in e["parameters"])


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_releases_the_users_own_graph(name, tmp_path):
    cls = METHODS[name]
    data = user_hetero_graph() if cls.heterogeneous else user_graph()
    rel = privatize(name, data)
    # 1. the report names the unit and ε
    by_unit = rel.report.by_unit()
    unit = getattr(cls(**SMALL.get(name, {})), "claim_unit", lambda: cls.unit)()  # node-dpsgd: "node (degree ≤ K)"
    units = [u for u in by_unit if u == unit or u.startswith(unit + " of ")]  # "edge of (src, rel, dst)"
    assert units, f"{name}: no guarantee for its unit {unit!r}: {list(by_unit)}"
    g = by_unit[units[0]]
    if cls.private:
        if name == "hetedp":  # ε = ε_f + ε_s, ε_f/ε = feature_share = 0.5; the accountant's ε_s is at most its target
            assert by_unit[Unit.NODE_FEATURES].epsilon == pytest.approx(EPSILON / 2)
            assert 0 < g.epsilon <= EPSILON / 2 + 1e-9
        else:
            assert g.epsilon == pytest.approx(EPSILON)
        assert g.is_private
        assert any("seed 0" in n for n in g.notes)  # a seeded release says the seed removes the noise
    else:
        assert g.epsilon == 0.0 or math.isinf(g.epsilon)
    # 1b. the spend it declares before any noise (what a Ledger checks) is the spend its report states
    method = cls(**SMALL.get(name, {}))
    assert_declared_is_spent(name, method.planned_spend(EPSILON if cls.private else None, data=data), by_unit)
    # 2. the raw private fields are not in the release: no input tensor of a protected field is
    # copied in, and every input field has a status
    raw, released = _raw_fields(data), _raw_fields(rel.data)
    assert set(rel.fields) >= set(raw)
    for field, value in raw.items():
        status = rel.fields[field]
        if not cls.private or status.startswith("public"):
            continue
        if field in released:
            assert status.startswith("privatized") and not _same(released[field], value), (
                f"{name} copied the raw {field}"
            )
        else:
            assert status.startswith("withheld"), (field, status)
    # 3. a save/load round trip keeps everything
    rel.save(tmp_path / "r.pt")
    back = pg.load_release(tmp_path / "r.pt")
    assert _tensors_equal(back.data, rel.data)
    assert back.report.to_dict() == rel.report.to_dict() and back.fields == rel.fields
    assert back.method == name and back.params == rel.params and back.epsilon == rel.epsilon
    assert (tmp_path / "r.pt.json").exists()
    # 4. the same seed gives the same release
    assert _tensors_equal(privatize(name, data).data, rel.data)
    if rel.model_state is not None:
        again = privatize(name, data).model_state
        assert all(torch.allclose(again[k], v, atol=1e-5) for k, v in rel.model_state.items())
        assert all(torch.equal(back.model_state[k], v) for k, v in rel.model_state.items())


@pytest.mark.parametrize("name", sorted(n for n, c in METHODS.items() if c.private and not c.epsilon_optional))
def test_private_methods_need_epsilon_and_draw_from_the_os_by_default(name):
    data = user_hetero_graph() if METHODS[name].heterogeneous else user_graph()
    with pytest.raises(ValueError, match="epsilon"):
        pg.privatize(data, name)
    params = dict(SMALL.get(name, {}))
    if "convergence" in METHODS[name].Params.__dataclass_fields__:
        # the OS draws the chain too: whether it passes its check is random, and a refusal is not what is tested
        params["convergence"] = "waive"
    a = pg.privatize(data, name, epsilon=EPSILON, **params)
    assert a.randomness["mode"] == "os"
    assert all("OS cryptographic source" in " ".join(g.notes) for g in a.report.guarantees if g.is_private)
    # the trust model `privgraph methods` lists is the one its release reports
    assert {g.trust_model for g in a.report.guarantees if g.is_private} <= set(METHODS[name].trust_models)
    assert METHODS[name].trust_models


def test_fit_trains_the_methods_model_on_a_release():
    """The accuracy fit reports is its returned model's, on the release's test nodes and their true labels, and
    the same seed trains the same model."""
    data = user_graph(150)
    y_test = data.y[data.test_mask]
    for release, epochs in (
        (pg.privatize(data, "lpgnn", epsilon=8.0, seed=0), 60),
        (pg.privatize(data, "blink", epsilon=8.0, seed=0, variant="soft"), 30),
    ):
        res = pg.fit(release, seed=0, epochs=epochs)
        assert res.model is not None and res.test_predictions is not None and res.epochs_run >= res.best_epoch
        assert res.test_accuracy == pytest.approx((res.test_predictions == y_test).float().mean().item())
        again = pg.fit(release, seed=0, epochs=epochs)
        assert torch.equal(again.test_predictions, res.test_predictions)
    with pytest.raises(ValueError, match="node classifiers"):
        pg.fit(pg.privatize(data, "vgae", seed=0, epochs=5))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda d: pg.privatize(d, "nope", epsilon=1.0), "unknown method"),
        (lambda d: pg.privatize(d, "blink", epsilon=1.0, variant="medium"), "variant"),
        (lambda d: pg.privatize(d, "blink", epsilon=1.0, gamma=0.5), "no parameter 'gamma'"),
        (lambda d: pg.privatize(d, "mlp", epsilon=1.0), "non-private"),
        (lambda d: pg.privatize(d, "lpgnn", epsilon=1.0, seed=0, rng=pg.SecureRandom()), "not both"),
        (lambda d: pg.privatize(d, "lpgnn", epsilon=1.0, rng=3), "rng must be"),
    ],
)
def test_bad_api_calls_fail_clearly(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call(user_graph())


def test_label_privacy_through_the_api(tmp_path):
    """LPGNN's label LDP on the user's graph: the release holds the reports, never y; the report
    composes features and labels per node; fit trains on the denoised reports."""
    data = user_graph(150)
    data.num_classes = 3  # the public label set, declared (never read from the labels)
    rel = pg.privatize(data, "lpgnn", epsilon=2.0, label_epsilon=1.0, seed=0)
    assert "y" not in rel.data and rel.fields["y"].startswith("privatized")
    reported = rel.data.y_reported
    collected = data.train_mask | data.val_mask
    assert (reported[~collected] == -1).all() and (reported[collected] >= 0).all()
    assert not torch.equal(reported[collected], data.y[collected])  # ε_y = 1 over 3 classes flips many
    by_unit = rel.report.by_unit()
    assert by_unit[Unit.NODE_LABEL].epsilon == 1.0 and rel.report.per_node.epsilon == pytest.approx(3.0)
    rel.save(tmp_path / "l.pt")
    back = pg.load_release(tmp_path / "l.pt")
    res = pg.fit(back, seed=0, epochs=40, truth=data)
    assert 0.0 <= res.test_accuracy <= 1.0
    assert math.isnan(pg.fit(back, seed=0, epochs=5).test_accuracy)  # no truth, no test accuracy
    with pytest.raises(ValueError, match="node-classification"):
        pg.privatize(data, "vgae", label_epsilon=1.0, epochs=5)


def test_a_hetedp_release_scores_links_from_the_release_alone(tmp_path):
    """The released weights, the noisy features and the public relations are enough to score
    pairs, after a save/load round trip too."""
    from privgraph.methods.hetedp.method import score_links

    data = user_hetero_graph()
    rel = privatize("hetedp", data)
    rel.save(tmp_path / "h.pt")
    back = pg.load_release(tmp_path / "h.pt")
    pairs = torch.stack([torch.arange(10), torch.arange(10) % 7])
    scores = score_links(back, pairs)
    assert scores.shape == (10,) and torch.isfinite(scores).all()
    assert torch.allclose(scores, score_links(rel, pairs))
    assert ("paper", "written_by", "author") not in back.data.edge_types  # the protected relation is not released
    mp = pg.privatize(data, "hetedp", epsilon=EPSILON, seed=0, topology="message-passing", **SMALL["hetedp"])
    with pytest.raises(ValueError, match="message-passing"):
        score_links(mp, pairs)
