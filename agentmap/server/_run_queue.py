"""This replica's side of the run queue: the store it is kept in, this replica's name and lease, the runs it knows
of in memory, and the wake-ups; what the acceptor, the workers, the event sharer and the deliveries share.

The store is synchronous (a database call blocks); `call` runs one in the server's thread pool, typed as the
store method it calls, so a wrong argument to the store is a type error wherever it is called from.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from agentmap.server._records import Owner
from agentmap.server._runs import Run
from agentmap.server._store import Store

__all__ = ["RunQueue", "owner_alive"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

_FIRST_RETRY = 0.025
"""Seconds before a write the database could not take is tried again (doubled each time, up to 5 s)."""

_log = logging.getLogger("agentmap.server")


def owner_alive(owner: Owner) -> bool:
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


class RunQueue:
    """The run store as this replica uses it, and the runs it holds in memory."""

    def __init__(self, store: Store, *, lease: float, workers: int) -> None:
        self.store = store
        self.owner = Owner(f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}")
        """This replica's name in the store (`host:pid:boot`): the owner of the runs it holds."""
        self.lease = lease
        """Seconds a claim or a renewal holds a run (`--lease`)."""
        self.runs: dict[str, Run] = {}
        """The runs accepted or executed here (finished ones are forgotten once their record is written)."""
        self.accepted: dict[str, Run] = {}
        """Runs accepted here that no client waits on here: any replica may claim them (this one executes this
        object, the one a client got, if it does)."""
        self.claimable = asyncio.Event()
        """Set when a run may be claimable (accepted, ended, handed back, or news from another replica)."""
        self.news = asyncio.Event()
        """Set when a run's record may have changed on any replica (its end, a cancel)."""
        # the synchronous nodes of every run (the loop's default executor; parallel branches need a few each)
        self.executor = ThreadPoolExecutor(max_workers=max(32, 4 * workers), thread_name_prefix="agentmap-node")

    async def call(self, method: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """`method(*args, **kwargs)` (a store method: it blocks) in the thread pool."""
        return await asyncio.get_running_loop().run_in_executor(
            self.executor, functools.partial(method, *args, **kwargs)
        )

    async def written(self, write: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """`write(...)` in the store, tried again (backing off to 5 s) while the database cannot be reached: the
        end of a run that ran is written once the database is back (its lease is renewed meanwhile)."""
        delay = _FIRST_RETRY
        while True:
            try:
                return await self.call(write, *args, **kwargs)
            except Exception as exc:
                if not self.store.unreachable(exc):
                    raise
                _log.warning("cannot write to the run store yet (%s); trying again in %.1f s", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
