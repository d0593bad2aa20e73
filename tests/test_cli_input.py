"""Your own graph through the real command line (subprocess, or typer's runner in-process): each
input format, and each bad input as one error line, exit code 2 and nothing written."""

import hashlib
import json
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Data
from torch_geometric.utils import is_undirected

import privgraph as pg
from privgraph.methods.base import NO_FEATURES_NOTE

N = 60


def cli(*args, cwd=None):
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "privgraph", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


# ``privgraph.cli.main`` (what ``python -m privgraph`` runs) once per argument list, in ONE fresh interpreter:
# each command's exit status, and what it wrote to the file descriptors 1 and 2 (so whatever writes there is
# seen: rich's consoles, warnings, a traceback), as a separate process per command would show them.  An
# exception escaping main() is printed as the interpreter would print it (a traceback on stderr, status 1).
_MAIN_PER_ARGV = r"""
import json, os, sys, tempfile, traceback

cases, target = json.loads(sys.argv[1]), sys.argv[2]
results = []
for argv in cases:
    saved = (os.dup(1), os.dup(2))
    files = (tempfile.TemporaryFile(), tempfile.TemporaryFile())
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(files[0].fileno(), 1)
    os.dup2(files[1].fileno(), 2)
    sys.argv = ["privgraph", *argv]
    code = 0
    try:
        from privgraph.cli import main

        main()
    except SystemExit as stop:
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
        code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
    out, err = (f.seek(0) or f.read().decode() for f in files)
    results.append({"returncode": code, "stdout": out, "stderr": err})
with open(target, "w") as f:
    json.dump(results, f)
"""


def cli_each(argvs, tmp_path):
    """:func:`cli` of each argument list, for commands whose property is their output, status and files rather
    than the process: one interpreter runs them all (``_MAIN_PER_ARGV``), which saves a start-up per command."""
    argvs = [[str(a) for a in argv] for argv in argvs]
    results = tmp_path / "cli_each.json"
    proc = subprocess.run(
        [sys.executable, "-c", _MAIN_PER_ARGV, json.dumps(argvs), str(results)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
        timeout=600,
    )
    assert proc.returncode == 0 and not proc.stdout and not proc.stderr, proc.stdout + proc.stderr
    return [
        subprocess.CompletedProcess(argv, r["returncode"], r["stdout"], r["stderr"])
        for argv, r in zip(argvs, json.loads(results.read_text()))
    ]


@pytest.fixture(scope="module")
def graph(sbm):
    return sbm(num_nodes=N, num_classes=2, num_features=6, avg_degree=4.0, seed=0)


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
    inputs = (
        ("g.pt", []),
        ("e.tsv", ["--features", tmp_path / "x.npy", "--labels", tmp_path / "y.csv"]),
        ("a.npz", ["--features", tmp_path / "x.npy"]),
    )
    releases = [
        ["release", "lpgnn", "--input", tmp_path / name, *extra, "--domain", "0,1", "--epsilon", "1", "-o", out]
        for name, extra in inputs
        for out in [tmp_path / f"{name}.release.pt"]
    ]
    run = ["run", "lpgnn", "--input", tmp_path / "g.pt", "--epsilon", "1", "--trials", "1", "--set", "epochs=5"]
    run += ["--db", tmp_path / "r.db", "--format", "json"]
    *released_by, res = cli_each([*releases, run], tmp_path)
    for argv, res_release in zip(releases, released_by):
        out = argv[-1]
        assert res_release.returncode == 0, res_release.stderr
        released = pg.load_release(out).data
        assert isinstance(released, Data) and released.num_nodes == N
        assert not torch.equal(released.x, graph.x)  # privatized, never the raw features
        meta = json.loads(out.with_name(out.name + ".json").read_text())
        assert meta["fields"]["x"].startswith("privatized") and meta["provenance"]["dataset"] == "input"
        assert meta["report"][0].startswith("Whatever else they know")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["results"][0]["trials"] == 1


def test_private_edge_column_reaches_an_edge_level_method(graph, tmp_path):
    und = graph.edge_index[:, graph.edge_index[0] < graph.edge_index[1]]  # each pair once: the reader adds reverses
    private = (torch.arange(und.shape[1]) % 4 == 0).int()
    _write_edge_list(tmp_path / "e.csv", und, header=["src", "dst", "private"], extra=private)
    np.save(tmp_path / "x.npy", graph.x.numpy())
    out = tmp_path / "r.pt"
    res = cli(
        "release",
        "edgerand",
        "--input",
        tmp_path / "e.csv",
        "--private-column",
        "private",
        "--features",
        tmp_path / "x.npy",
        "--epsilon",
        "2",
        "-o",
        out,
    )
    assert res.returncode == 0, res.stderr
    assert "added the reverse direction of" in " ".join(res.stderr.split())
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
    declared = ["--domain", "0,1"]  # LPGNN needs a declared domain, checked before the file is read
    return [
        (["release", "blink", "--input", tmp_path / "asym.csv", "--directed", *feats], "drop --directed"),
        (["release", "blink", "--input", tmp_path / "loops.csv", *feats], "self-loop"),
        (["release", "lpgnn", "--input", tmp_path / "dup.csv", *feats, *declared, "--strict"], "repeats line"),
        (
            ["release", "lpgnn", "--input", tmp_path / "range.csv", *feats, *declared],
            "past the features file x.npy, which has 60 rows",
        ),
        (["release", "lpgnn", "--input", tmp_path / "asym.csv", "--features", tmp_path / "nan.npy", *declared], "NaN"),
        (
            [
                "release",
                "lpgnn",
                "--input",
                tmp_path / "asym.csv",
                "--features",
                tmp_path / "big.npy",
                "--domain",
                "0,1",
            ],
            "outside the declared domain",
        ),
        (
            [
                "release",
                "lpgnn",
                "--input",
                tmp_path / "asym.csv",
                *feats,
                *declared,
                "--labels",
                tmp_path / "short.csv",
            ],
            "expected",
        ),
        (["release", "lpgnn", "--input", tmp_path / "garbage.pt"], "cannot read"),
        (["release", "lpgnn", "--input", tmp_path / "missing.csv"], "not found"),
        (["release", "mlp", "--dataset", "sbm"], "--allow-non-private"),
        (["release", "lpgnn", "--dataset", "nope"], "unknown homogeneous dataset"),
        (["release", "nope"], "unknown method"),
    ]


def test_bad_input_is_one_line_exit_2_and_nothing_written(graph, tmp_path):
    cases = _bad_inputs(graph, tmp_path)
    out = tmp_path / "out.pt"
    for (args, needle), res in zip(cases, cli_each([[*args, "-o", out] for args, _ in cases], tmp_path)):
        text = " ".join(res.stderr.split())
        assert res.returncode == 2, (args, res.stderr)
        assert text.startswith("error:") and text.count("error:") == 1 and "Traceback" not in res.stderr, text
        assert needle in text, (needle, text)
        assert not out.exists() and not (tmp_path / "out.pt.json").exists()


RUN_ERRORS = [
    (["--set", "lr=abc"], "lr='abc'"),
    (["--set", "epochs=1.5"], "epochs='1.5'"),
    (["--db", "/proc/forbidden/r.db"], "cannot write the results database"),
    (["--dataset", "nope"], "unknown homogeneous dataset"),
]


@pytest.fixture(scope="module")
def run_errors(tmp_path_factory):
    """Each of ``RUN_ERRORS``' commands (its own results database), by :func:`cli_each`."""
    tmp = tmp_path_factory.mktemp("run_errors")
    argvs = [
        ["run", "lpgnn", "--epsilon", "1", *([] if "--db" in args else ["--db", tmp / f"r{i}.db"]), *args]
        for i, (args, _) in enumerate(RUN_ERRORS)
    ]
    return {tuple(args): res for (args, _), res in zip(RUN_ERRORS, cli_each(argvs, tmp))}


@pytest.mark.parametrize("args, needle", RUN_ERRORS)
def test_run_user_errors_exit_2_before_any_work(run_errors, args, needle):
    res = run_errors[tuple(args)]
    text = " ".join(res.stderr.split())
    assert res.returncode == 2 and text.startswith("error:") and needle in text, text
    assert "[privgraph]" not in res.stderr  # no progress line: nothing started


def _one_way(graph):
    return graph.edge_index[:, graph.edge_index[0] < graph.edge_index[1]]  # each pair once: the usual CSV


def test_an_edge_list_is_released_undirected_unless_directed(graph, tmp_path, invoke):
    und = _one_way(graph)
    _write_edge_list(tmp_path / "edges.csv", und, header=["source", "target"])
    np.save(tmp_path / "x.npy", graph.x.numpy())
    base = [
        "release",
        "lpgnn",
        "--input",
        tmp_path / "edges.csv",
        "--features",
        tmp_path / "x.npy",
        "--domain",
        "0,1",
        "--epsilon",
        "1",
    ]
    code, text, _ = invoke(*base, "-o", tmp_path / "u.pt", "--diagnostics")
    assert code == 0, text
    released = pg.load_release(tmp_path / "u.pt").data
    assert is_undirected(released.edge_index) and released.edge_index.shape[1] == 2 * und.shape[1]
    counted = (
        f"undirected: added the reverse direction of {und.shape[1]} edges listed one way only "
        f"({und.shape[1]} → {2 * und.shape[1]} columns;"
    )
    assert counted in text  # the curator's console has the count
    meta = json.loads((tmp_path / "u.pt.json").read_text())
    assert (
        "note: input graph: undirected: added the reverse direction of the edges listed one way only "
        "(directed=True / --directed keeps the file as given)"
    ) in meta["report"]  # no count of private edges
    assert any(n.startswith(counted) for n in meta["details"]["input_file"])  # the curator's diagnostics have it
    code, text, _ = invoke(*base, "--directed", "-o", tmp_path / "d.pt")
    assert code == 0, text
    assert torch.equal(pg.load_release(tmp_path / "d.pt").data.edge_index, und)
    assert f"directed: {und.shape[1]} edges have no reverse (kept as given)" in text
    report = json.loads((tmp_path / "d.pt.json").read_text())["report"]
    assert "note: input graph: directed: edges without their reverse kept as given" in report


@pytest.mark.parametrize("method", ["lapgraph", "edgerand", "edgerr", "blink"])
def test_a_graph_without_features_is_released_without_x(graph, tmp_path, method, invoke):
    _write_edge_list(tmp_path / "edges.csv", _one_way(graph))
    ratio = [] if method == "blink" else ["--private-ratio", "1"]
    # a 200-move chain (OS randomness) passes its convergence check only by chance: its claim is waived here
    params = ["--param", "mcmc_steps=200", "--param", "convergence=waive"] if method == "edgerr" else []
    code, text, _ = invoke(
        "release", method, "--input", tmp_path / "edges.csv", *ratio, *params, "--epsilon", "2", "-o", tmp_path / "g.pt"
    )
    assert code == 0, text
    released = pg.load_release(tmp_path / "g.pt").data
    assert "x" not in released and is_undirected(released.edge_index)
    meta = json.loads((tmp_path / "g.pt.json").read_text())
    assert f"note: {NO_FEATURES_NOTE}" in meta["report"] and "x" not in meta["fields"]


def test_training_on_a_release_without_features_states_the_encoding(graph, tmp_path, invoke):
    _write_edge_list(tmp_path / "edges.csv", _one_way(graph))
    np.savetxt(tmp_path / "y.txt", graph.y.numpy(), fmt="%d")
    code, text, _ = invoke(
        "run",
        "lapgraph",
        "--input",
        tmp_path / "edges.csv",
        "--labels",
        tmp_path / "y.txt",
        "--private-ratio",
        "1",
        "--epsilon",
        "2",
        "--trials",
        "1",
        "--set",
        "epochs=5",
        "--db",
        tmp_path / "r.db",
        "--format",
        "json",
    )
    assert code == 0, text
    assert NO_FEATURES_NOTE in text and "accuracy" in text
    data, _ = pg.data.read_graph(tmp_path / "edges.csv", labels=tmp_path / "y.txt")
    rel = pg.privatize(pg.data.stratified_split(data, seed=0), "blink", epsilon=2.0, seed=0)
    assert "x" not in rel.data and NO_FEATURES_NOTE in rel.report.guarantees[0].notes
    res = pg.fit(rel, seed=0, epochs=5)  # trains on the one-hot degrees of the released graph
    assert 0.0 <= res.test_accuracy <= 1.0
    code, text, _ = invoke("release", "lpgnn", "--input", tmp_path / "edges.csv", "-o", tmp_path / "l.pt")
    assert code == 2 and text.startswith("error: lpgnn reads the node features") and "--features" in text


class Poison:
    """A pickle that creates ``marker`` when it is unpickled (it could as well run any code)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def test_a_poisoned_pt_is_refused_and_trust_pickle_is_said(graph, tmp_path, invoke):
    marker = tmp_path / "marker"
    torch.save(Poison(marker), tmp_path / "evil.pt")
    code, text, _ = invoke(
        "release", "lpgnn", "--input", tmp_path / "evil.pt", "--epsilon", "1", "-o", tmp_path / "o.pt"
    )
    assert code == 2 and text.startswith("error: refusing to unpickle") and text.count("error:") == 1, text
    assert "--trust-pickle" in text and not marker.exists() and not (tmp_path / "o.pt").exists()
    legit = graph.clone()
    legit.origin = Fraction(1, 3)  # a harmless object torch does not allow-list
    torch.save(legit, tmp_path / "g.pt")
    code, text, _ = invoke("release", "lpgnn", "--input", tmp_path / "g.pt", "--epsilon", "1", "-o", tmp_path / "o.pt")
    assert code == 2 and "fractions.Fraction" in text and "--trust-pickle" in text
    code, text, _ = invoke(
        "release", "lpgnn", "--input", tmp_path / "g.pt", "--trust-pickle", "--epsilon", "1", "-o", tmp_path / "o.pt"
    )
    assert code == 0, text
    report = json.loads((tmp_path / "o.pt.json").read_text())["report"]
    assert any("g.pt trusted with --trust-pickle" in line and "weights_only=False" in line for line in report)
    torch.save(Poison(marker), tmp_path / "o.pt")  # a release whose graph file was replaced
    with pytest.raises(ValueError, match=r"o\.pt has \d+ bytes, its report says"):  # the report's checksum
        pg.load_release(tmp_path / "o.pt")
    meta = json.loads((tmp_path / "o.pt.json").read_text())  # whoever replaced it rewrites the report too
    poison = (tmp_path / "o.pt").read_bytes()
    meta["checksums"]["o.pt"] = {"bytes": len(poison), "sha256": hashlib.sha256(poison).hexdigest()}
    (tmp_path / "o.pt.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="refusing to unpickle"):
        pg.load_release(tmp_path / "o.pt")
    assert not marker.exists()
    code, text, _ = invoke("release", "--help")
    assert "--trust-pickle" in text and "weights_only=False" in text and "--directed" in text


def test_a_column_named_private_is_the_flag_and_its_note_names_the_file_once(graph, tmp_path, invoke):
    und = _one_way(graph)
    private = (torch.arange(und.shape[1]) % 3 == 0).int()
    _write_edge_list(tmp_path / "edges.csv", und, header=["src", "dst", "private"], extra=private)
    code, text, _ = invoke(
        "release", "edgerand", "--input", tmp_path / "edges.csv", "--epsilon", "2", "-o", tmp_path / "g.pt"
    )
    assert code == 0, text  # edgerand needs private edges: the column gives them
    flat = text.replace(" ", "")  # the console wraps long temporary paths (under xdist, longer ones)
    assert "edges.csv:column'private'readastheprivate-edgeflag" in flat
    assert "edges.csv:edges.csv" not in flat and "ignored" not in text


def test_a_graph_of_the_other_kind_is_a_user_error(graph, tmp_path, invoke):
    from torch_geometric.data import HeteroData

    hetero = HeteroData()
    hetero["a"].x = torch.rand(3, 2)
    hetero["a", "r", "a"].edge_index = torch.tensor([[0, 1], [1, 2]])
    torch.save(hetero, tmp_path / "h.pt")
    code, text, _ = invoke("release", "lpgnn", "--input", tmp_path / "h.pt", "--epsilon", "1", "-o", tmp_path / "o.pt")
    assert code == 2 and text == "error: lpgnn takes a homogeneous graph (Data), but h.pt holds a HeteroData"
    code, text, _ = invoke("release", "lpgnn", "--directed", "-o", tmp_path / "o.pt")
    assert code == 2 and text == "error: --directed describes an --input file: give --input"


def test_version_and_module_entry_point():
    res = cli("--version")
    assert res.returncode == 0 and res.stdout.startswith("privgraph ")


def test_hetedp_on_the_users_graph_needs_a_public_edge_count_before_any_work(tmp_path, invoke):
    """DP-SGD's sampling is planned from a public number of edges, never from the input's;
    ``run`` evaluates heterogeneous methods on the datasets whose tasks it knows (one line, exit 2)."""
    from privgraph.data import hetero_sbm_graph

    torch.save(hetero_sbm_graph(seed=0, num_papers=40, num_authors=30), tmp_path / "h.pt")
    common = (
        "--input",
        tmp_path / "h.pt",
        "--epsilon",
        "1",
        "--param",
        "edge_type=paper,to,author",
        "--param",
        "epochs=1",
    )
    code, text, _ = invoke("release", "hetedp", *common, "-o", tmp_path / "o.pt")
    assert code == 2 and "edge_count=N, a public number of training edges" in text
    assert not (tmp_path / "o.pt").exists()
    code, text, _ = invoke("release", "hetedp", *common, "--param", "edge_count=200", "-o", tmp_path / "o.pt")
    assert code == 0, text
    code, text, _ = invoke("run", "hetedp", *common, "--task", "lp", "--db", tmp_path / "r.db")
    assert code == 2 and "release your own graph with privgraph release hetedp --input FILE" in text


@pytest.mark.parametrize("method", ["lpgnn", "featurerr", "featureldp", "heterorr"])
def test_a_feature_method_on_the_users_graph_needs_a_declared_domain(graph, tmp_path, method, invoke):
    """No [0, 1] assumed for the user's features: without --domain (and no domain stored in a .pt) the
    command is refused, one line naming --domain LO,HI, exit 2, nothing written; --domain 0,1 releases."""
    _write_edge_list(tmp_path / "edges.csv", _one_way(graph), header=["source", "target"])
    np.save(tmp_path / "x.npy", graph.x.numpy())
    base = ["release", method, "--input", tmp_path / "edges.csv", "--features", tmp_path / "x.npy"]
    code, text, _ = invoke(*base, "--epsilon", "1", "-o", tmp_path / "o.pt")
    assert code == 2 and text.startswith("error:") and text.count("error:") == 1, text
    assert "--domain LO,HI" in text and not (tmp_path / "o.pt").exists()
    stored = Data(x=graph.x, edge_index=graph.edge_index, y=graph.y)
    torch.save(stored, tmp_path / "g.pt")
    code, text, _ = invoke("release", method, "--input", tmp_path / "g.pt", "--epsilon", "1", "-o", tmp_path / "p.pt")
    assert code == 2 and "--domain LO,HI" in text, text
    if method == "lpgnn":  # declared: the release goes through and the report states the domain
        code, text, _ = invoke(*base, "--domain", "0,1", "--epsilon", "1", "-o", tmp_path / "o.pt")
        assert code == 0, text
        assert "declared feature domain [0, 1]" in (tmp_path / "o.pt.json").read_text()
        stored.feature_domain = (0.0, 1.0)  # a .pt that carries its domain needs no --domain
        torch.save(stored, tmp_path / "g.pt")
        code, text, _ = invoke(
            "release", method, "--input", tmp_path / "g.pt", "--epsilon", "1", "-o", tmp_path / "p.pt"
        )
        assert code == 0, text
