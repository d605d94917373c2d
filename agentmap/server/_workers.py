"""The run queue's workers: every replica claims runs from the run store, runs them, and keeps their leases.

A run is recorded `pending` when it is accepted (`RunAcceptance.submit`). Each replica's dispatcher claims the
runs it may run (the oldest first, one per thread at a time, `--workers` at once) and starts them; a heartbeat
renews the leases of the runs it holds every third of `--lease`, and hears of a `runs.cancel` sent to another
replica. A replica that dies stops renewing: once the lease has run out another replica claims the run and
continues it from its last checkpoint (a process of this machine started again takes its dead predecessor's runs
at once). A replica that is stopped (`stop`) stops claiming, lets its runs finish for `--grace`, then stops the
rest after their step and hands them back to the queue, for another replica (or its successor) to continue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence

from agentmap.errors import AgentMapError, ErrorCode
from agentmap.server._deliveries import WebhookDeliveries
from agentmap.server._records import RunRecord, ServerThreadStatus, now, webhook_of
from agentmap.server._run_events import EventSharing
from agentmap.server._run_queue import RunQueue
from agentmap.server._run_states import UNFINISHED, RunStatus
from agentmap.server._runs import Run, RunRequest, emitter, execute

__all__ = ["Workers"]


_FIRST_RETRY = 0.025
"""Seconds before a replica looks again for a run kept for it that its last claim missed (doubled each time)."""
_LAST_RETRY = 1.0
"""At most this long between two looks while a run kept for this replica is unclaimed."""

_log = logging.getLogger("agentmap.server")


class Workers:
    """The dispatcher (claim -> execute), the heartbeat (leases, cancels from other replicas), and the hand-over
    of the runs still going when the replica stops."""

    def __init__(
        self,
        queue: RunQueue,
        sharing: EventSharing,
        deliveries: WebhookDeliveries,
        *,
        graphs: Sequence[str],
        rebuild: Callable[[RunRecord], RunRequest],
        workers: int,
    ) -> None:
        self._queue = queue
        self._store = queue.store
        self._sharing = sharing
        self._deliveries = deliveries
        self._graphs = list(graphs)
        self._rebuild = rebuild
        self._workers = workers
        self._executing: dict[str, asyncio.Task[None]] = {}
        self._handover: set[str] = set()
        self._stopping = False

    async def dispatch(self) -> None:
        """Claim runs and execute them, until `stop`."""
        queue = self._queue
        retry = _FIRST_RETRY
        while not self._stopping:
            queue.claimable.clear()
            free = self._workers - len(self._executing)
            held_until = time.monotonic() + queue.lease  # the claim's lease starts after this, in any clock
            try:
                claimed = await queue.call(
                    self._store.runs.claim, owner=queue.owner, lease=queue.lease, graphs=self._graphs, limit=free
                )
            except Exception as exc:  # the database may be away for a while: keep trying
                _log.warning("cannot claim runs: %s", exc)
                claimed = []
            for record in claimed:
                task = self._executing.get(record.run_id)
                if task is not None and not task.done():  # its lease ran out while it ran here: it goes on, held again
                    if (run := queue.runs.get(record.run_id)) is not None:
                        run.held_until = held_until
                    continue
                task = asyncio.get_running_loop().create_task(self._execute(record, held_until))
                self._executing[record.run_id] = task
            # Woken by a run accepted or ended; leases run out without a word, so look again now and then. A run
            # kept for this replica that the claim did not get (the heartbeat held its row just then, or an older
            # run of its thread is still going) is looked for again soon, backing off, not a third of a lease later.
            waiting = free > len(claimed) and any(
                run_id not in self._executing and not run.done.is_set() for run_id, run in queue.runs.items()
            )
            retry = min(retry * 2, _LAST_RETRY, queue.lease / 3) if waiting else _FIRST_RETRY
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(queue.claimable.wait(), retry if waiting else queue.lease / 3)

    async def heartbeat(self) -> None:
        """Renew the leases of the runs held here, and hear of the cancels sent to other replicas, until cancelled."""
        queue = self._queue
        while True:
            held = [r.run_id for r in queue.runs.values() if not r.done.is_set()]
            held_until = time.monotonic() + queue.lease  # a renewal's lease starts after this, in any clock
            try:
                kept = await queue.call(self._store.runs.renew, owner=queue.owner, run_ids=held, lease=queue.lease)
            except Exception as exc:  # its runs stop before their next step once `held_until` has passed
                _log.warning("cannot renew the leases of %d run(s): %s", len(held), exc)
                kept = None
            if kept is not None:
                self._check_leases(held, kept, held_until)
            queue.news.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(queue.news.wait(), queue.lease / 3)

    async def stop(self, grace: float) -> None:
        """Stop claiming; let the runs finish for `grace` seconds; then stop the rest after their step and hand
        them back to the queue (the steps they finished are in their checkpoints)."""
        queue = self._queue
        self._stopping = True
        queue.claimable.set()
        running = list(self._executing.values())
        if running:
            _log.info("waiting up to %.0f s for %d run(s) to finish", grace, len(running))
            await asyncio.wait(running, timeout=grace)
        left = [run_id for run_id, task in self._executing.items() if not task.done()]
        for run_id in left:
            self._handover.add(run_id)
            queue.runs[run_id].cancelled.set()
        if left:
            _log.info("handing %d run(s) over to the other replicas after their current step", len(left))
            await asyncio.wait(list(self._executing.values()), timeout=max(grace, 30.0))
        waiting = [r.run_id for r in queue.runs.values() if not r.done.is_set() and r.run_id not in self._executing]
        await queue.call(self._store.runs.release, owner=queue.owner, run_ids=waiting + left)

    def _check_leases(self, held: list[str], kept: dict[str, str | None], held_until: float) -> None:
        for run_id in held:
            run = self._queue.runs.get(run_id)
            if run is None or run.done.is_set():
                continue
            if run_id in kept:
                run.held_until = max(run.held_until, held_until)
            ending = run.status not in UNFINISHED or run_id in self._handover  # its end or hand-back is being written
            if run_id not in kept and run_id in self._executing and not ending:
                _log.warning("run %s was taken over by another replica (its lease ran out); stopping it here", run_id)
                self._handover.add(run_id)
                run.cancelled.set()
            elif kept.get(run_id) and not run.cancelled.is_set():
                run.cancel(str(kept[run_id]))

    async def _execute(self, record: RunRecord, held_until: float) -> None:
        queue = self._queue
        run_id = record.run_id
        run = queue.runs.get(run_id) or queue.accepted.pop(run_id, None)
        if run is not None:
            queue.runs[run_id] = run
            run.attempt = record.attempt
        try:
            if run is None or record.attempt > 1:  # taken over: rebuilt from the record and its checkpoint
                request = await queue.call(self._rebuild, record)
                if run is None:
                    run = Run(run_id, request, created_at=record.created_at, attempt=record.attempt)
                    queue.runs[run_id] = run
                run.request = request
            run.held_until, run.lease_lost = held_until, False
            await self._run(run, record.attempt)
        except Exception as exc:  # the run cannot be rebuilt here (its graph changed, its thread is gone, ...)
            if self._store.unreachable(exc):  # not the run's fault: it is taken again once the database is back
                if run is not None:
                    self._lost_database(run, exc)
                else:
                    _log.warning("run %s: the database cannot be reached (%s); it is taken again later", run_id, exc)
                return
            if not isinstance(exc, AgentMapError):
                _log.exception("run %s could not be continued", run_id)
            error = {"error": type(exc).__name__, "message": str(exc), "code": getattr(exc, "code", "run-error")}
            await queue.call(
                self._store.runs.finish,
                run_id=run_id,
                owner=queue.owner,
                status=RunStatus.ERROR,
                result={"__error__": error},
                thread_status=ServerThreadStatus.ERROR,
                webhook=bool(record.webhook),
            )
            self._deliveries.due()
            if run is not None:
                run.error = error
                run.push("error", error)
                self._forget(run)
        finally:
            self._executing.pop(run_id, None)
            queue.claimable.set()

    async def _run(self, run: Run, attempt: int) -> None:
        if run.cancelled.is_set() and run.run_id not in self._handover:
            await self._finish(run, RunStatus.INTERRUPTED)
            return
        run.status = RunStatus.RUNNING
        self._sharing.publish(run)
        run.push("metadata", {"run_id": run.run_id, "attempt": attempt})
        try:
            status = await execute(run, emitter(run)) if run.held() else RunStatus.INTERRUPTED
        except Exception as exc:
            if not self._store.unreachable(exc):
                status = self._failed(run, exc)
            else:  # not the run's failure: it is continued, here or elsewhere, once the database is back
                self._lost_database(run, exc)
                return
        if run.lease_lost:  # stopped before a step: whoever claims it next (this replica too) continues it
            _log.warning(
                "run %s: its lease was last renewed %.0f s ago or more; stopped before its next step and handed "
                "back to the queue",
                run.run_id,
                self._queue.lease,
            )
            self._handover.add(run.run_id)
        if run.error is not None:
            run.push("error", run.error)
        await self._finish(run, status)

    def _failed(self, run: Run, exc: Exception) -> RunStatus:
        if isinstance(exc, AgentMapError):
            run.error = {"error": type(exc).__name__, "message": str(exc), "code": exc.code}
        else:
            _log.exception("run %s failed", run.run_id)
            run.error = {"error": type(exc).__name__, "message": str(exc), "code": "run-error"}
        return RunStatus.ERROR

    def _lost_database(self, run: Run, exc: Exception) -> None:
        """The database went away while `run` executed: its record stays `running` under a lease nobody renews,
        so once the database is back a replica (this one too) claims it and continues it from its checkpoint.
        A client following it here is told so; `runs.join` waits for its end wherever it runs."""
        _log.warning("run %s: the database cannot be reached (%s); it is continued once it is back", run.run_id, exc)
        run.error = {
            "error": "DatabaseUnavailable",
            "message": f"the database went away during the run ({exc}); the run continues once it is back",
            "code": ErrorCode.DATABASE_UNAVAILABLE.value,
        }
        run.push("error", run.error)
        run.moved = True
        self._forget(run)

    async def _finish(self, run: Run, status: RunStatus) -> None:
        queue = self._queue
        await self._sharing.published(run)
        if run.run_id in self._handover:  # stopped to be continued elsewhere: its record stays `running`
            run.moved = True
            await queue.written(self._store.runs.release, owner=queue.owner, run_ids=[run.run_id])
        else:
            run.status = status
            thread_status: ServerThreadStatus | None = None
            if not run.request.stateless:
                thread_status = (
                    ServerThreadStatus.ERROR
                    if status == RunStatus.ERROR
                    else ServerThreadStatus.INTERRUPTED
                    if run.paused
                    else ServerThreadStatus.IDLE
                )
            hook = bool(webhook_of(run.request.payload))  # ended, or paused on a question: its webhook hears of it
            await queue.written(
                self._store.runs.finish,
                run_id=run.run_id,
                owner=queue.owner,
                status=status,
                result=run.result(),
                thread_status=thread_status,
                cancel_reason=run.cancel_reason,
                webhook=hook,
                usage=run.usage,
            )
            if hook:
                self._deliveries.due()
            elif run.request.stateless and run.attempt == 1:  # no thread names it: forgotten, as LangGraph's
                await queue.written(self._store.runs.delete, run.run_id)  # server does (after its webhook)
            # one continued after a handover stays until the replica that accepted it, whose client may be waiting,
            # has read its end (`RunAcceptance.outcome`)
        self._forget(run)

    def _forget(self, run: Run) -> None:
        run.updated_at = now()
        run.done.set()
        run.wake()
        self._handover.discard(run.run_id)  # taken again later, it is finished here, not handed back again
        self._queue.runs.pop(run.run_id, None)  # its record is in the store; listeners hold the object itself
        self._sharing.keep_ended(run)  # its events are kept nowhere else (no shared store)
