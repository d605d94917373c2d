"""A gate letting at most `limit` requests run at once; waiting ones go in by priority, then arrival."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["PriorityGate"]


class PriorityGate:
    """Admits up to `limit` holders; when full, the highest priority waiter (0-10) is admitted next."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._active = 0
        self._order = itertools.count()
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []

    @property
    def waiting(self) -> int:
        """How many requests are queued."""
        return sum(1 for *_, f in self._waiting if not f.done())

    @asynccontextmanager
    async def slot(self, priority: int) -> AsyncIterator[None]:
        """Hold one of the gate's places for the duration of the `async with` block."""
        if self._active < self.limit and not self.waiting:
            self._active += 1
        else:
            admitted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (-priority, next(self._order), admitted))
            try:
                await admitted
            except asyncio.CancelledError:
                if admitted.done() and not admitted.cancelled():
                    self._release()  # admitted just as we were cancelled: pass the place on
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiting:
            *_, admitted = heapq.heappop(self._waiting)
            if not admitted.done():
                admitted.set_result(None)  # the place passes straight to the waiter
                return
        self._active -= 1
