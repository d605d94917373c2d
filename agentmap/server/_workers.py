"""The run queue's workers: every replica claims runs from the run store, runs them, and keeps their leases.

A run is recorded `pending` when it is accepted (`submit`). Each replica's dispatcher claims the runs it may
run (the oldest first, one per thread at a time, `--workers` at once) and starts them; a heartbeat renews the
leases of the runs it holds every third of `--lease`, and hears of a `runs.cancel` sent to another replica. A
replica that dies stops renewing: once the lease has run out another replica claims the run and continues it
from its last checkpoint (a process of this machine started again takes its dead predecessor's runs at once).
A replica that is stopped (`shutdown`) stops claiming, lets its runs finish for `--grace`, then stops the
rest after their step and hands them back to the queue, for another replica (or its successor) to continue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentmap.errors import AgentMapError, ErrorCode
from agentmap.server._accepting import RunAcceptance
from agentmap.server._deliveries import WebhookDeliveries, webhook_of
from agentmap.server._run_events import EventSharing
from agentmap.server._runs import Run, RunRequest, emitter, execute
from agentmap.server._store import UNFINISHED, Store
from agentmap.server._store_base import RunStatus, ServerThreadStatus, now
from agentmap.server._webhooks import Webhooks

__all__ = ["KEPT_ENDED", "RunManager", "owner_alive"]


_FIRST_RETRY = 0.025
"""Seconds before a replica looks again for a run kept for it that its last claim missed (doubled each time)."""
_LAST_RETRY = 1.0
"""At most this long between two looks while a run kept for this replica is unclaimed."""


KEPT_ENDED = 100
"""How many ended runs a server with no shared store keeps the events of (in memory), for `join_stream`."""

_log = logging.getLogger("agentmap.server")


def owner_alive(owner: str) -> bool:
    """Whether the replica named `owner` (`host:pid:boot`) may still be running: always for another machine
    (its lease says when it is gone); on this machine only while its pid lives."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if pid == os.getpid():
        return False  # this process is new: an owner with this pid and another boot id died before it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunManager(RunAcceptance, EventSharing, WebhookDeliveries):
    """Accepts runs into the store, claims and executes them, keeps their leases, and hands them over."""

    def __init__(
        self,
        store: Store,
        *,
        graphs: Sequence[str],
        rebuild: Callable[[dict[str, Any]], RunRequest],
        workers: int = 16,
        lease: float = 30.0,
        webhooks: Webhooks | None = None,
    ) -> None:
        self.store = store
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.runs: dict[str, Run] = {}
        """The runs accepted or executed here (finished ones are forgotten once their record is written)."""
        self.ended: OrderedDict[str, Run] = OrderedDict()
        """With no shared store, the last `KEPT_ENDED` runs of threads that ended here, for their streams."""
        self._graphs = list(graphs)
        self._rebuild = rebuild
        self._workers = workers
        self.lease = lease
        self.webhooks = webhooks or Webhooks(None)
        self._executing: dict[str, asyncio.Task[None]] = {}
        self._wake = asyncio.Event()
        self._news = asyncio.Event()
        self._events = asyncio.Event()
        self._publishers: dict[str, asyncio.Task[None]] = {}
        self._accepted: dict[str, Run] = {}
        self._stopping = False
        self._handover: set[str] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._deliveries_due = asyncio.Event()
        self._delivering: set[asyncio.Task[None]] = set()
        # the synchronous nodes of every run (the loop's default executor; parallel branches need a few each)
        self.executor = ThreadPoolExecutor(max_workers=max(32, 4 * workers), thread_name_prefix="agentmap-node")

    async def _store(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, lambda: method(*args, **kwargs))

    # lifecycle

    async def begin(self) -> None:
        """Start the dispatcher, the heartbeat and (PostgreSQL) the listener; take over dead local runs."""
        released = await self._store(self.store.release_dead, owner_alive, self.owner)
        if released:
            _log.info("continuing %d run(s) of a server on this machine that stopped without finishing", released)
        loop = asyncio.get_running_loop()
        self._loops = [
            loop.create_task(self._dispatch()),
            loop.create_task(self._heartbeat()),
            loop.create_task(self._deliveries()),
        ]
        listen = getattr(self.store, "listen", None)
        if listen is not None:
            self._loops.append(loop.create_task(listen(self._heard)))

    def _heard(self, what: str = "runs") -> None:
        if what != "events":
            self._wake.set()
            self._news.set()
        self._events.set()  # a run's end is news to its followers too
        self._events = asyncio.Event()

    async def shutdown(self, grace: float) -> None:
        """Stop claiming; let the runs finish for `grace` seconds; then stop the rest after their step and hand
        them back to the queue (the steps they finished are in their checkpoints)."""
        self._stopping = True
        self._wake.set()
        running = list(self._executing.values())
        if running:
            _log.info("waiting up to %.0f s for %d run(s) to finish", grace, len(running))
            await asyncio.wait(running, timeout=grace)
        left = [run_id for run_id, task in self._executing.items() if not task.done()]
        for run_id in left:
            self._handover.add(run_id)
            self.runs[run_id].cancelled.set()
        if left:
            _log.info("handing %d run(s) over to the other replicas after their current step", len(left))
            await asyncio.wait(list(self._executing.values()), timeout=max(grace, 30.0))
        waiting = [r.run_id for r in self.runs.values() if not r.done.is_set() and r.run_id not in self._executing]
        await self._store(self.store.release, self.owner, waiting + left)
        for task in self._loops:
            task.cancel()
        if self._delivering:  # a delivery cut short is tried again by another replica once its hold runs out
            await asyncio.wait(list(self._delivering), timeout=max(grace, 5.0))
        for task in list(self._delivering):
            task.cancel()
        await self.webhooks.close()

    def close(self) -> None:
        """Stop what still runs (after `shutdown`, nothing should)."""
        for task in self._loops:
            task.cancel()
        for run in self.runs.values():
            run.cancelled.set()
        self.executor.shutdown(wait=False, cancel_futures=True)

    # claiming and running

    async def _dispatch(self) -> None:
        retry = _FIRST_RETRY
        while not self._stopping:
            self._wake.clear()
            free = self._workers - len(self._executing)
            held_until = time.monotonic() + self.lease  # the claim's lease starts after this, in any clock
            try:
                claimed = await self._store(self.store.claim, self.owner, self.lease, self._graphs, free)
            except Exception as exc:  # the database may be away for a while: keep trying
                _log.warning("cannot claim runs: %s", exc)
                claimed = []
            for record in claimed:
                task = self._executing.get(record["run_id"])
                if task is not None and not task.done():  # its lease ran out while it ran here: it goes on, held again
                    if (run := self.runs.get(record["run_id"])) is not None:
                        run.held_until = held_until
                    continue
                task = asyncio.get_running_loop().create_task(self._execute(record, held_until))
                self._executing[record["run_id"]] = task
            # Woken by a run accepted or ended; leases run out without a word, so look again now and then. A run
            # kept for this replica that the claim did not get (the heartbeat held its row just then, or an older
            # run of its thread is still going) is looked for again soon, backing off, not a third of a lease later.
            waiting = free > len(claimed) and any(
                run_id not in self._executing and not run.done.is_set() for run_id, run in self.runs.items()
            )
            retry = min(retry * 2, _LAST_RETRY, self.lease / 3) if waiting else _FIRST_RETRY
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), retry if waiting else self.lease / 3)

    async def _heartbeat(self) -> None:
        while True:
            held = [r.run_id for r in self.runs.values() if not r.done.is_set()]
            held_until = time.monotonic() + self.lease  # a renewal's lease starts after this, in any clock
            try:
                kept = await self._store(self.store.renew, self.owner, held, self.lease)
            except Exception as exc:  # its runs stop before their next step once `held_until` has passed
                _log.warning("cannot renew the leases of %d run(s): %s", len(held), exc)
                kept = None
            if kept is not None:
                self._check_leases(held, kept, held_until)
            self._news.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._news.wait(), self.lease / 3)

    def _check_leases(self, held: list[str], kept: dict[str, str | None], held_until: float) -> None:
        for run_id in held:
            run = self.runs.get(run_id)
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
                self.cancel(run, str(kept[run_id]))

    async def _execute(self, record: dict[str, Any], held_until: float) -> None:
        run_id = record["run_id"]
        run = self.runs.get(run_id) or self._accepted.pop(run_id, None)
        if run is not None:
            self.runs[run_id] = run
            run.attempt = record["attempt"]
        try:
            if run is None or record["attempt"] > 1:  # taken over: rebuilt from the record and its checkpoint
                request = await self._store(self._rebuild, record)
                if run is None:
                    run = Run(run_id, request, created_at=record["created_at"], attempt=record["attempt"])
                    self.runs[run_id] = run
                run.request = request
            run.held_until, run.lease_lost = held_until, False
            await self._run(run, record["attempt"])
        except Exception as exc:  # the run cannot be rebuilt here (its graph changed, its thread is gone, ...)
            if self.store.unreachable(exc):  # not the run's fault: it is taken again once the database is back
                if run is not None:
                    self._lost_database(run, exc)
                else:
                    _log.warning("run %s: the database cannot be reached (%s); it is taken again later", run_id, exc)
                return
            if not isinstance(exc, AgentMapError):
                _log.exception("run %s could not be continued", run_id)
            error = {"error": type(exc).__name__, "message": str(exc), "code": getattr(exc, "code", "run-error")}
            hook = bool(webhook_of(record["request"]))
            await self._store(self.store.finish, self.owner, run_id, "error", {"__error__": error}, "error", None, hook)
            self._deliveries_due.set()
            if run is not None:
                run.error = error
                run.push("error", error)
                self._forget(run)
        finally:
            self._executing.pop(run_id, None)
            self._wake.set()

    async def _run(self, run: Run, attempt: int) -> None:
        if run.cancelled.is_set() and run.run_id not in self._handover:
            await self._finish(run, "interrupted")
            return
        run.status = "running"
        if self.store.shared:
            self._publishers[run.run_id] = asyncio.get_running_loop().create_task(self._publish(run))
        run.push("metadata", {"run_id": run.run_id, "attempt": attempt})
        try:
            status = await execute(run, emitter(run)) if run.held() else "interrupted"
        except Exception as exc:
            if not self.store.unreachable(exc):
                status = self._failed(run, exc)
            else:  # not the run's failure: it is continued, here or elsewhere, once the database is back
                self._lost_database(run, exc)
                return
        if run.lease_lost:  # stopped before a step: whoever claims it next (this replica too) continues it
            _log.warning(
                "run %s: its lease was last renewed %.0f s ago or more; stopped before its next step and handed "
                "back to the queue",
                run.run_id,
                self.lease,
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
        return "error"

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
        await self._published(run)
        if run.run_id in self._handover:  # stopped to be continued elsewhere: its record stays `running`
            run.moved = True
            await self._written(self.store.release, self.owner, [run.run_id])
        else:
            run.status = status
            thread_status: ServerThreadStatus | None = None
            if not run.request.stateless:
                thread_status = "error" if status == "error" else "interrupted" if run.paused else "idle"
            hook = bool(webhook_of(run.request.payload))  # ended, or paused on a question: its webhook hears of it
            await self._written(
                self.store.finish,
                self.owner,
                run.run_id,
                status,
                run.result(),
                thread_status,
                run.cancel_reason,
                hook,
                run.usage,
            )
            if hook:
                self._deliveries_due.set()
            elif run.request.stateless and run.attempt == 1:  # no thread names it: forgotten, as LangGraph's
                await self._written(self.store.delete_run, run.run_id)  # server does (after its webhook)
            # one continued after a handover stays until the replica that accepted it, whose client may be waiting,
            # has read its end (`RunManager.outcome`)
        self._forget(run)

    async def _written(self, write: Callable[..., Any], *args: Any) -> Any:
        """`write(*args)` in the store, tried again (backing off to 5 s) while the database cannot be reached: the
        end of a run that ran is written once the database is back (its lease is renewed meanwhile)."""
        delay = _FIRST_RETRY
        while True:
            try:
                return await self._store(write, *args)
            except Exception as exc:
                if not self.store.unreachable(exc):
                    raise
                _log.warning("cannot write to the run store yet (%s); trying again in %.1f s", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _forget(self, run: Run) -> None:
        run.updated_at = now()
        run.done.set()
        run.wake()
        self._handover.discard(run.run_id)  # taken again later, it is finished here, not handed back again
        self.runs.pop(run.run_id, None)  # its record is in the store; listeners hold the object itself
        if not self.store.shared and not run.request.stateless:  # its events are kept nowhere else
            self.ended[run.run_id] = run
            while len(self.ended) > KEPT_ENDED:
                self.ended.popitem(last=False)
