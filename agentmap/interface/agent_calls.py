"""Calling an agent of the `run_agent` interface (csv_specs/run_agent.md): any callable made a coroutine, its reply
text, and the short error turn written when it raised. Used by `agentmap eval run` and `agentmap chat`."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from typing import Any

__all__ = ["SYNC_TWIN", "RunAgent", "agent_error_text", "as_async_agent", "describe_error", "reply_text"]

RunAgent = Callable[..., Awaitable[Any]]
"""`async run_agent(prompt, chat_history=None, memory=None, config=None)` (csv_specs/run_agent.md)."""

SYNC_TWIN = "run_sync"
"""The attribute of an async agent holding its synchronous twin, `run_sync(prompt, ..., stop=None)` (a workflow
agent of `agent_for` has one): called in a worker thread it runs the workflow as `agentmap batch` runs a row, with
no hand-over to the event loop at every node; an event `stop` set from another thread ends it after its step."""

_ERROR_LIMIT = 200


def as_async_agent(agent: Callable[..., Any], executor: Executor | None = None) -> RunAgent:
    """Return `agent` as a coroutine function; a plain function, or an agent's synchronous twin (`SYNC_TWIN`),
    runs in a worker thread of `executor` (default: the event loop's). A call cancelled while the twin runs (a
    timeout) stops it after the step it is in."""
    twin = getattr(agent, SYNC_TWIN, None)
    if callable(twin):
        return _stoppable(twin, executor)
    if inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(type(agent).__call__):
        return agent

    async def _threaded(*args: Any, **kwargs: Any) -> Any:
        result = await asyncio.to_thread(agent, *args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    return _threaded


def _stoppable(twin: Callable[..., Any], executor: Executor | None) -> RunAgent:
    async def _in_thread(*args: Any, **kwargs: Any) -> Any:
        stop = threading.Event()
        call = functools.partial(contextvars.copy_context().run, twin, *args, stop=stop, **kwargs)
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, call)
        except asyncio.CancelledError:
            stop.set()
            raise

    return _in_thread


def agent_error_text(exc: BaseException) -> str:
    """The short, one-line error turn written when the agent raised `exc`."""
    return f"Error: the agent failed ({describe_error(exc)})."


def describe_error(exc: BaseException) -> str:
    detail = (str(exc).strip().splitlines() or [""])[0][:_ERROR_LIMIT]
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def reply_text(result: Any) -> str | None:
    """Return the reply text of an agent's result: a string, or the `content` of a mapping or object."""
    if isinstance(result, str):
        return result
    content = result.get("content") if isinstance(result, Mapping) else getattr(result, "content", None)
    return content if isinstance(content, str) else None
