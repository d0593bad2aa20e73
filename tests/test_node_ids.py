"""An edge list that names its nodes by its own ids: the ids mapped to 0..n-1 in sorted order, the
map released beside every format (``PATH.ids.csv``) and read back by ``load_release``, the csv tables in the
original ids, Python and the CLI reading the same graph; and a ledger bound to its dataset's name and
fingerprint, not to the input file's name."""

import csv
import json

import pytest
import torch
from typer.testing import CliRunner

import privgraph as pg
from privgraph.cli import app
from privgraph.data import read_graph
from privgraph.release import NODE_IDS_NOTE

runner = CliRunner()

EDGES = "src,dst,private\nuser9228,user17,1\nuser17,bob,0\nbob,user9228,1\nzed,bob,0\n"
FEATURES = "id,f1,f2\nzed,6,7\nbob,0,1\nuser17,2,3\nuser9228,4,5\nlonely,8,9\n"
LABELS = "id,label\nbob,1\nuser17,0\nzed,1\nuser9228,0\nlonely,1\n"
IDS = ["bob", "lonely", "user17", "user9228", "zed"]


@pytest.fixture
def files(tmp_path):
    for name, text in (("edges.csv", EDGES), ("nodes.csv", FEATURES), ("labels.csv", LABELS)):
        (tmp_path / name).write_text(text)
    return tmp_path


def _read(files, name="edges.csv"):
    return read_graph(files / name, features=files / "nodes.csv", labels=files / "labels.csv")[0]


def _table(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_release_round_trip_pt_and_csv(files):
    data = _read(files)
    assert data.node_ids == IDS
    rel = pg.privatize(data, "edgerand", epsilon=1.0, seed=0)
    assert rel.node_ids == IDS and "node_ids" not in rel.data
    assert any(NODE_IDS_NOTE in line for line in rel.report.lines())
    rel.save(files / "out.pt")
    meta = json.loads((files / "out.pt.json").read_text())
    assert "out.pt.ids.csv" in meta["files"] and meta["node_ids"] == "out.pt.ids.csv"
    assert any(NODE_IDS_NOTE in line for line in meta["report"])
    assert _table(files / "out.pt.ids.csv") == [{"node": str(i), "id": node} for i, node in enumerate(IDS)]
    back = pg.load_release(files / "out.pt")
    assert back.node_ids == IDS and torch.equal(back.data.edge_index, rel.data.edge_index)

    rel.save(files / "out", format="csv")
    meta = json.loads((files / "out.json").read_text())
    assert "out.ids.csv" in meta["files"] and "out.edges.csv" in meta["files"]
    edges = _table(files / "out.edges.csv")
    expected = [(IDS[u], IDS[v]) for u, v in rel.data.edge_index.t().tolist()]
    assert [(row["source"], row["target"]) for row in edges] == expected
    assert [row["node"] for row in _table(files / "out.nodes.csv")] == IDS
    assert [row["id"] for row in _table(files / "out.ids.csv")] == IDS
    assert [f.name for f in rel.files(files / "out", "csv")] == [
        "out.edges.csv",
        "out.nodes.csv",
        "out.ids.csv",
        "out.json",
    ]


def test_damaged_id_map_refused(files):
    pg.privatize(_read(files), "edgerand", epsilon=1.0, seed=0).save(files / "out.pt")
    (files / "out.pt.ids.csv").write_text("node,id\n0,bob\n")
    with pytest.raises(ValueError, match=r"out\.pt\.ids\.csv has 14 bytes, its report says"):  # its checksum
        pg.load_release(files / "out.pt")
    report = json.loads((files / "out.pt.json").read_text())
    del report["checksums"]  # a report written before the checksums: the id map's own check
    (files / "out.pt.json").write_text(json.dumps(report))
    with pytest.raises(ValueError, match="has 1 ids, expected 5"):
        pg.load_release(files / "out.pt")


def test_cli_reads_the_graph_python_reads(files):
    data = _read(files)
    res = _invoke(
        "release", "edgerand", "--input", files / "edges.csv", "--features", files / "nodes.csv",
        "--labels", files / "labels.csv", "--epsilon", "1", "-o", files / "cli.pt",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rel = pg.load_release(files / "cli.pt")
    assert rel.node_ids == data.node_ids and rel.data.num_nodes == data.num_nodes
    assert torch.equal(rel.data.x, data.x) and torch.equal(rel.data.y, data.y)
    assert (files / "cli.pt.ids.csv").exists()


def test_cli_refusal_names_the_features_file(files):
    (files / "short.csv").write_text("id,f1,f2\nbob,0,1\nuser17,2,3\n")
    res = _invoke("release", "edgerand", "--input", files / "edges.csv", "--features", files / "short.csv",
                  "--epsilon", "1", "-o", files / "x.pt")  # fmt: skip
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "edges.csv, line 2: node id 'user9228' has no row in the features file short.csv" in text
    assert "(3 edge rows name ids of no row; it has 2 rows)" in text and "--drop-unknown" in text
    assert not (files / "x.pt").exists()


def _release(files, graph, out, *extra):
    return _invoke("release", "edgerand", "--input", files / graph, "--epsilon", "1", "-o", files / out,
                   "--ledger", files / "ledger.json", *extra)  # fmt: skip


def test_ledger_follows_the_dataset_not_the_file(files):
    assert _invoke("ledger", files / "ledger.json", "--dataset", "mine", "--budget", "private edge=10").exit_code == 0
    assert _release(files, "edges.csv", "a.pt").exit_code == 0
    (files / "renamed.csv").write_text(EDGES)  # the same graph under another name
    res = _release(files, "renamed.csv", "b.pt")
    assert res.exit_code == 0, res.output
    assert _release(files, "renamed.csv", "c.pt", "--ledger-name", "mine").exit_code == 0
    book = pg.Ledger(files / "ledger.json")
    assert book.dataset == "mine" and len(book.entries) == 3

    res = _release(files, "renamed.csv", "d.pt", "--ledger-name", "other")
    assert res.exit_code == 2 and "is for dataset 'mine', not 'other'" in " ".join(res.output.split())
    (files / "bigger.csv").write_text(EDGES + "zed,newcomer,0\n")  # another graph: one node more
    res = _release(files, "bigger.csv", "e.pt")
    assert res.exit_code == 2 and "refused before any noise" in " ".join(res.output.split())
    assert not (files / "d.pt").exists() and not (files / "e.pt").exists()
    assert len(pg.Ledger(files / "ledger.json").entries) == 3


def test_new_ledger_takes_the_file_stem(files):
    assert _release(files, "edges.csv", "a.pt").exit_code == 0
    assert pg.Ledger(files / "ledger.json").dataset == "edges"  # the stem, as the spec's name (not edges.csv)
    (files / "copy.csv").write_text(EDGES)
    assert _release(files, "copy.csv", "b.pt").exit_code == 0


def test_transform_keeps_the_ids(files):
    out = pg.Privatize("edgerand", epsilon=1.0, seed=0)(_read(files))
    assert out.node_ids == IDS and out.num_nodes == len(IDS)


def test_cli_reading_options(files):
    """--drop-unknown, --strict, --comment and --missing-label reach the reader; without --input they are refused."""
    (files / "short.csv").write_text("id,f1,f2\nbob,0,1\nuser17,2,3\n")
    res = _invoke("release", "edgerand", "--input", files / "edges.csv", "--features", files / "short.csv",
                  "--drop-unknown", "--epsilon", "1", "-o", files / "x.pt")  # fmt: skip
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "3 edge rows naming node ids of no features row dropped (first: line 2, id 'user9228'" in text
    assert pg.load_release(files / "x.pt").node_ids == ["bob", "user17"]
    (files / "rep.csv").write_text("# a comment\n" + EDGES + "bob,user9228,1\n")
    base = ("release", "edgerand", "--input", files / "rep.csv", "--epsilon", "1", "--comment", "#")
    res = _invoke(*base, "--strict", "-o", files / "y.pt")
    assert res.exit_code == 2 and "rep.csv, line 7: edge (bob, user9228) repeats line 5" in " ".join(res.output.split())
    res = _invoke(*base, "-o", files / "y.pt")
    assert res.exit_code == 0 and "1 repeated edge row merged" in " ".join(res.output.split()), res.output
    (files / "miss.csv").write_text(LABELS.replace("zed,1", "zed,?"))
    res = _invoke("release", "edgerand", "--input", files / "edges.csv", "--labels", files / "miss.csv",
                  "--missing-label", "?", "--epsilon", "1", "-o", files / "z.pt")  # fmt: skip
    assert res.exit_code == 0, res.output
    (files / "both.csv").write_text(FEATURES.replace("id,f1,f2", "id,f1,cls").replace("lonely,8,9", "lonely,8,"))
    res = _invoke("release", "edgerand", "--input", files / "edges.csv", "--features", files / "both.csv",
                  "--label-column", "cls", "--epsilon", "1", "-o", files / "v.pt")  # fmt: skip
    assert res.exit_code == 0, res.output
    released = pg.load_release(files / "v.pt").data
    assert released.x.shape == (5, 1) and released.y.tolist() == [1, -1, 3, 5, 7]
    res = _invoke("release", "edgerand", "--strict", "--epsilon", "1", "-o", files / "w.pt")
    assert res.exit_code == 2 and "--strict describes an --input file" in " ".join(res.output.split())
