"""Node ids parsed without guessing: integer ids are ASCII digits only, everything else is text;
huge or sparse integer ids are mapped, never an array size; every refusal names the file, the first line and
the id as written."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from privgraph.data import GraphInputError, read_graph
from privgraph.data.ids import id_order, index_ids, is_integer_id
from privgraph.data.validation import public_note


def _write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def _ids(data) -> set[tuple[str, str]]:
    names = data.node_ids
    return {(names[u], names[v]) for u, v in data.edge_index.t().tolist()}


@pytest.mark.parametrize("text", ["１", "١٢", "1_0", "²", "+1", "-0", " 1", "1.0", "0x1"])
def test_only_ascii_digits_are_integer_ids(text):
    assert not is_integer_id(text)
    assert is_integer_id("0") and is_integer_id("007") and is_integer_id("123")


@pytest.mark.parametrize(("odd", "plain"), [("１", "1"), ("١٢", "12"), ("1_0", "10"), ("²", "2")])
def test_look_alike_ids_are_distinct_string_ids(tmp_path, odd, plain):
    """Full-width, Arabic-Indic and superscript digits, and ``1_0``, are text ids: never merged with 1/12/10/2."""
    data, notes = read_graph(_write(tmp_path / "g.csv", f"src,dst\n{odd},5\n{plain},5\n"))
    assert data.num_nodes == 3 and set(data.node_ids) == {odd, plain, "5"}
    assert (odd, "5") in _ids(data) and (plain, "5") in _ids(data)
    assert any("node ids mapped" in n for n in notes)


def test_quoted_ids_follow_the_csv_module(tmp_path):
    """CSV quoting by the csv module (skipinitialspace): ` "u" `, `"u"` and `u` are one id ``u``."""
    data, _ = read_graph(_write(tmp_path / "g.csv", 'a,b\n "u" ,v\n"u",w\nu,x\n'))
    assert sorted(data.node_ids) == ["u", "v", "w", "x"] and data.num_nodes == 4
    # whitespace-separated files have no quoting: the quotes are part of the id
    data, _ = read_graph(_write(tmp_path / "g.tsv", 'a\tb\n"u"\tv\nu\tv\n'))
    assert sorted(data.node_ids) == ['"u"', "u", "v"]


def test_huge_and_sparse_integer_ids_are_mapped(tmp_path):
    """Ids >= 2**63, or up to 10**12 on a handful of nodes, are ids (mapped), not an array size."""
    big = 2**64 + 7
    data, notes = read_graph(_write(tmp_path / "g.csv", f"{2**63},1\n{big},1\n1000000000000,5\n"))
    assert data.num_nodes == 5 and data.node_ids == ["1", "5", "1000000000000", str(2**63), str(big)]
    note = next(n for n in notes if "too sparse" in public_note(n))
    assert f"integer node ids up to {big} name only 5 nodes" in note
    assert str(big) not in public_note(note)  # the release's text names no id
    data, notes = read_graph(_write(tmp_path / "h.csv", "0,1\n1,5\n"))  # small gaps stay indices
    assert data.num_nodes == 6 and not hasattr(data, "node_ids") and notes[-1].startswith("undirected")


def test_leading_zeros_are_written_ids(tmp_path):
    """``07`` and ``7`` are two ids (compared as written), ordered by value: never merged into index 7."""
    data, _ = read_graph(_write(tmp_path / "g.tsv", "07 1\n7 1\n"))
    assert data.node_ids == ["1", "07", "7"]
    assert id_order({"10", "9", "010", "0", "00"}) == ["0", "00", "9", "010", "10"]
    assert index_ids(np.array([["1", "2"], ["3", "4"]])).tolist() == [[1, 2], [3, 4]]
    assert index_ids(np.array([["01"], ["2"]])) is None


def test_a_huge_id_past_the_side_files_names_its_line(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((3, 2)))
    path = _write(tmp_path / "g.tsv", f"0 1\n1 2\n2 {2**70}\n")
    with pytest.raises(GraphInputError, match=rf"g.tsv, line 3: node id '2' \(or '{2**70}'\) is not a node index"):
        read_graph(path, features=tmp_path / "x.npy")


def test_absurd_npz_shape_refused_before_reading(tmp_path):
    """An .npz declaring 10**12 nodes for a few entries is refused from its header, in one line."""
    coo = sp.coo_matrix((np.ones(2), (np.array([0, 1]), np.array([1, 0]))), shape=(10**12, 10**12))
    sp.save_npz(tmp_path / "a.npz", coo)
    with pytest.raises(GraphInputError, match=r"a.npz declares 1000000000000×1000000000000 for 2 stored entries"):
        read_graph(tmp_path / "a.npz")
    sp.save_npz(tmp_path / "ok.npz", sp.coo_matrix((np.ones(2), ([0, 1], [1, 0])), shape=(3, 3)))
    data, _ = read_graph(tmp_path / "ok.npz")
    assert data.num_nodes == 3


def test_bad_values_name_file_line_and_text(tmp_path):
    _write(tmp_path / "y.txt", "0\n1\n²\n0\n")
    with pytest.raises(GraphInputError, match=r"y.txt, line 3: label '²' is not an integer"):
        read_graph(_write(tmp_path / "g.tsv", "0 1\n2 3\n"), labels=tmp_path / "y.txt")
    _write(tmp_path / "x.csv", "1,2\n3,１\n")
    with pytest.raises(GraphInputError, match=r"x.csv, line 2: feature value '１' is not a number"):
        read_graph(_write(tmp_path / "h.tsv", "0 1\n"), features=tmp_path / "x.csv")
    _write(tmp_path / "z.txt", f"0\n{2**63}\n")
    with pytest.raises(GraphInputError, match=r"z.txt, line 2: label '9223372036854775808' is not an integer in"):
        read_graph(_write(tmp_path / "k.tsv", "0 1\n"), labels=tmp_path / "z.txt")


def test_comment_lines_only_when_declared(tmp_path):
    path = _write(tmp_path / "g.txt", "# FromNodeId ToNodeId\n0 1\n1 2\n")
    with pytest.raises(GraphInputError, match=r"g.txt, line 2: expected 3 columns, got 2 \(line 1 starts with #"):
        read_graph(path)
    data, _ = read_graph(path, comment="#")
    assert data.edge_index.shape[1] == 4
    data, notes = read_graph(_write(tmp_path / "h.csv", "a,b\n#tag,x\n"))  # a hashtag id: data, and said so
    assert "#tag" in data.node_ids
    assert any("1 row starting with # or % read as edges (first: line 2)" in n for n in notes)


def test_header_rule_always_said(tmp_path):
    """A first row with a non-number id cell is the header, and the notes say so every time (even when the other
    rows are integers: the audit's `n2,n4`)."""
    data, notes = read_graph(_write(tmp_path / "g.csv", "n2,n4\n0,1\n1,2\n"))
    assert data.num_nodes == 3 and any(n.startswith("line 1 (n2, n4) read as the header row") for n in notes)
    with pytest.raises(GraphInputError, match=r"its only row, a, b, was read as the header"):
        read_graph(_write(tmp_path / "h.csv", "a,b\n"))
    _, notes = read_graph(_write(tmp_path / "k.csv", "0,1\n1,2\n"))
    assert not any("header" in n for n in notes)


def test_missing_labels_are_unlabelled_and_in_no_split(tmp_path):
    """An empty label cell or the declared marker is a node without a label: y = -1, in no split."""
    edges = "".join(f"n{i},n{(i + 1) % 20}\n" for i in range(20))
    rows = "".join(f"n{i},{'' if i % 10 == 3 else 'NA' if i % 10 == 7 else i % 2}\n" for i in range(20))
    _write(tmp_path / "y.csv", "id,label\n" + rows)
    graph = _write(tmp_path / "g.csv", "a,b\n" + edges)
    with pytest.raises(GraphInputError, match=r"y.csv, line 9: label 'NA' is not an integer"):
        read_graph(graph, labels=tmp_path / "y.csv")
    data, _ = read_graph(graph, labels=tmp_path / "y.csv", missing_label="NA")
    unlabelled = [data.node_ids[i] for i in (data.y == -1).nonzero().flatten().tolist()]
    assert sorted(unlabelled) == ["n13", "n17", "n3", "n7"]
    split = data.train_mask | data.val_mask | data.test_mask
    assert not split[data.y == -1].any() and split[data.y >= 0].all()
    _write(tmp_path / "y.txt", "".join(f"{'-' if i in (2, 5) else i % 2}\n" for i in range(6)))
    data, _ = read_graph(_write(tmp_path / "p.tsv", "0 1\n1 2\n"), labels=tmp_path / "y.txt", missing_label="-")
    assert data.y.tolist() == [0, 1, -1, 1, 0, -1]
    _write(tmp_path / "neg.txt", "0\n-1\n")
    with pytest.raises(GraphInputError, match=r"neg.txt, line 2: labels must be >= 0, got -1 .*--missing-label"):
        read_graph(_write(tmp_path / "q.tsv", "0 1\n"), labels=tmp_path / "neg.txt")


def test_one_node_table_carries_features_and_labels(tmp_path):
    """label_column: the features node table's named column is the label (empty: unlabelled); the rest features."""
    _write(tmp_path / "nodes.csv", "id,age,class,score\nzed,0.1,1,5\nbob,0.2,,6\nann,0.3,0,7\n")
    graph = _write(tmp_path / "g.csv", "a,b\nann,bob\nbob,zed\n")
    data, _ = read_graph(graph, features=tmp_path / "nodes.csv", label_column="class")
    assert data.node_ids == ["ann", "bob", "zed"]
    assert data.x.flatten().tolist() == pytest.approx([0.3, 7, 0.2, 6, 0.1, 5]) and data.y.tolist() == [0, -1, 1]
    _write(tmp_path / "only.csv", "id,class\nzed,1\nbob,0\nann,0\n")
    data, _ = read_graph(graph, features=tmp_path / "only.csv", label_column="class")
    assert data.x is None and data.y.tolist() == [0, 0, 1]
    with pytest.raises(GraphInputError, match=r"nodes.csv has no column 'kind' for the labels \(columns: age, class"):
        read_graph(graph, features=tmp_path / "nodes.csv", label_column="kind")
    with pytest.raises(GraphInputError, match=r"label_column \(--label-column\) names the label column of a features"):
        read_graph(graph, features=tmp_path / "nodes.csv", labels=tmp_path / "only.csv", label_column="class")


def test_non_finite_text_features_name_their_line(tmp_path):
    """NaN/inf in a text table is refused at its first line in file order (a node table: not its node's row)."""
    graph = _write(tmp_path / "g.csv", "a,b\nzed,ann\n")
    _write(tmp_path / "x.csv", "id,f\nzed,1\nann,inf\n")
    with pytest.raises(GraphInputError, match=r"x.csv, line 3: feature value 'inf' is not finite \(1 NaN/inf value"):
        read_graph(graph, features=tmp_path / "x.csv")
    _write(tmp_path / "p.csv", "f,g\n1,2\n3,nan\n")
    with pytest.raises(GraphInputError, match=r"p.csv, line 3: feature value 'nan' is not finite"):
        read_graph(_write(tmp_path / "h.tsv", "0 1\n"), features=tmp_path / "p.csv")


def test_npy_labels_with_a_declared_missing_marker(tmp_path):
    np.save(tmp_path / "y.npy", np.array([0, -1, 1, 1, -1, 0]))
    graph = _write(tmp_path / "g.tsv", "0 1\n2 3\n4 5\n")
    with pytest.raises(GraphInputError, match=r"labels in y.npy must be >= 0: 2 are negative \(e.g. -1 at entry 1\)"):
        read_graph(graph, labels=tmp_path / "y.npy")
    data, _ = read_graph(graph, labels=tmp_path / "y.npy", missing_label="-1")
    assert data.y.tolist() == [0, -1, 1, 1, -1, 0]
    assert not (data.train_mask | data.val_mask | data.test_mask)[data.y == -1].any()


def test_a_plain_side_file_beside_a_node_table_is_refused(tmp_path):
    """A keyed features table and plain labels (rows in no id order) cannot be matched: refused, not aligned."""
    _write(tmp_path / "x.csv", "id,f\nb,1\na,2\n")
    _write(tmp_path / "y.txt", "0\n1\n")
    with pytest.raises(GraphInputError, match=r"x.csv is keyed by an id column, but the labels file y.txt has no id"):
        read_graph(_write(tmp_path / "g.csv", "s,t\na,b\n"), features=tmp_path / "x.csv", labels=tmp_path / "y.txt")


def test_drop_unknown_keeps_the_mask_file_aligned(tmp_path):
    """A private-edge mask file has one entry per edge row of the file; dropped rows take theirs along."""
    _write(tmp_path / "x.csv", "id,f\na,1\nb,2\nc,3\n")
    graph = _write(tmp_path / "g.csv", "s,t\na,b\nb,zz\nb,c\n")
    np.save(tmp_path / "m.npy", np.array([True, False, False]))
    data, _ = read_graph(graph, features=tmp_path / "x.csv", private_edges=tmp_path / "m.npy", drop_unknown=True)
    pairs = [(data.node_ids[u], data.node_ids[v]) for u, v in data.edge_index.t().tolist()]
    flags = dict(zip(pairs, data.private_edge_mask.tolist()))
    assert flags == {("a", "b"): True, ("b", "a"): True, ("b", "c"): False, ("c", "b"): False}
