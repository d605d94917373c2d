"""Collect the csv_specs/run_agent.md `traces` of a run: one item per tool call, from LangChain's tool callbacks.

Every AgentMap tool runs as a LangChain tool (`LocalToolExecutor`), and LangGraph hands the run's callbacks
to code running inside a node, so a handler passed in the run's config sees each call start and end.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from agentmap.contracts.minimal import ToolTraceMinimal

__all__ = ["PROBLEM_EVENT", "TRACE_EVENT", "ToolTraceCollector", "as_text", "unique_tool_names"]

TRACE_EVENT = "agentmap_trace"
"""A custom callback event an agent dispatches to add a trace that is not a tool call (e.g. a domain that
timed out): `await adispatch_custom_event(TRACE_EVENT, {"tool": ..., "output": ..., "duration_secs": ...})`."""

PROBLEM_EVENT = "agentmap_problem"
"""The custom event an agent dispatches for a part of its work that failed or timed out without being a tool
call (a domain that did not answer): `await adispatch_custom_event(PROBLEM_EVENT, {"source": "domain:x",
"error": "...", "duration_secs": ...})`. It goes into the run_agent output's `errors` and `timings`, never into
`traces`, which holds tool calls only."""


def as_text(value: Any) -> str:
    """Serialize a tool's result to text: strings as is, JSON when possible, else `str()`."""
    content = getattr(value, "content", value)  # a ToolMessage carries the result as content
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(content)


def unique_tool_names(traces: list[ToolTraceMinimal]) -> list[str]:
    """The tool names of `traces`, each once, in order of first occurrence (as csv_specs/run_agent.md surfaces them)."""
    return list(dict.fromkeys(t.tool for t in traces))


class ToolTraceCollector(BaseCallbackHandler):
    """A callback handler recording every tool call of a run as a `ToolTraceMinimal`, in start order.

    It asks for tool and custom events only: the chain events of every node (and model events) are not
    dispatched to it, which keeps a traced run almost as cheap as an untraced one. It runs inline, in the thread
    that raised the event (its methods only take a lock and note a few values): an async node's events are not
    each handed to a worker thread of the event loop and back.
    """

    ignore_chain = ignore_llm = ignore_chat_model = ignore_retriever = ignore_retry = True
    run_inline = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[UUID, tuple[int, str, dict[str, Any] | None, float]] = {}
        self._done: dict[int, ToolTraceMinimal] = {}
        self._count = 0
        self.problems: list[dict[str, Any]] = []
        """The `PROBLEM_EVENT`s of the run: `{"source", "error", "duration_secs"}` each."""

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Note the call's name, arguments and start time."""
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        args = dict(inputs) if isinstance(inputs, dict) else _parse_args(input_str)
        with self._lock:
            self._open[run_id] = (self._count, str(name), args, time.perf_counter())
            self._count += 1

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Record the call with its output."""
        self._close(run_id, as_text(output))

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Record the call with its error as the output."""
        self._close(run_id, f"Error: {error}")

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a `TRACE_EVENT` or `PROBLEM_EVENT` dispatched by an agent; other events are ignored."""
        if name == PROBLEM_EVENT and isinstance(data, dict):
            with self._lock:
                self.problems.append(
                    {
                        "source": str(data.get("source", "")),
                        "error": as_text(data.get("error", "")),
                        "duration_secs": data.get("duration_secs"),
                    }
                )
            return
        if name == TRACE_EVENT and isinstance(data, dict) and "tool" in data:
            self.add(
                ToolTraceMinimal(
                    tool=str(data["tool"]),
                    output=as_text(data.get("output", "")),
                    args=_json_safe(data.get("args")),
                    duration_secs=data.get("duration_secs"),
                )
            )

    def _close(self, run_id: UUID, output: str) -> None:
        with self._lock:
            opened = self._open.pop(run_id, None)
            if opened is None:
                return
            order, name, args, started = opened
            self._done[order] = ToolTraceMinimal(
                tool=name,
                output=output,
                args=_json_safe(args),
                duration_secs=round(time.perf_counter() - started, 6),
            )

    def add(self, trace: ToolTraceMinimal) -> None:
        """Record a call that did not go through LangChain's callbacks (e.g. a timed-out domain)."""
        with self._lock:
            self._done[self._count] = trace
            self._count += 1

    @property
    def traces(self) -> list[ToolTraceMinimal]:
        """The finished calls, in the order they started."""
        with self._lock:
            return [self._done[k] for k in sorted(self._done)]


def _parse_args(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {"input": text} if text else None
    return value if isinstance(value, dict) else {"input": value}


def _json_safe(args: dict[str, Any] | None) -> dict[str, Any] | None:
    if args is None:
        return None
    try:
        json.dumps(args)
    except (TypeError, ValueError):
        return {k: v if isinstance(v, str | int | float | bool | type(None)) else str(v) for k, v in args.items()}
    return args
