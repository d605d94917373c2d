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
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["is_control_flow", "run_sync"]

T = TypeVar("T")

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
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result()


def is_control_flow(exc: Exception) -> bool:
    """LangGraph's control-flow signals (`interrupt()`, `Command` bubbling up) are not agent failures.

    Checked without importing LangGraph: if `langgraph.errors` is not loaded, `exc` cannot be one.
    """
    errors = sys.modules.get("langgraph.errors")
    return errors is not None and isinstance(exc, errors.GraphBubbleUp)
