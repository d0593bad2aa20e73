"""Results store: one trial per line of a JSON-lines file.

Each line is one :class:`TrialRecord` as a JSON object with sorted keys, so a
store diffs and merges line by line like any text file.  A trial is
identified by its setting's configuration hash
(:func:`~privgraph.experiments.pipeline.config_hash`) and its trial index
(the seed is the setting's seed plus the index); ``privgraph sweep`` skips
the trials already stored.  A trial that raised is stored with
``status = "error"`` and its traceback, and no metrics.

* **Writing.** A record is appended with one ``write`` to the file opened
  with ``O_APPEND``, under an exclusive ``flock``: a line is in the file
  whole or not at all.  A writer killed mid-line leaves a partial last line;
  readers ignore it and the next append cuts it off.  In a sweep only the
  driver writes (workers send their records back to it).
* **Reading.** The file is read when the store opens, then only the lines
  appended since; an index by configuration hash keeps resuming fast on
  large stores.  Records are decoded afresh on every read, so a caller may
  change the ones it gets.
* **Older stores.** privgraph used to write SQLite (``.db``).  Such a file is
  read as it is (``privgraph report --db old.db``) but never written:
  ``privgraph convert-store old.db`` (:meth:`ResultsStore.from_sqlite`)
  writes its trials, unchanged, to ``old.jsonl``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: appends are still one write each
    fcntl = None  # type: ignore[assignment]

DEFAULT_DB = "results/privgraph.jsonl"
OK, ERROR = "ok", "error"
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass
class TrialRecord:
    """One trial: its setting, metrics and privacy report (one line of the store)."""

    run_id: str
    method: str
    dataset: str
    model: str
    mechanism: str | None
    epsilon: float | None
    label_epsilon: float | None
    trial: int
    seed: int | None
    config: dict[str, Any]
    metrics: dict[str, float]
    guarantee: dict[str, Any]
    wall_time: float
    version: str = ""
    config_hash: str | None = None
    status: str = OK
    error: str | None = None
    created_at: str | None = None  # when the store wrote it: UTC, "YYYY-MM-DD HH:MM:SS"
    # the trial's peak RSS in MiB in the process that ran it (privgraph.experiments.memory); None in older stores
    peak_rss_mib: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK


FIELDS = tuple(f.name for f in fields(TrialRecord))
RENAMED = {"epsilon_y": "label_epsilon"}  # fields renamed since: a stored record's old name is read as the new one
_FLOATS, _INTS = ("epsilon", "label_epsilon", "wall_time", "peak_rss_mib"), ("trial", "seed")


def encode(record: TrialRecord) -> bytes:
    """The record's line: JSON with sorted keys (numbers typed as the fields say), ending in a newline."""
    row = asdict(record)
    for key, kind in [(k, float) for k in _FLOATS] + [(k, int) for k in _INTS]:
        if row[key] is not None:
            row[key] = kind(row[key])
    try:
        text = json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (from an OS string): escaped, as JSON allows
        return (json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n").encode("ascii")


def decode(line: bytes) -> TrialRecord:
    """The record of one line; keys a later privgraph added are ignored."""
    row = json.loads(line)
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    row = {RENAMED.get(k, k): v for k, v in row.items()}
    return TrialRecord(**{k: v for k, v in row.items() if k in FIELDS})


def is_sqlite(path: str | Path) -> bool:
    """Whether ``path`` is an SQLite database (a store written before the JSON-lines format)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except (FileNotFoundError, IsADirectoryError):
        return False


def read_sqlite(path: str | Path) -> list[TrialRecord]:
    """The trials of an SQLite store (privgraph before the JSON-lines format), in the order stored."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            have = {row[1] for row in con.execute("PRAGMA table_info(trials)")}
            old = {new: old for old, new in RENAMED.items() if old in have}
            columns = [f for f in FIELDS if f in have or f in old]  # older stores lack config_hash, status, error
            selected = ", ".join(f"{old[f]} AS {f}" if f in old else f for f in columns)
            rows = con.execute(f"SELECT {selected} FROM trials ORDER BY id").fetchall()
        finally:
            con.close()
    except sqlite3.Error as err:
        raise ValueError(f"{path}: not a readable privgraph SQLite store ({err})") from None
    records = []
    for row in rows:
        d = dict(zip(columns, row))
        for key in ("config", "metrics", "guarantee"):
            d[key] = json.loads(d[key])
        records.append(TrialRecord(**d))
    return records


class _Row(NamedTuple):
    """What the index keeps of a line: its key, its status and the line itself."""

    config_hash: str | None
    trial: int
    ok: bool
    line: bytes


class ResultsStore:
    """Append-only trial store: a JSON-lines file (module docstring); an older SQLite store is read only."""

    def __init__(self, path: str | Path = DEFAULT_DB):
        self.path = Path(path)
        self.sqlite = is_sqlite(self.path)
        self._rows: list[_Row] = []
        self._by_hash: dict[str | None, list[int]] = {}
        self._read_to = self._lines = 0  # bytes and lines of the file indexed so far
        self._file_id: tuple[int, int] | None = None  # (device, inode) of the file indexed
        if self.sqlite:
            for record in read_sqlite(self.path):
                self._index(encode(record), record)
            return
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.touch()
        self._sync()

    @classmethod
    def from_sqlite(cls, sqlite_path: str | Path, path: str | Path | None = None) -> ResultsStore:
        """Write the trials of an SQLite store, unchanged and in order, to a new JSON-lines store at ``path``
        (default: ``sqlite_path`` with the suffix ``.jsonl``)."""
        sqlite_path = Path(sqlite_path)
        if not is_sqlite(sqlite_path):
            raise ValueError(f"{sqlite_path} is not an SQLite store")
        path = Path(path) if path is not None else sqlite_path.with_suffix(".jsonl")
        if path.exists() and path.stat().st_size:
            raise ValueError(f"{path} exists: the trials would be stored twice")
        _replace_file(path, b"".join(encode(r) for r in read_sqlite(sqlite_path)))
        return cls(path)

    # ------------------------------------------------------------------------------------------- writing
    def check_writable(self) -> None:
        """Raise ``ValueError`` if this is an SQLite store (read, never written)."""
        if self.sqlite:
            raise ValueError(
                f"{self.path} is an SQLite store of an older privgraph: it is read but not written; "
                f"`privgraph convert-store {self.path}` writes its trials to "
                f"{self.path.with_suffix('.jsonl')}, a store to use instead"
            )

    def add(self, record: TrialRecord) -> None:
        """Append ``record`` as one line, stamped with the time it is stored unless it has one."""
        self.check_writable()
        if record.created_at is None:
            record = replace(record, created_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"))
        line = encode(record)
        with _locked(self.path) as fd:
            _end_last_line(fd, self.path)
            while line:
                line = line[os.write(fd, line) :]

    def delete_errors(self, keys: set[tuple[str, int]]) -> int:
        """Remove the error records of these (hash, trial) keys (before they run again); returns the count."""
        self.check_writable()
        with _locked(self.path) as fd:
            _end_last_line(fd, self.path)
            lines = _read_from(fd).split(b"\n")[:-1]
            kept = []
            for line in lines:
                r = decode(line) if line.strip() else None
                if r is None or r.ok or (r.config_hash, r.trial) not in keys:
                    kept.append(line + b"\n")
            if len(kept) < len(lines):
                _replace_file(self.path, b"".join(kept))
        self._sync()
        return len(lines) - len(kept)

    # ------------------------------------------------------------------------------------------- reading
    def stored(self, errors: bool = True) -> set[tuple[str, int]]:
        """The (configuration hash, trial) of every stored trial (with ``errors=False``: of those that
        finished without an error)."""
        self._sync()
        return {(r.config_hash, r.trial) for r in self._rows if r.config_hash is not None and (errors or r.ok)}

    def records(self, errors: bool = False, **where: Any) -> Iterator[TrialRecord]:
        """The stored trials in the order stored, optionally filtered by equality on fields; trials that
        raised only with ``errors=True``."""
        unknown = sorted(set(where) - set(FIELDS))
        if unknown:
            raise ValueError(f"no field {', '.join(unknown)} in a trial record (fields: {', '.join(FIELDS)})")
        self._sync()
        rows = (
            [self._rows[i] for i in self._by_hash.get(where["config_hash"], [])]
            if "config_hash" in where
            else list(self._rows)
        )
        for row in rows:
            if not (errors or row.ok) or ("trial" in where and row.trial != where["trial"]):
                continue
            record = decode(row.line)
            if all(getattr(record, k) == v for k, v in where.items()):
                yield record

    def _index(self, line: bytes, record: TrialRecord) -> None:
        self._by_hash.setdefault(record.config_hash, []).append(len(self._rows))
        self._rows.append(_Row(record.config_hash, record.trial, record.ok, line))

    def _sync(self) -> None:
        """Index the lines appended since the last read (all of them if the file was replaced)."""
        if self.sqlite:
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        file_id = (st.st_dev, st.st_ino) if st is not None else None
        if file_id != self._file_id or st is None or st.st_size < self._read_to:
            self._rows, self._by_hash, self._read_to, self._lines, self._file_id = [], {}, 0, 0, file_id
        if st is None or st.st_size == self._read_to:
            return
        with open(self.path, "rb") as f:
            f.seek(self._read_to)
            data = f.read()
        *lines, tail = data.split(b"\n")
        for line in lines:
            self._lines += 1
            if line.strip():
                try:
                    record = decode(line)
                except (ValueError, TypeError) as err:
                    self._file_id = None  # the next read starts again, and fails the same way
                    raise ValueError(f"{self.path}, line {self._lines}: not a trial record ({err})") from None
                self._index(line + b"\n", record)
        consumed = len(data) - len(tail)
        if tail.strip():  # no newline yet: a whole record (written by hand) or one cut short; the latter waits
            try:
                self._index(tail + b"\n", decode(tail))
                consumed = len(data)
            except (ValueError, TypeError):
                pass
        self._read_to += consumed


@contextmanager
def _locked(path: Path) -> Iterator[int]:
    """The store file open for appending (created if missing), under an exclusive lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # releases the lock


def _read_from(fd: int, start: int = 0) -> bytes:
    """The file's bytes from ``start`` on (appends still go to the end: ``O_APPEND``)."""
    os.lseek(fd, start, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 24):
        chunks.append(chunk)
    return b"".join(chunks)


def _end_last_line(fd: int, path: Path) -> None:
    """Make the file end with a newline: end a whole last record, cut off one a killed writer left partial."""
    size = os.fstat(fd).st_size
    if size == 0 or _read_from(fd, size - 1) == b"\n":
        return
    data = _read_from(fd)
    start = data.rfind(b"\n") + 1
    try:
        decode(data[start:])
        os.write(fd, b"\n")
    except (ValueError, TypeError):
        os.ftruncate(fd, start)
        warnings.warn(
            f"{path}: removed a partial last line ({size - start} bytes), left by a writer that "
            f"stopped mid-record; its trial is not stored",
            stacklevel=3,
        )


def _replace_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` at once: a new file in the same folder, renamed over the old one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["DEFAULT_DB", "ERROR", "OK", "ResultsStore", "TrialRecord", "decode", "encode", "is_sqlite", "read_sqlite"]
