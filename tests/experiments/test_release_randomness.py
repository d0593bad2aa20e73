"""Randomness of releases (issue: seeded noise that can be removed, shared randomness across
candidates): the public release paths draw secret noise by default, honour ``--secure``
everywhere, and every candidate/trial/ε draws independent noise."""

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from privgraph.api import load_release
from privgraph.cli import app, expand_multi_value_options
from privgraph.experiments import Experiment, ExperimentSpec, run_experiment
from privgraph.experiments.release import release_file
from privgraph.experiments.tasks import SHARE_GRID
from privgraph.mechanisms import SECURE_NOTE, SecureRandom
from privgraph.methods import METHODS, Task
from privgraph.methods.heterorr.edges import ChainNotConverged

runner = CliRunner()
SMALL = {"num_nodes": 240, "num_features": 24, "avg_degree": 6.0}
FAST = {"epochs": 20, "patience": 5}
PRIVATE = sorted(
    name
    for name, cls in METHODS.items()
    if cls.private and cls.task == Task.NODE_CLASSIFICATION and not cls.heterogeneous
)
NEEDS_EDGES = {"edgerr", "edgerand", "lapgraph", "heterorr"}


def _graph_spec(method: str, secure: bool, **kw) -> ExperimentSpec:
    graph = SMALL
    if method == "edgerr":  # a graph where EdgeRR's default chain passes its convergence check
        graph = {**SMALL, "num_nodes": 40}  # (on 240 nodes it is refused even after 10⁶ moves)
    if method == "heterorr":  # the edge part's claim waived (ε = ∞): these tests read the feature part's notes
        kw["params"] = {"mcmc_steps": 500, "structure": "private-mcmc", "convergence": "waive", **kw.get("params", {})}
    if method in ("gap-ndp", "node-dpsgd", "mlp-ndp") and "params" not in kw:  # node level: within the bound, with
        spec = _graph_spec(method, secure, params={}, **kw)  # the public training count (a release never reads it)
        task = spec.build()[1]
        count = int(task.trial_data(task.load(), spec.seed).train_mask.sum())
        kw["params"] = {"num_train": count, **({} if method == "mlp-ndp" else {"max_degree": graph["num_nodes"]})}
    return ExperimentSpec(
        method=method,
        dataset="sbm",
        synthetic=graph,
        trials=1,
        secure=secure,
        private_ratio=0.2 if method in NEEDS_EDGES else None,
        hyperparameters=FAST,
        **kw,
    )


def _release(method, secure, tmp_path, name, **kw):
    for attempt in range(5):  # EdgeRR's chain check is random under OS noise: a refused chain is drawn again
        try:
            path, report_path, _ = release_file(_graph_spec(method, secure, **kw), tmp_path / name)
            break
        except ChainNotConverged:
            if attempt == 4:
                raise
    release = load_release(path)
    data = release.data
    if release.model_state is not None:  # a method that releases a trained model (node-dpsgd): its weights
        data = {"x": torch.cat([v.flatten() for v in release.model_state.values()]), "edge_index": torch.zeros(0)}
    return data, json.loads(report_path.read_text())


@pytest.mark.parametrize("method", PRIVATE)
def test_two_secure_releases_of_every_method_differ_and_record_no_seed(method, tmp_path):
    # LapGraph at the default ε: on this small graph two releases coincided in 1 of 8 pairs (both the same
    # 1,124 edges: its noisy private-edge count can round to nothing, a legitimate outcome); not at ε = 4
    # GAP: without ε it releases without noise (as gap-inf); a secure release is one with ε
    kw = {"epsilons": [4.0]} if method == "lapgraph" or METHODS[method].epsilon_optional else {}
    a, meta = _release(method, True, tmp_path, "a.pt", **kw)
    b, _ = _release(method, True, tmp_path, "b.pt", **kw)
    same_x = torch.equal(a["x"], b["x"])
    ea, eb = a.get("edge_index"), b.get("edge_index")  # GAP-EDP releases no edges (its hop tables are x)
    same_edges = (ea is None and eb is None) or (ea.shape == eb.shape and torch.equal(ea, eb))
    assert not (same_x and same_edges), f"{method}: two secure releases are identical"
    assert meta["randomness"] == {"mode": "os"} and "seed" not in json.dumps(meta["provenance"]).replace(
        "data_seed", ""
    )
    notes = [n for g in meta["privacy"]["guarantees"] for n in g["notes"]]
    assert SECURE_NOTE in notes


@pytest.mark.parametrize("method", ["lpgnn", "blink", "edgerr"])
def test_reproducible_release_is_identical_records_its_seed_and_says_it_is_not_private(method, tmp_path):
    a, meta = _release(method, False, tmp_path, "a.pt")
    b, _ = _release(method, False, tmp_path, "b.pt")
    assert torch.equal(a["x"], b["x"]) and torch.equal(a["edge_index"], b["edge_index"])
    assert meta["randomness"] == {"mode": "seeded", "seed": 0}
    notes = [n for g in meta["privacy"]["guarantees"] for n in g["notes"]]
    assert any("anyone with the seed can regenerate the noise" in n for n in notes)


def test_release_lists_every_field_written_in_clear(tmp_path):
    _, meta = _release("lpgnn", True, tmp_path, "l.pt")
    assert "y" in meta["raw_fields"] and "edge_index" in meta["raw_fields"] and "x" not in meta["raw_fields"]
    assert meta["fields"]["x"].startswith("privatized")
    assert any(line.startswith("fields written in clear") and "y" in line for line in meta["report"])
    _, meta = _release("lapgraph", True, tmp_path, "g.pt")
    assert {"x", "y"} <= set(meta["raw_fields"]) and "edge_index" not in meta["raw_fields"]
    assert "public edges are written as given" in meta["fields"]["edge_index"]


def _cli_release(tmp_path, name, *extra):
    out = tmp_path / name
    res = runner.invoke(
        app,
        expand_multi_value_options(
            ["release", "ppcvgae", "--epsilon", "0.5", "--param", "epochs=20", "-o", str(out), *extra]
        ),
    )
    assert res.exit_code == 0, res.output
    return load_release(out).data, json.loads(out.with_name(name + ".json").read_text())


def test_embedding_release_is_secret_by_default_and_cannot_be_undone_from_its_report(tmp_path):
    a, meta = _cli_release(tmp_path, "a.pt", "--diagnostics")  # σ for the attacker
    b, _ = _cli_release(tmp_path, "b.pt")
    assert not torch.equal(a["z"], b["z"])  # the OS source, not the seed
    assert meta["randomness"] == {"mode": "os"}
    # the audit's attack: regenerate the noise from the recorded seed (the old seed·1000 stream) and subtract
    # it; with the noise from that stream both files would give the same μ(s) to ~1e-6
    sigma = meta["details"]["noise_std"]
    seed = meta["provenance"]["data_seed"]
    guesses = [
        r["z"]
        - sigma * torch.randn(r["z"].shape, generator=torch.Generator().manual_seed(seed * 1000), dtype=r["z"].dtype)
        for r in (a, b)
    ]
    assert (guesses[0] - guesses[1]).abs().max() > sigma


def test_embedding_release_reproducible_and_secure_flags(tmp_path):
    a, meta = _cli_release(tmp_path, "a.pt", "--reproducible")
    b, _ = _cli_release(tmp_path, "b.pt", "--reproducible")
    assert torch.equal(a["z"], b["z"]) and meta["randomness"] == {"mode": "seeded", "seed": 0}
    assert any("anyone with the seed" in line for line in meta["report"])
    c, meta = _cli_release(tmp_path, "c.pt", "--secure")
    d, _ = _cli_release(tmp_path, "d.pt", "--secure")
    assert meta["randomness"] == {"mode": "os"} and not torch.equal(c["z"], d["z"])
    res = runner.invoke(app, ["release", "lpgnn", "--secure", "--reproducible", "-o", str(tmp_path / "x.pt")])
    assert res.exit_code == 2 and "exclude each other" in res.output


def test_run_secure_reaches_the_embedding_noise():
    spec = ExperimentSpec(
        method="ppcvgae",
        epsilons=[0.5],
        trials=1,
        secure=True,
        params={"case": "b", "epochs": 20},
        synthetic={"num_nodes": 200},
    )
    res = run_experiment(spec)
    assert any(SECURE_NOTE in g["notes"] for r in res.to_json()["results"] for g in r["privacy"]["guarantees"])
    with pytest.raises(ValueError, match="without an epsilon"):
        ExperimentSpec(method="ppcvgae", secure=True).validate()


def _spy(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append((args, kwargs, out))
        return out

    monkeypatch.setattr(module, name, spy)
    return calls


def test_blink_degree_share_candidates_and_trials_draw_independent_noise(monkeypatch):
    """The audit's attack: two candidates' noisy degrees d + L/(δ₁ε) and d + L/(δ₂ε) sharing one
    Laplace draw L give every exact degree.  With independent draws it recovers nothing."""
    import privgraph.methods.blink.method as blink_method

    calls = _spy(monkeypatch, blink_method, "link_ldp")
    spec = _graph_spec("blink", False, epsilons=[2.0], tune=True, tune_budget=1)
    spec.trials = 2
    Experiment(spec).run()
    reports = [c[2] for c in calls]
    assert len(reports) == 5 + 1  # five candidates on trial 0 (reused as trial 0), then trial 1
    edge_index = calls[0][0][0]
    degree = torch.bincount(edge_index[0], minlength=SMALL["num_nodes"]).double()
    scaled = [((r.noisy_degrees - degree) * r.degree_share * r.epsilon).numpy() for r in reports]  # Laplace(1) each
    for i in range(len(reports)):
        for j in range(i + 1, len(reports)):
            assert abs(np.corrcoef(scaled[i], scaled[j])[0, 1]) < 0.3
            assert not np.array_equal(reports[i]._keys, reports[j]._keys)  # fresh PRF keys
    r1, r2 = reports[0], reports[1]
    b1, b2 = 1 / (r1.degree_share * r1.epsilon), 1 / (r2.degree_share * r2.epsilon)
    recovered = (b2 * r1.noisy_degrees - b1 * r2.noisy_degrees) / (b2 - b1)
    assert (recovered - degree).abs().mean() > 1.0  # the shared-draw solve was exact to 1e-15


def test_hetedp_share_candidates_draw_independent_noise(monkeypatch):
    import privgraph.methods.hetedp.link_release as hetedp

    calls = _spy(monkeypatch, hetedp, "privatize_features")
    spec = ExperimentSpec(
        method="hetedp", task="lp", epsilons=[2.0], trials=1, tune=True, params={"batch_size": 256, "epochs": 1}
    )
    run_experiment(spec)
    assert len(calls) == len(SHARE_GRID)
    noises = []
    for args, kwargs, out in calls:
        data = args[0]
        t = next(iter(out.x))
        from privgraph.methods.hetedp.features import clip_rows

        clean, _ = clip_rows(data[t].x, kwargs.get("clip_bound", args[3]))
        noises.append(((out.x[t] - clean) / out.details["noise_std"]).flatten().numpy())
    for i in range(len(noises)):
        for j in range(i + 1, len(noises)):
            assert abs(np.corrcoef(noises[i], noises[j])[0, 1]) < 0.1


def test_dpsgd_takes_the_os_source(monkeypatch):
    import privgraph.train.link_prediction as link_prediction

    seen = []
    real = link_prediction.ghost_clipped_noisy_gradient

    def spy(model, losses, clip, std, batch, rng):
        seen.append(rng)
        return real(model, losses, clip, std, batch, rng)

    monkeypatch.setattr(link_prediction, "ghost_clipped_noisy_gradient", spy)
    spec = ExperimentSpec(
        method="hetedp",
        task="lp",
        epsilons=[2.0],
        trials=1,
        secure=True,
        params={"feature_share": 0.5, "batch_size": 256, "epochs": 1},
    )
    a = run_experiment(spec)
    assert seen and all(isinstance(r, SecureRandom) for r in seen)
    guarantees = a.to_json()["results"][0]["privacy"]["guarantees"]
    assert all(SECURE_NOTE in g["notes"] for g in guarantees)


def test_run_refuses_flags_the_embedding_and_hetero_paths_ignore(tmp_path):
    for args in (
        ["run", "hetedp", "--tune"],
        ["run", "ppcvgae", "--model", "gat"],
        ["run", "hetedp", "--private-ratio", "0.2"],
        ["run", "ppcvgae", "--set", "epochs=5"],
    ):
        res = runner.invoke(app, [*args, "--db", str(tmp_path / "r.db")])
        assert res.exit_code == 2 and "does not take" in res.output
    out = ["-o", str(tmp_path / "h.pt")]
    res = runner.invoke(app, ["release", "hetedp", "--epsilon", "1", "--param", "epochs=1", *out])
    assert res.exit_code == 2 and "edge_count" in res.output  # DP-SGD's N is never read from the private edges
    res = runner.invoke(
        app, ["release", "hetedp", "--epsilon", "1", "--param", "epochs=1", "--param", "edge_count=900", *out]
    )
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "h.pt.json").read_text())
    assert meta["fields"]["paper__to__author.edge_index"].startswith("withheld")
    released = load_release(tmp_path / "h.pt").data
    assert ("paper", "to", "author") not in released.edge_types and (tmp_path / "h.pt.model.pt").exists()


def test_two_secure_dpsgd_trainings_differ():
    from privgraph.data.hetero import TASKS, link_split, load_hetero, node_inputs
    from privgraph.train.dpsgd import DPSGDConfig
    from privgraph.train.link_prediction import LinkInputs, train_link_model_dp

    data = load_hetero("sbm")
    task = TASKS["sbm"]
    train, _, _ = link_split(data, task, seed=0)
    inputs = LinkInputs.build(node_inputs(data, seed=0))
    edges = train[task.edge_type].edge_label_index
    config = DPSGDConfig(batch_size=256, epochs=1, edge_count=int(edges.shape[1]))
    runs = [train_link_model_dp(inputs, edges, task.edge_type, 1.0, 1e-5, config, SecureRandom()) for _ in range(2)]
    weights = [torch.cat([p.detach().flatten() for p in r.model.parameters()]) for r in runs]
    assert not torch.equal(weights[0], weights[1])
    seeded = [train_link_model_dp(inputs, edges, task.edge_type, 1.0, 1e-5, config, 7) for _ in range(2)]
    assert all(torch.equal(a, b) for a, b in zip(seeded[0].model.parameters(), seeded[1].model.parameters()))


def test_release_withholds_data_dependent_diagnostics_by_default(tmp_path):
    """Exact counts (private edges, clipped rows, MCMC acceptances) are statistics of the raw data that
    no guarantee covers: the release file leaves them out unless the curator asks (--diagnostics)."""
    spec = _graph_spec("edgerr", True, params={"mcmc_steps": 500, "convergence": "waive"})
    _, report_path, _ = release_file(spec, tmp_path / "g.pt")
    meta = json.loads(report_path.read_text())
    assert isinstance(meta["details"], str) and meta["details"].startswith("withheld")
    assert "private_edges" not in report_path.read_text() and "accepted)" not in report_path.read_text()
    _, report_path, _ = release_file(spec, tmp_path / "h.pt", diagnostics=True)
    assert json.loads(report_path.read_text())["details"]["private_edges"] > 0
    rel = pg_privatize_for_diagnostics(tmp_path)
    assert json.loads((tmp_path / "p.pt.json").read_text())["details"].startswith("withheld")
    rel.save(tmp_path / "q.pt", include_diagnostics=True)
    assert isinstance(json.loads((tmp_path / "q.pt.json").read_text())["details"], dict)


def pg_privatize_for_diagnostics(tmp_path):
    import privgraph as pg
    from privgraph.data import mark_private_edges, sbm_graph

    data = mark_private_edges(sbm_graph(**SMALL, seed=0), 0.2, seed=0)
    rel = pg.privatize(data, "edgerr", epsilon=1.0, mcmc_steps=500, convergence="waive")
    rel.save(tmp_path / "p.pt")
    return rel
