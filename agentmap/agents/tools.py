"""`LocalToolExecutor`: the one `ToolExecutor` (csv_specs/engine.md) over Python callables and LangChain tools.

It serves the LLM decision engine, the orchestration worker and the `tool` agent type. Every tool is
held as a LangChain `BaseTool` (plain functions are wrapped with `StructuredTool.from_function`, so
their type hints and docstrings become the schema). `execute` validates the arguments against the
tool's schema, injects `user_id` when the tool takes one, applies a per-call timeout, and reports every
failure as a `ToolResult(success=False, error_code=...)`; it never raises.

Error codes: `unknown_tool`, `invalid_arguments`, `timeout`, `permission_denied`, `network`,
`execution_error`, `in_doubt` (a call cut short by a crash that a person answered `fail` for).
"""

from __future__ import annotations

import asyncio
import copy
import difflib
import inspect
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from agentmap.agents.journal import InDoubt, journaled
from agentmap.contracts.tools import ToolResult

__all__ = ["DEFAULT_TOOL_TIMEOUT", "USER_ID_PARAM", "LocalToolExecutor", "as_tool"]

DEFAULT_TOOL_TIMEOUT = 30.0
"""Seconds a tool call may take unless the executor is given another timeout."""

USER_ID_PARAM = "user_id"
"""A tool parameter of this name receives the `user_id` given to `execute`; models never see it."""

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


def as_tool(obj: BaseTool | Callable[..., Any], *, name: str | None = None) -> BaseTool:
    """Return `obj` as a LangChain tool: a `BaseTool` as is, a function (sync or async) wrapped.

    Raises:
        TypeError: When `obj` is neither a tool nor callable.
    """
    if isinstance(obj, BaseTool):
        return obj
    if not callable(obj):
        raise TypeError(f"{obj!r} is not a tool: give a function or a LangChain BaseTool")
    if inspect.iscoroutinefunction(obj):
        return StructuredTool.from_function(coroutine=obj, name=name)
    return StructuredTool.from_function(func=obj, name=name)


class LocalToolExecutor:
    """Runs tools in this process (MCP tools included: they call their server themselves).

    Args:
        tools: Functions (sync or `async def`) and LangChain tools.
        timeout: Seconds per call; None for no limit. A sync tool that overruns keeps its worker
            thread until it returns, but the caller gets its `timeout` result at once.
    """

    def __init__(
        self, tools: Iterable[BaseTool | Callable[..., Any]] = (), *, timeout: float | None = DEFAULT_TOOL_TIMEOUT
    ) -> None:
        self.timeout = timeout
        self._tools: dict[str, BaseTool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: BaseTool | Callable[..., Any]) -> BaseTool:
        """Add one tool; a later tool with the same name replaces the earlier one."""
        converted = as_tool(tool)
        self._tools[converted.name] = converted
        return converted

    def get_available_tools(self) -> list[str]:
        """Return the names of the tools, in the order they were added."""
        return list(self._tools)

    def get_tool(self, name: str) -> BaseTool | None:
        """Return the tool named `name`, or None."""
        return self._tools.get(name)

    def takes_user_id(self, name: str) -> bool:
        """Whether the tool named `name` has a `user_id` parameter (filled from `execute`'s user_id)."""
        tool = self._tools.get(name)
        return tool is not None and USER_ID_PARAM in _schema(tool).get("properties", {})

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style tool schemas for `model.bind_tools(...)`, without the injected `user_id`."""
        schemas = []
        for tool in self._tools.values():
            schema = copy.deepcopy(convert_to_openai_tool(tool))
            params = schema["function"].get("parameters") or {}
            params.get("properties", {}).pop(USER_ID_PARAM, None)
            if USER_ID_PARAM in params.get("required", []):
                params["required"] = [r for r in params["required"] if r != USER_ID_PARAM]
            schemas.append(schema)
        return schemas

    def as_langchain_tools(self, user_id: str = "") -> list[BaseTool]:
        """The tools as LangChain tools that run through this executor.

        Each validates, times out and injects `user_id` like `execute`; a failed call raises
        `ToolException`, which LangChain's tool calling turns into an error `ToolMessage`. Use these with
        `bind_tools` and LangChain/LangGraph tool nodes.
        """
        wrapped: list[BaseTool] = []
        for schema in self.get_tool_schemas():
            function = schema["function"]
            wrapped.append(
                StructuredTool(
                    name=function["name"],
                    description=function.get("description", ""),
                    args_schema=function.get("parameters") or {"type": "object", "properties": {}},
                    coroutine=self._runner(function["name"], user_id),
                    handle_tool_error=True,
                )
            )
        return wrapped

    def _runner(self, name: str, user_id: str) -> Callable[..., Any]:
        async def run(**kwargs: Any) -> Any:
            result = await self.execute(name, kwargs, user_id)
            if not result.success:
                raise ToolException(f"{result.error_code}: {result.error}")
            return result.data

        return run

    async def execute(
        self, tool_name: str, parameters: dict[str, Any], user_id: str, *, idempotent: bool | None = None
    ) -> ToolResult:
        """Run one tool and report how it went, through the call journal when the run has a checkpointer.

        Args:
            tool_name: The tool's name.
            parameters: Its arguments, excluding `user_id`.
            user_id: The user the call is made for; given to tools with a `user_id` parameter.
            idempotent: Whether calling it twice has the effect of once; None: as the tool is marked
                (`@agentmap.tool(idempotent=True)`, or `metadata={"idempotent": True}` on a LangChain tool).

        Returns:
            `ToolResult(success=True, data=<return value>)`, or a failure with an `error_code`.
        """

        if idempotent is None:
            idempotent = self.is_idempotent(tool_name)
        request = {"arguments": parameters or {}, "user_id": user_id}
        try:
            return await journaled(
                "tool",
                tool_name,
                request,
                lambda: self._execute(tool_name, parameters, user_id),
                encode=lambda r: r.model_dump(mode="json"),
                decode=ToolResult.model_validate,
                idempotent=idempotent,
                failed=lambda r: not r.success,
                unsure=lambda r: r.error_code == "timeout",  # it may still run, and take effect, after we stop waiting
                done=lambda data: ToolResult(success=True, data=data),
            )
        except InDoubt as exc:
            return ToolResult(success=False, error=str(exc), error_code="in_doubt")

    def is_idempotent(self, name: str) -> bool:
        """Whether the tool named `name` is marked idempotent (see `execute`)."""
        tool = self._tools.get(name)
        if tool is None:
            return False
        marked = (tool.metadata or {}).get("idempotent")
        if marked is None:
            function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
            marked = getattr(function, "__agentmap_idempotent__", False)
        return bool(marked)

    async def _execute(self, tool_name: str, parameters: dict[str, Any], user_id: str) -> ToolResult:
        started = time.perf_counter()

        def fail(code: str, message: str) -> ToolResult:
            elapsed = (time.perf_counter() - started) * 1000
            return ToolResult(success=False, error=message, error_code=code, duration_ms=elapsed)

        tool = self._tools.get(tool_name)
        if tool is None:
            return fail("unknown_tool", self._unknown(tool_name))
        args = {k: v for k, v in (parameters or {}).items() if k != USER_ID_PARAM}  # never whom the model names
        if self.takes_user_id(tool_name):
            args[USER_ID_PARAM] = user_id
        problem = _validate(tool, args)
        if problem:
            return fail("invalid_arguments", f"invalid arguments for tool '{tool_name}': {problem}")
        try:
            async with asyncio.timeout(self.timeout):  # unlike wait_for (3.11), no extra task per call
                data = await tool.ainvoke(args)
        except TimeoutError:
            limit = f"within {self.timeout:g} seconds" if self.timeout is not None else "in time"
            return fail("timeout", f"tool '{tool_name}' did not finish {limit}")
        except PydanticValidationError as exc:
            return fail("invalid_arguments", f"invalid arguments for tool '{tool_name}': {_describe(exc)}")
        except PermissionError as exc:
            return fail("permission_denied", f"tool '{tool_name}' was denied: {exc}")
        except Exception as exc:
            code = "network" if _is_network(exc) else "execution_error"
            reason = str(exc) if isinstance(exc, ToolException) else f"{type(exc).__name__}: {exc}"
            return fail(code, f"tool '{tool_name}' failed: {reason}")
        elapsed = (time.perf_counter() - started) * 1000
        return ToolResult(success=True, data=data, duration_ms=elapsed)

    def _unknown(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self._tools), n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        available = ", ".join(self._tools) or "none"
        return f"unknown tool '{name}'{hint} Available tools: {available}"


def _schema(tool: BaseTool) -> dict[str, Any]:
    schema = tool.args_schema
    if isinstance(schema, dict):
        return schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return {"type": "object", "properties": tool.args}


def _validate(tool: BaseTool, args: dict[str, Any]) -> str | None:
    """A readable reason the arguments do not fit the tool's schema, or None."""
    schema = tool.args_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            schema.model_validate(args)
        except PydanticValidationError as exc:
            return _describe(exc)
        return None
    if isinstance(schema, Mapping):
        return _check_json_schema(schema, args)
    return None


def _describe(exc: PydanticValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ())) or "arguments"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


def _check_json_schema(schema: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
    """Required properties, primitive types and (when closed) unknown properties of a JSON schema."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    problems = [f"{name}: required" for name in schema.get("required") or [] if name not in args]
    for name, value in args.items():
        prop = properties.get(name)
        if prop is None:
            if schema.get("additionalProperties") is False:
                problems.append(f"{name}: unexpected argument (expected {', '.join(properties) or 'none'})")
            continue
        kinds = prop.get("type") if isinstance(prop, Mapping) else None
        names = [kinds] if isinstance(kinds, str) else list(kinds or [])
        allowed = [t for k in names for t in _JSON_TYPES.get(k, ())]
        if value is None and ("null" in names or not names):
            continue
        if allowed and not isinstance(value, tuple(allowed)):
            problems.append(f"{name}: expected {' or '.join(names)}, got {type(value).__name__}")
        elif isinstance(value, bool) and "boolean" not in names and allowed:
            problems.append(f"{name}: expected {' or '.join(names)}, got bool")
    return "; ".join(problems) or None


def _is_network(exc: BaseException) -> bool:
    if isinstance(exc, ConnectionError):
        return True
    names = {cls.__name__.lower() for cls in type(exc).__mro__}
    return any("connect" in n or "network" in n or "transport" in n for n in names)
