"""The run store's schedule rows: crons (`agentmap_crons`) and the webhook deliveries due on runs' rows.

A cron's tick is taken by the replica that moves its `next_run` on (`_take_tick`, also called by
`Store.accept(tick=...)` in the transaction that accepts the tick's run), so one replica wins each tick.
A run's webhook is due from the transaction that ends it; `claim_webhooks` holds due deliveries for one replica.
"""

from __future__ import annotations

import json
import time
from typing import Any

from agentmap.server._store_base import StoreBase, _Tx, column, decoded, now

__all__ = ["CRON_TABLE", "CronRows"]


class CronRows(StoreBase):
    """Crons and webhook deliveries."""

    def webhook_due(self, run_id: str, due: float | None, *, tried: bool = False) -> None:
        """When the run's webhook delivery is next due (`time.time()` seconds; None: delivered, or given up)."""
        with self._tx() as tx:
            tx.count(
                "UPDATE agentmap_runs SET webhook_due = ?, webhook_tries = webhook_tries + ? WHERE run_id = ?",
                (due, 1 if tried else 0, run_id),
            )

    def claim_webhooks(self, hold: float, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` runs whose webhook delivery is due, each held for `hold` seconds (a replica that dies
        while delivering it lets another one try again after that)."""
        stamp = time.time()
        with self._tx() as tx:
            found = tx.rows(
                "SELECT r.run_id FROM agentmap_runs r WHERE r.webhook_due IS NOT NULL AND r.webhook_due <= ? "
                f"ORDER BY r.webhook_due LIMIT ?{self._claim_lock}",
                (stamp, limit),
            )
            claimed = []
            for row in found:
                tx.count("UPDATE agentmap_runs SET webhook_due = ? WHERE run_id = ?", (stamp + hold, row["run_id"]))
                claimed.append(decoded(tx.rows("SELECT * FROM agentmap_runs WHERE run_id = ?", (row["run_id"],))[0]))
        return claimed

    # crons

    def create_cron(self, cron: dict[str, Any]) -> None:
        """Record a cron (`cron_id`, `assistant_id`, `thread_id`, `schedule`, `end_time`, `next_run` in epoch
        seconds, `payload`, `metadata`, `enabled`, `on_run_completed`, `created_at`)."""
        with self._tx() as tx:
            tx.count(
                f"INSERT INTO agentmap_crons ({_CRON_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    cron["cron_id"],
                    cron["assistant_id"],
                    cron["thread_id"],
                    cron["schedule"],
                    cron["end_time"],
                    cron["next_run"],
                    json.dumps(cron["payload"]),
                    json.dumps(cron["metadata"]),
                    1 if cron["enabled"] else 0,
                    cron["on_run_completed"],
                    cron["created_at"],
                    cron["created_at"],
                ),
            )

    def crons(self, cron_id: str | None = None) -> list[dict[str, Any]]:
        """Every cron, oldest first (only `cron_id`, when given)."""
        with self._tx() as tx:
            if cron_id is None:
                rows = tx.rows("SELECT * FROM agentmap_crons ORDER BY created_at, cron_id")
            else:
                rows = tx.rows("SELECT * FROM agentmap_crons WHERE cron_id = ?", (cron_id,))
        return [_cron(r) for r in rows]

    def update_cron(self, cron_id: str, fields: dict[str, Any]) -> bool:
        """Change a cron's `schedule`, `end_time`, `next_run`, `payload`, `metadata`, `enabled`,
        `on_run_completed` (names this module writes, never a client's); False when there is none."""
        sets = ", ".join(f"{name} = ?" for name in fields)
        values = [json.dumps(v) if k == "payload" else int(v) if k == "enabled" else v for k, v in fields.items()]
        with self._tx() as tx:
            return (
                tx.count(
                    f"UPDATE agentmap_crons SET {sets}, updated_at = ? WHERE cron_id = ?", (*values, now(), cron_id)
                )
                > 0
            )

    def delete_cron(self, cron_id: str) -> bool:
        """Forget a cron (its runs stay); False when there was none."""
        with self._tx() as tx:
            return tx.count("DELETE FROM agentmap_crons WHERE cron_id = ?", (cron_id,)) > 0

    def due_crons(self, at: int) -> list[dict[str, Any]]:
        """The enabled crons whose next tick is at or before `at` (epoch seconds)."""
        with self._tx() as tx:
            rows = tx.rows(
                "SELECT * FROM agentmap_crons WHERE enabled = 1 AND next_run IS NOT NULL AND next_run <= ? "
                "ORDER BY next_run",
                (at,),
            )
        return [_cron(r) for r in rows]

    def skip_tick(self, cron_id: str, due: int, following: int | None) -> bool:
        """Move a cron from tick `due` to `following` without a run (it cannot make one); False when another
        replica moved it first."""
        with self._tx() as tx:
            return self._take_tick(tx, cron_id, due, following)

    def _take_tick(self, tx: _Tx, cron_id: str, due: int, following: int | None) -> bool:
        return (
            tx.count(
                "UPDATE agentmap_crons SET next_run = ? WHERE cron_id = ? AND next_run = ?",
                (following, cron_id, due),
            )
            > 0
        )


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


def _cron(row: dict[str, Any]) -> dict[str, Any]:
    data = dict(row)
    data["payload"] = column(row, "payload", {})
    data["metadata"] = column(row, "metadata", {})
    data["enabled"] = bool(data["enabled"])
    return data
