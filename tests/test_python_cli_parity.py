"""One behaviour in Python and on the command line, run both on one input file: the split
added to a labelled graph read without one, the refusal of a feature method without a declared domain, and the
released data."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

import privgraph as pg
from privgraph.data import GraphRead, read_graph, stratified_split
from privgraph.data.splits import split_note
from privgraph.data.validation import public_note
from privgraph.input_rules import domain_message
from privgraph.transforms import MultiBit

MASKS = ("train_mask", "val_mask", "test_mask")


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def files(tmp_path, sbm):
    """An edge list (each edge once, with a header), its features (.csv) and labels (.txt): no split, no domain."""
    graph = sbm(num_nodes=60, num_classes=3, num_features=6, avg_degree=4.0, homophily=0.8, feature_signal=0.4, seed=1)
    src, dst = graph.edge_index
    one_way = graph.edge_index[:, src < dst].T.tolist()
    (tmp_path / "edges.csv").write_text("src,dst\n" + "".join(f"{a},{b}\n" for a, b in one_way))
    np.savetxt(tmp_path / "x.csv", graph.x.numpy(), delimiter=",", fmt="%.6g")
    np.savetxt(tmp_path / "y.txt", graph.y.numpy(), fmt="%d")
    paths = {"edges": tmp_path / "edges.csv", "features": tmp_path / "x.csv", "labels": tmp_path / "y.txt"}
    return paths


def _cli_args(files) -> list:
    return ["--input", files["edges"], "--features", files["features"], "--labels", files["labels"]]


def test_release_of_one_file_is_the_same_in_python_and_on_the_command_line(files, tmp_path, invoke):
    """The same seed: the same split (added, and said, in both), the same released features, labels and report
    notes from ``privgraph release`` and from ``read_graph`` + ``pg.privatize``."""
    out = tmp_path / "cli.pt"
    code, text, _ = invoke(
        "release", "lpgnn", *_cli_args(files), "--domain", "0,1", "--epsilon", "1", "--reproducible",
        "--seed", "3", "-o", out,
    )  # fmt: skip
    assert code == 0, text
    assert _flat(split_note(3)) in text  # the CLI says it added the split ...
    data, notes = read_graph(
        files["edges"], features=files["features"], labels=files["labels"], domain=(0.0, 1.0), split_seed=3
    )
    assert split_note(3) in notes  # ... and Python returns the same note
    expected = stratified_split(Data(y=data.y.clone()), seed=3)  # the split is stratified_split's of seed 3
    assert all(torch.equal(data[m], expected[m]) for m in MASKS)

    cli = pg.load_release(out)
    py = pg.privatize(data, "lpgnn", epsilon=1.0, seed=3)
    for key in (*MASKS, "y", "edge_index", "x"):
        assert torch.equal(cli.data[key], py.data[key]), key
    assert not torch.equal(py.data.x, data.x)  # noise was drawn (the same in both)
    # the command line's report states what reading did; in Python read_graph returns it beside the graph
    assert public_note(split_note(3)) in "\n".join(cli.report.lines())
    assert [g.epsilon for g in cli.report.guarantees] == [g.epsilon for g in py.report.guarantees]

    other, _ = read_graph(files["edges"], features=files["features"], labels=files["labels"], split_seed=4)
    assert not torch.equal(other.train_mask, data.train_mask)  # the seed chooses the split
    bare, bare_notes = read_graph(files["edges"], labels=files["labels"], split_seed=None)
    assert "train_mask" not in bare and not any("split" in n for n in bare_notes)


def test_a_feature_method_without_a_declared_domain_is_refused_alike(files, tmp_path, invoke):
    """No [0, 1] assumed anywhere: the command line without --domain and Python without a domain refuse with the
    same message (naming --domain and Python's domain=); a declared domain is accepted by both (test above)."""
    code, text, _ = invoke("release", "lpgnn", *_cli_args(files), "--epsilon", "1", "-o", tmp_path / "o.pt")
    assert code == 2 and _flat(domain_message("lpgnn", "edges.csv")) in text, text
    assert not (tmp_path / "o.pt").exists()

    data, _ = read_graph(files["edges"], features=files["features"], labels=files["labels"])
    assert "feature_domain" not in data
    with pytest.raises(ValueError) as refused:
        pg.privatize(data, "lpgnn", epsilon=1.0, seed=0)
    assert str(refused.value) == domain_message("lpgnn", "the input")
    assert "--domain LO,HI" in str(refused.value) and "domain=(lo, hi)" in str(refused.value)
    with pytest.raises(ValueError, match=r"MultiBit\(\.\.\., domain=\(lo, hi\)\)"):
        MultiBit(1.0, seed=0)(data)  # the transform's own argument, the same rule
    data.feature_domain = (0.0, 1.0)  # declared on the Data: accepted
    assert pg.privatize(data, "lpgnn", epsilon=1.0, seed=0).report.guarantees[0].epsilon == 1.0
    assert MultiBit(1.0, seed=0, domain=(0.0, 1.0))(read_graph(files["edges"], features=files["features"]).data).x.shape


def test_read_graph_returns_a_named_pair(files):
    """``read_graph`` gives a :class:`GraphRead`: ``data, notes = ...`` unpacks it, ``.data``/``.notes`` name it."""
    result = read_graph(files["edges"], labels=files["labels"])
    assert isinstance(result, GraphRead) and isinstance(result, tuple)
    data, notes = result
    assert data is result.data and notes is result.notes and all(m in data for m in MASKS)


def test_some_masks_without_the_others_are_refused(tmp_path):
    data = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), y=torch.tensor([0, 1]), num_nodes=2)
    data.train_mask = torch.tensor([True, False])
    torch.save(data, tmp_path / "g.pt")
    with pytest.raises(ValueError, match="has train_mask but no val_mask, test_mask: give all three masks, or none"):
        read_graph(tmp_path / "g.pt")


def test_a_run_of_a_data_without_a_split_uses_the_split_read_graph_adds(files):
    """``ExperimentSpec(input=data)`` (the Python of ``privgraph run --input``) splits a labelled ``Data`` without
    masks as ``read_graph`` does, with ``seed``, once for every trial, says so, and leaves the caller's ``Data``."""
    from privgraph.experiments import ExperimentSpec

    data, _ = read_graph(files["edges"], features=files["features"], labels=files["labels"], split_seed=None)
    _, task = ExperimentSpec(method="mlp", input=data, trials=2, seed=3).build()
    loaded = task.load()
    read, _ = read_graph(files["edges"], features=files["features"], labels=files["labels"], split_seed=3)
    assert all(torch.equal(loaded[m], read[m]) for m in MASKS) and "train_mask" not in data
    assert task.trial_data(loaded, 12345) is loaded  # every trial: the same split
    assert f"input graph: {public_note(split_note(3))}" in task.notes
