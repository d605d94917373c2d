"""Accepting runs onto the queue: what the routes call to submit a run, cancel one on whichever replica runs it,
and wait for one to end on any replica."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

from agentmap.server._deliveries import WebhookDeliveries
from agentmap.server._quota import Quota
from agentmap.server._records import RunRecord, Tick
from agentmap.server._run_queue import RunQueue
from agentmap.server._run_states import UNFINISHED
from agentmap.server._runs import Run, RunRequest

__all__ = ["RunAcceptance"]


class RunAcceptance:
    """Records runs as `pending`, cancels them anywhere and waits for their end (the routes' side of the queue)."""

    def __init__(self, queue: RunQueue, deliveries: WebhookDeliveries, quota: Quota | None = None) -> None:
        self._queue = queue
        self._store = queue.store
        self._deliveries = deliveries
        self._quota = quota

    async def busy(self, thread_id: str) -> bool:
        """True while the thread has a run pending or running on any replica."""
        return await self._queue.call(self._store.threads.busy, thread_id)

    async def submit(
        self,
        request: RunRequest,
        *,
        here: bool,
        reject_if_busy: bool = False,
        tick: Tick | None = None,
        run_id: str | None = None,
    ) -> Run | None:
        """Record a new run (`pending`) and wake the dispatcher; None when `reject_if_busy` and the thread is busy,
        or when the run is a cron's `tick` (`RunRows.accept`) that another replica took.

        `here`: a client waits on the run's events in this process (`runs.wait`, `runs.stream`), so this replica
        keeps it (another takes it only if this one dies). `run_id`: the id its auth handler was shown (a new one
        when None).

        Raises:
            QuotaExceeded: The run is over its user's quota (`--quota`).
        """
        queue = self._queue
        run = Run(run_id or str(uuid.uuid4()), request)
        # Known before it is written: the dispatcher may claim the run the moment its record is committed (woken
        # by the database's notice), before this coroutine goes on; it must execute this object, the one the
        # client follows, not a copy rebuilt from the record.
        kept = queue.runs if here else queue.accepted  # not here: followers read its events from the store
        kept[run.run_id] = run
        accepted = False
        try:
            accepted = await queue.call(
                self._store.runs.accept,
                run.accepted(),
                reject_if_busy=reject_if_busy,
                owner=queue.owner if here else None,
                lease=queue.lease,
                tick=tick,
                quota=self._quota,
            )
        finally:
            if not accepted:  # refused, or the database failed: there is no run to execute
                kept.pop(run.run_id, None)
        if not accepted:
            return None
        while len(queue.accepted) > 1000:  # claimed elsewhere long ago
            queue.accepted.pop(next(iter(queue.accepted)))
        queue.claimable.set()
        return run

    async def cancel_anywhere(self, run_id: str, reason: str = "cancelled by the client") -> None:
        """Ask whichever replica runs `run_id` to stop it (a run still on the queue ends `interrupted` at once)."""
        run = self._queue.runs.get(run_id)
        if run is not None:  # running here, or kept here for its client: it stops (or never starts) here
            run.cancel(reason)
            return
        accepted = self._queue.accepted.get(run_id)
        if accepted is not None:  # accepted here: this replica may have claimed it a moment ago, not yet started
            accepted.cancel(reason)
        if await self._queue.call(self._store.runs.request_cancel, run_id, reason):  # ended on the queue: its webhook
            self._queue.accepted.pop(run_id, None)
            record = await self._queue.call(self._store.runs.get, None, run_id)
            if record is not None and record.webhook:
                await self._queue.call(self._store.deliveries.due, run_id, time.time())
                self._deliveries.due()

    async def stop_thread(self, thread_id: str, reason: str) -> list[str]:
        """Ask every pending or running run of the thread to stop (on any replica); their ids."""
        records = await self._queue.call(self._store.runs.of_thread, thread_id)
        unfinished = [r.run_id for r in records if r.status in UNFINISHED]
        for run_id in unfinished:
            await self.cancel_anywhere(run_id, reason)
        return unfinished

    async def delete_runs(self, run_ids: list[str]) -> None:
        """Delete the records of runs that have ended."""
        for run_id in run_ids:
            await self._queue.call(self._store.runs.delete, run_id)

    async def outcome(self, run: Run) -> dict[str, Any]:
        """What `run` ended with (`Run.result`: its final values, or `{"__error__": ...}`), once it ended: a run
        stopped here to be continued by another replica (`Run.moved`) is waited for wherever it continues, never
        answered with the steps it had done here (`runs.wait`, the MCP and A2A calls)."""
        await run.done.wait()
        if run.moved:
            try:
                record = await self.wait_record(run.thread_id, run.run_id)
            except Exception as exc:
                if run.error is None or not self._store.unreachable(exc):
                    raise
                record = None  # the database is still away: the caller hears so (`database-unavailable`)
            if record is not None and record.result is not None:
                if run.request.stateless:  # kept for this reader by the replica that continued it (_workers.py)
                    with contextlib.suppress(Exception):  # left in the store, it harms nobody: nothing names it
                        await self._queue.call(self._store.runs.delete, run.run_id)
                return dict(record.result)
        return dict(run.result())

    async def wait_record(self, thread_id: str, run_id: str) -> RunRecord | None:
        """Wait until a run ends (on any replica); its record, or None when there is no such run."""
        queue = self._queue
        while True:
            queue.news.clear()
            record = await queue.call(self._store.runs.get, thread_id, run_id)
            if record is None or record.status not in UNFINISHED:
                return record
            local = queue.runs.get(run_id) or queue.accepted.get(run_id)  # queued here: the same Run once it runs
            waits = [asyncio.ensure_future(queue.news.wait())]
            if local is not None:
                waits.append(asyncio.ensure_future(local.done.wait()))
            _, pending = await asyncio.wait(waits, timeout=queue.lease / 3, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
