"""The run store's schedule rows: crons (`agentmap_crons`) and the webhook deliveries due on runs' rows.

A cron's tick is taken by the replica that moves its `next_run` on (`take_tick`, also called by
`RunRows.accept(tick=...)` in the transaction that accepts the tick's run), so one replica wins each tick.
A run's webhook is due from the transaction that ends it; `DeliveryRows.claim` holds due deliveries for one replica.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from agentmap.server._database import Database, Tx, Where
from agentmap.server._records import CronChanges, CronRecord, RunRecord, Tick, now

if TYPE_CHECKING:
    from agentmap.server._filters import Filter

__all__ = ["CRON_TABLE", "CronRows", "DeliveryRows", "take_tick"]


class DeliveryRows:
    """Webhook deliveries: when a run's delivery is due, kept on its row so any replica makes the next try."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def due(self, run_id: str, when: float | None, *, tried: bool = False) -> None:
        """When the run's webhook delivery is next due (`time.time()` seconds; None: delivered, or given up)."""
        with self._db.transaction() as tx:
            tx.count(
                "UPDATE agentmap_runs SET webhook_due = ?, webhook_tries = webhook_tries + ? WHERE run_id = ?",
                (when, 1 if tried else 0, run_id),
            )

    def claim(self, *, hold: float, limit: int) -> list[RunRecord]:
        """Up to `limit` runs whose webhook delivery is due, each held for `hold` seconds (a replica that dies
        while delivering it lets another one try again after that)."""
        stamp = time.time()
        with self._db.transaction() as tx:
            found = tx.rows(
                "SELECT r.run_id FROM agentmap_runs r WHERE r.webhook_due IS NOT NULL AND r.webhook_due <= ? "
                f"ORDER BY r.webhook_due LIMIT ?{self._db.claim_lock}",
                (stamp, limit),
            )
            claimed = []
            for row in found:
                tx.count("UPDATE agentmap_runs SET webhook_due = ? WHERE run_id = ?", (stamp + hold, row["run_id"]))
                record = tx.rows("SELECT * FROM agentmap_runs WHERE run_id = ?", (row["run_id"],))[0]
                claimed.append(RunRecord.from_row(record))
        return claimed


class CronRows:
    """Crons: made, read, changed, forgotten; the due ones found, and their ticks taken."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _select(self, tx: Tx, where: Where, visible: Filter | None, order: str = "") -> list[CronRecord]:
        """The crons `where` selects that pass the user's filter `visible` (every read of crons goes through
        here)."""
        if visible is not None:
            where = where.both(self._db.matching("agentmap_crons.metadata", visible))
        rows = tx.rows(f"SELECT * FROM agentmap_crons{where.sql}{order}", where.args)
        return [CronRecord.from_row(r) for r in rows]

    def create(self, cron: CronRecord) -> None:
        """Record a cron."""
        with self._db.transaction() as tx:
            tx.count(
                f"INSERT INTO agentmap_crons ({_CRON_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    cron.cron_id,
                    cron.assistant_id,
                    cron.thread_id,
                    cron.schedule,
                    cron.end_time,
                    cron.next_run,
                    json.dumps(cron.payload),
                    json.dumps(cron.metadata),
                    1 if cron.enabled else 0,
                    cron.on_run_completed,
                    cron.created_at,
                    cron.updated_at,
                ),
            )

    def all(self, visible: Filter | None = None) -> list[CronRecord]:
        """Every cron that passes the user's filter `visible`, oldest first."""
        with self._db.transaction() as tx:
            return self._select(tx, Where(), visible, " ORDER BY created_at, cron_id")

    def get(self, cron_id: str, visible: Filter | None = None) -> CronRecord | None:
        """One cron (if it passes the user's filter `visible`), or None."""
        with self._db.transaction() as tx:
            found = self._select(tx, Where().also("cron_id = ?", cron_id), visible)
        return found[0] if found else None

    def update(self, cron_id: str, changes: CronChanges) -> bool:
        """Write `changes` to a cron (only the columns named there); False when there is none."""
        sets = ", ".join(f"{name} = ?" for name in changes)
        values = [_stored(name, value) for name, value in changes.items()]
        with self._db.transaction() as tx:
            return (
                tx.count(
                    f"UPDATE agentmap_crons SET {sets}, updated_at = ? WHERE cron_id = ?", (*values, now(), cron_id)
                )
                > 0
            )

    def delete(self, cron_id: str) -> bool:
        """Forget a cron (its runs stay); False when there was none."""
        with self._db.transaction() as tx:
            return tx.count("DELETE FROM agentmap_crons WHERE cron_id = ?", (cron_id,)) > 0

    def due(self, at: int) -> list[CronRecord]:
        """The enabled crons whose next tick is at or before `at` (epoch seconds)."""
        with self._db.transaction() as tx:
            where = Where().also("enabled = 1").also("next_run IS NOT NULL").also("next_run <= ?", at)
            return self._select(tx, where, None, " ORDER BY next_run")

    def skip_tick(self, tick: Tick) -> bool:
        """Move a cron from tick `tick.due` to `tick.following` without a run (it cannot make one); False when
        another replica moved it first."""
        with self._db.transaction() as tx:
            return take_tick(tx, tick)


def take_tick(tx: Tx, tick: Tick) -> bool:
    """Move the cron from `tick.due` to `tick.following` in `tx`; False when another replica moved it first."""
    return (
        tx.count(
            "UPDATE agentmap_crons SET next_run = ? WHERE cron_id = ? AND next_run = ?",
            (tick.following, tick.cron_id, tick.due),
        )
        > 0
    )


def _stored(name: str, value: Any) -> Any:
    """A cron's column as it is written: its JSON columns as text, `enabled` as 0 or 1."""
    if name in ("payload", "metadata"):
        return json.dumps(value)
    return int(value) if name == "enabled" else value


_CRON_COLUMNS = (
    "cron_id, assistant_id, thread_id, schedule, end_time, next_run, payload, metadata, enabled, on_run_completed, "
    "created_at, updated_at"
)
CRON_TABLE = (
    "CREATE TABLE IF NOT EXISTS agentmap_crons (cron_id TEXT PRIMARY KEY, assistant_id TEXT, thread_id TEXT, "
    "schedule TEXT, end_time TEXT, next_run BIGINT, payload TEXT, metadata TEXT, enabled INTEGER, "
    "on_run_completed TEXT, created_at TEXT, updated_at TEXT)"
)
"""The crons' table, the same in both databases (`next_run`: the next tick, in seconds since the epoch)."""
