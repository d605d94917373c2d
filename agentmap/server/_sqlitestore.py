"""The run store's database in one SQLite file: one machine, any number of processes on it (their writes take
turns)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentmap.server._audit import AUDIT_TABLE
from agentmap.server._database import Database, Where
from agentmap.server._filters import Filter, Value
from agentmap.server._quota import QUOTA_TABLE
from agentmap.server._store_crons import CRON_TABLE
from agentmap.server._store_versions import VERSION_TABLES

__all__ = ["SqliteDatabase"]

_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentmap_threads (
    thread_id TEXT PRIMARY KEY, created_at TEXT, updated_at TEXT, metadata TEXT, status TEXT
);
CREATE TABLE IF NOT EXISTS agentmap_runs (
    run_id TEXT PRIMARY KEY, thread_id TEXT, assistant_id TEXT, created_at TEXT, updated_at TEXT,
    status TEXT, metadata TEXT, multitask_strategy TEXT
);
CREATE TABLE IF NOT EXISTS agentmap_run_events (
    run_id TEXT, seq INTEGER, event TEXT, data TEXT, attempt INTEGER, idx INTEGER, PRIMARY KEY (run_id, seq)
);
"""
_ADDED = {  # columns added since the first version of the file (an older file gets them on open)
    "seq": "INTEGER",
    "graph_id": "TEXT",
    "request": "TEXT",
    "owner": "TEXT",
    "lease_until": "REAL DEFAULT 0",
    "attempt": "INTEGER DEFAULT 0",
    "result": "TEXT",
    "cancel": "TEXT",
    "stateless": "INTEGER DEFAULT 0",
    "webhook_due": "REAL",
    "webhook_tries": "INTEGER DEFAULT 0",
    "user_id": "TEXT",
}


class SqliteDatabase(Database):
    """The store's database in one SQLite file (or in memory for `path=None`): one machine, any number of
    processes."""

    def __init__(self, path: Path | None) -> None:
        self._conn = sqlite3.connect(
            str(path) if path else ":memory:", check_same_thread=False, isolation_level=None, timeout=30
        )
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock:
            if path is not None:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SQLITE_SCHEMA)
            self._conn.execute(CRON_TABLE)
            for statement in (*VERSION_TABLES, *AUDIT_TABLE, *QUOTA_TABLE):
                self._conn.execute(statement)
            self._migrate()

    def _migrate(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")
        have = {r[1] for r in self._conn.execute("PRAGMA table_info(agentmap_runs)")}
        for name, kind in _ADDED.items():
            if name not in have:
                self._conn.execute(f"ALTER TABLE agentmap_runs ADD COLUMN {name} {kind}")
        have = {r[1] for r in self._conn.execute("PRAGMA table_info(agentmap_run_events)")}
        for name in ("attempt", "idx"):  # an event's id (attempt.idx), since streams can be resumed
            if name not in have:
                self._conn.execute(f"ALTER TABLE agentmap_run_events ADD COLUMN {name} INTEGER")
        self._conn.execute("UPDATE agentmap_runs SET seq = rowid WHERE seq IS NULL")
        self._conn.execute("CREATE INDEX IF NOT EXISTS agentmap_runs_thread ON agentmap_runs (thread_id, seq)")
        self._conn.execute("CREATE INDEX IF NOT EXISTS agentmap_runs_queue ON agentmap_runs (status, seq)")
        self._conn.execute("CREATE INDEX IF NOT EXISTS agentmap_runs_user ON agentmap_runs (user_id, status)")
        self._conn.execute(  # the deliveries due: a handful of rows among every run ever made
            "CREATE INDEX IF NOT EXISTS agentmap_runs_webhook ON agentmap_runs (webhook_due) "
            "WHERE webhook_due IS NOT NULL"
        )
        self._conn.execute("COMMIT")

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._conn.close()

    def matching(self, column: str, wanted: Filter) -> Where:
        """Each term a `json_each` over the column (a row whose column is no JSON reads as `{}`): any key, however
        it is spelt, and a value of the same JSON type."""
        where = Where()
        document = f"(CASE WHEN json_valid({column}) THEN {column} ELSE '{{}}' END)"
        for term in wanted.terms:
            if term.op == "eq":
                same, args = _same("m", term.values[0])
                where = where.also(
                    f"EXISTS (SELECT 1 FROM json_each({document}) m WHERE m.key = ? AND {same})", term.key, *args
                )
                continue
            held = []
            args = []
            for value in term.values:
                same, more = _same("e", value)
                held.append(f"EXISTS (SELECT 1 FROM json_each(m.value) e WHERE {same})")
                args += more
            where = where.also(
                f"EXISTS (SELECT 1 FROM json_each({document}) m WHERE m.key = ? AND m.type = 'array'"
                + "".join(f" AND {h}" for h in held)
                + ")",
                term.key,
                *args,
            )
        return where

    @contextmanager
    def transaction(self) -> Iterator[_SqliteTx]:
        """A transaction holding SQLite's writer lock from its start (`BEGIN IMMEDIATE`)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes too
            try:
                yield _SqliteTx(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")


def _same(alias: str, value: Value) -> tuple[str, list[Value]]:
    """The condition that `json_each` row `alias` holds `value`, with its arguments."""
    if value is None:
        return f"{alias}.type = 'null'", []
    if isinstance(value, bool):
        return f"{alias}.type = '{'true' if value else 'false'}'", []
    if isinstance(value, int | float):
        return f"{alias}.type IN ('integer', 'real') AND {alias}.value = ?", [value]
    return f"{alias}.type = 'text' AND {alias}.value = ?", [value]


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self._conn.execute(sql, tuple(args)).fetchall()]

    def count(self, sql: str, args: Sequence[Any] = ()) -> int:
        return self._conn.execute(sql, tuple(args)).rowcount
