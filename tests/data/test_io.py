"""Reading a user's graph from files: every format round-trips, every bad input is one
:class:`GraphInputError` line naming the defect."""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Data, HeteroData

from privgraph.data import GraphInputError, read_graph
from privgraph.data.splits import split_note
from privgraph.data.tables import HEADER_RULE
from privgraph.data.validation import public_note

# An undirected triangle plus the edge 2-3, both directions, with the 0-1 edge private.
EDGES = [(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0), (2, 3), (3, 2)]
PRIVATE = [True, True, False, False, False, False, True, True]


def _write(path, text: str):
    path.write_text(text)
    return path


def _csv(tmp_path, rows=EDGES, flags=PRIVATE, name="edges.csv"):
    lines = ["src,dst,private"] + [f"{u},{v},{int(f)}" for (u, v), f in zip(rows, flags)]
    return _write(tmp_path / name, "\n".join(lines) + "\n")


def _tsv(tmp_path, rows=EDGES, name="edges.tsv"):
    return _write(tmp_path / name, "".join(f"{u}\t{v}\n" for u, v in rows))


class Poison:
    """A pickle that creates ``marker`` when it is unpickled (it could as well run any code)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def _error(match: str, *args, **kwargs) -> str:
    with pytest.raises(GraphInputError, match=match) as info:
        read_graph(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------------------------------- round trips


def test_data_pt_round_trip(tmp_path):
    data = Data(
        x=torch.rand(4, 3),
        y=torch.tensor([0, 1, 1, 0]),
        edge_index=torch.tensor(EDGES).t(),
        private_edge_mask=torch.tensor(PRIVATE),
        edge_weight=torch.arange(8.0),
    )
    torch.save(data, tmp_path / "g.pt")
    out, notes = read_graph(tmp_path / "g.pt", self_loops=False, domain=(0.0, 1.0))
    assert isinstance(out, Data) and notes == [split_note(0)]  # labels without a split: the seeded split added
    assert all(key in out for key in ("train_mask", "val_mask", "test_mask"))
    out, notes = read_graph(tmp_path / "g.pt", self_loops=False, domain=(0.0, 1.0), split_seed=None)
    assert notes == [] and "train_mask" not in out
    for key in ("x", "y", "edge_index", "private_edge_mask", "edge_weight"):
        assert torch.equal(out[key], data[key])
    assert out.name == "g" and out.feature_domain == (0.0, 1.0)


def test_pt_feature_domain_from_file_is_checked(tmp_path):
    data = Data(x=torch.tensor([[0.5], [2.0]]), edge_index=torch.tensor([[0], [1]]), feature_domain=(0.0, 1.0))
    torch.save(data, tmp_path / "g.pth")
    _error("outside the declared domain", tmp_path / "g.pth")
    out, notes = read_graph(tmp_path / "g.pth", clip=True, name="mine")
    assert out.x.max() == 1.0 and out.name == "mine"
    assert any("taken from g.pth" in n for n in notes) and any("1 values changed" in n for n in notes)


def test_hetero_pt_round_trip(tmp_path):
    data = HeteroData()
    data["user"].x = torch.rand(3, 2)
    data["item"].x = torch.rand(2, 4)
    data["user", "buys", "item"].edge_index = torch.tensor([[0, 1, 2], [1, 0, 1]])
    data["user", "knows", "user"].edge_index = torch.tensor([[0, 1], [1, 2]])  # one direction: allowed
    torch.save(data, tmp_path / "h.pt")
    out, notes = read_graph(tmp_path / "h.pt", domain=(0, 1))
    assert isinstance(out, HeteroData) and notes == []
    for key in (("user", "buys", "item"), ("user", "knows", "user")):
        assert torch.equal(out[key].edge_index, data[key].edge_index)
    assert torch.equal(out["user"].x, data["user"].x) and torch.equal(out["item"].x, data["item"].x)
    assert out.name == "h" and out.feature_domain == (0.0, 1.0)


def test_csv_with_header_and_private_column(tmp_path):
    data, notes = read_graph(_csv(tmp_path), private_column="private", self_loops=False)
    assert data.edge_index.t().tolist() == [list(e) for e in EDGES]
    assert data.private_edge_mask.tolist() == PRIVATE and data.private_edge_mask.dtype == torch.bool
    assert data.num_nodes == 4 and data.name == "edges"
    header, undirected = (
        [n for n in notes if "header row" in str(n)],
        [n for n in notes if str(n).startswith("undirected")],
    )
    assert [str(n) for n in header] == [f"line 1 (src, dst, private) read as the header row ({HEADER_RULE})"]
    assert public_note(header[0]) == f"the first row read as the header row ({HEADER_RULE})"  # no cells released
    # The report says the same whether or not an edge was added (the console tells the curator)
    (note,) = undirected
    assert note.startswith("undirected: every edge is listed in both directions, none added")
    assert public_note(note).startswith("undirected: added the reverse direction of the edges listed one way only")
    assert len(notes) == 2


def test_tsv_without_header_and_private_column_index(tmp_path):
    text = "# comment\n\n" + "".join(f"{u} \t{v}\t{'true' if f else 'FALSE'}\n" for (u, v), f in zip(EDGES, PRIVATE))
    path = _write(tmp_path / "g.edges", text)
    hint = r"g.edges, line 3: expected 2 columns, got 3 \(line 1 starts with #: if it is a comment, declare"
    _error(hint, path, private_column="2")
    data, _ = read_graph(path, private_column="2", comment="#")
    assert data.edge_index.t().tolist() == [list(e) for e in EDGES]
    assert data.private_edge_mask.tolist() == PRIVATE
    data, _ = read_graph(_tsv(tmp_path))
    assert data.edge_index.t().tolist() == [list(e) for e in EDGES] and not hasattr(data, "private_edge_mask")


def test_one_direction_per_pair_is_symmetrized_with_a_note(tmp_path):
    once = [(0, 1), (1, 2), (2, 0), (3, 3)]
    mask = np.array([1, 0, 1, 0], dtype=np.int64)
    np.save(tmp_path / "mask.npy", mask)
    data, notes = read_graph(
        _write(tmp_path / "g.txt", "".join(f"{u} {v}\n" for u, v in once)), private_edges=tmp_path / "mask.npy"
    )
    assert data.edge_index.t().tolist() == [[0, 1], [1, 2], [2, 0], [3, 3], [1, 0], [2, 1], [0, 2]]
    assert data.private_edge_mask.tolist() == [True, False, True, False, True, False, True]
    assert notes == [
        "undirected: added the reverse direction of 3 edges listed one way only (4 → 7 columns; "
        "directed=True / --directed keeps the file as given)"
    ]


def test_an_edge_list_is_undirected_unless_directed(tmp_path):
    # 0-1 both ways, 1-2 and 2-3 one way (2-3 private), 3-3 a self-loop: only the two missing reverses are added
    path = _write(tmp_path / "e.csv", "src,dst,private\n0,1,0\n1,0,0\n1,2,0\n2,3,1\n3,3,0\n")
    data, notes = read_graph(path)
    assert data.edge_index.t().tolist() == [[0, 1], [1, 0], [1, 2], [2, 3], [3, 3], [2, 1], [3, 2]]
    assert data.private_edge_mask.tolist() == [False, False, False, True, False, False, True]
    assert notes[-1].startswith("undirected: added the reverse direction of 2 edges listed one way only (5 → 7")
    data, notes = read_graph(path, directed=True)
    assert data.edge_index.t().tolist() == [[0, 1], [1, 0], [1, 2], [2, 3], [3, 3]]
    assert notes[-1] == "directed: 2 edges have no reverse (kept as given)"
    ei = np.array([[0, 1, 2], [1, 2, 0]])  # a matrix listing each pair once
    sp.save_npz(tmp_path / "a.npz", sp.coo_matrix((np.ones(3), (ei[0], ei[1])), shape=(3, 3)).tocsr())
    data, notes = read_graph(tmp_path / "a.npz")
    assert data.edge_index.shape[1] == 6 and "3 edges listed one way" in notes[0]
    assert read_graph(tmp_path / "a.npz", directed=True)[0].edge_index.shape[1] == 3


def test_a_pt_graph_is_kept_as_given_and_its_direction_said(tmp_path):
    torch.save(Data(edge_index=torch.tensor([[0, 1, 1], [1, 0, 2]]), num_nodes=3), tmp_path / "d.pt")
    data, notes = read_graph(tmp_path / "d.pt")
    assert data.edge_index.shape[1] == 3 and notes == ["directed: 1 edge has no reverse (kept as given)"]
    torch.save(Data(edge_index=torch.tensor(EDGES).t(), num_nodes=4), tmp_path / "u.pt")
    assert read_graph(tmp_path / "u.pt")[1] == []


def test_a_column_named_private_is_the_private_flag(tmp_path):
    path = _write(tmp_path / "edges.csv", "source,target,weight,private\n0,1,5,1\n1,2,3,0\n")
    data, notes = read_graph(path)
    assert data.private_edge_mask.tolist() == [True, False, True, False]  # the reverses copy their edge's flag
    assert notes[1:3] == [
        "column 'private' read as the private-edge flag (choose another with --private-column)",
        "column weight ignored (only source and target are read, and the private flags from column private)",
    ]  # neither note repeats the file name (the CLI prefixes it)
    np.save(tmp_path / "m.npy", np.array([0, 1]))
    data, notes = read_graph(path, private_edges=tmp_path / "m.npy")  # a mask file wins, and the column says so
    assert data.private_edge_mask.tolist() == [False, True, False, True]
    assert notes[1] == (
        "columns weight, private ignored (only source and target are read, and the private flags "
        "from the private-edge mask file)"
    )


def test_a_poisoned_pt_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "marker"
    torch.save(Poison(marker), tmp_path / "evil.pt")
    message = _error(r"refusing to unpickle .*evil.pt: it names io.open, which is not a tensor", tmp_path / "evil.pt")
    assert "--trust-pickle" in message and not marker.exists()
    _error("holds a .*not a torch_geometric Data", tmp_path / "evil.pt", trust_pickle=True)
    assert marker.exists()  # the poison is real: trusting the file ran it


def test_trust_pickle_reads_any_file_and_says_so(tmp_path):
    data = Data(edge_index=torch.tensor(EDGES).t(), num_nodes=4, origin=Fraction(1, 3))  # not allow-listed
    torch.save(data, tmp_path / "g.pt")
    _error(r"it names fractions.Fraction.*--trust-pickle \(trust_pickle=True\) loads it", tmp_path / "g.pt")
    out, notes = read_graph(tmp_path / "g.pt", trust_pickle=True)
    assert out.origin == Fraction(1, 3)
    assert notes == [
        "g.pt trusted with --trust-pickle (trust_pickle=True): unpickled with "
        "torch.load(weights_only=False), which runs any code the file holds"
    ]
    _error("applies to torch files", _tsv(tmp_path), trust_pickle=True)


def test_npz_adjacency_with_mask(tmp_path):
    ei = torch.tensor(EDGES).t()
    sp.save_npz(tmp_path / "a.npz", sp.coo_matrix((np.ones(8), (ei[0].numpy(), ei[1].numpy())), shape=(5, 5)).tocsr())
    data, _ = read_graph(tmp_path / "a.npz")
    assert data.num_nodes == 5  # the isolated node 4 is kept
    assert sorted(map(tuple, data.edge_index.t().tolist())) == sorted(EDGES)
    # the mask follows the row-major order of the nonzeros
    mask = data.edge_index[0] + data.edge_index[1] == 1
    np.save(tmp_path / "m.npy", mask.numpy())
    data, _ = read_graph(tmp_path / "a.npz", private_edges=tmp_path / "m.npy")
    assert torch.equal(data.private_edge_mask, mask)


def test_features_and_labels_files(tmp_path):
    x = np.random.default_rng(0).random((5, 3)).astype(np.float32)
    y = np.array([0, 2, 1, 1, 0])
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    _write(tmp_path / "x.csv", "a,b,c\n" + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in x))
    _write(tmp_path / "y.txt", "label\n" + "".join(f"{v}\n" for v in y))
    for feats, labels in (("x.npy", "y.npy"), ("x.csv", "y.txt")):
        data, _ = read_graph(_tsv(tmp_path), features=tmp_path / feats, labels=tmp_path / labels)
        assert data.num_nodes == 5  # from the feature rows, not the largest id (3)
        assert data.x.dtype == torch.float32 and torch.allclose(data.x, torch.from_numpy(x))
        assert data.y.dtype == torch.long and data.y.tolist() == y.tolist()
        assert not hasattr(data, "feature_domain")


def test_domain_clip_note(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[0.5, 1.5], [-1.0, 0.0], [0.2, 0.3], [1.0, 1.0]]))
    data, notes = read_graph(_tsv(tmp_path), features=tmp_path / "x.npy", domain=(0, 1), clip=True)
    assert torch.allclose(data.x, torch.tensor([[0.5, 1.0], [0.0, 0.0], [0.2, 0.3], [1.0, 1.0]]))
    assert notes[-1] == "the features clipped to [0, 1]: 2 values changed"
    assert data.feature_domain == (0.0, 1.0)
    np.save(tmp_path / "x.npy", np.array([[0.5, 1.0], [0.0, 0.0], [0.2, 0.3], [1.0, 1.0]]))  # nothing outside
    _, notes = read_graph(_tsv(tmp_path), features=tmp_path / "x.npy", domain=(0, 1), clip=True)
    assert notes[-1] == "the features clipped to [0, 1]: 0 values changed"  # the report's note all the same
    assert public_note(notes[-1]) == "the features clipped to [0, 1]"


# ---------------------------------------------------------------------------------------- bad input


def test_missing_files(tmp_path):
    _error("graph file not found: .*nope.csv", tmp_path / "nope.csv")
    _error("features file not found: .*x.npy", _tsv(tmp_path), features=tmp_path / "x.npy")


def test_unknown_suffix(tmp_path):
    message = _error("unsupported graph file", _write(tmp_path / "g.json", "{}"))
    assert ".pt" in message and ".npz" in message and ".csv" in message


def test_unreadable_files(tmp_path):
    message = _error(r"cannot read .*torch.load\(weights_only=True\)", _write(tmp_path / "g.pt", "not a pickle"))
    assert "--trust-pickle" in message
    _error("not a SciPy sparse .npz archive", _write(tmp_path / "g.npz", "not a zip"))
    _error(
        "cannot read features file .*not a NumPy .npy file", _tsv(tmp_path), features=_write(tmp_path / "x.npy", "junk")
    )
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00\x81")
    _error("as UTF-8 text", tmp_path / "bin.csv")


def test_pt_of_another_type(tmp_path):
    torch.save({"edge_index": torch.tensor([[0], [1]])}, tmp_path / "d.pt")
    _error("d.pt holds a builtins.dict, not a torch_geometric Data", tmp_path / "d.pt")


def test_malformed_rows(tmp_path):
    _error(r"g.csv, line 3: expected 2 columns, got 3", _write(tmp_path / "g.csv", "0,1\n1,2\n2,3,4\n"))
    _error(r"g.csv, line 2: empty node id", _write(tmp_path / "g.csv", "a,b\n0,\n"))


def test_ids_out_of_range(tmp_path):
    """A side file too short for the edge list's node indices is blamed: its row count and the count expected."""
    np.save(tmp_path / "x.npy", np.zeros((3, 2)))
    _error(
        r"edges.tsv, line 7: node id 3 is past the features file x.npy, which has 3 rows, one per node 0..2",
        _tsv(tmp_path),
        features=tmp_path / "x.npy",
    )
    np.save(tmp_path / "y.npy", np.zeros(2, dtype=np.int64))
    _error(  # the first line in file order (1-2), not the largest id's
        r"edges.tsv, line 3: node id 2 is past the labels file y.npy, which has 2 labels",
        _tsv(tmp_path),
        labels=tmp_path / "y.npy",
    )


# ---------------------------------------------------------------------------------------- named nodes

NAMED = "src,dst\nuser9228,user17\nuser17,bob\nbob,user9228\nzed,bob\n"


def test_string_ids_sorted_by_text(tmp_path):
    """Ids that are not 0..n-1 are mapped to 0..n-1 in their sorted order (the order of the id set alone)."""
    data, notes = read_graph(_write(tmp_path / "g.csv", NAMED))
    assert data.node_ids == ["bob", "user17", "user9228", "zed"] and data.num_nodes == 4
    pairs = {(data.node_ids[u], data.node_ids[v]) for u, v in data.edge_index.t().tolist()}
    assert ("user9228", "user17") in pairs and ("user17", "user9228") in pairs and len(pairs) == 8
    assert any("node ids mapped to 0..3" in str(n) for n in notes)
    # the edge rows' order changes nothing: the map depends on the id set only
    shuffled, _ = read_graph(
        _write(tmp_path / "h.csv", "src,dst\nzed,bob\nbob,user9228\nuser17,bob\nuser9228,user17\n")
    )
    assert shuffled.node_ids == data.node_ids


def test_integer_ids_not_indices(tmp_path):
    """Ids with a sign are text (no sign games): sorted by text; integer ids keyed by a node table, by value."""
    data, _ = read_graph(_write(tmp_path / "g.tsv", "10 -3\n-3 7\n"))
    assert data.node_ids == ["-3", "10", "7"]
    _write(tmp_path / "x.csv", "id,a\n1001,1\n7,2\n50,3\n")
    data, _ = read_graph(_write(tmp_path / "h.csv", "1001,50\n"), features=tmp_path / "x.csv")
    assert data.node_ids == ["7", "50", "1001"] and data.x[:, 0].tolist() == [2.0, 3.0, 1.0]
    assert data.edge_index.tolist() == [[2, 1], [1, 2]]


def test_node_table_keyed_by_id(tmp_path):
    """Features and labels keyed by an id column, in any row order; a node in the tables only is kept."""
    _write(tmp_path / "x.csv", "id,f1,f2\nzed,6,7\nbob,0,1\nuser17,2,3\nuser9228,4,5\nlonely,8,9\n")
    _write(tmp_path / "y.csv", "label,id\n1,bob\n0,user17\n1,zed\n0,user9228\n1,lonely\n")
    data, _ = read_graph(_write(tmp_path / "g.csv", NAMED), features=tmp_path / "x.csv", labels=tmp_path / "y.csv")
    assert data.node_ids == ["bob", "lonely", "user17", "user9228", "zed"]
    assert data.x.tolist() == [[0, 1], [8, 9], [2, 3], [4, 5], [6, 7]] and data.y.tolist() == [1, 1, 0, 0, 1]
    assert data.num_nodes == 5 and 1 not in data.edge_index  # lonely: isolated, kept


def test_node_table_refusals(tmp_path):
    graph = _write(tmp_path / "g.csv", NAMED)
    _write(tmp_path / "x.csv", "id,f\nbob,0\nuser17,1\nuser9228,2\n")
    message = _error(
        r"g.csv, line 5: node id 'zed' has no row in the features file x.csv", graph, features=tmp_path / "x.csv"
    )
    assert "(1 edge row names ids of no row" in message and "--drop-unknown" in message
    data, notes = read_graph(graph, features=tmp_path / "x.csv", drop_unknown=True)
    assert data.node_ids == ["bob", "user17", "user9228"] and data.edge_index.shape[1] == 6  # zed,bob dropped
    assert any("1 edge row naming node ids of no features row dropped (first: line 5, id 'zed'" in n for n in notes)
    _write(tmp_path / "y.csv", "id,label\nbob,0\nuser17,1\nuser9228,0\nzed,1\nextra,0\n")
    _write(tmp_path / "x4.csv", "id,f\nbob,0\nuser17,1\nuser9228,2\nzed,3\n")
    _error(
        r"y.csv, line 6: node id 'extra' has no row in the features file x4.csv",
        graph,
        features=tmp_path / "x4.csv",
        labels=tmp_path / "y.csv",
    )
    _write(tmp_path / "dup.csv", "id,f\nbob,0\nbob,1\n")
    _error(r"dup.csv, line 3: node id 'bob' already has a row \(line 2\)", graph, features=tmp_path / "dup.csv")
    np.save(tmp_path / "x.npy", np.zeros((4, 2)))
    _error(
        r"g.csv, line 2: node id 'user9228' \(or 'user17'\) is not a node index 0..n-1, but the features file "
        r"x.npy has no id column",
        graph,
        features=tmp_path / "x.npy",
    )
    _write(tmp_path / "y3.csv", "id,label,other\nbob,0,1\n")
    _error(r"y3.csv, line 1: a labels node table has two columns, id and the label", graph, labels=tmp_path / "y3.csv")
    torch.save(Data(edge_index=torch.tensor([[0], [1]]), num_nodes=2), tmp_path / "g.pt")
    _error(r"x4.csv is keyed by an id column", tmp_path / "g.pt", features=tmp_path / "x4.csv")


def test_named_nodes_header_noted(tmp_path):
    _, notes = read_graph(_write(tmp_path / "g.csv", NAMED))
    assert any("line 1 (src, dst) read as the header row" in str(n) for n in notes)


def test_non_finite_features(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[0.0, np.nan], [np.inf, 1.0], [0, 0], [0, 0]]))
    _error(r"hold 2 NaN/inf values \(e.g. row 0, column 1\)", _tsv(tmp_path), features=tmp_path / "x.npy")


def test_features_outside_domain(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[0.0, 2.0], [-3.0, 1.0], [0, 0], [0, 0]]))
    message = _error(
        r"2 values of the features lie outside the declared domain \[0, 1\] \(found \[-3, 2\]\)",
        _tsv(tmp_path),
        features=tmp_path / "x.npy",
        domain=(0, 1),
    )
    assert "--clip" in message
    _error("needs a feature domain", _tsv(tmp_path), features=tmp_path / "x.npy", clip=True)
    _error("lo < hi", _tsv(tmp_path), features=tmp_path / "x.npy", domain=(1, 0))
    _error("comes with no features", _tsv(tmp_path), domain=(0, 1))


def test_labels_of_the_wrong_length(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((4, 2)))
    _write(tmp_path / "y.csv", "0\n1\n1\n")
    _error(
        "the labels file y.csv has 3 labels, expected 4",
        _tsv(tmp_path),
        features=tmp_path / "x.npy",
        labels=tmp_path / "y.csv",
    )
    torch.save(Data(edge_index=torch.tensor(EDGES).t(), num_nodes=4), tmp_path / "g.pt")
    _error("the labels file y.csv has 3 labels, expected 4", tmp_path / "g.pt", labels=tmp_path / "y.csv")
    _write(tmp_path / "bad.txt", "0\n1 2\n")
    _error(r"bad.txt, line 2: expected 1 value", _tsv(tmp_path), labels=tmp_path / "bad.txt")


def test_private_mask_of_the_wrong_length(tmp_path):
    np.save(tmp_path / "m.npy", np.zeros(7, dtype=bool))
    _error("the private-edge mask has 7 entries, expected 8", _tsv(tmp_path), private_edges=tmp_path / "m.npy")


def test_non_binary_mask_values(tmp_path):
    np.save(tmp_path / "m.npy", np.array([0, 1, 2, 0, 0, 0, 0, 0]))
    _error(
        r"must hold only 0/1 \(or booleans\): 1 other values \(e.g. 2 at entry 2\)",
        _tsv(tmp_path),
        private_edges=tmp_path / "m.npy",
    )
    _error(
        r"line 3: the private flag must be 0/1 or true/false, got 'yes'",
        _write(tmp_path / "g.csv", "s,t,p\n0,1,1\n1,0,yes\n"),
        private_column="p",
    )
    _error("has no column 'q'", _write(tmp_path / "g.csv", "s,t,p\n0,1,1\n"), private_column="q")


def test_empty_edge_list(tmp_path):
    _error("no edges in", _write(tmp_path / "g.csv", "src,dst\n"))
    sp.save_npz(tmp_path / "z.npz", sp.csr_matrix((3, 3)))
    _error("no edges in", tmp_path / "z.npz")


def test_duplicates_merged_unless_strict(tmp_path):
    """A repeated row is merged (its first row kept), the curator told which line repeats which; strict refuses."""
    path = _tsv(tmp_path, EDGES + [(0, 1), (1, 2)], name="g.tsv")
    data, notes = read_graph(path)
    assert data.edge_index.t().tolist() == [list(e) for e in EDGES]
    note = next(n for n in notes if "repeated" in n)
    assert "2 repeated edge rows merged" in note and "first: line 9, edge (0, 1), repeats line 1" in note
    assert public_note(note) == "repeated edge rows merged, the first row of each edge kept"  # no ids, no count
    _error(r"g.tsv, line 9: edge \(0, 1\) repeats line 1 \(2 repeated rows\)", path, strict=True)
    named = _write(tmp_path / "n.csv", "a,b\nu,v\nv,u\n u , v\n")  # the third row repeats the first
    _error(r"n.csv, line 4: edge \(u, v\) repeats line 2", named, strict=True)


def test_self_loops_when_not_allowed(tmp_path):
    path = _tsv(tmp_path, EDGES + [(3, 3)])
    read_graph(path)  # allowed by default
    _error(r"edges.tsv, line 9: self-loop \(3, 3\) \(1 self-loop in the file\)", path, self_loops=False)


def test_flags_that_disagree_between_directions(tmp_path):
    flags = PRIVATE[:-1] + [False]  # 2-3 private, 3-2 public
    _error(
        r"edges.csv, line 9: edge \(3, 2\) has another private flag than its reverse on line 8",
        _csv(tmp_path, flags=flags),
        private_column="private",
    )
    data, _ = read_graph(_csv(tmp_path, flags=flags), private_column="private", directed=True)  # one flag per direction
    assert data.private_edge_mask.tolist() == flags


def test_npz_not_square_or_weighted(tmp_path):
    sp.save_npz(tmp_path / "r.npz", sp.csr_matrix(np.ones((2, 3))))
    _error(r"must be square, got 2×3", tmp_path / "r.npz")
    sp.save_npz(tmp_path / "w.npz", sp.csr_matrix(np.array([[0, 2.5], [2.5, 0]])))
    _error(r"2 entries other than 0/1", tmp_path / "w.npz")


def test_hetero_rejects_side_files(tmp_path):
    data = HeteroData()
    data["a"].num_nodes = 2
    data["a", "r", "a"].edge_index = torch.tensor([[0, 0], [1, 1]])
    torch.save(data, tmp_path / "h.pt")
    _error("1 duplicate column", tmp_path / "h.pt")
    _error("apply to homogeneous graphs only", tmp_path / "h.pt", features=tmp_path / "x.npy")


def test_read_graph_output_saved_with_torch_save_reads_back_with_weights_only(tmp_path):
    """privgraph's own output read back: PyG caches its attributes' kinds (``AttrType``) on a storage
    once it has looked at them, and ``torch.save`` writes that cache; the enum is allow-listed, so the file reads
    with ``weights_only=True`` and no ``--trust-pickle``."""
    data, _ = read_graph(_tsv(tmp_path))
    _ = data.num_nodes, data.edge_attrs(), data.is_undirected()  # fill PyG's caches, as any use does
    torch.save(data, tmp_path / "mine.pt")
    assert "AttrType" in str(torch.load(tmp_path / "mine.pt", weights_only=False)._store.__dict__)  # cached
    again, notes = read_graph(tmp_path / "mine.pt")
    assert torch.equal(again.edge_index, data.edge_index) and again.num_nodes == data.num_nodes
    assert not any("trust" in note for note in notes)


def test_the_report_notes_of_reading_are_the_same_on_neighbouring_files(tmp_path):
    """An edge list and the same list with one more edge written one way only (the reverse is
    added: the undirected graph with one more edge) give the same public notes; only the console's differ."""
    d, notes_d = read_graph(_tsv(tmp_path, name="d.tsv"))
    n, notes_n = read_graph(_tsv(tmp_path, rows=[*EDGES, (0, 3)], name="n.tsv"))
    assert n.edge_index.shape[1] == d.edge_index.shape[1] + 2
    assert [public_note(x) for x in notes_d] == [public_note(x) for x in notes_n] and notes_d != notes_n
