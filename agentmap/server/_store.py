"""Threads and runs the server knows, kept in a small SQLite file so they outlive a restart.

The graph state of a thread lives in the checkpointer; this store only holds what LangGraph's server adds
around it: when a thread was made, its metadata, its last status, and the runs made on it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["Store", "now"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentmap_threads (
    thread_id TEXT PRIMARY KEY, created_at TEXT, updated_at TEXT, metadata TEXT, status TEXT
);
CREATE TABLE IF NOT EXISTS agentmap_runs (
    run_id TEXT PRIMARY KEY, thread_id TEXT, assistant_id TEXT, created_at TEXT, updated_at TEXT,
    status TEXT, metadata TEXT, multitask_strategy TEXT
);
CREATE INDEX IF NOT EXISTS agentmap_runs_thread ON agentmap_runs (thread_id, created_at);
"""


def now() -> str:
    """The time now, as LangGraph's server writes it (ISO 8601, UTC)."""
    return datetime.now(UTC).isoformat()


class Store:
    """Thread and run records in one SQLite file (or in memory for `path=None`)."""

    def __init__(self, path: Path | None) -> None:
        self._conn = sqlite3.connect(str(path) if path else ":memory:", check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock, self._conn:
            if path is not None:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._conn.close()

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [_row(r) for r in rows]

    def _write(self, sql: str, args: tuple[Any, ...]) -> int:
        with self._lock, self._conn:
            return self._conn.execute(sql, args).rowcount

    def create_thread(self, thread_id: str, metadata: dict[str, Any]) -> dict[str, Any] | None:
        """Add a thread; None when the id is taken."""
        stamp = now()
        try:
            self._write(
                "INSERT INTO agentmap_threads VALUES (?, ?, ?, ?, 'idle')",
                (thread_id, stamp, stamp, json.dumps(metadata)),
            )
        except sqlite3.IntegrityError:
            return None
        return self.thread(thread_id)

    def thread(self, thread_id: str) -> dict[str, Any] | None:
        """The thread record, or None."""
        found = self._all("SELECT * FROM agentmap_threads WHERE thread_id = ?", (thread_id,))
        return found[0] if found else None

    def threads(self, ids: list[str] | None = None) -> list[dict[str, Any]]:
        """Every thread, newest first (only `ids`, when given)."""
        rows = self._all("SELECT * FROM agentmap_threads ORDER BY created_at DESC")
        return [r for r in rows if r["thread_id"] in set(ids)] if ids else rows

    def set_metadata(self, thread_id: str, metadata: dict[str, Any]) -> None:
        """Replace a thread's metadata."""
        self._write(
            "UPDATE agentmap_threads SET metadata = ?, updated_at = ? WHERE thread_id = ?",
            (json.dumps(metadata), now(), thread_id),
        )

    def delete_thread(self, thread_id: str) -> bool:
        """Forget a thread and its runs; False when there was none."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM agentmap_runs WHERE thread_id = ?", (thread_id,))
            return self._conn.execute("DELETE FROM agentmap_threads WHERE thread_id = ?", (thread_id,)).rowcount > 0

    def finish_run(self, run: dict[str, Any], thread_status: str) -> None:
        """Save a finished run and its thread's new status in one transaction."""
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO agentmap_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run["run_id"],
                    run["thread_id"],
                    run["assistant_id"],
                    run["created_at"],
                    run["updated_at"],
                    run["status"],
                    json.dumps(run["metadata"]),
                    run["multitask_strategy"],
                ),
            )
            self._conn.execute(
                "UPDATE agentmap_threads SET status = ?, updated_at = ? WHERE thread_id = ?",
                (thread_status, run["updated_at"], run["thread_id"]),
            )

    def runs(self, thread_id: str, status: str | None = None) -> list[dict[str, Any]]:
        """The runs of a thread, newest first."""
        rows = self._all("SELECT * FROM agentmap_runs WHERE thread_id = ? ORDER BY created_at DESC", (thread_id,))
        return [r for r in rows if status is None or r["status"] == status]

    def run(self, thread_id: str, run_id: str) -> dict[str, Any] | None:
        """One run of a thread, or None."""
        found = self._all("SELECT * FROM agentmap_runs WHERE thread_id = ? AND run_id = ?", (thread_id, run_id))
        return found[0] if found else None


def _row(row: sqlite3.Row) -> dict[str, Any]:
    data = dict(row)
    if "metadata" in data:
        data["metadata"] = json.loads(data["metadata"] or "{}")
    return data
