"""The ledger's file: its format, read and validated (a damaged file is one :class:`LedgerError` line), and
changed under a lock, atomically.

Storage.  Writers take an exclusive ``fcntl.flock`` on ``PATH.lock`` around read–modify–write
(two processes never lose each other's records), and write a temporary file of a unique name in the same
folder, ``fsync`` it and ``os.replace`` it over the ledger (a process killed mid-write leaves the old file
whole; the temporary file is removed on failure, and one a killed writer left is removed by the next writer,
under the lock).  A full disk is one line (``no space left on MOUNT: ledger unchanged``), a file nested too
deeply to be a ledger is refused as damaged.  Linux and macOS.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from privgraph.accounting.ledger.entries import Entry
from privgraph.accounting.ledger.errors import LedgerError
from privgraph.accounting.ledger.totals import parse_budget

FORMAT = "privgraph-ledger/1"
MAX_DEPTH = 32  # a ledger's free-form values (parameters, fingerprint) nest far less; deeper is damage


def read_state(path: Path, parsed: list[Entry] | None = None) -> dict[str, Any] | None:
    """The file's state, or None when there is no file; a damaged one is one :class:`LedgerError` line.  Every
    entry is parsed to validate it (appended to ``parsed`` when given: a reader need not parse them again)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise LedgerError(f"cannot read the ledger {path}: {err}") from None
    try:
        state = json.loads(text)
    except json.JSONDecodeError as err:
        raise LedgerError(f"{path} is not a privgraph ledger: not JSON ({err})") from None
    except RecursionError:
        raise LedgerError(f"the ledger {path} is damaged: nested too deeply to be a ledger") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise LedgerError(f"{path} is not a privgraph ledger (format {found!r}, expected {FORMAT!r})")
    if not isinstance(state.get("entries"), list):
        raise LedgerError(f"the ledger {path} is damaged: it has no list of entries")
    if not isinstance(state.get("budget") or {}, dict):
        raise LedgerError(f"the ledger {path} is damaged: its budget is not a table of units")
    try:
        for raw in state["entries"]:
            entry = Entry.from_dict(raw)
            if parsed is not None:
                parsed.append(entry)
            if any(isinstance(v, (dict, list)) for v in entry.params.values()) and not _shallow(entry.params):
                raise LedgerError(f"the ledger {path} is damaged: nested too deeply to be a ledger")
        parse_budget(state.get("budget") or {})
        if not _shallow(state.get("fingerprint")):
            raise LedgerError(f"the ledger {path} is damaged: nested too deeply to be a ledger")
    except LedgerError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise LedgerError(f"the ledger {path} is damaged: an entry or the budget is malformed ({err!r})") from None
    return state


@contextmanager
def locked_update(path: Path, fresh: Callable[[], dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Read the ledger at ``path`` (``fresh()`` when there is none) under an exclusive lock on ``PATH.lock``,
    yield it to be changed, and write it back atomically (:func:`write_atomic`); nothing is written when the
    block raises."""
    with _no_space(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_name(path.name + ".lock"), "a")
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for stale in path.parent.glob(f"{_tmp_prefix(path)}*.tmp"):  # left by a killed writer (we hold the lock)
                stale.unlink(missing_ok=True)
            state = read_state(path)
            if state is None:
                state = fresh()
            yield state
            write_atomic(path, dumps_ledger(state))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def dumps_ledger(state: dict[str, Any]) -> str:
    """The ledger as JSON text: one line per entry (and per other field), written by the C encoder; O(entries),
    where ``json.dumps(indent=…)``'s pure-Python encoder took seconds per write for 200,000 releases."""
    fields = []
    for key, value in state.items():
        if key == "entries" and isinstance(value, list) and value:
            text = "[\n" + ",\n".join("  " + json.dumps(e, ensure_ascii=False) for e in value) + "\n ]"
        else:
            text = json.dumps(value, ensure_ascii=False)
        fields.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


def _tmp_prefix(path: Path) -> str:
    """The prefix of the ledger's temporary files (one place: written, and cleaned)."""
    return f".{path.name}."


def write_atomic(path: Path, text: str) -> None:
    """Write a temporary file of a unique name beside ``path``, fsync it and replace ``path`` with it (then fsync
    the folder); the temporary file is removed on any failure, and a full disk is one :class:`LedgerError` line."""
    with _no_space(path):
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_tmp_prefix(path), suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


@contextmanager
def _no_space(path: Path) -> Iterator[None]:
    """A full disk (or quota) while writing the ledger: one line naming the mount point; the file is unchanged."""
    try:
        yield
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise LedgerError(f"no space left on {_mount_of(path)}: ledger unchanged") from None


def _mount_of(path: Path) -> str:
    here = os.path.realpath(path.parent if path.parent.exists() else Path.cwd())
    while not os.path.ismount(here):
        here = os.path.dirname(here)
    return here


def _shallow(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests at most ``limit`` lists or tables deep (walked without recursion)."""
    todo = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, (dict, list)):
            if depth >= limit:
                return False
            todo.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return True


__all__ = ["FORMAT", "dumps_ledger", "locked_update", "read_state", "write_atomic"]
