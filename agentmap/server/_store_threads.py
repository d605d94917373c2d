"""The run store's thread rows: a thread's record, metadata and status (the graph state is in the checkpointer)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentmap.server._database import Database, Tx, Where
from agentmap.server._records import ThreadRecord, now
from agentmap.server._run_states import UNFINISHED, sql_list

if TYPE_CHECKING:
    from agentmap.server._filters import Filter

__all__ = ["UNFINISHED_OF_THREAD", "ThreadRows"]

UNFINISHED_OF_THREAD = f"SELECT run_id FROM agentmap_runs WHERE thread_id = ? AND status IN {sql_list(UNFINISHED)}"
"""The runs of a thread still to end (pending or running)."""


class ThreadRows:
    """Thread records: made, read, their metadata replaced, forgotten with their runs; busy while a run is due."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _select(self, tx: Tx, where: Where, visible: Filter | None, order: str = "") -> list[ThreadRecord]:
        """The threads `where` selects that pass the user's filter `visible` (every read of threads goes through
        here)."""
        if visible is not None:
            where = where.both(self._db.matching("agentmap_threads.metadata", visible))
        rows = tx.rows(f"SELECT * FROM agentmap_threads{where.sql}{order}", where.args)
        return [ThreadRecord.from_row(r) for r in rows]

    def create(self, thread_id: str, metadata: dict[str, Any]) -> ThreadRecord | None:
        """Add a thread; None when the id is taken."""
        stamp = now()
        with self._db.transaction() as tx:
            if tx.rows("SELECT thread_id FROM agentmap_threads WHERE thread_id = ?", (thread_id,)):
                return None
            tx.count(
                "INSERT INTO agentmap_threads VALUES (?, ?, ?, ?, 'idle')",
                (thread_id, stamp, stamp, json.dumps(metadata)),
            )
        return self.get(thread_id)

    def get(self, thread_id: str, visible: Filter | None = None) -> ThreadRecord | None:
        """The thread record (if it passes the user's filter `visible`), or None."""
        with self._db.transaction() as tx:
            found = self._select(tx, Where().also("thread_id = ?", thread_id), visible)
        return found[0] if found else None

    def all(self, ids: list[str] | None = None, visible: Filter | None = None) -> list[ThreadRecord]:
        """Every thread that passes the user's filter `visible`, newest first (only `ids`, when given)."""
        with self._db.transaction() as tx:
            found = self._select(tx, Where(), visible, " ORDER BY created_at DESC")
        if not ids:
            return found
        wanted = set(ids)
        return [r for r in found if r.thread_id in wanted]

    def set_metadata(self, thread_id: str, metadata: dict[str, Any]) -> None:
        """Replace a thread's metadata."""
        with self._db.transaction() as tx:
            tx.count(
                "UPDATE agentmap_threads SET metadata = ?, updated_at = ? WHERE thread_id = ?",
                (json.dumps(metadata), now(), thread_id),
            )

    def delete(self, thread_id: str) -> bool:
        """Forget a thread and its runs, their events and its crons; False when there was none."""
        with self._db.transaction() as tx:
            tx.count(
                "DELETE FROM agentmap_run_events WHERE run_id IN "
                "(SELECT run_id FROM agentmap_runs WHERE thread_id = ?)",
                (thread_id,),
            )
            tx.count("DELETE FROM agentmap_runs WHERE thread_id = ?", (thread_id,))
            tx.count("DELETE FROM agentmap_crons WHERE thread_id = ?", (thread_id,))
            return tx.count("DELETE FROM agentmap_threads WHERE thread_id = ?", (thread_id,)) > 0

    def busy(self, thread_id: str) -> bool:
        """True while the thread has a run pending or running (on any replica)."""
        with self._db.transaction() as tx:
            return bool(tx.rows(UNFINISHED_OF_THREAD, (thread_id,)))
