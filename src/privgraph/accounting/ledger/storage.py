"""The ledger's file: its format, read and validated (a damaged file is one :class:`LedgerError` line), and
changed under a lock, atomically.

Storage.  Writers take an exclusive ``fcntl.flock`` on ``PATH.lock`` around read–modify–write
(two processes never lose each other's records), and write a temporary file in the same folder,
``fsync`` it and ``os.replace`` it over the ledger (a process killed mid-write leaves the old file
whole).  Linux and macOS.
"""

from __future__ import annotations

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


def read_state(path: Path) -> dict[str, Any] | None:
    """The file's state, or None when there is no file; a damaged one is one :class:`LedgerError` line."""
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
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise LedgerError(f"{path} is not a privgraph ledger (format {found!r}, expected {FORMAT!r})")
    if not isinstance(state.get("entries"), list):
        raise LedgerError(f"the ledger {path} is damaged: it has no list of entries")
    if not isinstance(state.get("budget") or {}, dict):
        raise LedgerError(f"the ledger {path} is damaged: its budget is not a table of units")
    try:
        for raw in state["entries"]:
            Entry.from_dict(raw)
        parse_budget(state.get("budget") or {})
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
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            state = read_state(path)
            if state is None:
                state = fresh()
            yield state
            write_atomic(path, json.dumps(state, indent=1))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_atomic(path: Path, text: str) -> None:
    """Write a temporary file beside ``path``, fsync it and replace ``path`` with it (then fsync the folder)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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


__all__ = ["FORMAT", "locked_update", "read_state", "write_atomic"]
