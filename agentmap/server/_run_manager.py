"""The runs of one replica: this replica's side of the run queue and the parts that use it, each with its own state.

`RunManager` is made of
- `queue` (`_run_queue.py`): the store, this replica's name and lease, the runs it holds in memory, the wake-ups;
- `acceptor` (`_accepting.py`): what the routes call to submit, cancel and wait for runs;
- `workers` (`_workers.py`): the dispatcher (claim -> execute), the heartbeat, the hand-over at shutdown;
- `sharing` (`_run_events.py`): a run's events for followers on any replica;
- `deliveries` (`_deliveries.py`): the webhook delivery loop.
It starts and stops their loops, and passes the other replicas' news (PostgreSQL `LISTEN`) to them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from agentmap.server._accepting import RunAcceptance
from agentmap.server._deliveries import WebhookDeliveries
from agentmap.server._quota import Quota
from agentmap.server._records import RunRecord
from agentmap.server._run_events import EventSharing
from agentmap.server._run_queue import RunQueue, owner_alive
from agentmap.server._runs import RunRequest
from agentmap.server._store import Store
from agentmap.server._webhooks import Webhooks
from agentmap.server._workers import Workers

__all__ = ["RunManager"]

_log = logging.getLogger("agentmap.server")


class RunManager:
    """Accepts runs into the store, claims and executes them, keeps their leases, shares their events, delivers
    their webhooks, and hands them over when the replica stops."""

    def __init__(
        self,
        store: Store,
        *,
        graphs: Sequence[str],
        rebuild: Callable[[RunRecord], RunRequest],
        workers: int = 16,
        lease: float = 30.0,
        webhooks: Webhooks | None = None,
        quota: Quota | None = None,
    ) -> None:
        self.queue = RunQueue(store, lease=lease, workers=workers)
        self.sharing = EventSharing(self.queue)
        self.deliveries = WebhookDeliveries(self.queue, webhooks or Webhooks(None))
        self.acceptor = RunAcceptance(self.queue, self.deliveries, quota)
        self.workers = Workers(
            self.queue, self.sharing, self.deliveries, graphs=graphs, rebuild=rebuild, workers=workers
        )
        self._loops: list[asyncio.Task[None]] = []

    @property
    def executor(self) -> ThreadPoolExecutor:
        """The thread pool of the store's calls and of every run's synchronous nodes (the loop's default)."""
        return self.queue.executor

    async def begin(self) -> None:
        """Start the dispatcher, the heartbeat, the deliveries and (PostgreSQL) the listener; take over dead local
        runs."""
        queue = self.queue
        released = await queue.call(queue.store.runs.release_dead, owner=queue.owner, alive=owner_alive)
        if released:
            _log.info("continuing %d run(s) of a server on this machine that stopped without finishing", released)
        loop = asyncio.get_running_loop()
        self._loops = [
            loop.create_task(self.workers.dispatch()),
            loop.create_task(self.workers.heartbeat()),
            loop.create_task(self.deliveries.run()),
            loop.create_task(queue.store.db.listen(self._heard)),
        ]

    def _heard(self, what: str = "runs") -> None:
        """News from another replica: `runs` (a run's record changed), `events` (a run's events were written)."""
        if what != "events":
            self.queue.claimable.set()
            self.queue.news.set()
        self.sharing.heard()  # a run's end is news to its followers too

    async def shutdown(self, grace: float) -> None:
        """Stop claiming; let the runs finish for `grace` seconds; then stop the rest after their step and hand
        them back to the queue (the steps they finished are in their checkpoints)."""
        self.deliveries.halt()
        await self.workers.stop(grace)
        for task in self._loops:
            task.cancel()
        await self.deliveries.drain(grace)  # a delivery cut short is tried again by another replica

    def close(self) -> None:
        """Stop what still runs (after `shutdown`, nothing should)."""
        for task in self._loops:
            task.cancel()
        for run in self.queue.runs.values():
            run.cancelled.set()
        self.queue.executor.shutdown(wait=False, cancel_futures=True)
