"""SQLite results store: one row per trial.

A trial is identified by its setting's configuration hash
(:func:`~privgraph.experiments.pipeline.config_hash`) and its trial index
(the seed is the setting's seed plus the index); ``privgraph sweep`` skips the
trials already stored.  A trial that raised is stored with ``status = 'error'``
and its traceback, and no metrics.  Only one process writes a store: the run's
or the sweep's driver (workers send their records back to it).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

DEFAULT_DB = "results/privgraph.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (datetime('now')),
    method TEXT NOT NULL,
    dataset TEXT NOT NULL,
    model TEXT NOT NULL,
    mechanism TEXT,
    epsilon REAL,
    epsilon_y REAL,
    trial INTEGER NOT NULL,
    seed INTEGER,
    config TEXT NOT NULL,
    metrics TEXT NOT NULL,
    guarantee TEXT NOT NULL,
    wall_time REAL NOT NULL,
    version TEXT,
    config_hash TEXT,
    status TEXT NOT NULL DEFAULT 'ok',
    error TEXT
);
CREATE INDEX IF NOT EXISTS trials_setting ON trials (dataset, method, model, epsilon);
"""
# columns added after the first schema: added to an older store when it is opened
_ADDED = {"config_hash": "TEXT", "status": "TEXT NOT NULL DEFAULT 'ok'", "error": "TEXT"}
OK, ERROR = "ok", "error"


@dataclass
class TrialRecord:
    run_id: str
    method: str
    dataset: str
    model: str
    mechanism: str | None
    epsilon: float | None
    epsilon_y: float | None
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

    @property
    def ok(self) -> bool:
        return self.status == OK


class ResultsStore:
    """Append-only trial store (``sqlite3`` from the standard library)."""

    def __init__(self, path: str | Path = DEFAULT_DB):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.executescript(_SCHEMA)
            have = {row[1] for row in con.execute("PRAGMA table_info(trials)")}
            for column, kind in _ADDED.items():
                if column not in have:
                    con.execute(f"ALTER TABLE trials ADD COLUMN {column} {kind}")
            con.execute("CREATE INDEX IF NOT EXISTS trials_config ON trials (config_hash, trial)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path)

    def add(self, record: TrialRecord) -> None:
        row = asdict(record)
        for key in ("config", "metrics", "guarantee"):
            row[key] = json.dumps(row[key], sort_keys=True)
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._connect() as con:
            con.execute(f"INSERT INTO trials ({cols}) VALUES ({marks})", list(row.values()))

    def stored(self, errors: bool = True) -> set[tuple[str, int]]:
        """The (configuration hash, trial) of every stored trial (with ``errors=False``: of those that
        finished without an error)."""
        sql = "SELECT config_hash, trial FROM trials WHERE config_hash IS NOT NULL"
        if not errors:
            sql += f" AND status = '{OK}'"
        with self._connect() as con:
            return {(h, t) for h, t in con.execute(sql)}

    def delete_errors(self, keys: set[tuple[str, int]]) -> int:
        """Remove the error rows of these (hash, trial) keys (before they run again); returns the count."""
        with self._connect() as con:
            return sum(con.execute(f"DELETE FROM trials WHERE status = '{ERROR}' AND config_hash = ? AND trial = ?",
                                   key).rowcount for key in keys)

    def records(self, errors: bool = False, **where: Any) -> Iterator[TrialRecord]:
        """The stored trials, optionally filtered by equality on columns; trials that raised only with
        ``errors=True``."""
        fields = [f for f in TrialRecord.__dataclass_fields__]
        sql = f"SELECT {', '.join(fields)} FROM trials"
        params: list[Any] = []
        clauses = [f"{k} IS ?" for k in where] + ([] if errors else [f"status = '{OK}'"])
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
            params = list(where.values())
        with self._connect() as con:
            for row in con.execute(sql + " ORDER BY id", params):
                d = dict(zip(fields, row))
                for key in ("config", "metrics", "guarantee"):
                    d[key] = json.loads(d[key])
                yield TrialRecord(**d)
