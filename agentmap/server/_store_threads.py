"""The run store's thread rows: a thread's record, metadata and status (the graph state is in the checkpointer)."""

from __future__ import annotations

import json
from typing import Any

from agentmap.server._store_base import _UNFINISHED_OF_THREAD, StoreBase, decoded, now

__all__ = ["ThreadRows"]


class ThreadRows(StoreBase):
    """Thread records: made, read, their metadata replaced, forgotten with their runs; busy while a run is due."""

    def create_thread(self, thread_id: str, metadata: dict[str, Any]) -> dict[str, Any] | None:
        """Add a thread; None when the id is taken."""
        stamp = now()
        with self._tx() as tx:
            if tx.rows("SELECT thread_id FROM agentmap_threads WHERE thread_id = ?", (thread_id,)):
                return None
            tx.count(
                "INSERT INTO agentmap_threads VALUES (?, ?, ?, ?, 'idle')",
                (thread_id, stamp, stamp, json.dumps(metadata)),
            )
        return self.thread(thread_id)

    def thread(self, thread_id: str) -> dict[str, Any] | None:
        """The thread record, or None."""
        with self._tx() as tx:
            found = tx.rows("SELECT * FROM agentmap_threads WHERE thread_id = ?", (thread_id,))
        return decoded(found[0]) if found else None

    def threads(self, ids: list[str] | None = None) -> list[dict[str, Any]]:
        """Every thread, newest first (only `ids`, when given)."""
        with self._tx() as tx:
            rows = [decoded(r) for r in tx.rows("SELECT * FROM agentmap_threads ORDER BY created_at DESC")]
        return [r for r in rows if r["thread_id"] in set(ids)] if ids else rows

    def set_metadata(self, thread_id: str, metadata: dict[str, Any]) -> None:
        """Replace a thread's metadata."""
        with self._tx() as tx:
            tx.count(
                "UPDATE agentmap_threads SET metadata = ?, updated_at = ? WHERE thread_id = ?",
                (json.dumps(metadata), now(), thread_id),
            )

    def delete_thread(self, thread_id: str) -> bool:
        """Forget a thread and its runs; False when there was none."""
        with self._tx() as tx:
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
        with self._tx() as tx:
            return bool(tx.rows(_UNFINISHED_OF_THREAD, (thread_id,)))
