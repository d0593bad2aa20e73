"""A release opens without privgraph: each format (pt, npz, csv) is read in an isolated interpreter where
importing privgraph or PyG fails, and what it reads equals the release's tensors; ``load_release`` gives the
same ``Data``/``HeteroData`` back from pt, and still reads the older format (a pickled PyG object)."""

import json
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch_geometric.data import Data, HeteroData
from typer.testing import CliRunner

import privgraph as pg
import privgraph.release_formats as formats
from privgraph.cli import app
from privgraph.data.synthetic import hetero_sbm_graph, sensitive_sbm_graph

runner = CliRunner()

# Run with ``python -I`` (no PYTHONPATH, no user site): privgraph and PyG cannot be imported, only torch,
# numpy and the standard library.  For each job [format, path, csv files...] it gives {name: values} with the npz
# naming (FIELD, TYPE__FIELD), Blink-Soft's P computed from the pt file with the formula the docs give, and
# every csv file as {column: [text]}.  One interpreter reads every file (torch's import is the slow part).
READER = r"""
import csv, json, os, sys
sys.modules["privgraph"] = sys.modules["torch_geometric"] = None  # an import of either fails
import numpy, torch

def plain(v):
    return v.tolist() if hasattr(v, "tolist") else v

def read(fmt, path, *files):
    out = {}
    if fmt == "pt":
        d = torch.load(path)  # weights_only=True: torch's default
        named = dict(d["graph"])
        for group in ("nodes", "edges"):
            for t, fields in d.get(group, {}).items():
                named.update({f"{t}__{k}": v for k, v in fields.items()})
        for k, v in named.items():
            if isinstance(v, dict) and v.get("operator") == "blink-posterior":
                b, s, shift = v["beta"], v["states"], v["shift"]
                v = torch.sigmoid(b[:, None] + b[None, :] + shift[s.long()]).fill_diagonal_(0)
            out[k] = plain(v)
        out["__meta__"] = [d["format"], d["kind"]]
    elif fmt == "npz":
        arrays = numpy.load(path)  # allow_pickle=False: numpy's default
        out = {k: plain(arrays[k]) for k in arrays.files}
    else:
        for f in files:
            with open(f, newline="") as handle:
                rows = list(csv.reader(handle))
            out[os.path.basename(f)] = {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}
    return out

results = [read(*job) for job in json.loads(sys.stdin.read())]
assert not any(m.startswith(("privgraph", "torch_geometric")) for m in sys.modules if sys.modules[m] is not None)
print(json.dumps(results))
"""
NAMES = ["lpgnn", "weighted", "labels", "embedding", "hetedp", "soft"]


def read_without_privgraph(jobs: list[list]) -> list[dict]:
    res = subprocess.run(
        [sys.executable, "-I", "-c", READER],
        input=json.dumps([[str(a) for a in job] for job in jobs]),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


# the graph of these tests, the sbm fixture's base arguments (a test overrides some of them)
GRAPH = {"num_nodes": 60, "seed": 0}


@pytest.fixture(scope="module")
def releases(sbm) -> dict[str, pg.PrivateRelease]:
    data = sbm(GRAPH)
    lpgnn = pg.privatize(data, "lpgnn", epsilon=2.0, seed=0)
    weighted = lpgnn.data.clone()
    weighted.edge_weight = torch.rand(weighted.edge_index.shape[1], generator=torch.Generator().manual_seed(0))
    hetero = hetero_sbm_graph(num_papers=60, num_authors=40, num_features=8, seed=0)
    return {
        "lpgnn": lpgnn,
        "weighted": replace(lpgnn, data=weighted),
        "labels": pg.privatize(data, "lpgnn", epsilon=2.0, label_epsilon=1.0, seed=0),
        "embedding": pg.privatize(sensitive_sbm_graph(num_nodes=60, seed=0), "ppcvgae", epsilon=2.0, seed=0, epochs=3),
        "hetedp": pg.privatize(
            hetero,
            "hetedp",
            epsilon=2.0,
            seed=0,
            edge_type=("paper", "to", "author"),
            epochs=2,
            batch_size=64,
            edge_count=200,
        ),
        "soft": pg.privatize(data, "blink", epsilon=2.0, seed=0, variant="soft"),
    }


@pytest.fixture(scope="module")
def read_back(releases, tmp_path_factory) -> dict[tuple[str, str], tuple]:
    """(name, format) → (the folder, what the isolated interpreter read) for every release in every format."""
    jobs, keys = [], []
    for name in NAMES:
        for fmt in ("pt", "npz", "csv"):
            folder = tmp_path_factory.mktemp(f"{name}-{fmt}")
            rel = releases[name]
            path, _ = rel.save(folder / ("r" if fmt == "csv" else f"r.{fmt}"), format=fmt)
            files = [f for f in rel.files(folder / "r", fmt) if f.suffix == ".csv"] if fmt == "csv" else []
            jobs.append([fmt, path, *files])
            keys.append((name, fmt, folder))
    return {(name, fmt): (folder, got) for (name, fmt, folder), got in zip(keys, read_without_privgraph(jobs))}


def _named(data: Data | HeteroData) -> dict:
    """Every field by the npz name (FIELD, NODETYPE__FIELD, SRC__REL__DST__FIELD), Blink-Soft's P materialised."""
    if isinstance(data, HeteroData):
        out = {}
        for store in data.node_stores + data.edge_stores:
            key = store._key if isinstance(store._key, str) else "__".join(store._key)
            out.update({f"{key}__{k}": v for k, v in store.items()})
    else:
        out = dict(data.items())
    return {k: v.to_dense() if hasattr(v, "to_dense") and not torch.is_tensor(v) else v for k, v in out.items()}


def _equal(got, expected) -> bool:
    if torch.is_tensor(expected):
        return torch.equal(torch.tensor(got, dtype=expected.dtype).reshape(expected.shape), expected)
    return got == expected


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fmt", ["pt", "npz"])
def test_pt_and_npz_open_without_privgraph_and_hold_the_release(releases, read_back, name, fmt):
    rel = releases[name]
    got = dict(read_back[name, fmt][1])
    if fmt == "pt":
        assert got.pop("__meta__") == ["privgraph-release/2", type(rel.data).__name__]
    expected = _named(rel.data)
    assert set(got) == set(expected)
    assert all(_equal(got[k], v) for k, v in expected.items()), [
        k for k, v in expected.items() if not _equal(got[k], v)
    ]


def _float_column(texts: list[str], dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor([float(t) for t in texts], dtype=dtype)


def _check_table(table: dict, fields: dict, n: int, edges: bool):
    """The csv columns equal the fields: source,target[,weight] for edges; node, then every field per node."""
    if edges:
        assert list(table)[:2] == ["source", "target"]
        if "dense_adjacency" in fields:  # Blink-Soft: every pair with P_ij > 0
            p = fields["dense_adjacency"].to_dense()
            src, dst = (torch.tensor([int(t) for t in table[c]]) for c in ("source", "target"))
            assert torch.equal(torch.stack([src, dst]), p.nonzero().T) and len(src) == n * (n - 1)
            assert torch.equal(_float_column(table["weight"], torch.float32), p[src, dst])
            return
        ei = fields["edge_index"]
        assert [int(t) for t in table["source"]] == ei[0].tolist()
        assert [int(t) for t in table["target"]] == ei[1].tolist()
        assert ("weight" in table) == ("edge_weight" in fields)
        if "edge_weight" in fields:
            assert torch.equal(_float_column(table["weight"], torch.float32), fields["edge_weight"])
        return
    assert [int(t) for t in table["node"]] == list(range(n))
    columns = ["node"]
    for k, v in fields.items():
        if not torch.is_tensor(v) or k.startswith("edge_"):
            continue
        cols = [k] if v.dim() == 1 else [f"{k}_{j}" for j in range(v.shape[1])]
        columns += cols
        for j, c in enumerate(cols):
            want = v if v.dim() == 1 else v[:, j]
            if want.is_floating_point():
                assert torch.equal(_float_column(table[c], want.dtype), want), c
            else:
                assert [int(t) for t in table[c]] == want.long().tolist(), c
    assert list(table) == columns


@pytest.mark.parametrize("name", NAMES)
def test_csv_is_edge_lists_and_node_tables_read_with_the_csv_module(releases, read_back, name):
    rel = releases[name]
    data = rel.data
    tmp_path, tables = read_back[name, "csv"]
    files = [f for f in rel.files(tmp_path / "r", "csv") if f.suffix == ".csv"]
    if isinstance(data, HeteroData):
        assert set(tables) == {f"r.{t}.nodes.csv" for t in data.node_types} | {
            f"r.{'__'.join(t)}.edges.csv" for t in data.edge_types
        }
        for t in data.node_types:
            _check_table(tables[f"r.{t}.nodes.csv"], data[t].to_dict(), data[t].num_nodes, edges=False)
        for t in data.edge_types:
            _check_table(tables[f"r.{'__'.join(t)}.edges.csv"], data[t].to_dict(), 0, edges=True)
        assert (tmp_path / "r.model.pt").exists()  # HeteDP's weights beside, a plain state dict
        state = torch.load(tmp_path / "r.model.pt")
        assert all(torch.equal(state[k], v) for k, v in rel.model_state.items())
    else:
        graph = "edge_index" in data or "dense_adjacency" in data
        scalars = {
            k: str(v) for k, v in data.items() if not torch.is_tensor(v) and k not in ("num_nodes", "dense_adjacency")
        }
        assert set(tables) == {"r.nodes.csv"} | ({"r.edges.csv"} if graph else set()) | (
            {"r.graph.csv"} if scalars else set()
        )
        if scalars:  # label LDP: ε_y and the number of classes, to denoise the reports
            assert dict(zip(*tables["r.graph.csv"].values())) == scalars and "label_epsilon" in scalars
        _check_table(tables["r.nodes.csv"], data.to_dict(), data.num_nodes, edges=False)
        if graph:
            _check_table(tables["r.edges.csv"], data.to_dict(), data.num_nodes, edges=True)
    meta = json.loads((tmp_path / "r.json").read_text())
    if isinstance(data, Data) and "edge_index" in data:  # the report says how to read the rows
        rows = set(zip(*(tables["r.edges.csv"][k] for k in ("source", "target"))))
        both = all((t, s) in rows for s, t in rows)
        assert meta["edge_direction"] == ("both directions" if both else "as listed")
    else:
        assert meta["edge_direction"] is None
    assert meta["file_format"] == "csv" and meta["files"] == [f.name for f in files]
    with pytest.raises(ValueError, match="csv format"):
        pg.load_release(tmp_path / "r")


def _same_data(a: Data | HeteroData, b: Data | HeteroData) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, HeteroData):
        if a.node_types != b.node_types or a.edge_types != b.edge_types:
            return False
        return all(_same_data(Data(**a[t].to_dict()), Data(**b[t].to_dict())) for t in a.node_types + a.edge_types)
    x, y = _named(a), _named(b)
    return list(x) == list(y) and all(_equal(y[k].tolist() if torch.is_tensor(y[k]) else y[k], v) for k, v in x.items())


@pytest.mark.parametrize("name", NAMES)
def test_load_release_gives_the_same_pyg_object_back(releases, tmp_path, name):
    rel = releases[name]
    rel.save(tmp_path / "r.pt")
    back = pg.load_release(tmp_path / "r.pt")
    assert _same_data(rel.data, back.data)
    assert back.report.to_dict() == rel.report.to_dict() and back.fields == rel.fields
    if name == "soft":  # the operator is rebuilt: a GCN trains on it as on the original
        assert type(back.data.dense_adjacency) is type(rel.data.dense_adjacency)
        assert 0.0 <= pg.fit(back, seed=0, epochs=3).test_accuracy <= 1.0
    if name == "hetedp":
        assert all(torch.equal(back.model_state[k], v) for k, v in rel.model_state.items())


def test_the_older_format_a_pickled_pyg_object_still_loads(releases, tmp_path):
    for name in ("lpgnn", "hetedp"):
        rel = releases[name]
        path, report = rel.save(tmp_path / f"{name}.pt")
        torch.save(rel.data, path)  # what privgraph-release/1 wrote
        meta = json.loads(report.read_text())
        meta["format"] = "privgraph-release/1"
        del meta["file_format"], meta["files"], meta["checksums"]  # a report written before the checksums
        report.write_text(json.dumps(meta))
        assert _same_data(rel.data, pg.load_release(path).data)


def test_a_file_that_is_not_a_release_is_refused(releases, tmp_path):
    path, report = releases["lpgnn"].save(tmp_path / "r.pt")
    meta = json.loads(report.read_text())
    del meta["checksums"]  # a report without checksums (written before them): the data file's own checks
    report.write_text(json.dumps(meta))
    torch.save({"format": "privgraph-release/2", "kind": "Module"}, path)
    with pytest.raises(ValueError, match="not a privgraph-release/2 data file"):
        pg.load_release(path)
    torch.save(torch.zeros(3), path)
    with pytest.raises(ValueError, match="not a privgraph-release/2"):
        pg.load_release(path)
    torch.save({"format": "privgraph-release/2", "kind": "Data", "graph": {"x": {"operator": "os.system"}}}, path)
    with pytest.raises(ValueError, match="unknown dense operator 'os.system'"):
        pg.load_release(path)
    torch.save({"format": "privgraph-release/2", "kind": "HeteroData", "graph": {}}, path)
    with pytest.raises(ValueError, match="not a privgraph-release/2 data file"):
        pg.load_release(path)


def test_dense_soft_matrix_is_written_only_when_small(releases, tmp_path, monkeypatch):
    monkeypatch.setattr(formats, "DENSE_LIMIT", 59)  # the graph has 60 nodes
    for fmt in ("npz", "csv"):
        with pytest.raises(ValueError, match="--format pt"):
            releases["soft"].save(tmp_path / "s", format=fmt)
        assert not list(tmp_path.iterdir())  # nothing half-written
    releases["soft"].save(tmp_path / "s.pt")  # pt holds what defines P, at any size


def test_save_into_a_missing_folder_needs_mkdir(releases, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        releases["lpgnn"].save(tmp_path / "no" / "r.pt")
    path, _ = releases["lpgnn"].save(tmp_path / "no" / "r.pt", mkdir=True)
    assert path.exists()
    with pytest.raises(ValueError, match="unknown release format"):
        releases["lpgnn"].save(tmp_path / "r.x", format="parquet")


def test_cli_release_format_and_missing_folder(tmp_path, sbm):
    torch.save(sbm(GRAPH), tmp_path / "g.pt")
    base = ["release", "lpgnn", "--input", str(tmp_path / "g.pt"), "--epsilon", "2"]
    res = subprocess.run(
        [sys.executable, "-m", "privgraph", *base, "-o", str(tmp_path / "no" / "dir" / "x.pt")],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
        timeout=120,
    )
    assert res.returncode == 2 and not (tmp_path / "no").exists() and not res.stdout
    missing = tmp_path / "no" / "dir"
    assert res.stderr.strip() == (
        f"error: cannot write {missing}/x.pt: the folder {missing} does not exist (--mkdir creates it)"
    )
    res = runner.invoke(app, [*base, "-o", str(tmp_path / "new" / "x"), "--mkdir", "--format", "csv"])
    assert res.exit_code == 0, res.output
    written = sorted(p.name for p in (tmp_path / "new").iterdir())
    assert written == ["x.edges.csv", "x.json", "x.nodes.csv"]
    assert all(str(tmp_path / "new" / name) in res.output.replace("\n", "") for name in written)
    res = runner.invoke(app, [*base, "-o", str(tmp_path / "x.npz"), "--format", "npz"])
    assert res.exit_code == 0, res.output
    arrays = np.load(tmp_path / "x.npz")
    assert (
        arrays["x"].shape[0] == 60
        and arrays["edge_index"].shape[0] == 2
        and json.loads((tmp_path / "x.npz.json").read_text())["file_format"] == "npz"
    )
