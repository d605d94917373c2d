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
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentmap.agents.protocol import error_for_exception
from agentmap.agents.tool_sources import build_tool_executor, check_tool_config, split_names
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
    from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem

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
        loader: Builds the executor on first use instead (for tools that load asynchronously, such as
            MCP servers); give `executor` or `loader`.
        name: The worker's name in trace events and messages.
        user_id: The user the tools run as.
        description: What the worker does; an orchestrator sends a step naming a capability (not a
            worker) to the worker whose description and tool names match it best.
    """

    def __init__(
        self,
        executor: ToolExecutor | None = None,
        *,
        loader: Callable[[], Awaitable[ToolExecutor]] | None = None,
        name: str = "worker",
        user_id: str = "agentmap",
        description: str = "",
    ) -> None:
        if executor is None and loader is None:
            raise TypeError("WorkerAgent needs an executor (a ToolExecutor) or a loader that builds one")
        self.executor = executor
        self.name = name
        self.user_id = user_id
        self.description = description
        self._loader = loader
        self._known: frozenset[str] = frozenset()

    @classmethod
    def from_node(cls, node: BaseAgent) -> WorkerAgent:
        """Build the worker of a `worker` node: its tools come from Tool_Source / Available_Tools."""

        async def load() -> ToolExecutor:
            return await build_tool_executor(node.context, node.environment)

        user_id = str(node.context.get("user_id", "agentmap"))
        return cls(loader=load, name=node.name, user_id=user_id, description=node.description)

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        """Report a worker with no tools, or tools that cannot be loaded."""

        if not split_names(context.get("tool_source")) and not split_names(context.get("available_tools")):
            return ["a worker needs a Tool_Source (a Python file, module or MCP server) or Available_Tools"]
        return check_tool_config(context, environment)

    async def ready(self) -> None:
        """Load the tools, when a loader was given and they are not loaded yet.

        Raises:
            Exception: Whatever the loader raises (a `ConfigError` for a bad tool source).
        """
        if self.executor is None and self._loader is not None:
            self.executor = await self._loader()

    def get_available_tools(self) -> list[str]:
        """The tools this worker can call (empty until `ready()` has loaded them)."""
        return self.executor.get_available_tools() if self.executor is not None else []

    async def process(self, request: AgentRequest) -> AgentResponse:
        """Run the step (or steps) in `request.inputs`, each within `request.metadata.timeout_seconds`."""
        trace_id = request.metadata.trace_id
        if self.executor is None:
            try:
                await self.ready()
            except Exception as exc:
                message = f"worker '{self.name}' could not load its tools: {exc}"
                return error_response(ErrorType.VALIDATION, message, trace=[trace_event("worker:invalid", trace_id)])
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
        executor = self.executor
        assert executor is not None
        if tool not in self._known:
            self._known = frozenset(executor.get_available_tools())
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
                outcome: ToolResult = await executor.execute(tool, parameters, self.user_id)
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
            reason = outcome.error or "no reason given"
            message = reason if f"'{tool}'" in reason else f"tool '{tool}' failed: {reason}"
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
