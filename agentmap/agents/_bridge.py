"""The sync/async bridge of agents, and the test for LangGraph's control-flow signals.

`run_sync` runs a coroutine from synchronous code (an async agent under `app.invoke`) on one long-lived
background event loop. One loop for the whole process, rather than `asyncio.run` per call, keeps
clients that cache an async connection pool per loop (langchain-openai does) working across runs, and
works when the calling thread already runs a loop (a notebook). The loop's thread is a daemon, so it never
holds the interpreter open (anyio's blocking portal runs a non-daemon thread that would have to be closed
before interpreter shutdown joins it). The caller's context variables are kept: the coroutine's task
starts in a copy of the calling thread's context, so LangGraph's `get_config()` works inside it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["RAISE_FAILURES", "is_control_flow", "run_sync"]

T = TypeVar("T")

RAISE_FAILURES: contextvars.ContextVar[Callable[[Exception], bool] | None] = contextvars.ContextVar(
    "agentmap_raise_failures", default=None
)
"""Set by the runtime around a node attempt that will be retried: a failure it matches escapes `run`
instead of becoming a failed step, and LangGraph's `RetryPolicy` runs the node again."""

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code, on the process's background event loop."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="agentmap-async", daemon=True).start()
        loop = _loop
    done: concurrent.futures.Future[T] = concurrent.futures.Future()
    context = contextvars.copy_context()  # the caller's: LangGraph's config and the node the call journal names

    def start() -> None:
        task = loop.create_task(coroutine, context=context)
        task.add_done_callback(lambda t: _settle(t, done))

    loop.call_soon_threadsafe(start)
    return done.result()


def _settle(task: asyncio.Task[T], done: concurrent.futures.Future[T]) -> None:
    if task.cancelled():
        done.cancel()
    elif (error := task.exception()) is not None:
        done.set_exception(error)
    else:
        done.set_result(task.result())


def is_control_flow(exc: Exception) -> bool:
    """LangGraph's control-flow signals (`interrupt()`, `Command` bubbling up), and failures of an attempt
    that will be retried, are not agent failures.

    Checked without importing LangGraph: if `langgraph.errors` is not loaded, `exc` cannot be one.
    """
    errors = sys.modules.get("langgraph.errors")
    if errors is not None and isinstance(exc, errors.GraphBubbleUp):
        return True
    if getattr(exc, "stops_run", False):  # a spent budget (agents/costs.py) ends the run, not just the node
        return True
    retrying = RAISE_FAILURES.get()
    return retrying is not None and retrying(exc)
