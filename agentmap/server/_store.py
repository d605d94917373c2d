"""The run store: thread and run records and the run queue, one interface over SQLite and PostgreSQL.

The graph state of a thread lives in the checkpointer; this store holds what the server adds around it: when a
thread was made, its metadata and status, and its runs. A run is written when it is accepted (`pending`, with
the request that makes it), so a run a client was told about survives kill -9. The runs are also the queue:
a replica *claims* a run (owner and lease), renews the lease while it runs it (`renew`), and writes its end
(`finish`) or hands it back (`release`). A run whose lease ran out (its replica died) is claimed again by
any replica and continues from its last checkpoint.
Crons are rows here too (`agentmap_crons`): a tick's run is accepted in the transaction that moves its cron
to the next tick (`accept(tick=...)`), so one replica wins each tick.

The SQL is one text for both databases (`?` placeholders; the PostgreSQL store turns them into `%s`);
`_sqlitestore.SqliteStore` serialises writers with `BEGIN IMMEDIATE`, `_pgstore.PostgresStore` with row
locks (`FOR UPDATE ... SKIP LOCKED`). The routes, the protocols and the studio call these methods; none of
them writes SQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentmap.server._store_base import _UNFINISHED_OF_THREAD, RunStatus, ServerThreadStatus, column, decoded, now
from agentmap.server._store_crons import CronRows
from agentmap.server._store_threads import ThreadRows

__all__ = ["UNFINISHED", "Store", "open_store", "public_run"]

UNFINISHED: tuple[RunStatus, ...] = ("pending", "running")
"""The statuses of a run that is still to end: waiting on the queue, or claimed by a replica."""

_RUN_COLUMNS = (
    "run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, multitask_strategy, "
    "seq, graph_id, request, owner, lease_until, attempt, result, cancel, stateless"
)
_OLDER_UNFINISHED = (
    "SELECT 1 FROM agentmap_runs o WHERE o.thread_id = r.thread_id AND o.status IN ('pending', 'running') "
    "AND o.seq < r.seq"
)


class Store(ThreadRows, CronRows):
    """Thread and run records and the run queue (the SQL shared by both databases): the runs here, the threads
    in `ThreadRows`, the crons and webhook deliveries in `CronRows`, the transaction hooks in `StoreBase`.

    Database subclasses provide `_tx()` (a transaction that may write: serialised against other writers),
    `_lock_thread` (hold a thread's row until the transaction ends), and `_claim_lock` (the clause that
    keeps two replicas from selecting one run at once).
    """

    def accept(
        self,
        run: dict[str, Any],
        *,
        reject_if_busy: bool = False,
        owner: str | None = None,
        lease: float = 30.0,
        tick: tuple[str, int, int | None] | None = None,
    ) -> bool:
        """Record a new run as `pending`, with `run["request"]` (what rebuilds it on any replica).

        Args:
            run: The run's record (`Run.record()` plus `graph_id`, `request`, `stateless`).
            reject_if_busy: Refuse (return False) when the thread already has a run pending or running; the
                check and the write are one transaction, so two replicas cannot both accept.
            owner: Keep the run for this replica (a client waits on its events here); its lease is renewed by
                that replica's heartbeat, and another replica takes the run only once the lease (`lease` seconds)
                runs out.
            tick: `(cron_id, due, next)`: the run is a cron's tick; it is accepted only by the replica that moves
                the cron from `due` to `next` (one transaction), so each tick makes one run across replicas.
        """
        with self._tx() as tx:
            if tick is not None and not self._take_tick(tx, *tick):
                return False
            if not run["stateless"]:
                self._lock_thread(tx, run["thread_id"])
                if reject_if_busy and tx.rows(_UNFINISHED_OF_THREAD, (run["thread_id"],)):
                    return False
            tx.count(
                f"INSERT INTO agentmap_runs ({_RUN_COLUMNS}) VALUES "
                f"(?, ?, ?, ?, ?, 'pending', ?, ?, {self._next_seq}, ?, ?, ?, COALESCE({self._clock} + ?, 0), 0, NULL, "
                "NULL, ?)",  # held for `owner` `lease` seconds from now in the database's clock (none: 0)
                (
                    run["run_id"],
                    run["thread_id"],
                    run["assistant_id"],
                    run["created_at"],
                    run["created_at"],
                    json.dumps(run["metadata"]),
                    run["multitask_strategy"],
                    run["graph_id"],
                    json.dumps(run["request"]),
                    owner,
                    lease if owner else None,
                    1 if run["stateless"] else 0,
                ),
            )
        return True

    def claim(self, owner: str, lease: float, graphs: Sequence[str], limit: int) -> list[dict[str, Any]]:
        """Claim up to `limit` runs for `owner`, oldest first: the first unfinished run of each thread (so a
        thread's runs keep their order), of a graph this replica serves, that nobody holds (no owner, its
        lease ran out, or kept for `owner`). They become `running`, held for `lease` seconds.

        A lease is a time of the database's clock (`lease_until`), set and compared there: replicas whose clocks
        disagree still agree on whose lease ran out. PostgreSQL's is the transaction's start: a claim sees a lease
        run out no sooner than it did, and a renewal lasts from after the replica sent it, which its fencing
        (`Run.held`) counts on."""
        if limit <= 0 or not graphs:
            return []
        marks = ", ".join("?" for _ in graphs)
        with self._tx() as tx:
            found = tx.rows(
                f"SELECT r.run_id FROM agentmap_runs r WHERE r.status IN ('pending', 'running') "
                f"AND r.graph_id IN ({marks}) "
                f"AND (r.owner IS NULL OR r.lease_until < {self._clock} OR (r.owner = ? AND r.status = 'pending')) "
                f"AND NOT EXISTS ({_OLDER_UNFINISHED}) ORDER BY r.seq LIMIT ?{self._claim_lock}",
                (*graphs, owner, limit),
            )
            claimed = []
            for row in found:
                tx.count(
                    f"UPDATE agentmap_runs SET owner = ?, lease_until = {self._clock} + ?, status = 'running', "
                    "attempt = attempt + 1, updated_at = ? WHERE run_id = ?",
                    (owner, lease, now(), row["run_id"]),
                )
                record = tx.rows("SELECT * FROM agentmap_runs WHERE run_id = ?", (row["run_id"],))[0]
                if not record["stateless"]:
                    tx.count(
                        "UPDATE agentmap_threads SET status = 'busy', updated_at = ? WHERE thread_id = ?",
                        (now(), record["thread_id"]),
                    )
                claimed.append(decoded(record))
        return claimed

    def renew(self, owner: str, run_ids: Sequence[str], lease: float) -> dict[str, str | None]:
        """Extend `owner`'s lease on `run_ids` to `lease` seconds from now (the database's clock); returns those it
        still holds, each with the reason a client asked it to stop (`runs.cancel` on any replica), or None."""
        if not run_ids:
            return {}
        marks = ", ".join("?" for _ in run_ids)
        with self._tx() as tx:
            tx.count(
                f"UPDATE agentmap_runs SET lease_until = {self._clock} + ? WHERE owner = ? "
                f"AND status IN ('pending', 'running') AND run_id IN ({marks})",
                (lease, owner, *run_ids),
            )
            rows = tx.rows(
                f"SELECT run_id, cancel FROM agentmap_runs WHERE owner = ? AND status IN ('pending', 'running') "
                f"AND run_id IN ({marks})",
                (owner, *run_ids),
            )
        return {r["run_id"]: r["cancel"] for r in rows}

    def finish(
        self,
        owner: str,
        run_id: str,
        status: RunStatus,
        result: Any,
        thread_status: ServerThreadStatus | None,
        cancel_reason: str | None = None,
        webhook: bool = False,
        usage: dict[str, Any] | None = None,
    ) -> bool:
        """Write a run's end (its result, why it was cancelled, its thread's new status) if `owner` still holds
        it; False if it lost it. `webhook`: its webhook delivery is due now (`claim_webhooks`), in the same
        transaction, so a replica that dies next does not lose it. `usage`: the tokens and cost of its model
        calls, added to its metadata (`metadata.usage`)."""
        stamp = now()
        with self._tx() as tx:
            found = tx.rows(
                "SELECT thread_id, metadata FROM agentmap_runs WHERE run_id = ? AND owner = ?", (run_id, owner)
            )
            if not found:
                return False
            if usage:
                metadata = {**column(found[0], "metadata", {}), "usage": usage}
                tx.count("UPDATE agentmap_runs SET metadata = ? WHERE run_id = ?", (json.dumps(metadata), run_id))
            tx.count(
                "UPDATE agentmap_runs SET status = ?, result = ?, updated_at = ?, owner = NULL, lease_until = 0, "
                "cancel = COALESCE(?, cancel), webhook_due = ? WHERE run_id = ?",
                (status, json.dumps(result), stamp, cancel_reason, time.time() if webhook else None, run_id),
            )
            if thread_status is not None:
                tx.count(
                    "UPDATE agentmap_threads SET status = ?, updated_at = ? WHERE thread_id = ?",
                    (thread_status, stamp, found[0]["thread_id"]),
                )
        return True

    def delete_run(self, run_id: str) -> None:
        """Forget a run and its events (a stateless run once it ended: nothing can name it again)."""
        with self._tx() as tx:
            tx.count("DELETE FROM agentmap_run_events WHERE run_id = ?", (run_id,))
            tx.count("DELETE FROM agentmap_runs WHERE run_id = ?", (run_id,))

    def release(self, owner: str, run_ids: Sequence[str]) -> None:
        """Hand `owner`'s runs back to the queue at once (a replica stopping): any replica claims them next."""
        for run_id in run_ids:
            with self._tx() as tx:
                tx.count(
                    "UPDATE agentmap_runs SET owner = NULL, lease_until = 0, updated_at = ? "
                    "WHERE run_id = ? AND owner = ? AND status IN ('pending', 'running')",
                    (now(), run_id, owner),
                )

    def release_dead(self, alive: Any, owner: str) -> int:
        """Hand back at once the runs of owners that `alive(other_owner)` says are gone (a process of this
        machine killed and started again); returns how many."""
        with self._tx() as tx:
            rows = tx.rows(
                "SELECT run_id, owner FROM agentmap_runs WHERE status IN ('pending', 'running') AND owner IS NOT NULL"
            )
        dead = [r for r in rows if r["owner"] != owner and not alive(r["owner"])]
        for row in dead:
            self.release(row["owner"], [row["run_id"]])
        return len(dead)

    def request_cancel(self, run_id: str, reason: str) -> bool:
        """Ask the replica running `run_id` to stop it; a pending run ends `interrupted` at once (True)."""
        stamp = now()
        with self._tx() as tx:
            tx.count("UPDATE agentmap_runs SET cancel = ? WHERE run_id = ?", (reason, run_id))
            return (
                tx.count(
                    "UPDATE agentmap_runs SET status = 'interrupted', updated_at = ? WHERE run_id = ? "
                    "AND status = 'pending' AND owner IS NULL",
                    (stamp, run_id),
                )
                > 0
            )

    def add_events(self, run_id: str, events: Sequence[tuple[str, str]], attempt: int, index: int) -> int:
        """Append a run's events (`(event, data as JSON text)`, events `index`, `index + 1`, ... of its attempt
        `attempt`: their ids) for followers elsewhere, numbered after every one the store holds for the run,
        whichever replica wrote it (one stopped by a handover may still be writing its last ones while the replica
        continuing the run writes its first); returns the first one's number."""
        with self._tx() as tx:
            self._lock_events(tx, run_id)
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
            self._announce(tx, "events")
        return first

    def events(self, run_id: str, after: int) -> list[tuple[int, str, Any, str | None]]:
        """A run's events (`(number, event, data, id)`, the id `attempt.index`) from number `after` on, in order."""
        with self._tx() as tx:
            rows = tx.rows(
                "SELECT seq, event, data, attempt, idx FROM agentmap_run_events WHERE run_id = ? AND seq >= ? "
                "ORDER BY seq",
                (run_id, after),
            )
        return [
            (
                int(r["seq"]),
                r["event"],
                column(r, "data"),
                None if r["attempt"] is None else f"{r['attempt']}.{r['idx']}",
            )
            for r in rows
        ]

    def event_number(self, run_id: str, attempt: int, index: int) -> int | None:
        """The number of the run's event `index` of attempt `attempt` (None: the store has no such event)."""
        with self._tx() as tx:
            rows = tx.rows(
                "SELECT seq FROM agentmap_run_events WHERE run_id = ? AND attempt = ? AND idx = ?",
                (run_id, attempt, index),
            )
        return int(rows[0]["seq"]) if rows else None

    def runs(self, thread_id: str, status: str | None = None) -> list[dict[str, Any]]:
        """The runs of a thread, newest first."""
        with self._tx() as tx:
            rows = tx.rows("SELECT * FROM agentmap_runs WHERE thread_id = ? ORDER BY seq DESC", (thread_id,))
        return [decoded(r) for r in rows if status is None or r["status"] == status]

    def run(self, thread_id: str | None, run_id: str) -> dict[str, Any] | None:
        """One run (of a thread, when given), or None."""
        with self._tx() as tx:
            found = tx.rows("SELECT * FROM agentmap_runs WHERE run_id = ?", (run_id,))
        if not found or (thread_id is not None and found[0]["thread_id"] != thread_id):
            return None
        return decoded(found[0])


_INTERNAL = (
    *("seq", "graph_id", "request", "owner", "lease_until", "result", "cancel", "stateless", "attempt"),
    *("webhook_due", "webhook_tries"),
)


def public_run(record: dict[str, Any]) -> dict[str, Any]:
    """A stored run (decoded) as LangGraph's server returns it: without the queue's columns, with
    `cancel_reason` and `kwargs` (the request that made the run)."""
    out = {k: v for k, v in record.items() if k not in _INTERNAL}
    return {**out, "cancel_reason": record.get("cancel"), "kwargs": (record.get("request") or {}).get("body", {})}


def open_store(checkpoint: str) -> Store:
    """The run store beside the checkpointer `checkpoint` names: the same PostgreSQL database, the SQLite file
    itself (its own tables), or memory."""
    from agentmap.runtime.checkpoint import is_postgres, sqlite_path

    value = checkpoint.strip()
    if is_postgres(value):
        from agentmap.server._pgstore import PostgresStore

        return PostgresStore(value)
    from agentmap.server._sqlitestore import SqliteStore

    if value.lower() == "memory":
        return SqliteStore(None)
    path = sqlite_path(value) or Path(".agentmap/serve.db")
    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteStore(path)
