"""Webhook deliveries: every replica's loop claims the deliveries due in the run store and makes them.

A run's delivery is due from the transaction that ends it (`RunRows.finish(webhook=True)`); a replica claims due
deliveries for a hold (`DeliveryRows.claim`), tries each once and writes when the next try is due, so a
replica that dies mid-retry loses no delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from agentmap.server._records import RunRecord
from agentmap.server._run_queue import RunQueue
from agentmap.server._webhooks import Webhooks

__all__ = ["WebhookDeliveries"]


_DELIVERIES = 64
"""Webhook tries a replica makes at once (more wait in the store until one ends)."""

_log = logging.getLogger("agentmap.server")


class WebhookDeliveries:
    """The loop that makes the webhook deliveries due: of the runs ended here, and those a dead replica left."""

    def __init__(self, queue: RunQueue, webhooks: Webhooks) -> None:
        self._queue = queue
        self._store = queue.store
        self.webhooks = webhooks
        self._due = asyncio.Event()
        self._delivering: set[asyncio.Task[None]] = set()
        self._stopping = False

    def due(self) -> None:
        """A delivery is due now (a run ended here, or was cancelled on the queue): look at once."""
        self._due.set()

    async def run(self) -> None:
        """Make the deliveries that are due, until `halt`."""
        hold = self._queue.lease + self.webhooks.timeout
        while not self._stopping:
            self._due.clear()
            free = _DELIVERIES - len(self._delivering)  # a slow receiver must not pile up tries without end
            try:
                due = await self._queue.call(self._store.deliveries.claim, hold=hold, limit=free) if free > 0 else []
            except Exception as exc:  # the database may be away for a while: keep trying
                _log.warning("cannot look for webhook deliveries: %s", exc)
                due = []
            for record in due:
                task = asyncio.get_running_loop().create_task(self._deliver(record))
                self._delivering.add(task)
                task.add_done_callback(self._delivered)
            if not due or len(due) < free:  # a full batch: more may be due at once
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._due.wait(), self._queue.lease / 3)

    def halt(self) -> None:
        """Look for no more deliveries (the replica stops: those due meanwhile are made by another, or its
        successor)."""
        self._stopping = True

    async def drain(self, grace: float) -> None:
        """Let the tries under way end (a try cut short is made again by another replica once its hold runs out);
        close the HTTP client."""
        if self._delivering:
            await asyncio.wait(list(self._delivering), timeout=max(grace, 5.0))
        for task in list(self._delivering):
            task.cancel()
        await self.webhooks.close()

    def _delivered(self, task: asyncio.Task[None]) -> None:
        if len(self._delivering) >= _DELIVERIES:  # the loop waits for a free place: this is one
            self._due.set()
        self._delivering.discard(task)

    async def _deliver(self, record: RunRecord) -> None:
        """One try at a run's webhook delivery; the next one is scheduled in the store (any replica makes it)."""
        run_id = record.run_id
        url = record.webhook
        tries = record.webhook_tries + 1
        try:
            body = self.webhooks.body(record.public(), record.result)
            ok = not url or await self.webhooks.attempt(url, body, run_id)
            wait = None if ok else self.webhooks.backoff(tries)
            if wait is None and not ok:
                _log.warning("webhook %s of run %s not delivered after %d tries", url, run_id, tries)
            when = None if wait is None else time.time() + wait
            await self._queue.call(self._store.deliveries.due, run_id, when, tried=True)
            if wait is not None:
                asyncio.get_running_loop().call_later(wait, self._due.set)
            elif record.stateless:
                await self._queue.call(self._store.runs.delete, run_id)
        except Exception:  # its hold runs out and a replica tries again
            _log.exception("the webhook delivery of run %s failed", run_id)
