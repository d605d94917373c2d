"""Accepting runs onto the queue: what the routes call on `RunManager` (`_workers.py`) to submit a run, cancel one
on whichever replica runs it, and wait for one to end on any replica."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from agentmap.server._deliveries import webhook_of
from agentmap.server._runs import Run, RunRequest
from agentmap.server._store import UNFINISHED, Store

__all__ = ["RunAcceptance"]


class RunAcceptance:
    """The part of `RunManager` that records runs as `pending`, cancels them anywhere and waits for their end."""

    store: Store
    owner: str
    lease: float
    runs: dict[str, Run]
    _accepted: dict[str, Run]
    _wake: asyncio.Event
    _news: asyncio.Event
    _deliveries_due: asyncio.Event
    _store: Callable[..., Awaitable[Any]]

    async def busy(self, thread_id: str) -> bool:
        """True while the thread has a run pending or running on any replica."""
        return bool(await self._store(self.store.busy, thread_id))

    async def submit(
        self,
        request: RunRequest,
        *,
        here: bool,
        reject_if_busy: bool = False,
        tick: tuple[str, int, int | None] | None = None,
    ) -> Run | None:
        """Record a new run (`pending`) and wake the dispatcher; None when `reject_if_busy` and the thread is busy,
        or when the run is a cron's `tick` (`Store.accept`) that another replica took.

        `here`: a client waits on the run's events in this process (`runs.wait`, `runs.stream`), so this replica
        keeps it (another takes it only if this one dies).
        """
        run = Run(str(uuid.uuid4()), request)
        record = {
            **run.record(),
            "graph_id": request.assistant.graph_id,
            "request": request.payload,
            "stateless": request.stateless,
        }
        # Known before it is written: the dispatcher may claim the run the moment its record is committed (woken
        # by the database's notice), before this coroutine goes on; it must execute this object, the one the
        # client follows, not a copy rebuilt from the record.
        kept = self.runs if here else self._accepted  # not here: followers read its events from the store
        kept[run.run_id] = run
        owner = self.owner if here else None
        accepted = False
        try:
            accepted = await self._store(
                self.store.accept, record, reject_if_busy=reject_if_busy, owner=owner, lease=self.lease, tick=tick
            )
        finally:
            if not accepted:  # refused, or the database failed: there is no run to execute
                kept.pop(run.run_id, None)
        if not accepted:
            return None
        while len(self._accepted) > 1000:  # claimed elsewhere long ago
            self._accepted.pop(next(iter(self._accepted)))
        self._wake.set()
        return run

    def cancel(self, run: Run, reason: str = "cancelled by the client") -> None:
        """Ask a run of this replica to stop after the step it is in."""
        run.cancel_reason = reason
        run.cancelled.set()

    async def cancel_anywhere(self, run_id: str, reason: str = "cancelled by the client") -> None:
        """Ask whichever replica runs `run_id` to stop it (a run still on the queue ends `interrupted` at once)."""
        run = self.runs.get(run_id)
        if run is not None:  # running here, or kept here for its client: it stops (or never starts) here
            self.cancel(run, reason)
            return
        accepted = self._accepted.get(run_id)
        if accepted is not None:  # accepted here: this replica may have claimed it a moment ago, not yet started
            self.cancel(accepted, reason)
        if await self._store(self.store.request_cancel, run_id, reason):  # it ended on the queue: tell its webhook
            self._accepted.pop(run_id, None)
            record = await self._store(self.store.run, None, run_id)
            if record is not None and webhook_of(record["request"]):
                await self._store(self.store.webhook_due, run_id, time.time())
                self._deliveries_due.set()

    async def stop_thread(self, thread_id: str, reason: str) -> list[str]:
        """Ask every pending or running run of the thread to stop (on any replica); their ids."""
        records = await self._store(self.store.runs, thread_id)
        unfinished = [r["run_id"] for r in records if r["status"] in UNFINISHED]
        for run_id in unfinished:
            await self.cancel_anywhere(run_id, reason)
        return unfinished

    async def delete_runs(self, run_ids: list[str]) -> None:
        """Delete the records of runs that have ended."""
        for run_id in run_ids:
            await self._store(self.store.delete_run, run_id)

    async def outcome(self, run: Run) -> dict[str, Any]:
        """What `run` ended with (`Run.result`: its final values, or `{"__error__": ...}`), once it ended: a run
        stopped here to be continued by another replica (`Run.moved`) is waited for wherever it continues, never
        answered with the steps it had done here (`runs.wait`, the MCP and A2A calls)."""
        await run.done.wait()
        if run.moved:
            try:
                record = await self.wait_record(run.thread_id, run.run_id)
            except Exception as exc:
                if run.error is None or not self.store.unreachable(exc):
                    raise
                record = None  # the database is still away: the caller hears so (`database-unavailable`)
            if record is not None and record.get("result") is not None:
                if run.request.stateless:  # kept for this reader by the replica that continued it (_workers.py)
                    with contextlib.suppress(Exception):  # left in the store, it harms nobody: nothing names it
                        await self._store(self.store.delete_run, run.run_id)
                return dict(record["result"])
        return dict(run.result())

    async def wait_record(self, thread_id: str, run_id: str) -> dict[str, Any] | None:
        """Wait until a run ends (on any replica); its record, or None when there is no such run."""
        while True:
            self._news.clear()
            record: dict[str, Any] | None = await self._store(self.store.run, thread_id, run_id)
            if record is None or record["status"] not in UNFINISHED:
                return record
            local = self.runs.get(run_id) or self._accepted.get(run_id)  # queued here: the same Run once it runs
            waits = [asyncio.ensure_future(self._news.wait())]
            if local is not None:
                waits.append(asyncio.ensure_future(local.done.wait()))
            _, pending = await asyncio.wait(waits, timeout=self.lease / 3, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
