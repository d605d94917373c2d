"""Webhook deliveries: every replica's loop claims the deliveries due in the run store and makes them.

A run's delivery is due from the transaction that ends it (`Store.finish(webhook=True)`); a replica claims due
deliveries for a hold (`Store.claim_webhooks`), tries each once and writes when the next try is due, so a
replica that dies mid-retry loses no delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from agentmap.server._store import Store, public_run
from agentmap.server._webhooks import Webhooks

__all__ = ["WebhookDeliveries", "webhook_of"]


def webhook_of(payload: dict[str, Any] | None) -> str | None:
    """The `webhook` URL of a run's recorded request, if it has one."""
    url = ((payload or {}).get("body") or {}).get("webhook")
    return str(url) if url else None


_DELIVERIES = 64
"""Webhook tries a replica makes at once (more wait in the store until one ends)."""

_log = logging.getLogger("agentmap.server")


class WebhookDeliveries:
    """The part of `RunManager` (`_workers.py`) that makes the webhook deliveries due."""

    store: Store
    lease: float
    webhooks: Webhooks
    _stopping: bool
    _deliveries_due: asyncio.Event
    _delivering: set[asyncio.Task[None]]
    _store: Callable[..., Awaitable[Any]]

    async def _deliveries(self) -> None:
        """Make the webhook deliveries that are due: of the runs ended here, and those a dead replica left."""
        hold = self.lease + self.webhooks.timeout
        while not self._stopping:
            self._deliveries_due.clear()
            free = _DELIVERIES - len(self._delivering)  # a slow receiver must not pile up tries without end
            try:
                due = await self._store(self.store.claim_webhooks, hold, free) if free > 0 else []
            except Exception as exc:  # the database may be away for a while: keep trying
                _log.warning("cannot look for webhook deliveries: %s", exc)
                due = []
            for record in due:
                task = asyncio.get_running_loop().create_task(self._deliver(record))
                self._delivering.add(task)
                task.add_done_callback(self._delivered)
            if not due or len(due) < free:  # a full batch: more may be due at once
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._deliveries_due.wait(), self.lease / 3)

    def _delivered(self, task: asyncio.Task[None]) -> None:
        if len(self._delivering) >= _DELIVERIES:  # the loop waits for a free place: this is one
            self._deliveries_due.set()
        self._delivering.discard(task)

    async def _deliver(self, record: dict[str, Any]) -> None:
        """One try at a run's webhook delivery; the next one is scheduled in the store (any replica makes it)."""
        run_id = record["run_id"]
        url = webhook_of(record["request"])
        tries = record["webhook_tries"] + 1
        try:
            body = self.webhooks.body(public_run(record), record["result"])
            ok = not url or await self.webhooks.attempt(url, body, run_id)
            wait = None if ok else self.webhooks.backoff(tries)
            if wait is None and not ok:
                _log.warning("webhook %s of run %s not delivered after %d tries", url, run_id, tries)
            await self._store(self.store.webhook_due, run_id, None if wait is None else time.time() + wait, tried=True)
            if wait is not None:
                asyncio.get_running_loop().call_later(wait, self._deliveries_due.set)
            elif record["stateless"]:
                await self._store(self.store.delete_run, run_id)
        except Exception:  # its hold runs out and a replica tries again
            _log.exception("the webhook delivery of run %s failed", run_id)
