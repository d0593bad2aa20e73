"""Your own graph through the real command line (subprocess): each input format, and each bad
input as one error line, exit code 2 and nothing written."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from privgraph.data import sbm_graph

N = 60


def cli(*args, cwd=None):
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "privgraph", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


@pytest.fixture(scope="module")
def graph():
    return sbm_graph(num_nodes=N, num_classes=2, num_features=6, avg_degree=4.0, seed=0)


def _write_edge_list(path, edge_index, sep=",", header=None, extra=None):
    rows = [] if header is None else [sep.join(header)]
    for i, (u, v) in enumerate(edge_index.t().tolist()):
        cols = [str(u), str(v)] + ([str(int(extra[i]))] if extra is not None else [])
        rows.append(sep.join(cols))
    path.write_text("\n".join(rows) + "\n")


def test_pt_edge_list_and_npz_inputs_release_and_run(graph, tmp_path):
    torch.save(graph, tmp_path / "g.pt")
    np.save(tmp_path / "x.npy", graph.x.numpy())
    np.savetxt(tmp_path / "y.csv", graph.y.numpy(), fmt="%d")
    _write_edge_list(tmp_path / "e.tsv", graph.edge_index, sep="\t")
    ei = graph.edge_index.numpy()
    sp.save_npz(tmp_path / "a.npz", sp.coo_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(N, N)).tocsr())
    for name, extra in (("g.pt", []), ("e.tsv", ["--features", tmp_path / "x.npy", "--labels", tmp_path / "y.csv"]),
                        ("a.npz", ["--features", tmp_path / "x.npy"])):
        out = tmp_path / f"{name}.release.pt"
        res = cli("release", "lpgnn", "--input", tmp_path / name, *extra, "--domain", "0,1", "--epsilon", "1",
                  "-o", out)
        assert res.returncode == 0, res.stderr
        released = torch.load(out)
        assert isinstance(released, Data) and released.num_nodes == N
        assert not torch.equal(released.x, graph.x)  # privatized, never the raw features
        meta = json.loads(out.with_name(out.name + ".json").read_text())
        assert meta["fields"]["x"].startswith("privatized") and meta["provenance"]["dataset"] == "input"
        assert meta["report"][0].startswith("Whatever else they know")
    res = cli("run", "lpgnn", "--input", tmp_path / "g.pt", "--epsilon", "1", "--trials", "1", "--set", "epochs=5",
              "--db", tmp_path / "r.db", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["results"][0]["trials"] == 1


def test_private_edge_column_reaches_an_edge_level_method(graph, tmp_path):
    und = graph.edge_index[:, graph.edge_index[0] < graph.edge_index[1]]  # each pair once: the reader adds reverses
    private = (torch.arange(und.shape[1]) % 4 == 0).int()
    _write_edge_list(tmp_path / "e.csv", und, header=["src", "dst", "private"], extra=private)
    np.save(tmp_path / "x.npy", graph.x.numpy())
    out = tmp_path / "r.pt"
    res = cli("release", "edgerand", "--input", tmp_path / "e.csv", "--private-column", "private", "--features",
              tmp_path / "x.npy", "--epsilon", "2", "-o", out)
    assert res.returncode == 0, res.stderr
    assert "added the reverse direction" in res.stderr
    meta = json.loads(out.with_name("r.pt.json").read_text())
    assert "private edge" in meta["privacy"]["by_unit"]
    assert "x" in meta["raw_fields"]  # EdgeRand protects edges only: the features are written as given, and said so


def _bad_inputs(graph, tmp_path):
    e = graph.edge_index
    asym = e[:, : e.shape[1] - 3]
    loops = torch.cat([e, torch.tensor([[0], [0]])], dim=1)
    dup = torch.cat([e, e[:, :2]], dim=1)
    out_of_range = torch.cat([e, torch.tensor([[0, N + 5], [N + 5, 0]])], dim=1)
    for name, ei in (("asym.csv", asym), ("loops.csv", loops), ("dup.csv", dup), ("range.csv", out_of_range)):
        _write_edge_list(tmp_path / name, ei)
    x = graph.x.numpy().copy()
    np.save(tmp_path / "x.npy", x)
    x_nan = x.copy()
    x_nan[0, 0] = np.nan
    np.save(tmp_path / "nan.npy", x_nan)
    np.save(tmp_path / "big.npy", x * 5 + 1)
    np.savetxt(tmp_path / "short.csv", graph.y.numpy()[:-3], fmt="%d")
    (tmp_path / "garbage.pt").write_bytes(b"not a torch file")
    feats = ["--features", tmp_path / "x.npy"]
    return [
        (["release", "blink", "--input", tmp_path / "asym.csv", *feats], "no reverse"),
        (["release", "blink", "--input", tmp_path / "loops.csv", *feats], "self-loop"),
        (["release", "lpgnn", "--input", tmp_path / "dup.csv", *feats], "duplicate"),
        (["release", "lpgnn", "--input", tmp_path / "range.csv", *feats], "out of range"),
        (["release", "lpgnn", "--input", tmp_path / "asym.csv", "--features", tmp_path / "nan.npy"], "NaN"),
        (["release", "lpgnn", "--input", tmp_path / "asym.csv", "--features", tmp_path / "big.npy", "--domain",
          "0,1"], "outside the declared domain"),
        (["release", "lpgnn", "--input", tmp_path / "asym.csv", *feats, "--labels", tmp_path / "short.csv"],
         "expected"),
        (["release", "lpgnn", "--input", tmp_path / "garbage.pt"], "cannot read"),
        (["release", "lpgnn", "--input", tmp_path / "missing.csv"], "not found"),
        (["release", "mlp", "--dataset", "sbm"], "--allow-non-private"),
        (["release", "lpgnn", "--dataset", "nope"], "unknown homogeneous dataset"),
        (["release", "nope"], "unknown method"),
    ]


def test_bad_input_is_one_line_exit_2_and_nothing_written(graph, tmp_path):
    for args, needle in _bad_inputs(graph, tmp_path):
        out = tmp_path / "out.pt"
        res = cli(*args, "-o", out)
        text = " ".join(res.stderr.split())
        assert res.returncode == 2, (args, res.stderr)
        assert text.startswith("error:") and text.count("error:") == 1 and "Traceback" not in res.stderr, text
        assert needle in text, (needle, text)
        assert not out.exists() and not (tmp_path / "out.pt.json").exists()


@pytest.mark.parametrize("args, needle", [
    (["--set", "lr=abc"], "lr='abc'"),
    (["--set", "epochs=1.5"], "epochs='1.5'"),
    (["--db", "/proc/forbidden/r.db"], "cannot write the results database"),
    (["--dataset", "nope"], "unknown homogeneous dataset"),
])
def test_run_user_errors_exit_2_before_any_work(tmp_path, args, needle):
    db = [] if "--db" in args else ["--db", tmp_path / "r.db"]
    res = cli("run", "lpgnn", "--epsilon", "1", *db, *args)
    text = " ".join(res.stderr.split())
    assert res.returncode == 2 and text.startswith("error:") and needle in text, text
    assert "[privgraph]" not in res.stderr  # no progress line: nothing started


def test_version_and_module_entry_point():
    res = cli("--version")
    assert res.returncode == 0 and res.stdout.startswith("privgraph ")
