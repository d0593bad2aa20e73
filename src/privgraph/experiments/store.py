"""SQLite results store: one row per trial."""

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
    version TEXT
);
CREATE INDEX IF NOT EXISTS trials_setting ON trials (dataset, method, model, epsilon);
"""


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


class ResultsStore:
    """Append-only trial store (``sqlite3`` from the standard library)."""

    def __init__(self, path: str | Path = DEFAULT_DB):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.executescript(_SCHEMA)

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

    def records(self, **where: Any) -> Iterator[TrialRecord]:
        """All stored trials, optionally filtered by equality on columns."""
        fields = [f for f in TrialRecord.__dataclass_fields__]
        sql = f"SELECT {', '.join(fields)} FROM trials"
        params: list[Any] = []
        if where:
            sql += " WHERE " + " AND ".join(f"{k} IS ?" for k in where)
            params = list(where.values())
        with self._connect() as con:
            for row in con.execute(sql + " ORDER BY id", params):
                d = dict(zip(fields, row))
                for key in ("config", "metrics", "guarantee"):
                    d[key] = json.loads(d[key])
                yield TrialRecord(**d)
