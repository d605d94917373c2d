"""`WorkerAgent`: executes plan steps by calling tools through a `ToolExecutor`.

A request's inputs hold one step (`{"tool": name, "inputs": {...}}`) or several (`{"steps": [...]}`).
A string input `"${id.key}"` refers to the result of an earlier step (from the request's `context`,
where the orchestrator chains results), `"${previous}"` to the previous step's result. Tool failures
come back as the contract's errors: VALIDATION (unknown tool, bad arguments, a dangling reference),
TIMEOUT, PERMISSION, NETWORK (recoverable) or EXECUTION.
"""

from __future__ import annotations

import asyncio
import difflib
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.agents.protocol import error_for_exception
from agentmap.contracts.io import (
    AgentRequest,
    AgentResponse,
    ErrorType,
    error_response,
    success_response,
    trace_event,
)
from agentmap.contracts.tools import ToolExecutor, ToolResult

if TYPE_CHECKING:
    from agentmap.agents.base import AgentEnvironment, BaseAgent

__all__ = ["StepError", "WorkerAgent", "resolve_references"]

_REFERENCE = re.compile(r"\$\{([^}]+)\}")

_TOOL_ERRORS: dict[str, tuple[ErrorType, bool]] = {
    "unknown_tool": (ErrorType.VALIDATION, False),
    "invalid_arguments": (ErrorType.VALIDATION, False),
    "timeout": (ErrorType.TIMEOUT, True),
    "permission_denied": (ErrorType.PERMISSION, False),
    "network": (ErrorType.NETWORK, True),
    "resource": (ErrorType.RESOURCE, True),
    "execution_error": (ErrorType.EXECUTION, False),
}


class StepError(ValueError):
    """A step the worker cannot run as written (no tool named, a dangling `${...}` reference)."""


def resolve_references(value: Any, results: Mapping[str, Any], previous: Any = None) -> Any:
    """Replace `"${id.path}"` strings in `value` (recursively) with the results they refer to.

    A string that is exactly one reference becomes the referred value (any type); references inside a
    longer string are formatted into it. `${previous}` is `previous`; dotted paths index into dicts and
    lists (`${search_flights.0.price}`).

    Raises:
        StepError: When a reference names no earlier result or path.
    """
    if isinstance(value, str) and "${" in value:
        whole = _REFERENCE.fullmatch(value)
        if whole:
            return _follow(whole.group(1), results, previous)
        return _REFERENCE.sub(lambda m: str(_follow(m.group(1), results, previous)), value)
    if isinstance(value, dict):
        return {k: resolve_references(v, results, previous) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_references(v, results, previous) for v in value]
    return value


def _follow(reference: str, results: Mapping[str, Any], previous: Any) -> Any:
    head, *path = reference.strip().split(".")
    if head == "previous":
        current = previous
        if current is None:
            raise StepError("${previous} is used by the first step; there is no previous result yet")
    elif head in results:
        current = results[head]
    else:
        known = ", ".join(sorted(results)) or "none yet"
        raise StepError(f"${{{reference}}} names no earlier step '{head}'; earlier steps: {known}")
    for i, part in enumerate(path):
        try:
            current = current[int(part)] if isinstance(current, list) else current[part]
        except (KeyError, IndexError, TypeError, ValueError):
            so_far = ".".join([head, *path[:i]])
            keys = sorted(map(str, current)) if isinstance(current, Mapping) else type(current).__name__
            raise StepError(f"${{{reference}}}: ${{{so_far}}} has no '{part}' (it has {keys})") from None
    return current


class WorkerAgent:
    """The `worker` agent: runs steps through a `ToolExecutor`.

    Args:
        executor: Runs the tools (Python callables, LangChain or MCP tools).
        name: The worker's name in trace events and messages.
        user_id: The user the tools run as.
    """

    def __init__(self, executor: ToolExecutor, *, name: str = "worker", user_id: str = "agentmap") -> None:
        self.executor = executor
        self.name = name
        self.user_id = user_id
        self._known: frozenset[str] = frozenset()

    @classmethod
    def from_node(cls, node: BaseAgent) -> WorkerAgent:
        """Build the worker of a `worker` node from its `tool_source` and `available_tools`.

        Raises:
            ValueError: When the tool source cannot be loaded.
        """
        from agentmap.orchestration._tools import CallableToolExecutor, load_python_tools

        source, names = _tool_config(node.context)
        if not source:
            raise ValueError(f"worker node '{node.name}' has no Tool_Source: name the Python file of its tools")
        tools = load_python_tools(source, names, Path(node.environment.base_dir))
        return cls(CallableToolExecutor(tools), name=node.name, user_id=str(node.context.get("user_id", "agentmap")))

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """Report a worker with no Tool_Source, or one whose file cannot be loaded."""
        source, names = _tool_config(context)
        if not source:
            return ["a worker needs a Tool_Source (a Python file of tool functions beside the workflow)"]
        from agentmap.orchestration._tools import load_python_tools

        try:
            load_python_tools(source, names, Path(environment.base_dir))
        except (ValueError, ImportError, SyntaxError) as exc:
            return [f"cannot load the worker's tools: {exc}"]
        return []

    def get_available_tools(self) -> list[str]:
        """The tools this worker can call."""
        return self.executor.get_available_tools()

    async def process(self, request: AgentRequest) -> AgentResponse:
        """Run the step (or steps) in `request.inputs`, each within `request.metadata.timeout_seconds`."""
        trace_id = request.metadata.trace_id
        inputs = request.inputs
        steps = inputs.get("steps", [inputs] if "tool" in inputs else [])
        if not steps or not isinstance(steps, list):
            return error_response(
                ErrorType.VALIDATION,
                f"worker '{self.name}' got no step to run: pass inputs "
                '{"tool": "<name>", "inputs": {...}} or {"steps": [...]}',
                trace=[trace_event("worker:invalid", trace_id, worker=self.name)],
            )
        context = request.context
        results = dict(context.get("results") or {})
        previous = context.get("previous_result")
        trace: list[dict[str, Any]] = []
        outputs: list[Any] = []
        started = time.perf_counter()
        for index, step in enumerate(steps):
            outcome = await self._run_step(step, index, request, results, previous, trace)
            if isinstance(outcome, AgentResponse):
                return outcome
            step_id = str(step.get("id") or step["tool"])
            results[step_id] = previous = outcome
            outputs.append(outcome)
        result = outputs[0] if "steps" not in inputs else {"results": outputs}
        metadata = {"duration_ms": (time.perf_counter() - started) * 1000, "api_calls": len(steps)}
        return success_response(result, trace=trace, metadata=metadata)

    async def _run_step(
        self,
        step: Any,
        index: int,
        request: AgentRequest,
        results: Mapping[str, Any],
        previous: Any,
        trace: list[dict[str, Any]],
    ) -> Any:
        trace_id = request.metadata.trace_id
        tool = step.get("tool") if isinstance(step, Mapping) else None
        if not tool:
            message = f'step {index + 1} names no tool: worker \'{self.name}\' runs steps like {{"tool": "<name>"}}'
            return _error(ErrorType.VALIDATION, message, trace, trace_id)
        if tool not in self._known:
            self._known = frozenset(self.executor.get_available_tools())
            if tool not in self._known:
                return _error(ErrorType.VALIDATION, self._unknown_tool(tool), trace, trace_id)
        try:
            parameters = resolve_references(dict(step.get("inputs") or {}), results, previous)
        except StepError as exc:
            return _error(ErrorType.VALIDATION, f"step '{tool}': {exc}", trace, trace_id)
        trace.append(trace_event("tool:call", trace_id, tool=tool, worker=self.name))
        timeout = request.metadata.timeout_seconds
        try:
            async with asyncio.timeout(timeout):
                outcome: ToolResult = await self.executor.execute(tool, parameters, self.user_id)
        except TimeoutError:
            message = f"tool '{tool}' did not finish within {timeout}s (the request's timeout_seconds)"
            return _error(ErrorType.TIMEOUT, message, trace, trace_id, recoverable=True)
        except Exception as exc:
            kind, recoverable = error_for_exception(exc)
            message = f"tool '{tool}' failed: {type(exc).__name__}: {exc}"
            return _error(kind, message, trace, trace_id, recoverable=recoverable)
        trace.append(
            trace_event("tool:result", trace_id, tool=tool, success=outcome.success, duration_ms=outcome.duration_ms)
        )
        if not outcome.success:
            kind, recoverable = _TOOL_ERRORS.get(outcome.error_code or "", (ErrorType.EXECUTION, False))
            message = f"tool '{tool}' failed: {outcome.error or 'no reason given'}"
            details = {"tool": tool, "error_code": outcome.error_code, "parameters": parameters}
            return _error(kind, message, trace, trace_id, recoverable=recoverable, details=details)
        return outcome.data if outcome.data is not None else f"tool '{tool}' completed (it returned nothing)"

    def _unknown_tool(self, tool: str) -> str:
        known = sorted(self._known)
        close = difflib.get_close_matches(tool, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return f"worker '{self.name}' has no tool '{tool}' (it has: {', '.join(known) or 'none'}){hint}"


def _error(
    kind: ErrorType,
    message: str,
    trace: list[dict[str, Any]],
    trace_id: str,
    *,
    recoverable: bool = False,
    details: dict[str, Any] | None = None,
) -> AgentResponse:
    trace.append(trace_event("step:error", trace_id, error_type=kind.value))
    return error_response(kind, message, details=details, recoverable=recoverable, trace=trace)


def _tool_config(context: Mapping[str, Any]) -> tuple[str, list[str]]:
    source = str(context.get("tool_source") or "").strip()
    names = context.get("available_tools") or context.get("tools") or []
    if isinstance(names, str):
        names = [n.strip() for n in names.split("|") if n.strip()]
    return source, [str(n) for n in names]
