"""A run's events shared between replicas: written to a shared run store as they come, read by followers elsewhere.

A client may follow a run (`runs.stream`, `runs.join`) on any replica: the replica executing it writes its events
to the store (`publish`, all written before its end, `published`); another replica reads them from there
(`follow_elsewhere`) whenever the executing one announces new ones. The store numbers them as they are written,
so two replicas writing a run's events across a handover never take the same numbers; a stream on the replica
executing it (`follow_here`) adds the store's events written by others to its own, each once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from agentmap.server._encode import dumps
from agentmap.server._models import ApiError
from agentmap.server._run_queue import RunQueue
from agentmap.server._run_states import UNFINISHED
from agentmap.server._runs import Run, wanted_event

__all__ = ["KEPT_ENDED", "EventSharing"]

KEPT_ENDED = 100
"""How many ended runs a server with no shared store keeps the events of (in memory), for `join_stream`."""

_log = logging.getLogger("agentmap.server")


class EventSharing:
    """A run's events for its followers on every replica: written to a shared store as they come, read from it."""

    def __init__(self, queue: RunQueue) -> None:
        self._queue = queue
        self._store = queue.store
        self._news = asyncio.Event()
        self._publishers: dict[str, asyncio.Task[None]] = {}
        self.ended: OrderedDict[str, Run] = OrderedDict()
        """With no shared store, the last `KEPT_ENDED` runs of threads that ended here, for their streams."""

    def heard(self) -> None:
        """A replica announced new events of a run, or a run's end (news to its followers too)."""
        self._news.set()
        self._news = asyncio.Event()

    def keep_ended(self, run: Run) -> None:
        """Keep the events of a run that ended here, when no shared store keeps them (its thread's streams)."""
        if not self._store.shared and not run.request.stateless:
            self.ended[run.run_id] = run
            while len(self.ended) > KEPT_ENDED:
                self.ended.popitem(last=False)

    def streamed(self, run_id: str) -> Run | None:
        """The run whose events a stream here reads from memory: executing here, or, with no shared store, one of
        the last runs that ended here (None: its events are read from the store)."""
        return self._queue.runs.get(run_id) or self.ended.get(run_id)

    async def resume_point(self, run_id: str, last_event_id: str) -> int:
        """Where a stream that last got `last_event_id` (the `Last-Event-ID` header: `run_id.attempt.index`) goes on:
        the store's number after that event's (shared store), or the index in `events` after it of the run here (0:
        from the start of this server's attempt, when the id is of an earlier one, whose events are gone). An id the
        run never sent is `bad-event-id`."""
        head, _, index_text = last_event_id.rpartition(".")
        prefix, _, attempt_text = head.rpartition(".")
        if prefix != run_id or not all(_digits(p) for p in (attempt_text, index_text)):
            raise _bad_event_id(run_id, last_event_id)
        attempt, index = int(attempt_text), int(index_text)
        if self._store.shared:
            number = await self._queue.call(self._store.events.number, run_id, attempt=attempt, index=index)
            if number is None:
                raise _bad_event_id(run_id, last_event_id)
            return int(number) + 1
        run = self.streamed(run_id)
        if run is None:  # ended long ago, or run by another process of this file: its events are not kept here
            return 0
        if attempt > run.attempt or (attempt == run.attempt and index >= len(run.events)):
            raise _bad_event_id(run_id, last_event_id)
        return index + 1 if attempt == run.attempt else 0

    async def follow_elsewhere(
        self,
        thread_id: str,
        run_id: str,
        modes: tuple[str, ...] | None,
        heartbeat: float,
        after: int = 0,
        seen: frozenset[int] = frozenset(),
    ) -> AsyncIterator[tuple[str | None, str, Any]]:
        """The events of a run executing on another replica (`(id, event, data)`), in the store's order, from its
        start (or from number `after`, but those numbered in `seen`) until it ends: read from the store whenever a
        replica announces new ones (an empty event with no id after `heartbeat` s of silence)."""
        index = after
        while True:
            news = self._news
            found = await self._queue.call(self._store.events.after, run_id, index)
            for number, event, data, event_id in found:
                index = number + 1
                if number not in seen and wanted_event(event, modes):
                    yield _id(run_id, event_id), event, data
            if found:
                continue
            record = await self._queue.call(self._store.runs.get, thread_id, run_id)
            if record is None or record.status not in UNFINISHED:
                for number, event, data, event_id in await self._queue.call(self._store.events.after, run_id, index):
                    if number not in seen and wanted_event(event, modes):
                        yield _id(run_id, event_id), event, data
                return
            try:
                await asyncio.wait_for(news.wait(), heartbeat)
            except TimeoutError:
                yield None, "", None

    async def follow_here(
        self, run: Run, modes: tuple[str, ...] | None, heartbeat: float, start: int = 0
    ) -> AsyncIterator[tuple[str | None, str, Any]]:
        """The events of a run executing on this replica (`(id, event, data)`), each once: with a shared store,
        first those of its earlier attempts elsewhere, then its own as they come, then those other replicas wrote
        meanwhile or after (the replica it was taken from, still writing its last step's; the one continuing it,
        when it moved). With no shared store, from index `start` of its events on.

        An event's id is `run_id.attempt.index` (its index in `events` of the attempt that made it), on every
        replica: what `resume_point` reads back."""
        shared = self._store.shared
        if shared and run.attempt > 1:
            while not run.shared and not run.done.is_set():  # the number its first event got in the store
                await run.changed.wait()
            if run.shared:
                first = min(run.shared)
                for number, event, data, event_id in await self._queue.call(self._store.events.after, run.run_id, 0):
                    if number < first and wanted_event(event, modes):
                        yield _id(run.run_id, event_id), event, data
        async for index, event, data in run.follow_indexed(modes, heartbeat, start):
            yield (None if index < 0 else f"{run.run_id}.{run.attempt}.{index}"), event, data
        if not shared or (run.moved and run.error is not None):  # the database went away
            return
        mine = frozenset(run.shared)
        if mine or run.moved:
            async for item in self.follow_elsewhere(
                run.thread_id, run.run_id, modes, heartbeat, min(mine, default=0), mine
            ):
                yield item

    def publish(self, run: Run) -> None:
        """Start writing the events of a run that starts here to a shared store (`published` waits for them)."""
        if self._store.shared:
            self._publishers[run.run_id] = asyncio.get_running_loop().create_task(self._publish(run))

    async def _publish(self, run: Run) -> None:
        """Write a run's events to a shared store as they come, for followers on other replicas (numbered by the
        store after those already there: of its earlier attempts, and late ones of a replica it was taken from)."""
        index = 0
        while True:
            changed = run.changed
            if index < len(run.events):
                batch = [(event, dumps(data)) for event, data in run.events[index:]]
                try:
                    first = await self._queue.call(
                        self._store.events.add, run.run_id, batch, attempt=run.attempt, index=index
                    )
                    run.shared.update(range(first, first + len(batch)))
                    run.wake()  # a stream here waits for its first number (`follow_here`)
                except Exception as exc:  # followers elsewhere miss them; the run itself goes on
                    _log.warning("cannot share the events of run %s: %s", run.run_id, exc)
                index += len(batch)
                continue
            if run.done.is_set() or run.run_id not in self._publishers:
                return
            await changed.wait()

    async def published(self, run: Run) -> None:
        """Wait until every event of `run` is in the store (before its end is written)."""
        task = self._publishers.pop(run.run_id, None)
        if task is not None:
            run.wake()
            try:
                await task
            except Exception as exc:  # the database went away: followers elsewhere miss events, the run's end does not
                _log.warning("cannot share the events of run %s: %s", run.run_id, exc)


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) < 10


def _id(run_id: str, event_id: str | None) -> str | None:
    """A stored event's id in a stream (None for one written before events had ids)."""
    return None if event_id is None else f"{run_id}.{event_id}"


def _bad_event_id(run_id: str, last_event_id: str) -> ApiError:
    shown = last_event_id if len(last_event_id) <= 80 else last_event_id[:80] + "..."
    return ApiError(
        422,
        "bad-event-id",
        f"header Last-Event-ID: {shown!r} is not the id of an event of run {run_id!r}",
        hint="send the `id` of the last event this run's stream gave you, or no Last-Event-ID to get its events from"
        " the start",
    )
