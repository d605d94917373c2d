"""Calling an agent of the `run_agent` interface (seed 001): any callable made a coroutine, its reply text, and
the short error turn written when it raised. Used by `agentmap eval run` and `agentmap chat`."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = ["RunAgent", "agent_error_text", "as_async_agent", "describe_error", "reply_text"]

RunAgent = Callable[..., Awaitable[Any]]
"""`async run_agent(prompt, chat_history=None, memory=None, config=None)` (seed 001)."""

_ERROR_LIMIT = 200


def as_async_agent(agent: Callable[..., Any]) -> RunAgent:
    """Return `agent` as a coroutine function; a plain function runs in a worker thread."""
    if inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(type(agent).__call__):
        return agent

    async def _threaded(*args: Any, **kwargs: Any) -> Any:
        result = await asyncio.to_thread(agent, *args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    return _threaded


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
