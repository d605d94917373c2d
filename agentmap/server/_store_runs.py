"""The run store's run rows, which are also the queue: a run accepted, claimed, its lease renewed, ended or handed back.

A run is written when it is accepted (`pending`, with the request that makes it), so a run a client was told
about survives kill -9. A replica *claims* a run (owner and lease), renews the lease while it runs it (`renew`),
and writes its end (`finish`) or hands it back (`release`). A run whose lease ran out (its replica died) is
claimed again by any replica and continues from its last checkpoint. Every move of a run's status is checked
against the one table of moves (`_run_states.py`).

Statuses go into the SQL as their text (`.value`, or a list from `sql_list`): psycopg writes an enum member
as its name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentmap.server._database import Database, Tx, Where
from agentmap.server._quota import Quota, take_quota
from agentmap.server._records import Owner, RunRecord, ServerThreadStatus, Tick, column, now
from agentmap.server._run_states import UNFINISHED, RunStatus, check_move, moved_from, sql_list
from agentmap.server._store_crons import take_tick
from agentmap.server._store_threads import UNFINISHED_OF_THREAD

if TYPE_CHECKING:
    from agentmap.server._filters import Filter

__all__ = ["RunRows"]

_RUN_COLUMNS = (
    "run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, multitask_strategy, "
    "seq, graph_id, request, owner, lease_until, attempt, result, cancel, stateless, user_id"
)
_UNFINISHED = sql_list(UNFINISHED)
_CLAIMABLE = sql_list(moved_from(RunStatus.RUNNING, "claim"))
_CANCELLABLE = sql_list(moved_from(RunStatus.INTERRUPTED, "cancel"))
_OLDER_UNFINISHED = (
    f"SELECT 1 FROM agentmap_runs o WHERE o.thread_id = r.thread_id AND o.status IN {_UNFINISHED} AND o.seq < r.seq"
)
_ONE = "SELECT * FROM agentmap_runs WHERE run_id = ?"
"""A run the queue itself reads (claimed, ended): no client's read, so no condition of a client's applies."""


class RunRows:
    """Run records and the run queue (the SQL shared by both databases, over the `Database` of the store)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _select(self, tx: Tx, where: Where, visible: Filter | None, order: str = "") -> list[RunRecord]:
        """The runs `where` selects, as clients read them: of a thread that passes the user's filter `visible`, as
        LangGraph scopes runs to their thread (every such read of runs goes through here)."""
        if visible is not None:
            threads = self._db.matching("agentmap_threads.metadata", visible)
            where = where.both(
                Where((f"thread_id IN (SELECT thread_id FROM agentmap_threads{threads.sql})",), threads.args)
            )
        rows = tx.rows(f"SELECT * FROM agentmap_runs{where.sql}{order}", where.args)
        return [RunRecord.from_row(r) for r in rows]

    def accept(
        self,
        run: RunRecord,
        *,
        reject_if_busy: bool = False,
        owner: Owner | None = None,
        lease: float = 30.0,
        tick: Tick | None = None,
        quota: Quota | None = None,
    ) -> bool:
        """Record a new run as `pending`, with `run.request` (what rebuilds it on any replica).

        Args:
            run: The run's record (its id, thread, assistant, creation time, metadata, multitask strategy, graph,
                request and whether it is stateless; the queue's columns start empty).
            reject_if_busy: Refuse (return False) when the thread already has a run pending or running; the
                check and the write are one transaction, so two replicas cannot both accept.
            owner: Keep the run for this replica (a client waits on its events here); its lease is renewed by
                that replica's heartbeat, and another replica takes the run only once the lease (`lease` seconds)
                runs out.
            tick: The run is a cron's tick; it is accepted only by the replica that moves the cron from
                `tick.due` to `tick.following` (one transaction), so each tick makes one run across replicas.
            quota: What its user (`run.user_id`) may run; counted in this transaction, every replica's runs too.

        Raises:
            QuotaExceeded: The run is over its user's quota (nothing is written).
        """
        check_move(None, run.status, "accept")
        with self._db.transaction() as tx:
            if tick is not None and not take_tick(tx, tick):
                return False
            if not run.stateless:
                self._db.lock_thread(tx, run.thread_id)
                if reject_if_busy and tx.rows(UNFINISHED_OF_THREAD, (run.thread_id,)):
                    return False
            if quota is not None:
                take_quota(tx, self._db, quota, run.user_id or "")
            tx.count(
                f"INSERT INTO agentmap_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, '{run.status.value}', ?, ?, "
                f"{self._db.next_seq}, ?, ?, ?, COALESCE({self._db.clock} + ?, 0), 0, NULL, NULL, ?, ?)",
                # held for `owner` `lease` seconds from now in the database's clock (none: 0)
                (
                    run.run_id,
                    run.thread_id,
                    run.assistant_id,
                    run.created_at,
                    run.created_at,
                    json.dumps(run.metadata),
                    run.multitask_strategy,
                    run.graph_id,
                    json.dumps(run.request),
                    owner,
                    lease if owner else None,
                    1 if run.stateless else 0,
                    run.user_id or "",
                ),
            )
        return True

    def claim(self, *, owner: Owner, lease: float, graphs: Sequence[str], limit: int) -> list[RunRecord]:
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
        clock = self._db.clock
        with self._db.transaction() as tx:
            found = tx.rows(
                f"SELECT r.run_id, r.status FROM agentmap_runs r WHERE r.status IN {_CLAIMABLE} "
                f"AND r.graph_id IN ({marks}) "
                f"AND (r.owner IS NULL OR r.lease_until < {clock} OR "
                f"(r.owner = ? AND r.status = '{RunStatus.PENDING.value}')) "
                f"AND NOT EXISTS ({_OLDER_UNFINISHED}) ORDER BY r.seq LIMIT ?{self._db.claim_lock}",
                (*graphs, owner, limit),
            )
            claimed = []
            for row in found:
                check_move(RunStatus(row["status"]), RunStatus.RUNNING, "claim")
                tx.count(
                    f"UPDATE agentmap_runs SET owner = ?, lease_until = {clock} + ?, "
                    f"status = '{RunStatus.RUNNING.value}', attempt = attempt + 1, updated_at = ? WHERE run_id = ?",
                    (owner, lease, now(), row["run_id"]),
                )
                record = RunRecord.from_row(tx.rows(_ONE, (row["run_id"],))[0])
                if not record.stateless:
                    tx.count(
                        "UPDATE agentmap_threads SET status = ?, updated_at = ? WHERE thread_id = ?",
                        (ServerThreadStatus.BUSY.value, now(), record.thread_id),
                    )
                claimed.append(record)
        return claimed

    def renew(self, *, owner: Owner, run_ids: Sequence[str], lease: float) -> dict[str, str | None]:
        """Extend `owner`'s lease on `run_ids` to `lease` seconds from now (the database's clock); returns those it
        still holds, each with the reason a client asked it to stop (`runs.cancel` on any replica), or None."""
        if not run_ids:
            return {}
        marks = ", ".join("?" for _ in run_ids)
        with self._db.transaction() as tx:
            tx.count(
                f"UPDATE agentmap_runs SET lease_until = {self._db.clock} + ? WHERE owner = ? "
                f"AND status IN {_UNFINISHED} AND run_id IN ({marks})",
                (lease, owner, *run_ids),
            )
            rows = tx.rows(
                f"SELECT run_id, cancel FROM agentmap_runs WHERE owner = ? AND status IN {_UNFINISHED} "
                f"AND run_id IN ({marks})",
                (owner, *run_ids),
            )
        return {r["run_id"]: r["cancel"] for r in rows}

    def finish(
        self,
        *,
        run_id: str,
        owner: Owner,
        status: RunStatus,
        result: dict[str, Any],
        thread_status: ServerThreadStatus | None,
        cancel_reason: str | None = None,
        webhook: bool = False,
        usage: dict[str, Any] | None = None,
    ) -> bool:
        """Write a run's end if `owner` still holds it; False if it lost it.

        Args:
            run_id: The run.
            owner: The replica that ran it (the end is written only while it holds it).
            status: How it ended (`success`, `error`, `interrupted`: `MOVES` refuses any other).
            result: What it ended with (`Run.result`: its final values, or `{"__error__": ...}`).
            thread_status: Its thread's new status (None: a stateless run has no thread to update).
            cancel_reason: Why it was cancelled (kept when None).
            webhook: Its webhook delivery is due now (`DeliveryRows.claim`), written in the same transaction, so a
                replica that dies next does not lose it.
            usage: The tokens and cost of its model calls, added to its metadata (`metadata.usage`).
        """
        stamp = now()
        with self._db.transaction() as tx:
            found = tx.rows(
                "SELECT thread_id, metadata, status FROM agentmap_runs WHERE run_id = ? AND owner = ?", (run_id, owner)
            )
            if not found:
                return False
            check_move(RunStatus(found[0]["status"]), status, "finish")
            if usage:
                metadata = {**column(found[0], "metadata", {}), "usage": usage}
                tx.count("UPDATE agentmap_runs SET metadata = ? WHERE run_id = ?", (json.dumps(metadata), run_id))
            tx.count(
                "UPDATE agentmap_runs SET status = ?, result = ?, updated_at = ?, owner = NULL, lease_until = 0, "
                "cancel = COALESCE(?, cancel), webhook_due = ? WHERE run_id = ?",
                (status.value, json.dumps(result), stamp, cancel_reason, time.time() if webhook else None, run_id),
            )
            if thread_status is not None:
                tx.count(
                    "UPDATE agentmap_threads SET status = ?, updated_at = ? WHERE thread_id = ?",
                    (thread_status.value, stamp, found[0]["thread_id"]),
                )
        return True

    def delete(self, run_id: str) -> None:
        """Forget a run and its events (a stateless run once it ended: nothing can name it again)."""
        with self._db.transaction() as tx:
            tx.count("DELETE FROM agentmap_run_events WHERE run_id = ?", (run_id,))
            tx.count("DELETE FROM agentmap_runs WHERE run_id = ?", (run_id,))

    def release(self, *, owner: Owner, run_ids: Sequence[str]) -> None:
        """Hand `owner`'s runs back to the queue at once (a replica stopping): any replica claims them next.

        Their status stays as it is (a run that began stays `running`: whoever claims it continues it)."""
        for run_id in run_ids:
            with self._db.transaction() as tx:
                tx.count(
                    "UPDATE agentmap_runs SET owner = NULL, lease_until = 0, updated_at = ? "
                    f"WHERE run_id = ? AND owner = ? AND status IN {_UNFINISHED}",
                    (now(), run_id, owner),
                )

    def release_dead(self, *, owner: Owner, alive: Callable[[Owner], bool]) -> int:
        """Hand back at once the runs of owners that `alive(other_owner)` says are gone (a process of this
        machine killed and started again); returns how many."""
        with self._db.transaction() as tx:
            rows = tx.rows(
                f"SELECT run_id, owner FROM agentmap_runs WHERE status IN {_UNFINISHED} AND owner IS NOT NULL"
            )
        dead = [r for r in rows if r["owner"] != owner and not alive(Owner(r["owner"]))]
        for row in dead:
            self.release(owner=Owner(row["owner"]), run_ids=[row["run_id"]])
        return len(dead)

    def request_cancel(self, run_id: str, reason: str) -> bool:
        """Ask the replica running `run_id` to stop it; a run still on the queue that nobody holds ends
        `interrupted` at once (True: the statuses it moves from are `MOVES`'s for `cancel`)."""
        stamp = now()
        with self._db.transaction() as tx:
            tx.count("UPDATE agentmap_runs SET cancel = ? WHERE run_id = ?", (reason, run_id))
            return (
                tx.count(
                    f"UPDATE agentmap_runs SET status = '{RunStatus.INTERRUPTED.value}', updated_at = ? "
                    f"WHERE run_id = ? AND status IN {_CANCELLABLE} AND owner IS NULL",
                    (stamp, run_id),
                )
                > 0
            )

    def of_thread(self, thread_id: str, visible: Filter | None = None) -> list[RunRecord]:
        """The runs of a thread (if it passes the user's filter `visible`), newest first."""
        with self._db.transaction() as tx:
            return self._select(tx, Where().also("thread_id = ?", thread_id), visible, " ORDER BY seq DESC")

    def get(self, thread_id: str | None, run_id: str, visible: Filter | None = None) -> RunRecord | None:
        """One run (of a thread, when given; whose thread passes the user's filter `visible`), or None."""
        with self._db.transaction() as tx:
            found = self._select(tx, Where().also("run_id = ?", run_id), visible)
        if not found or (thread_id is not None and found[0].thread_id != thread_id):
            return None
        return found[0]
