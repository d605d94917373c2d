"""The audit log (`agentmap serve --audit audit.jsonl`, or `--audit table`): who created, read, answered, cancelled
or deleted what, when, from which address.

One entry per decision a request asked for (`_users.Caller.decide`): its time, the caller's identity and address, the
request (method, path, id, status of its answer, `via` http, mcp, a2a or agui), what was done (`event`, LangGraph's
`resource` and `action`, whether the auth handlers `allowed` it) and the ids it named (thread, run, cron, assistant,
store namespace and key); the inputs themselves (a run's input or answer, a stored value) only with
`--audit-content`. Entries are written by a thread of their own, so no request waits for the disk or the database;
a stopping server writes the rest first. A file is one replica's (append-only JSON lines); the table
(`agentmap_audit` in the run store's database) is every replica's.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError, ErrorCode
from agentmap.server._database import Database

if TYPE_CHECKING:
    from agentmap.server._store import Store

__all__ = ["AUDIT_TABLE", "Audit", "AuditRows"]

_log = logging.getLogger("agentmap.server")

AUDIT_TABLE = (
    "CREATE TABLE IF NOT EXISTS agentmap_audit (at TEXT, identity TEXT, entry TEXT)",
    "CREATE INDEX IF NOT EXISTS agentmap_audit_identity ON agentmap_audit (identity, at)",
)
"""The audit table, the same in both databases (`entry`: the whole entry as JSON)."""


class AuditRows:
    """The run store's audit table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, entries: list[dict[str, Any]]) -> None:
        """Append entries."""
        with self._db.transaction() as tx:
            for entry in entries:
                tx.count(
                    "INSERT INTO agentmap_audit (at, identity, entry) VALUES (?, ?, ?)",
                    (entry["at"], entry.get("identity"), json.dumps(entry)),
                )

    def read(self, identity: str | None = None) -> list[dict[str, Any]]:
        """Every entry (of `identity`, when given), oldest first."""
        with self._db.transaction() as tx:
            if identity is None:
                rows = tx.rows("SELECT entry FROM agentmap_audit ORDER BY at")
            else:
                rows = tx.rows("SELECT entry FROM agentmap_audit WHERE identity = ? ORDER BY at", (identity,))
        return [json.loads(r["entry"]) for r in rows]


class Audit:
    """Where audit entries go: a JSON-lines file, or the store's table (`target == "table"`).

    Args:
        target: The file, or `table`.
        content: Whether entries carry the inputs (`--audit-content`).
        store: The run store (its `audit` table).

    Raises:
        ConfigError: The file cannot be opened for appending.
    """

    def __init__(self, target: str, *, content: bool, store: Store) -> None:
        self.content = content
        self._store = store
        self._file = None
        if target != "table":
            path = Path(target)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._file = path.open("a", encoding="utf-8")
            except OSError as exc:
                raise ConfigError(
                    f"cannot write the audit log {path}: {exc.strerror or exc}",
                    code=ErrorCode.CANNOT_WRITE,
                    hint="give --audit a file in a folder the server may write, or `table`",
                ) from None
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._writer = threading.Thread(target=self._run, name="agentmap-audit", daemon=True)
        self._writer.start()

    def write(self, entry: dict[str, Any]) -> None:
        """Queue an entry (written by the log's own thread, in order)."""
        self._queue.put(entry)

    def close(self) -> None:
        """Write what is queued, then stop."""
        self._queue.put(None)
        self._writer.join(timeout=30)
        if self._file is not None:
            self._file.close()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            batch = [first]
            while first is not None and len(batch) < 500:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            entries = [e for e in batch if e is not None]
            if entries:
                self._put(entries)
            if None in batch:
                return

    def _put(self, entries: list[dict[str, Any]]) -> None:
        if self._file is not None:
            try:
                self._file.write("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries))
                self._file.flush()
            except OSError as exc:
                _log.error("cannot write %d audit entries: %s", len(entries), exc)
            return
        delay = 0.05
        while True:
            try:
                self._store.audit.add(entries)
                return
            except Exception as exc:
                if not self._store.unreachable(exc) or delay > 60:
                    _log.error("cannot write %d audit entries to the run store: %s", len(entries), exc)
                    return
                time.sleep(delay)
                delay *= 2
