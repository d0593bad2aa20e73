"""Property-based tests of the edge-list and node-table readers against a reference parse written
here from the csv module and the documented rules (docs/usage.md, "Node ids" and "Reading rules"): every file
gives the reference's graph, or one :class:`GraphInputError` naming the file and the first bad line — never a
traceback, never a silent merge of two ids.  ``HYPOTHESIS_PROFILE=long`` runs many more examples."""

from __future__ import annotations

import csv
import io
import os
import re

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from privgraph.data import GraphInputError, read_graph  # noqa: E402

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]}
settings.register_profile("default", max_examples=100, **_COMMON)
settings.register_profile("long", max_examples=2000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# ids that tempt a reader to guess: look-alike digits, signs, underscores, huge and zero-padded integers, csv
# metacharacters, comment marks, non-ASCII spaces, other scripts
TRICKY = ["1", "01", "１", "١٢", "12", "1_0", "10", "²", "2", "-3", "+3", "3", " 3", "u", '"u"', "u ", "a,b",
          "#x", "%y", "\xa0u", "u\u3000", "é", "e\u0301", str(2**63), str(2**64 + 1), "1000000000000", "0", "nan",
          "1e3", "1.5", "x'y", 'q"r']  # fmt: skip
SPACES = " \t\f\v"
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|nan|inf|infinity)", re.I)


def _text_ids():
    alphabet = st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00")
    return st.one_of(
        st.sampled_from(TRICKY),
        st.integers(min_value=0, max_value=40).map(str),
        st.text(alphabet=alphabet, min_size=1, max_size=6),
    )


def _is_number(cell: str) -> bool:
    """A reference for the header rule's "ASCII number", independent of the reader's regex: ``float`` on ASCII
    text without ``_``."""
    if not cell.isascii() or "_" in cell:
        return False
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _reference_rows(text: str) -> list[tuple[int, list[str]]]:
    """The csv module's rows (skipinitialspace), fields stripped of ASCII spaces, blank lines dropped."""
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)
    rows, previous = [], 0
    for row in reader:
        start, previous = previous + 1, reader.line_num
        fields = [f.strip(SPACES) for f in row]
        if fields and any(fields) or len(fields) > 1:
            rows.append((start, fields))
    return rows


def _order(ids: set[str]) -> list[str]:
    """The documented node order: by integer value when every id is ASCII digits (ties by text), else by text."""
    if all(i.isascii() and i.isdigit() for i in ids):
        return sorted(ids, key=lambda i: (int(i), i))
    return sorted(ids)


def _pairs(data) -> set[tuple[str, str]]:
    names = getattr(data, "node_ids", None)
    name = (lambda i: names[i]) if names is not None else str
    return {(name(u), name(v)) for u, v in data.edge_index.t().tolist()}


def _expect_error(exc: GraphInputError, file: str, line: int) -> None:
    """One line, naming the file and the first bad line."""
    message = str(exc)
    assert "\n" not in message and message.startswith(f"{file}, line {line}:"), (line, message)


@given(
    rows=st.lists(st.tuples(_text_ids(), _text_ids()), min_size=1, max_size=12),
    header=st.booleans(),
)
def test_edge_list_csv_matches_the_csv_module(tmp_path_factory, rows, header):
    path = tmp_path_factory.mktemp("fuzz") / "g.csv"
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    if header:
        writer.writerow(["src", "dst"])
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    _check_edge_list(path, _reference_rows(buffer.getvalue()), header)


def _word_ids():
    """Ids of a whitespace-separated file: anything but its ASCII separators and line breaks."""
    alphabet = st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00" + SPACES)
    return st.one_of(
        st.sampled_from([t for t in TRICKY if not any(c in t for c in SPACES)]),
        st.text(alphabet=alphabet, min_size=1, max_size=6),
    )


@given(
    rows=st.lists(st.tuples(_word_ids(), _word_ids(), st.sampled_from(["\t", " ", " \t ", "\f"])), max_size=12),
    header=st.booleans(),
    blank=st.integers(0, 3),
)
def test_edge_list_tsv_matches_ascii_whitespace(tmp_path_factory, rows, header, blank):
    """A whitespace-separated file: fields split at ASCII spaces/tabs only (``\xa0``, ``\u3000`` are id text)."""
    path = tmp_path_factory.mktemp("fuzz") / "g.tsv"
    lines = (["src\tdst"] if header else []) + [f"{a}{sep}{b}" for a, b, sep in rows]
    lines.insert(min(blank, len(lines)), "  ")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    parsed = [(n, re.split(r"[ \t\f\v]+", line.strip(SPACES))) for n, line in enumerate(lines, 1) if line.strip(SPACES)]
    if not parsed:
        with pytest.raises(GraphInputError, match="no edges in"):
            read_graph(path)
        return
    _check_edge_list(path, parsed, header)


def _check_edge_list(path, parsed: list[tuple[int, list[str]]], header: bool) -> None:
    """``read_graph(path)`` against the reference rows ``parsed`` and the documented header rule."""
    file = path.name
    first = parsed[0][1] if parsed else []
    takes_header = bool(first) and not first[0].startswith(("#", "%")) and not all(_is_number(c) for c in first[:2])
    assert takes_header or not header  # a written header is always taken (src is not a number)
    data_rows = parsed[1:] if takes_header else parsed
    bad = next((n for n, f in data_rows if len(f) != 2 or not f[0] or not f[1]), None)
    try:
        data, notes = read_graph(path)
    except GraphInputError as exc:
        if not data_rows:
            assert "no edges in" in str(exc)
            return
        assert bad is not None, f"refused a good file: {exc}"
        _expect_error(exc, file, bad)
        return
    assert bad is None and data_rows, "read a file the reference refuses"
    assert takes_header == any("read as the header row" in n for n in notes)  # the header is always said
    expected = {(a, b) for _, (a, b) in data_rows} | {(b, a) for _, (a, b) in data_rows}
    assert _pairs(data) == expected  # no id merged with another, none split, none lost
    ids = {i for pair in expected for i in pair}
    if hasattr(data, "node_ids"):
        assert data.node_ids == _order(ids) and data.num_nodes == len(ids)
    else:  # plain indices: ASCII digits without a leading zero
        assert all(re.fullmatch(r"0|[1-9][0-9]*", i) for i in ids) and data.num_nodes == max(map(int, ids)) + 1


@given(
    table=st.dictionaries(_text_ids(), st.integers(min_value=0, max_value=3), min_size=1, max_size=8),
    edges=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=10),
    stranger=st.one_of(st.none(), _text_ids()),
    drop=st.booleans(),
)
def test_node_table_matches_the_csv_module(tmp_path_factory, table, edges, stranger, drop):
    """A labels node table keyed by id and an edge list over its ids (and maybe one stranger): the labels land
    on their ids, a stranger is refused at its first line (or dropped with drop_unknown)."""
    folder = tmp_path_factory.mktemp("fuzz")
    names = list(table)
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "label"])
    writer.writerows([name, label] for name, label in table.items())
    (folder / "y.csv").write_text(buffer.getvalue(), encoding="utf-8")
    table_ids = {f[0]: f[1] for _, f in _reference_rows(buffer.getvalue())[1:]}
    rows = [(names[u % len(names)], names[v % len(names)]) for u, v in edges]
    if stranger is not None:
        rows.insert(len(rows) // 2, (names[0], stranger))
    edge_buffer = io.StringIO(newline="")
    edge_writer = csv.writer(edge_buffer, lineterminator="\n")
    edge_writer.writerow(["src", "dst"])
    edge_writer.writerows(rows)
    (folder / "g.csv").write_text(edge_buffer.getvalue(), encoding="utf-8")
    parsed = _reference_rows(edge_buffer.getvalue())[1:]

    empty_id = "" in table_ids or len(table_ids) != len(table)  # stripped to "" or merged by stripping
    empty_edge = [n for n, (a, b) in parsed if not a or not b]  # a stranger of spaces only
    unknown = [n for n, (a, b) in parsed if a not in table_ids or b not in table_ids]
    try:
        data, notes = read_graph(folder / "g.csv", labels=folder / "y.csv", drop_unknown=drop)
    except GraphInputError as exc:
        message = str(exc)
        if empty_id:
            assert message.startswith("y.csv, line "), message
            return
        if empty_edge:
            assert message.startswith(f"g.csv, line {empty_edge[0]}: empty node id"), message
            return
        if unknown and drop and len(unknown) == len(parsed):
            assert "holds no edges" in message
            return
        assert unknown and not drop, f"refused a good file: {exc}"
        assert message.startswith(f"g.csv, line {unknown[0]}: node id "), (unknown, message)
        return
    assert not empty_id and not empty_edge and (drop or not unknown)
    kept = [(a, b) for n, (a, b) in parsed if n not in unknown]
    assert _pairs(data) == {(a, b) for a, b in kept} | {(b, a) for a, b in kept}
    assert data.node_ids == _order(set(table_ids))
    assert [int(table_ids[i]) for i in data.node_ids] == data.y.tolist()


@given(cells=st.lists(_text_ids(), min_size=1, max_size=8))
def test_labels_are_integers_or_one_clear_error(tmp_path_factory, cells):
    """A plain labels file: ASCII integers >= 0 are the labels in order, anything else one error at its line."""
    folder = tmp_path_factory.mktemp("fuzz")
    buffer = io.StringIO(newline="")
    csv.writer(buffer, lineterminator="\n").writerows([c] for c in cells)
    (folder / "y.csv").write_text(buffer.getvalue(), encoding="utf-8")
    (folder / "g.tsv").write_text("0 0\n", encoding="utf-8")
    parsed = _reference_rows(buffer.getvalue())
    takes_header = bool(parsed) and not parsed[0][1][0].startswith(("#", "%")) and not _is_number(parsed[0][1][0])
    values = parsed[1:] if takes_header else parsed
    good = lambda f: len(f) == 1 and re.fullmatch(r"[+-]?[0-9]+", f[0], re.ASCII) and 0 <= int(f[0]) < 2**63  # noqa: E731
    bad = next((n for n, f in values if not good(f)), None)
    keyed = bool(parsed) and "id" in [c.strip().strip('"').strip("'").lower() for c in parsed[0][1]]
    try:
        data, _ = read_graph(folder / "g.tsv", labels=folder / "y.csv", split_seed=None)
    except GraphInputError as exc:
        message = str(exc)
        if keyed:  # a header naming an id column: a node table with no label column
            expected = f"y.csv, line {parsed[0][0]}: the header of this labels file names an id"
            assert message.startswith(expected), message
            return
        if not values:
            assert "holds no labels" in message
            return
        assert bad is not None, f"refused good labels: {exc}"
        assert message.startswith(f"y.csv, line {bad}:"), (bad, message)
        return
    assert bad is None and values and not keyed
    assert data.y.tolist() == [int(f[0]) for _, f in values]


def test_a_nul_byte_or_an_open_quote_is_one_line(tmp_path):
    (tmp_path / "n.csv").write_text("a,b\nu,v\nw,x\x00\n", encoding="utf-8")
    with pytest.raises(GraphInputError, match=r"n.csv, line 3: a NUL character"):
        read_graph(tmp_path / "n.csv")
    (tmp_path / "q.csv").write_text('a,b\nu,v\n"w,x\ny,z\n', encoding="utf-8")
    with pytest.raises(GraphInputError, match=r"q.csv, line 3: malformed CSV \(a quoted field is not closed"):
        read_graph(tmp_path / "q.csv")
    (tmp_path / "s.csv").write_text("a,b\nu\x85v,w\u2028x\n", encoding="utf-8")  # not line breaks to csv
    data, _ = read_graph(tmp_path / "s.csv")
    assert sorted(data.node_ids) == ["u\x85v", "w\u2028x"]
