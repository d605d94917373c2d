"""The run store's event rows: a run's events, written by the replica executing it for followers on the others."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from agentmap.server._database import Database
from agentmap.server._records import column

__all__ = ["RunEventRows", "StoredEvent"]


class StoredEvent(NamedTuple):
    """A run's event as the store keeps it."""

    number: int
    """Its place among the run's events in the store (whichever replica wrote it)."""
    event: str
    data: Any
    id: str | None
    """`attempt.index`: the attempt that made it and its index in that attempt's events (None: written before
    events had ids)."""


class RunEventRows:
    """The events of runs, numbered by the store as they are written."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, run_id: str, events: Sequence[tuple[str, str]], *, attempt: int, index: int) -> int:
        """Append a run's events (`(event, data as JSON text)`, events `index`, `index + 1`, ... of its attempt
        `attempt`: their ids) for followers elsewhere, numbered after every one the store holds for the run,
        whichever replica wrote it (one stopped by a handover may still be writing its last ones while the replica
        continuing the run writes its first); returns the first one's number."""
        with self._db.transaction() as tx:
            self._db.lock_events(tx, run_id)
            rows = tx.rows(
                "SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM agentmap_run_events WHERE run_id = ?", (run_id,)
            )
            first = int(rows[0]["next"])
            for offset, (event, data) in enumerate(events):
                tx.count(
                    "INSERT INTO agentmap_run_events (run_id, seq, event, data, attempt, idx) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (run_id, first + offset, event, data, attempt, index + offset),
                )
            self._db.announce(tx, "events")
        return first

    def after(self, run_id: str, number: int) -> list[StoredEvent]:
        """A run's events from number `number` on, in order."""
        with self._db.transaction() as tx:
            rows = tx.rows(
                "SELECT seq, event, data, attempt, idx FROM agentmap_run_events WHERE run_id = ? AND seq >= ? "
                "ORDER BY seq",
                (run_id, number),
            )
        return [
            StoredEvent(
                int(r["seq"]),
                r["event"],
                column(r, "data"),
                None if r["attempt"] is None else f"{r['attempt']}.{r['idx']}",
            )
            for r in rows
        ]

    def number(self, run_id: str, *, attempt: int, index: int) -> int | None:
        """The number of the run's event `index` of attempt `attempt` (None: the store has no such event)."""
        with self._db.transaction() as tx:
            rows = tx.rows(
                "SELECT seq FROM agentmap_run_events WHERE run_id = ? AND attempt = ? AND idx = ?",
                (run_id, attempt, index),
            )
        return int(rows[0]["seq"]) if rows else None
