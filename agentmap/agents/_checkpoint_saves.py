"""A node makes its first call only once the checkpoint its step started from is saved.

The call journal keys a call by LangGraph's task id, which LangGraph derives from the id of the checkpoint the
task was prepared from. LangGraph saves checkpoints in the background (after every step with `async`
durability, and a run's first, its input, even with `sync`), so a node can start while its step's checkpoint is
not in the store yet. Were the process killed then, a rerun would start from an earlier checkpoint, its task
would get another id, and a call journaled as finished (a card charged) would be made again. So before a call is
made (not replayed), `wait_saved` / `await_saved` wait until that checkpoint is saved:

- AgentMap's savers (`runtime/checkpoint.py`) announce each checkpoint they put (`settle`): a waiter wakes at
  once, and the common case (saved before the node starts) costs a dictionary look-up;
- other savers (LangGraph's own, a user's): the store is asked (`in_store`), backing off from 1 ms.

With `exit` durability nothing is saved before the run ends: nothing is waited for (the journal then protects
nothing a kill interrupts). A checkpoint not saved within `SAVE_DEADLINE` seconds stops the node with
`CheckpointNotSaved`, the call not made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from agentmap._langgraph import DURABILITY_KEY
from agentmap.errors import AgentMapError, ErrorCode

__all__ = ["SAVE_DEADLINE", "CheckpointNotSaved", "Key", "await_saved", "settle", "step_checkpoint", "wait_saved"]

SAVE_DEADLINE = 60.0
"""How long (seconds) a node waits for its step's checkpoint to be saved before it stops, its call not made."""

Key = tuple[str, str, str]
"""A saved checkpoint: thread id, checkpoint namespace, checkpoint id."""

_KEEP = 4096  # checkpoints remembered as settled; an older one is asked of the store
_logger = logging.getLogger("agentmap.journal")


class CheckpointNotSaved(AgentMapError, RuntimeError):
    """The checkpoint a node's step started from was not saved in time (or its save failed): the node stopped
    before its call, which was not made. The run continues from its last saved checkpoint (`agentmap resume`)."""

    default_code = ErrorCode.CHECKPOINT_NOT_SAVED
    stops_run = True  # not a node failure: no Failure_Next (agents/_bridge.py)


class _Saves:
    """The checkpoints this process's savers have put (or failed to), and the nodes waiting for one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # by thread and checkpoint id (unique; a subgraph's namespace may be written otherwise than its tasks read it)
        self._settled: dict[tuple[str, str], bool] = {}  # True: saved; False: its save failed
        self._waiters: dict[tuple[str, str], list[Callable[[], None]]] = {}

    def settle(self, checkpoint: Key, saved: bool) -> None:
        key = _id(checkpoint)
        with self._lock:
            self._settled[key] = saved
            if len(self._settled) > _KEEP:
                del self._settled[next(iter(self._settled))]
            wakes = self._waiters.pop(key, [])
        for wake in wakes:
            wake()

    def state(self, checkpoint: Key, wake: Callable[[], None] | None = None) -> bool | None:
        """Whether `checkpoint` was saved (None: not settled yet; then `wake` is called when it is)."""
        key = _id(checkpoint)
        with self._lock:
            found = self._settled.get(key)
            if found is None and wake is not None:
                self._waiters.setdefault(key, []).append(wake)
            return found

    def forget(self, checkpoint: Key, wake: Callable[[], None]) -> None:
        key = _id(checkpoint)
        with self._lock:
            waiting = self._waiters.get(key, [])
            if wake in waiting:
                waiting.remove(wake)
            if not waiting:
                self._waiters.pop(key, None)


def _id(key: Key) -> tuple[str, str]:
    return key[0], key[2]


_SAVES = _Saves()


def settle(config: Any, checkpoint: Any, saved: bool) -> None:
    """Announce that the checkpoint a saver was asked to `put(config, checkpoint, ...)` is saved (or failed)."""
    configurable = config.get("configurable") or {}
    key = (str(configurable.get("thread_id")), str(configurable.get("checkpoint_ns") or ""), str(checkpoint["id"]))
    _SAVES.settle(key, saved)


def step_checkpoint(configurable: Any) -> Key | None:
    """The checkpoint the running task was prepared from (from its config), or None: nothing to wait for
    (`exit` durability, no checkpoint map)."""
    if configurable.get(DURABILITY_KEY) == "exit":
        return None
    task_ns = str(configurable.get("checkpoint_ns") or "")
    graph_ns = task_ns.rpartition("|")[0]  # a task's namespace: the graph's, `|`, then `node:task id`
    checkpoint_id = (configurable.get("checkpoint_map") or {}).get(graph_ns)
    if not checkpoint_id:
        return None
    return str(configurable.get("thread_id")), graph_ns, str(checkpoint_id)


def _waits(key: Key, in_store: Callable[[], bool], announced: bool, wake: Callable[[], None]) -> Iterator[float]:
    """How long to wait for `wake` each time, until `key` is saved.

    Raises:
        CheckpointNotSaved: Its save failed, or it was not saved within `SAVE_DEADLINE` seconds.
    """
    state = _SAVES.state(key, wake)
    deadline = time.monotonic() + SAVE_DEADLINE
    delay = 0.001
    while state is not True:
        if state is False:
            raise _not_saved(key, "its save failed")
        if in_store():
            _SAVES.settle(key, True)
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise _not_saved(key, f"it was not saved within {SAVE_DEADLINE:g} s")
        if delay == 0.001:
            _logger.debug("thread %r: a call waits for checkpoint %s to be saved", key[0], key[2])
        yield min(left, 1.0 if announced else delay)  # announced: the store is asked again only as a safety net
        delay = min(delay * 2, 0.1)
        state = _SAVES.state(key)


def wait_saved(key: Key, in_store: Callable[[], bool], announced: bool) -> None:
    """Block until checkpoint `key` is saved (see the module docstring); `announced`: its saver calls `settle`."""
    if _SAVES.state(key) is True:
        return
    event = threading.Event()
    try:
        for timeout in _waits(key, in_store, announced, event.set):
            event.wait(timeout)
    finally:
        _SAVES.forget(key, event.set)


async def await_saved(key: Key, in_store: Callable[[], bool], announced: bool) -> None:
    """`wait_saved` for a coroutine: the event loop goes on meanwhile (the save may be one of its tasks)."""
    if _SAVES.state(key) is True:
        return
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def woke() -> None:
        if not woken.done():
            woken.set_result(None)

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            loop.call_soon_threadsafe(woke)

    try:
        for timeout in _waits(key, in_store, announced, wake):
            await asyncio.wait({woken}, timeout=timeout)
    finally:
        _SAVES.forget(key, wake)


def _not_saved(key: Key, why: str) -> CheckpointNotSaved:
    thread, _, checkpoint_id = key
    return CheckpointNotSaved(
        f"thread {thread!r}: the checkpoint this step started from ({checkpoint_id}) was not saved ({why}); the "
        "node stopped before its model or tool call, which was not made",
        hint=f"check that the checkpoint database is reachable and not locked, then continue the run with "
        f"agentmap resume {thread}",
    )
