"""Progress on the long operations: each reports through the one hook (:mod:`privgraph.progress`) with counts
that rise to the total, and a status only where it shows nothing un-noised of the private data."""

import io

import pytest
import torch

import privgraph as pg
from privgraph.progress import ConsoleProgress, Stages, counts_only, report, takes_keyword

SMALL = {"num_nodes": 120, "num_classes": 3, "num_features": 8, "seed": 0}


class Recorder:
    """A hook that takes ``status``: every call, in order."""

    def __init__(self):
        self.calls: list[tuple[str, int, int, str | None]] = []

    def __call__(self, task: str, done: int, total: int, status: str | None = None) -> None:
        self.calls.append((task, done, total, status))

    def tasks(self) -> list[str]:
        return list(dict.fromkeys(task for task, *_ in self.calls))

    def of(self, task: str) -> list[tuple[int, int, str | None]]:
        return [(done, total, status) for t, done, total, status in self.calls if t == task]


def rises_to_total(calls: list[tuple[int, int, str | None]]) -> bool:
    """One total (the last call's may shrink to its count: a run stopped early), counts never falling, the last
    one the last total."""
    counts = [done for done, _, _ in calls]
    totals = {total for _, total, _ in calls[:-1]} | ({calls[-1][1]} if len(calls) == 1 else set())
    return (
        len(totals) == 1
        and all(a <= b for a, b in zip(counts, counts[1:], strict=False))
        and counts[-1] == calls[-1][1] <= totals.pop()
    )


# -- the hook's status ------------------------------------------------------------------------------------------


def test_report_passes_status_only_to_hooks_that_take_it():
    three: list[tuple] = []
    report(lambda task, done, total: three.append((task, done, total)), "t", 1, 2, "loss 0.5")  # an old hook
    assert three == [("t", 1, 2)]
    rec = Recorder()
    report(rec, "t", 1, 2, "loss 0.5")
    report(rec, "t", 2, 2)
    assert rec.calls == [("t", 1, 2, "loss 0.5"), ("t", 2, 2, None)]
    kw: list[dict] = []
    report(lambda *a, **k: kw.append(k), "t", 1, 2, "x")
    assert kw == [{"status": "x"}]
    report(None, "t", 1, 2, "x")  # no hook: nothing
    assert takes_keyword(ConsoleProgress(io.StringIO()), "status")
    stripped = counts_only(rec)
    assert stripped is not None and not takes_keyword(stripped, "status")
    report(stripped, "t", 0, 1, "secret")
    assert rec.calls[-1] == ("t", 0, 1, None)
    assert counts_only(None) is None


def test_stages_report_their_index_and_name():
    rec = Recorder()
    stages = Stages(rec, "release", ("a", "b"))
    stages.start("a")
    stages.start("b", "iteration 3")
    stages.finish()
    assert rec.calls == [("release", 0, 2, "a"), ("release", 1, 2, "b (iteration 3)"), ("release", 2, 2, None)]


# -- training ---------------------------------------------------------------------------------------------------


def test_node_classifier_reports_every_epoch_with_the_loss_and_an_early_stop_as_complete(sbm):
    from privgraph.nn import NodeClassifier
    from privgraph.train import train_node_classifier

    d = sbm(SMALL)
    rec = Recorder()
    torch.manual_seed(0)
    net = NodeClassifier("gcn", d.x.shape[1], 8, 3, 0.0)
    res = train_node_classifier(
        net, d.x, d.edge_index, d.y, d.y, d.train_mask, d.val_mask, d.test_mask,
        epochs=400, patience=3, lr=0.05, progress=rec, task="fit",
    )  # fmt: skip
    calls = rec.of("fit")
    assert res.epochs_run < 400, "the test needs an early stop"
    assert [done for done, _, _ in calls[:-1]] == list(range(1, res.epochs_run))
    assert rises_to_total(calls) and calls[-1][:2] == (res.epochs_run, res.epochs_run)  # ended early: (n, n)
    assert all(total == 400 for _, total, _ in calls[:-1])
    assert all(status.startswith("loss ") and ", val acc " in status for _, _, status in calls)
    assert calls[-1][2].endswith(f", best epoch {res.best_epoch}")
    first_loss = float(calls[0][2].split()[1].rstrip(","))
    last_loss = float(calls[-2][2].split()[1].rstrip(","))
    assert last_loss < first_loss  # the loss shown is the training loss, which training lowers


@pytest.fixture(scope="module")
def blink_release():
    from privgraph.data import sbm_graph

    return pg.privatize(sbm_graph(**SMALL), "blink", epsilon=4.0, seed=0, variant="hybrid")


def test_fit_is_silent_by_default_and_verbose_prints_epochs_on_stderr(blink_release, capsys):
    quiet = pg.fit(blink_release, seed=0, epochs=5, patience=None)
    assert capsys.readouterr() == ("", "")
    loud = pg.fit(blink_release, seed=0, epochs=5, patience=None, verbose=True)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith("[privgraph] training gcn on the blink release: 1/5 (20%)")
    assert lines[-1].startswith("[privgraph] training gcn on the blink release: 5/5 (100%)")
    assert ", done, loss " in lines[-1] and len(lines) == 2  # piped: the first line, then the completion
    assert loud.test_accuracy == quiet.test_accuracy  # progress changes nothing
    rec = Recorder()
    pg.fit(blink_release, seed=0, epochs=5, patience=None, progress=rec)
    assert rises_to_total(rec.of("training gcn on the blink release"))
    with pytest.raises(ValueError, match="not both"):
        pg.fit(blink_release, epochs=5, progress=rec, verbose=True)


def test_privatize_is_silent_by_default_and_verbose_prints_its_stages_on_stderr(capsys):
    from privgraph.data import sbm_graph
    from privgraph.methods.blink.method import BLINK_STAGES

    data = sbm_graph(**SMALL)
    quiet = pg.privatize(data, "blink", epsilon=4.0, seed=0, variant="hybrid")
    assert capsys.readouterr() == ("", "")
    loud = pg.privatize(data, "blink", epsilon=4.0, seed=0, variant="hybrid", verbose=True)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == f"[privgraph] blink-hybrid release: 0/3 (0%), 0.0s elapsed, {BLINK_STAGES[0]}"
    assert lines[-1].startswith("[privgraph] blink-hybrid release: 3/3 (100%)") and lines[-1].endswith(", done")
    assert torch.equal(loud.data.edge_index, quiet.data.edge_index)  # progress changes nothing
    with pytest.raises(ValueError, match="not both"):
        pg.privatize(data, "blink", epsilon=4.0, seed=0, progress=Recorder(), verbose=True)
    with pytest.raises(TypeError, match="give it alone"):
        pg.privatize(data, pg.ReleaseRequest.build("blink", epsilon=4.0, seed=0), verbose=True)


def test_fit_of_a_method_whose_fit_takes_no_progress_still_trains(blink_release, monkeypatch):
    from privgraph.methods.blink.method import Blink

    real = Blink.fit

    def old_fit(self, release, data, model, hp, seed, labels=None):  # a fit written before progress existed
        return real(self, release, data, model, hp, seed, labels)

    monkeypatch.setattr(Blink, "fit", old_fit)
    rec = Recorder()
    res = pg.fit(blink_release, seed=0, epochs=3, progress=rec)
    assert rec.calls == [] and res.epochs_run == 3


def test_dp_sgd_link_training_reports_every_step_without_the_loss():
    from privgraph.data import hetero_sbm_graph
    from privgraph.train.dpsgd import DPSGDConfig
    from privgraph.train.link_prediction import LinkInputs, train_link_model_dp

    d = hetero_sbm_graph(seed=1)
    edges = d["paper", "to", "author"].edge_index
    config = DPSGDConfig(batch_size=64, epochs=2, edge_count=1000)
    inputs = LinkInputs({"paper": d["paper"].x, "author": d["author"].x})
    rec = Recorder()
    res = train_link_model_dp(inputs, edges, ("paper", "to", "author"), 1.0, 1e-5, config, rng=0, progress=rec)
    calls = rec.of("DP-SGD (link reconstruction) steps")
    assert [done for done, _, _ in calls] == list(range(1, res.steps + 1)) and rises_to_total(calls)
    assert calls[0][2] == "epoch 1/2" and calls[-1][2] == "epoch 2/2"
    assert all("loss" not in status for _, _, status in calls)


def test_ppcvgae_training_reports_every_epoch_counts_only():
    from privgraph.data import sensitive_sbm_graph
    from privgraph.methods.ppcvgae.embedding import EmbeddingConfig, build_autoencoder, train_embedding
    from privgraph.methods.ppcvgae.privacy import flip_candidate

    d = sensitive_sbm_graph(num_nodes=80, seed=0)
    config = EmbeddingConfig(epochs=7, penalty=1.0)
    model = build_autoencoder("a", d.x.shape[1], config, 0)
    rec = Recorder()
    train_embedding(model, d, flip_candidate(d.sens, d.private_mask), config, 0, rec)
    calls = rec.of("training the autoencoder (epochs)")
    assert [done for done, _, _ in calls] == list(range(1, 8)) and rises_to_total(calls)
    assert all(status is None for _, _, status in calls)


# -- releases ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["hard", "soft", "hybrid"])
def test_blink_release_reports_its_stages(sbm, variant):
    rec = Recorder()
    pg.privatize(sbm(SMALL), "blink", epsilon=2.0, seed=0, variant=variant, progress=rec)
    calls = rec.of(f"blink-{variant} release")
    assert rises_to_total(calls) and calls[-1][:2] == (3, 3)
    statuses = [status for _, _, status in calls]
    assert statuses[0].startswith("client:")
    assert any(s.startswith("server: β-MLE (iteration 1, change") for s in statuses if s)
    assert statuses[-2] == f"server: the estimated graph ({variant})"


def test_edge_rr_mcmc_reports_between_chunks_per_chain():
    from privgraph.data import mark_private_edges
    from privgraph.methods.heterorr.edges import edge_rr

    g = torch.Generator().manual_seed(0)
    n = 40
    pairs = torch.randint(0, n, (2, 160), generator=g)
    pairs = pairs[:, pairs[0] != pairs[1]]
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected

    data = mark_private_edges(Data(edge_index=to_undirected(pairs, num_nodes=n), num_nodes=n), 0.3, seed=0)
    rec = Recorder()
    edge_rr(data, 1.0, torch.Generator().manual_seed(1), steps=3000, chains=2, progress=rec)
    assert rec.tasks() == ["EdgeRR MCMC (the released chain)", "EdgeRR MCMC (diagnostic chain 2/2)"]
    for task in rec.tasks():
        calls = rec.of(task)
        assert len(calls) > 1 and rises_to_total(calls) and calls[-1][:2] == (3000, 3000)  # several chunks
        assert all(status is None for _, _, status in calls)  # the chain's likelihood reads the private edges


# -- the console ------------------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_console_default_is_a_line_per_10_s_off_a_terminal_with_the_status():
    clock, stream = FakeClock(), io.StringIO()
    progress = ConsoleProgress(stream, clock=clock)
    assert progress.interval == 10.0 and not progress.tty
    for epoch in range(1, 101):  # an epoch every 0.5 s: 50 s in all
        clock.t += 0.5
        progress("training", epoch, 100, status=f"loss {1 / epoch:.3f}")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 + 4 + 1  # the first, one per 10 s, the completion
    assert lines[0] == "[privgraph] training: 1/100 (1%), 0.0s elapsed, loss 1.000"
    assert lines[1] == "[privgraph] training: 21/100 (21%), 10.0s elapsed, ETA 37.6s, loss 0.048"
    assert lines[-1] == "[privgraph] training: 100/100 (100%), 49.5s elapsed, done, loss 0.010"


def test_console_heartbeat_repeats_the_last_status_every_interval():
    clock, stream = FakeClock(), io.StringIO()
    progress = ConsoleProgress(stream, clock=clock)  # the thread is not started: beat() by hand
    progress("release", 1, 3, status="server: β-MLE")
    assert progress.beat() == pytest.approx(10.0)  # nothing due yet
    clock.t += 9.0
    assert progress.beat() == pytest.approx(1.0) and len(stream.getvalue().splitlines()) == 1
    clock.t += 1.0
    progress.beat()
    clock.t += 5.0
    progress.beat()  # 5 s after the last line: nothing
    clock.t += 5.0
    progress.beat()
    lines = stream.getvalue().splitlines()
    assert lines[1:] == [
        "[privgraph] release: 1/3 (33%), 10.0s elapsed, ETA 20.0s, server: β-MLE",
        "[privgraph] release: 1/3 (33%), 20.0s elapsed, ETA 40.0s, server: β-MLE",
    ]
    progress("release", 3, 3)
    clock.t += 30.0
    progress.beat()  # complete: no more lines
    assert len(stream.getvalue().splitlines()) == 4


def test_console_on_a_terminal_shows_the_status_in_the_bar():
    stream = io.StringIO()
    with ConsoleProgress(stream, tty=True) as progress:
        progress("training", 1, 4, status="loss 0.912")
        progress("training", 2, 4, status="loss 0.456")
        progress._rich.refresh()
        assert "loss 0.456" in stream.getvalue()


def test_rises_to_total_rejects_what_it_should():
    assert rises_to_total([(1, 3, None), (3, 3, None)])
    assert rises_to_total([(1, 3, None), (2, 2, None)])  # stopped early
    assert not rises_to_total([(1, 3, None), (2, 3, None), (3, 2, None)])
    assert not rises_to_total([(2, 3, None), (1, 3, None), (3, 3, None)])
    assert not rises_to_total([(1, 3, None), (2, 3, None)])
    assert not rises_to_total([(1, 3, None), (4, 4, None)])


# -- attacks and audits -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def attacked():
    from privgraph.data import sensitive_sbm_graph

    data = sensitive_sbm_graph(num_nodes=200, seed=1)
    return data, pg.privatize(data, "rr", epsilon=4.0, seed=0)


def test_an_attack_on_a_release_reports_the_target_training_then_linkteller_each_query_node(attacked):
    data, release = attacked
    rec = Recorder()
    pg.attack(release, "linkteller", truth=data, seed=0, nodes=60, progress=rec)
    assert rec.tasks() == ["training gcn on the rr release", "LinkTeller: influence queries (nodes)"]
    queries = rec.of("LinkTeller: influence queries (nodes)")
    assert [done for done, _, _ in queries] == list(range(1, 61)) and rises_to_total(queries)
    training = rec.of("training gcn on the rr release")
    assert rises_to_total(training) and all(status.startswith("loss ") for _, _, status in training)


def test_shadow_attack_reports_its_stages_and_the_shadow_training_without_its_loss(attacked):
    data, release = attacked
    fitted = pg.fit(release, seed=0, epochs=15, patience=None)
    rec = Recorder()
    pg.attack(fitted, "membership-shadow", truth=data, seed=0, progress=rec)
    assert rec.tasks() == ["membership-shadow attack", "training gcn on the rr release"]
    shadow = rec.of("training gcn on the rr release")  # on the auditor's graph: counts only, no loss
    assert [done for done, _, _ in shadow] == list(range(1, 16)) and all(status is None for _, _, status in shadow)
    stages = rec.of("membership-shadow attack")
    assert rises_to_total(stages) and [done for done, _, _ in stages] == [0, 1, 2]


def test_attribute_attack_reports_the_attacker_training_counts_only(attacked, capsys):
    data, release = attacked
    fitted = pg.fit(release, seed=0, epochs=15, patience=None)
    rec = Recorder()
    pg.attack(fitted, "attribute", truth=data, seed=0, progress=rec)
    calls = rec.of("attribute attack: training the attacker (epochs)")
    assert calls and rises_to_total(calls) and all(status is None for _, _, status in calls)
    capsys.readouterr()
    pg.attack(fitted, "attribute", truth=data, seed=0, verbose=True)
    err = capsys.readouterr().err
    assert "[privgraph] attribute attack: training the attacker (epochs): " in err and "loss" not in err


def test_audit_reports_samples_with_eta():
    rec = Recorder()
    pg.audit_method(None, "rr", epsilon=1.0, samples=6, seed=1, progress=rec)
    assert rec.tasks()
    for task in rec.tasks():
        assert task.startswith("audit rr: ")
        calls = rec.of(task)
        assert [done for done, _, _ in calls] == list(range(1, 13)) and rises_to_total(calls)


def test_cli_run_shows_the_trials_and_each_training_by_epoch(tmp_path, invoke):
    db = tmp_path / "r.jsonl"
    code, text, _ = invoke(
        "run", "gcn-raw", "--dataset", "sbm", "--trials", "1", "--db", db, "--set", "epochs=5", "--set", "patience=5",
        raw=True,
    )  # fmt: skip
    assert code == 0, text
    lines = [line for line in text.splitlines() if line.startswith("[privgraph] ")]
    assert lines[0].startswith("[privgraph] gcn-raw on SBM: 0/1 (0%)")
    assert lines[1].startswith("[privgraph] training gcn on the gcn-raw release: 1/5 (20%)") and ", loss " in lines[1]
    assert lines[2].startswith("[privgraph] training gcn on the gcn-raw release: 5/5 (100%)") and "done" in lines[2]
    assert lines[-1].startswith("[privgraph] gcn-raw on SBM: 1/1 (100%)")
