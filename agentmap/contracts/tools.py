"""Tool calls and results, and the `ToolExecutor` protocol (csv_specs/engine.md).

One executor serves the LLM decision engine, the orchestration worker and the `tool` agent type.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ToolCall", "ToolExecutor", "ToolResult"]


class ToolCall(BaseModel):
    """A request to call one tool.

    Attributes:
        tool_name: The tool's name, as `get_available_tools()` lists it.
        parameters: The arguments, excluding `user_id`.
        id: The model's id for the call, when a model made it.
    """

    model_config = ConfigDict(frozen=True)

    tool_name: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ToolResult(BaseModel):
    """What running a tool gave.

    Attributes:
        success: Whether the tool ran and returned normally.
        data: The tool's return value on success.
        error: A human-readable reason on failure.
        error_code: A stable code on failure (`"unknown_tool"`, `"invalid_arguments"`,
            `"timeout"`, `"permission_denied"`, `"network"`, `"execution_error"`).
        duration_ms: Wall-clock milliseconds the call took.
    """

    success: bool
    data: Any = None
    error: str | None = None
    error_code: str | None = None
    duration_ms: float = 0.0


@runtime_checkable
class ToolExecutor(Protocol):
    """Interface for executing tools (Python, LangChain or MCP)."""

    async def execute(self, tool_name: str, parameters: dict[str, Any], user_id: str) -> ToolResult:
        """Execute a tool.

        Args:
            tool_name: Name of the tool to execute.
            parameters: Tool parameters (excluding user_id).
            user_id: Authenticated user ID.

        Returns:
            The tool's result; failures are results with `success=False`, never exceptions.
        """
        ...

    def get_available_tools(self) -> list[str]:
        """Return list of available tool names."""
        ...
