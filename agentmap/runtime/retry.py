"""Per-node retries and timeouts from Context, on LangGraph's `RetryPolicy`.

```
{"retry": {"max_attempts": 3, "backoff": 2.0, "on": ["timeout"]}, "timeout_seconds": 5}
```

An agent's failure normally becomes a failed step that takes Failure_Next (`BaseAgent.run` catches it).
On a node with a retry policy, every attempt but the last lets a failure that matches `on` escape instead
(through `agents.base.RAISE_FAILURES`), wrapped in `RetryAttempt`; LangGraph's `RetryPolicy` waits and
runs the node again. The last attempt fails the ordinary way, so Failure_Next still applies. The
execution summary keeps one entry per node, with `metadata["attempts"]` and the errors of the attempts
that failed.

`timeout_seconds` bounds each attempt: a sync agent runs in a worker thread that is abandoned when time
runs out (Python cannot stop a thread; what it does afterwards is not recorded), an async one is cancelled.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.types import RetryPolicy

    from agentmap.agents.base import BaseAgent, Tracker

__all__ = ["NodeTimeout", "RetryAttempt", "RetrySettings", "context_problem", "settings_for"]

_KEYS = ("max_attempts", "backoff", "initial_interval", "max_interval", "jitter", "on")


class NodeTimeout(TimeoutError):
    """A node attempt took longer than its `timeout_seconds`."""


class RetryAttempt(Exception):
    """An attempt failed and another will follow (LangGraph's `RetryPolicy` retries only this)."""

    def __init__(self, node: str, attempt: int, error: BaseException) -> None:
        super().__init__(f"attempt {attempt} of node {node!r} failed: {type(error).__name__}: {error}")
        self.error = error


def context_problem(context: Mapping[str, Any]) -> str | None:
    """What is wrong with a node's `retry` / `timeout_seconds` Context keys, or None."""
    timeout = context.get("timeout_seconds")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf
    ):
        return f'Context "timeout_seconds" must be a positive number of seconds, not {timeout!r}'
    retry = context.get("retry")
    if retry is None:
        return None
    if isinstance(retry, int) and not isinstance(retry, bool):
        retry = {"max_attempts": retry}
    if not isinstance(retry, Mapping):
        return f'Context "retry" must be an object like {{"max_attempts": 3, "backoff": 2.0}}, not {retry!r}'
    unknown = sorted(set(retry) - set(_KEYS))
    if unknown:
        return f'Context "retry" has unknown key(s) {", ".join(unknown)}; use {", ".join(_KEYS)}'
    attempts = retry.get("max_attempts", 3)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        return f'Context "retry": max_attempts must be a whole number >= 1, not {attempts!r}'
    for key in ("backoff", "initial_interval", "max_interval"):
        value = retry.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
            return f'Context "retry": {key} must be a number >= 0, not {value!r}'
    on = retry.get("on", ["error"])
    if isinstance(on, str):
        on = [on]
    if not isinstance(on, list) or not all(isinstance(o, str) and o for o in on):
        return 'Context "retry": on must be a list like ["timeout"], ["error"] or ["ConnectionError"]'
    return None


@dataclass(frozen=True)
class RetrySettings:
    """A node's retry and timeout settings (from its Context)."""

    max_attempts: int = 1
    backoff: float = 2.0
    initial_interval: float = 0.5
    max_interval: float = 128.0
    jitter: bool = False
    on: tuple[str, ...] = ("error",)
    timeout: float | None = None

    def policy(self) -> RetryPolicy:
        """LangGraph's `RetryPolicy` for these settings (it retries `RetryAttempt` only)."""
        from langgraph.types import RetryPolicy

        return RetryPolicy(
            initial_interval=self.initial_interval,
            backoff_factor=self.backoff,
            max_interval=self.max_interval,
            max_attempts=self.max_attempts,
            jitter=self.jitter,
            retry_on=lambda exc: isinstance(exc, RetryAttempt),
        )

    def matches(self, exc: BaseException) -> bool:
        """Whether a failure is one to retry (`on`: "error" any, "timeout", or exception class names)."""
        if "error" in self.on or "any" in self.on:
            return True
        if isinstance(exc, NodeTimeout) and "timeout" in self.on:
            return True
        return any(cls.__name__ in self.on for cls in type(exc).__mro__)

    def run(self, agent: BaseAgent, state: Any, config: RunnableConfig | None, call: Callable[[], Any]) -> Any:
        """Run one attempt of `agent` through `call` (its `run`), letting retryable failures escape."""
        from agentmap.agents._bridge import RAISE_FAILURES

        attempt = _attempt(config)
        last = attempt >= self.max_attempts
        token = RAISE_FAILURES.set(None if last else self.matches)
        try:
            update = _bounded(agent, state, call, self.timeout, last)
        except Exception as exc:
            raise self._failed(agent, attempt, exc) from exc
        finally:
            RAISE_FAILURES.reset(token)
        self._annotate(agent, attempt)
        return update

    async def arun(self, agent: BaseAgent, state: Any, config: RunnableConfig | None, call: Callable[[], Any]) -> Any:
        """The async twin of `run` (`call` returns the coroutine of `arun`)."""
        from agentmap.agents._bridge import RAISE_FAILURES

        attempt = _attempt(config)
        last = attempt >= self.max_attempts
        token = RAISE_FAILURES.set(None if last else self.matches)
        try:
            if self.timeout is None:
                update = await call()
            else:
                try:
                    update = await asyncio.wait_for(call(), self.timeout)
                except TimeoutError:
                    update = _timed_out(agent, state, self.timeout, last)
        except Exception as exc:
            raise self._failed(agent, attempt, exc) from exc
        finally:
            RAISE_FAILURES.reset(token)
        self._annotate(agent, attempt)
        return update

    def _failed(self, agent: BaseAgent, attempt: int, exc: Exception) -> Exception:
        from langgraph.errors import GraphBubbleUp

        if isinstance(exc, RetryAttempt | GraphBubbleUp):  # a pause or a Command is not a failed attempt
            return exc
        from agentmap.agents.runner import run_tracker

        drop = getattr(run_tracker(), "retry_failed", None)  # an ExecutionTracker forgets the failed attempt
        if drop is not None:
            drop(agent.name, f"{type(exc).__name__}: {exc}")
        return RetryAttempt(agent.name, attempt, exc)

    def _annotate(self, agent: BaseAgent, attempt: int) -> None:
        if attempt > 1:
            agent.record_metadata(attempts=attempt)


def settings_for(context: Mapping[str, Any], *, own_timeout: bool = False) -> RetrySettings | None:
    """The retry settings a node's Context asks for, or None (no retry and no timeout).

    Args:
        own_timeout: True when the agent type applies `timeout_seconds` itself (`BaseAgent.own_timeout`).
    """
    retry: Any = context.get("retry")
    timeout = None if own_timeout else context.get("timeout_seconds")
    if retry is None and timeout is None:
        return None
    if isinstance(retry, int) and not isinstance(retry, bool):
        retry = {"max_attempts": retry}
    retry = dict(retry or {"max_attempts": 1})
    on = retry.get("on", ["error"])
    return RetrySettings(
        max_attempts=int(retry.get("max_attempts", 3)),
        backoff=float(retry.get("backoff", 2.0)),
        initial_interval=float(retry.get("initial_interval", 0.5)),
        max_interval=float(retry.get("max_interval", 128.0)),
        jitter=bool(retry.get("jitter", False)),
        on=tuple([on] if isinstance(on, str) else on),
        timeout=float(timeout) if timeout is not None else None,
    )


def _attempt(config: RunnableConfig | None) -> int:
    from agentmap._langgraph import RUNTIME_KEY

    runtime = (config or {}).get("configurable", {}).get(RUNTIME_KEY)
    info = getattr(runtime, "execution_info", None)
    return int(getattr(info, "node_attempt", 1) or 1)


def _bounded(agent: BaseAgent, state: Any, call: Callable[[], Any], timeout: float | None, last: bool) -> Any:
    if timeout is None:
        return call()

    from agentmap._langgraph import set_current_config
    from agentmap.agents.runner import run_config, run_tracker, with_tracker  # the run's tracker, as nodes see it

    box: dict[str, Any] = {}
    proxy = _Detachable(run_tracker())
    detached = with_tracker(run_config() or {}, proxy)
    context = contextvars.copy_context()
    # An abandoned attempt must not record into the run once it is cut off: it sees the run's tracker through
    # a proxy that is detached when the attempt times out.
    set_current_config(context, detached)

    def work() -> None:
        try:
            box["update"] = context.run(call)
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc

    worker = threading.Thread(target=work, name=f"agentmap-{agent.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        proxy.target = None
        return _timed_out(agent, state, timeout, last)
    if "error" in box:
        raise box["error"]
    return box["update"]


def _timed_out(agent: BaseAgent, state: Any, timeout: float, last: bool) -> Any:
    from agentmap.agents._bridge import RAISE_FAILURES

    error = NodeTimeout(f"node {agent.name!r} took longer than its timeout_seconds ({timeout:g}s)")
    check = RAISE_FAILURES.get()
    if not last and check is not None and check(error):
        raise error
    # The ordinary failure of the agent contract: the error update, recorded, and Failure_Next.
    from agentmap.agents.runner import fail_node

    return fail_node(agent, state, error)


class _Detachable:
    """The run's tracker for an attempt that may be abandoned: forwards to `target` until it is set to None."""

    def __init__(self, target: Tracker | None) -> None:
        self.target = target

    def record_node_start(self, node_name: str, inputs: Mapping[str, Any] | None = None) -> None:
        if self.target is not None:
            self.target.record_node_start(node_name, inputs)

    def record_node_result(self, node_name: str, success: bool, result: Any = None, error: str | None = None) -> None:
        if self.target is not None:
            self.target.record_node_result(node_name, success, result, error)

    def update_graph_success(self) -> bool:
        return self.target.update_graph_success() if self.target is not None else True

    def __getattr__(self, name: str) -> Any:  # what a tracker offers beyond the protocol (annotate, ...)
        target = self.__dict__["target"]
        return getattr(target, name) if target is not None else (lambda *args, **kwargs: True)
