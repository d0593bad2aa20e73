"""Parsing the user's table files (the CLI's ``--input`` and its side files; :mod:`privgraph.data.io`
documents the formats): CSV/TSV/whitespace edge lists with an optional header and private-flag
column, SciPy ``.npz`` adjacency matrices, and the features, labels and private-edge mask
(``.npy`` or text).  Every defect is one :class:`~privgraph.data.files.GraphInputError` line naming
the file (and the line); the graph checks are :mod:`privgraph.data.io`'s."""

from __future__ import annotations

import csv
import re
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from privgraph.data.files import (
    FEATURE_SUFFIXES,
    LABEL_SUFFIXES,
    MASK_SUFFIXES,
    existing_file,
    first_line,
    input_error,
)
from privgraph.data.validation import Note, plural

_TRUE = ("1", "true")
_FALSE = ("0", "false")


def check_finite(x: Tensor, what: str) -> None:
    if not x.is_floating_point():
        return
    bad = ~torch.isfinite(x)
    count = int(bad.sum())
    if count:
        row, col = (int(i) for i in bad.nonzero()[0])
        raise input_error(
            f"{what} hold {count} NaN/inf values (e.g. row {row}, column {col}); fill or drop them before privatizing"
        )


# ---------------------------------------------------------------------------------------- files


SPACES = " \t\f\v"  # the spaces around a field and between a whitespace file's fields: ASCII only
_SPLIT = re.compile(r"[ \t\f\v]+")
_SPACED = re.compile(r"[ \t\f\v]")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the csv module's line breaks only (not \x85, \u2028, \x0c, ...)


def _lines(path: Path, role: str) -> list[str]:
    try:
        lines = _LINE_BREAK.split(path.read_text(encoding="utf-8-sig"))
        if lines and lines[-1] == "":
            lines.pop()  # the file's last line break ends a line, it does not start one
        if any("\x00" in line for line in lines):
            number = next(i for i, line in enumerate(lines, start=1) if "\x00" in line)
            raise input_error(f"{path.name}, line {number}: a NUL character; {role} files are text")
        return lines
    except UnicodeDecodeError as exc:
        raise input_error(f"cannot read {role} file {path} as UTF-8 text: {first_line(exc)}") from exc
    except OSError as exc:
        raise input_error(f"cannot read {role} file {path}: {first_line(exc)}") from exc


def _rows(path: Path, role: str, comment: str | None = None) -> list[tuple[int, list[str]]]:
    """The data rows of a text table as (line number, fields stripped of ASCII spaces): comma-separated for
    ``.csv`` (the csv module's quoting, ``skipinitialspace``: `` "u" `` is ``u``), separated by ASCII spaces
    and tabs otherwise (quotes are part of the text; ``\xa0`` or ``\u3000`` are not spaces); lines end at
    ``\n``, ``\r\n`` or ``\r`` only; blank lines skipped, and lines starting with ``comment`` when one is declared
    (none by default: a ``#`` line is data)."""
    lines = _lines(path, role)
    if path.suffix.lower() == ".csv":
        parsed = csv.reader(lines, skipinitialspace=True)
        try:
            fields_per_line = list(parsed)
        except csv.Error as exc:
            raise input_error(f"{path.name}, line {parsed.line_num}: malformed CSV: {first_line(exc)}") from exc
        if len(fields_per_line) != len(lines):  # a quoted field spanning lines: find where it starts
            tracked = csv.reader(lines, skipinitialspace=True)
            for number, _ in enumerate(tracked, start=1):
                if tracked.line_num != number:
                    raise input_error(
                        f"{path.name}, line {number}: malformed CSV (a quoted field is not closed on its line)"
                    )
        spaced = _SPACED.search
        fields_per_line = [
            [f.strip(SPACES) for f in row] if spaced(line) else row for line, row in zip(lines, fields_per_line)
        ]
    else:
        fields_per_line = [_SPLIT.split(line.strip(SPACES)) if line.strip(SPACES) else [] for line in lines]
    rows = []
    for number, (line, fields) in enumerate(zip(lines, fields_per_line), start=1):
        if not fields or not (line.strip(SPACES) if _SPACED.search(line) else line):
            continue
        if comment and line.lstrip(SPACES).startswith(comment):
            continue
        rows.append((number, fields))
    return rows


_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|nan|inf|infinity)", re.ASCII | re.I)
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NEGATIVE = re.compile(r"-0*[1-9][0-9]*", re.ASCII)
COMMENT_HINT = "if it is a comment, declare comment lines (comment='#' / --comment '#')"


def _is_number(text: str, kind: type = float) -> bool:
    """Whether ``text`` is a number written in ASCII (digits, sign, point, exponent; no ``_``): ``１``, ``²``
    and ``1_0`` are not."""
    return (_NUMBER if kind is float else _INTEGER).fullmatch(text) is not None


def _hint(text: str) -> str:
    return f" ({COMMENT_HINT})" if text.startswith(("#", "%")) else ""


def _parse(values: list[str], numbers: list[int], kind: type, path: Path, what: str) -> np.ndarray:
    """``values`` (strings, one per row) as an int64 or float64 array of ASCII numbers (:func:`_is_number`),
    floats finite; the first bad entry (file order) is named with its line."""
    out = _parse_numbers(values, numbers, kind, path, what)
    if kind is float and out.size:
        bad = np.flatnonzero(~np.isfinite(out))
        if bad.size:
            i = int(bad[0])
            raise input_error(
                f"{path.name}, line {numbers[i]}: {what} {values[i]!r} is not finite "
                f"({plural(bad.size, 'NaN/inf value')} in the file); fill or drop them before privatizing"
            )
    return out


def _parse_numbers(values: list[str], numbers: list[int], kind: type, path: Path, what: str) -> np.ndarray:
    dtype = np.int64 if kind is int else np.float64
    if not values:
        return np.empty(0, dtype=dtype)
    joined = "".join(values)
    if joined.isascii() and "_" not in joined:
        try:
            return np.asarray(values, dtype=str).astype(dtype)
        except (ValueError, OverflowError):
            pass
    out = np.empty(len(values), dtype=dtype)
    for i, (text, number) in enumerate(zip(values, numbers)):
        try:
            if not _is_number(text, kind):
                raise ValueError(text)
            out[i] = kind(text)
        except (ValueError, OverflowError):
            expected = "an integer" if kind is int else "a number"
            if _INTEGER.fullmatch(text):
                expected += " in the int64 range"
            raise input_error(f"{path.name}, line {number}: {what} {text!r} is not {expected}{_hint(text)}") from None
    return out


HEADER_RULE = (
    "a first row with a cell that is not an ASCII number, among the columns read (an edge list: its two id "
    "columns), is the header, unless it starts with # or %"
)


def _header(rows: list[tuple[int, list[str]]], columns: int, notes: list | None, shown: str = "") -> list[str] | None:
    """The header row (popped from ``rows``) by :data:`HEADER_RULE`, the same for every text file: one of its
    first ``columns`` fields is not a number.  Taken, it is said in ``notes`` (the curator's: the cells; the
    public text: none), every time, naming the line; ``shown`` names the file."""
    if not rows or all(_is_number(f) for f in rows[0][1][:columns]) or _hint(rows[0][1][0] if rows[0][1] else ""):
        return None  # a row starting with # or % is data unless comments are declared: never a header
    number, fields = rows.pop(0)
    header = [f.strip().strip('"').strip("'") for f in fields]
    if notes is not None:
        where = f"{shown}: " if shown else ""
        notes.append(
            Note(
                f"{where}line {number} ({', '.join(header)}) read as the header row ({HEADER_RULE})",
                f"{where}the first row read as the header row ({HEADER_RULE})",
            )
        )
    return header


def _check_widths(rows: list[tuple[int, list[str]]], width: int, path: Path, unit: str) -> None:
    for number, fields in rows:
        if len(fields) != width:
            hint = _hint(fields[0]) if fields else ""
            if not hint and rows[0][1] and _hint(rows[0][1][0]):
                hint = f" (line {rows[0][0]} starts with {rows[0][1][0][0]}: {COMMENT_HINT})"
            raise input_error(f"{path.name}, line {number}: expected {width} {unit}, got {len(fields)}{hint}")


# ---------------------------------------------------------------------------------------- side files


def _load_npy(path: Path, role: str) -> np.ndarray:
    try:
        with path.open("rb") as handle:
            magic = handle.read(6)
    except OSError as exc:
        raise input_error(f"cannot read {role} file {path}: {first_line(exc)}") from exc
    if magic != b"\x93NUMPY":
        raise input_error(f"cannot read {role} file {path}: not a NumPy .npy file (write it with numpy.save)")
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise input_error(f"cannot read {role} file {path} as a NumPy .npy array: {first_line(exc)}") from exc
    if not isinstance(array, np.ndarray):
        raise input_error(f"{role} file {path} holds an archive of arrays, not one array (save it with numpy.save)")
    return array


def read_features(path: str | Path, *, comment: str | None = None, notes: list | None = None) -> Tensor:
    """Node features [n, d] (float32) from a 2-D ``.npy`` array or a numeric text table (one row per node,
    header optional: :data:`HEADER_RULE`, said in ``notes``); NaN/inf are refused.  ``comment``: the
    declared comment-line prefix (none by default)."""
    path = existing_file(path, "features", FEATURE_SUFFIXES)
    if path.suffix.lower() == ".npy":
        array = _load_npy(path, "features")
        if array.dtype == np.bool_:
            array = array.astype(np.float32)
        if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
            raise input_error(f"features file {path.name} holds {array.dtype} values; expected numbers")
        if array.ndim != 2:
            raise input_error(f"features in {path.name} must be a 2-D array [nodes, features], got shape {array.shape}")
    else:
        rows = _rows(path, "features", comment)
        if rows:
            _header(rows, len(rows[0][1]), notes, path.name)
        if not rows:
            raise input_error(f"features file {path.name} holds no rows")
        width = len(rows[0][1])
        _check_widths(rows, width, path, "values")
        numbers = [number for number, fields in rows for _ in fields]
        flat = _parse([f for _, fields in rows for f in fields], numbers, float, path, "feature value")
        array = flat.reshape(len(rows), width)
    x = torch.from_numpy(np.ascontiguousarray(array)).float()
    check_finite(x, f"features in {path.name}")
    return x


UNLABELLED = -1  # the label of a node without one (an empty cell, or the declared missing-label marker)


def _labels(values: list[str], numbers: list[int], path: Path, missing: str | None) -> np.ndarray:
    """Labels as written (one string per node) as int64, :data:`UNLABELLED` for an empty cell or ``missing``;
    the others integers >= 0 (the first bad one named by its line)."""
    absent = np.asarray([v == "" or v == missing for v in values], dtype=np.bool_)
    given = [v for v, a in zip(values, absent) if not a]
    lines = [n for n, a in zip(numbers, absent) if not a]
    negative = [i for i, v in enumerate(given) if _NEGATIVE.fullmatch(v)]
    if negative:
        i = negative[0]
        _parse(given[:i], lines[:i], int, path, "label")  # a bad value on an earlier line is named first
        marker = "" if missing is not None else "; a node without a label: leave the cell empty, or --missing-label"
        raise input_error(
            f"{path.name}, line {lines[i]}: labels must be >= 0, got {given[i]} ({plural(len(negative), 'negative')}"
            f"{marker})"
        )
    y = np.full(len(values), UNLABELLED, dtype=np.int64)
    y[~absent] = _parse(given, lines, int, path, "label")
    return y


def read_labels(
    path: str | Path, *, comment: str | None = None, missing: str | None = None, notes: list | None = None
) -> Tensor:
    """Node labels [n] (long) from a 1-D ``.npy`` array or a text file with one integer per line (header
    optional: :data:`HEADER_RULE`); labels are integers >= 0, and ``missing`` (a declared marker, e.g.
    ``NA``; for ``.npy`` an integer) or an empty cell is a node without one (:data:`UNLABELLED`, in no split).
    Blank lines are skipped, so a text file marks a missing label with ``missing`` or an empty quoted cell."""
    path = existing_file(path, "labels", LABEL_SUFFIXES)
    if path.suffix.lower() != ".npy":
        rows = _rows(path, "labels", comment)
        _header(rows, 1, notes, path.name)
        _check_widths(rows, 1, path, "value (one label per line)")
        if not rows:
            raise input_error(f"labels file {path.name} holds no labels")
        y = _labels([fields[0] for _, fields in rows], [number for number, _ in rows], path, missing)
        return torch.from_numpy(y)
    array = _load_npy(path, "labels")
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise input_error(f"labels in {path.name} must be a 1-D array (one per node), got shape {array.shape}")
    if np.issubdtype(array.dtype, np.floating):
        if not np.isfinite(array).all() or not (array == np.round(array)).all():
            raise input_error(f"labels in {path.name} must be integers, got non-integer values")
    elif not np.issubdtype(array.dtype, np.integer):
        raise input_error(f"labels file {path.name} holds {array.dtype} values; expected integers")
    y = array.astype(np.int64)
    absent = y == int(missing) if missing is not None and _is_number(missing, int) else np.zeros(y.size, np.bool_)
    negative = np.flatnonzero((y < 0) & ~absent)
    y[absent] = UNLABELLED
    if y.size == 0:
        raise input_error(f"labels file {path.name} holds no labels")
    if negative.size:
        i = int(negative[0])
        raise input_error(
            f"labels in {path.name} must be >= 0: {negative.size} are negative (e.g. {int(y[i])} at entry {i})"
        )
    return torch.from_numpy(y)


def read_edge_mask(path: str | Path) -> Tensor:
    """A private-edge mask (bool) from a 1-D ``.npy`` array of booleans or 0/1 values."""
    path = existing_file(path, "private-edge mask", MASK_SUFFIXES)
    array = _load_npy(path, "private-edge mask")
    if array.ndim != 1:
        raise input_error(
            f"private-edge mask in {path.name} must be a 1-D array (one entry per edge), got shape {array.shape}"
        )
    if array.dtype != np.bool_:
        if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
            raise input_error(f"private-edge mask in {path.name} holds {array.dtype} values; expected 0/1 or booleans")
        bad = ~((array == 0) | (array == 1))
        if bad.any():
            raise input_error(
                f"private-edge mask in {path.name} must hold only 0/1 (or booleans): "
                f"{int(bad.sum())} other values (e.g. {array[bad][0].item()!r} at entry "
                f"{int(bad.nonzero()[0][0])})"
            )
    return torch.from_numpy(array.astype(np.bool_))


# ---------------------------------------------------------------------------------------- graph files


def _private_index(private_column: str, header: list[str] | None, width: int, path: Path) -> int:
    if header is not None and private_column in header:
        index = header.index(private_column)
    elif private_column.strip().isdigit():
        index = int(private_column)
    elif header is None:
        raise input_error(
            f"{path.name} has no header row, so the private column must be a 0-based column "
            f"index, got {private_column!r}"
        )
    else:
        raise input_error(f"{path.name} has no column {private_column!r} (columns: {', '.join(header)})")
    if index < 2:
        raise input_error(
            f"the private column {private_column!r} of {path.name} is its "
            f"{'source' if index == 0 else 'target'} column; the private flag needs a column of its own"
        )
    if index >= width:
        raise input_error(f"{path.name} has {width} columns, so there is no column {index} for the private flag")
    return index


PRIVATE_HEADER = "private"  # a header column of this name is the private flag by default


def read_edge_list(
    path: Path, private_column: str | None, mask_file: bool, notes: list, comment: str | None = None
) -> tuple[np.ndarray, Tensor | None, np.ndarray]:
    """(the node ids as written [2, E] (strings), the private column's mask or None, the line of each
    edge).  The header row by :data:`HEADER_RULE` (said in ``notes``); without ``private_column`` (and no
    ``mask_file``) a header column named ``private`` is the flag.  ``comment``: the declared comment-line
    prefix (none by default: a row starting with ``#`` is an edge, and the notes say so).
    :func:`privgraph.data.io.read_graph` turns the ids into 0..n−1."""
    rows = _rows(path, "graph", comment)
    header = _header(rows, 2, notes)
    named = [h for h in header or [] if h.lower() == PRIVATE_HEADER]
    if private_column is None and not mask_file and named and header.index(named[0]) >= 2:
        private_column = named[0]
        notes.append(f"column {named[0]!r} read as the private-edge flag (choose another with --private-column)")
    if not rows:
        taken = "" if header is None else f" (its only row, {', '.join(header)}, was read as the header: {HEADER_RULE})"
        raise input_error(f"no edges in {path}: the edge list is empty{taken}")
    width = len(header) if header is not None else len(rows[0][1])
    if width < 2:
        hint = _hint(rows[0][1][0]) if rows[0][1] else ""
        raise input_error(f"{path.name}, line {rows[0][0]}: expected two columns (source, target), got {width}{hint}")
    _check_widths(rows, width, path, "columns")
    numbers = [number for number, _ in rows]
    src = np.asarray([fields[0] for _, fields in rows], dtype=str)
    dst = np.asarray([fields[1] for _, fields in rows], dtype=str)
    empty = (np.char.str_len(src) == 0) | (np.char.str_len(dst) == 0)
    if empty.any():
        raise input_error(f"{path.name}, line {numbers[int(empty.nonzero()[0][0])]}: empty node id")
    marked = [number for number, fields in rows if fields[0].startswith(("#", "%"))]
    if marked:
        notes.append(
            Note(
                f"{plural(len(marked), 'row')} starting with # or % read as edges (first: line {marked[0]}); "
                + COMMENT_HINT,
                "rows starting with # or % read as edges (no comment prefix declared)",
            )
        )
    mask = None
    used = {0, 1}
    if private_column is not None:
        index = _private_index(str(private_column), header, width, path)
        used.add(index)
        flags = np.empty(len(rows), dtype=np.bool_)
        for i, (number, fields) in enumerate(rows):
            value = fields[index].lower()
            if value not in _TRUE + _FALSE:
                raise input_error(
                    f"{path.name}, line {number}: the private flag must be 0/1 or true/false, got {fields[index]!r}"
                )
            flags[i] = value in _TRUE
        mask = torch.from_numpy(flags)
    ignored = [header[i] if header is not None else str(i) for i in range(width) if i not in used]
    if ignored:
        flags = (
            "the private-edge mask file"
            if mask_file
            else f"column {header[index] if header is not None else index}"
            if mask is not None
            else None
        )
        notes.append(
            f"{'column' if len(ignored) == 1 else 'columns'} {', '.join(ignored)} ignored (only source and "
            f"target are read{f', and the private flags from {flags}' if flags else ''})"
        )
    return np.stack([src, dst]), mask, np.asarray(numbers, dtype=np.int64)


ID_COLUMN = "id"  # a text features/labels file with a header column of this name is keyed by node id


class NodeTable:
    """A features or labels text file keyed by node id: ``ids`` (strings), the ``line`` of each row, and
    the other columns' ``names`` and ``values`` (strings, one list per row)."""

    def __init__(self, path: Path, role: str, ids: list[str], lines: list[int], names: list[str], values: list):
        self.path, self.role, self.ids, self.lines, self.names, self.values = path, role, ids, lines, names, values

    def index(self) -> dict[str, int]:
        return {node: i for i, node in enumerate(self.ids)}


def read_node_table(
    path: str | Path, role: str, *, comment: str | None = None, notes: list | None = None
) -> NodeTable | None:
    """``path`` (a features or labels file) as a :class:`NodeTable` when it is a text table whose first row
    has an ``id`` column (the header, a declared name: said in ``notes``); None otherwise (rows in node order).
    A duplicate or empty id is refused."""
    path = existing_file(path, role, FEATURE_SUFFIXES if role == "features" else LABEL_SUFFIXES)
    if path.suffix.lower() == ".npy":
        return None
    rows = _rows(path, role, comment)
    if not rows or ID_COLUMN not in [f.strip().strip('"').strip("'").lower() for f in rows[0][1]]:
        return None
    number, fields = rows.pop(0)
    header_line = number
    header = [f.strip().strip('"').strip("'") for f in fields]
    if notes is not None:
        shown = ", ".join(header)
        notes.append(
            Note(
                f"{path.name}: line {number} ({shown}) read as the header row (it names the id column)",
                f"{path.name}: the first row read as the header row (it names the id column)",
            )
        )
    column = [h.lower() for h in header].index(ID_COLUMN)
    _check_widths(rows, len(header), path, "columns")
    if not rows:
        raise input_error(f"{role} file {path.name} holds no rows")
    ids, lines, values, seen = [], [], [], {}
    for number, fields in rows:
        node = fields[column]
        if not node:
            raise input_error(f"{path.name}, line {number}: empty node id")
        if node in seen:
            raise input_error(f"{path.name}, line {number}: node id {node!r} already has a row (line {seen[node]})")
        seen[node] = number
        ids.append(node)
        lines.append(number)
        values.append([f for j, f in enumerate(fields) if j != column])
    names = [h for j, h in enumerate(header) if j != column]
    if not names:
        raise input_error(
            f"{path.name}, line {header_line}: the header of this {role} file names an id column and no other"
        )
    if role == "labels" and len(names) != 1:
        raise input_error(
            f"{path.name}, line {header_line}: a labels node table has two columns, id and the label, got "
            f"{', '.join(header)}"
        )
    return NodeTable(path, role, ids, lines, names, values)


def split_label_column(table: NodeTable, column: str) -> tuple[NodeTable | None, NodeTable]:
    """A features node table that also carries the label (``column``, by its header name) as (the features
    table without it, or None when it was the only other column; the labels table)."""
    if column not in table.names:
        raise input_error(
            f"the features file {table.path.name} has no column {column!r} for the labels (columns: "
            f"{', '.join(table.names)})"
        )
    j = table.names.index(column)
    labels = NodeTable(table.path, "labels", table.ids, table.lines, [column], [[row[j]] for row in table.values])
    names = [n for i, n in enumerate(table.names) if i != j]
    if not names:
        return None, labels
    values = [[f for i, f in enumerate(row) if i != j] for row in table.values]
    return NodeTable(table.path, "features", table.ids, table.lines, names, values), labels


def table_values(table: NodeTable, order: list[int], missing: str | None = None) -> Tensor:
    """The table's values in node order (``order``: the table's row of each node): features float32
    [n, d], labels long [n] (integers >= 0; an empty cell or ``missing``: :data:`UNLABELLED`).  Parsed in the
    file's row order, so a bad value is named by the first bad line."""
    flat = [f for row in table.values for f in row]
    numbers = [line for line, row in zip(table.lines, table.values) for _ in row]
    rows = np.asarray(order, dtype=np.int64)
    if table.role == "features":
        array = _parse(flat, numbers, float, table.path, "feature value").reshape(len(table.ids), len(table.names))
        x = torch.from_numpy(np.ascontiguousarray(array[rows])).float()
        check_finite(x, f"features in {table.path.name}")
        return x
    return torch.from_numpy(_labels(flat, numbers, table.path, missing)[rows])


def _npz_header(path: Path) -> tuple[int, int, int]:
    """(rows, columns, stored entries) that a SciPy ``.npz`` declares, read from its small members and the
    ``.npy`` header of its data, before any array of that size is loaded."""
    with zipfile.ZipFile(path) as archive:
        with archive.open("shape.npy") as handle:
            shape = np.load(handle, allow_pickle=False)
        with archive.open("data.npy") as handle:
            version = np.lib.format.read_magic(handle)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            entries = read(handle)[0]
    rows, cols = (int(v) for v in shape.reshape(-1)[:2])
    return rows, cols, int(np.prod(entries))


def read_npz(path: Path) -> tuple[Tensor, int]:
    """A SciPy sparse adjacency matrix (square, 0/1) as (edge_index [2, E] in row-major order, its order).  A
    declared shape that is not a plausible node count (:func:`~privgraph.data.ids.plausible_nodes` of twice the
    stored entries) is refused from the archive's header, before anything of that size is allocated."""
    import scipy.sparse as sp

    from privgraph.data.ids import MIN_NODES_ALLOWED, plausible_nodes

    if not zipfile.is_zipfile(path):
        raise input_error(f"cannot read {path}: not a SciPy sparse .npz archive (write it with scipy.sparse.save_npz)")
    try:
        rows, cols, entries = _npz_header(path)
    except Exception as exc:  # noqa: BLE001 - zip / format errors alike
        raise input_error(
            f"cannot read {path} as a SciPy sparse matrix (scipy.sparse.save_npz): {first_line(exc)}"
        ) from exc
    if rows != cols:
        raise input_error(f"the adjacency matrix in {path.name} must be square, got {rows}×{cols}")
    if rows < 0 or not plausible_nodes(rows, 2 * entries):
        raise input_error(
            f"the adjacency matrix in {path.name} declares {rows}×{cols} for {entries} stored entries: refused "
            f"before reading (at most {MIN_NODES_ALLOWED} nodes, or 4 per stored entry); for large sparse ids "
            "write an edge list, whose ids are mapped"
        )
    try:
        matrix = sp.load_npz(path)
    except Exception as exc:  # noqa: BLE001 - zip / pickle / format errors alike
        raise input_error(
            f"cannot read {path} as a SciPy sparse matrix (scipy.sparse.save_npz): {first_line(exc)}"
        ) from exc
    if matrix.shape != (rows, cols):
        raise input_error(f"the adjacency matrix in {path.name} is inconsistent: its arrays do not match its shape")
    coo = matrix.tocoo()
    keep = coo.data != 0  # explicitly stored zeros are not edges
    row, col, weight = coo.row[keep], coo.col[keep], coo.data[keep]
    off = weight != 1
    if off.any():
        raise input_error(
            f"the adjacency matrix in {path.name} has {int(off.sum())} entries other than 0/1 "
            f"(e.g. {weight[off][0].item()!r}); privgraph reads unweighted graphs: binarize it"
        )
    order = np.lexsort((col, row))
    edge_index = torch.from_numpy(np.stack([row[order], col[order]]).astype(np.int64))
    return edge_index, int(rows)
