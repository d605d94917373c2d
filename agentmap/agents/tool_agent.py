"""The `tool` agent type: call one tool with the node's inputs as its arguments.

```
GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Tool_Source,Success_Next,Failure_Next
calc,Add,tool,"{""tool"": ""add_numbers""}",a|b,sum,tools.py,Done,Oops
```

Context keys: `tool` (the tool's name; optional when Available_Tools names exactly one), `arguments`
(constant arguments, overridden by inputs), `user_id` (for tools that take one; an input named
`user_id` wins), `tool_timeout` (seconds). Inputs that are missing from the state (None) are left out,
so the tool's defaults apply. A failed call fails the node (Failure_Next) with the tool's reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem
from agentmap.agents.registry import agent

if TYPE_CHECKING:
    from agentmap.agents.tools import LocalToolExecutor

__all__ = ["ToolAgent", "ToolCallFailed"]


def _names(value: Any) -> list[str]:
    """`"a|b"` or a list -> names (see `agentmap.agents.tool_sources.split_names`)."""
    # Imported here: agentmap.agents.tools imports this module to register the `tool` type.
    from agentmap.agents.tool_sources import split_names as split

    return split(value)


class ToolCallFailed(RuntimeError):
    """A tool call reported failure; the message holds the tool's reason and error code."""


def _effective(context: Mapping[str, Any]) -> dict[str, Any]:
    """The context with Available_Tools defaulting to the tool's name (so `tools/` is searched for it)."""
    effective = dict(context)
    if not _names(effective.get("tool_source")) and not _names(effective.get("available_tools")):
        effective["available_tools"] = _tool_name(context)
    return effective


def _tool_name(context: Mapping[str, Any]) -> str | None:
    name = context.get("tool")
    if isinstance(name, str) and name.strip():
        return name.strip()
    available = _names(context.get("available_tools"))
    return available[0] if len(available) == 1 else None


@agent("tool")
class ToolAgent(BaseAgent):
    """Calls the tool named by Context `tool` with the node's inputs as arguments; see the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._executor: LocalToolExecutor | None = None

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        """Report a missing tool name or source, and what `check_tool_config` finds."""
        problems: list[ConfigProblem] = []
        name = _tool_name(context)
        if name is None:
            problems.append(
                'a tool node needs the tool\'s name: set Context {"tool": "<name>"} or list exactly one '
                "name in Available_Tools"
            )
        if not _names(context.get("tool_source")) and not (environment.base_dir / "tools").is_dir():
            problems.append("a tool node needs a Tool_Source (a .py file or folder, module:<name>, or an mcp: server)")
            return problems
        from agentmap.agents.tool_sources import check_tool_config

        available = _names(context.get("available_tools"))
        if name and available and name not in available:
            problems.append(f"Context tool '{name}' is not listed in Available_Tools ({', '.join(available)})")
            name = None  # already reported
        problems.extend(check_tool_config(_effective(context), environment, tool=name))
        return problems

    async def executor(self) -> LocalToolExecutor:
        """The node's tools, loaded on first use."""
        if self._executor is None:
            from agentmap.agents.tool_sources import build_tool_executor

            self._executor = await build_tool_executor(_effective(self.context), self.environment)
        return self._executor

    async def process(self, inputs: dict[str, Any]) -> Any:
        """Call the tool; return its result.

        Raises:
            ToolCallFailed: When the tool fails, times out, is unknown or gets bad arguments.
        """
        name = _tool_name(self.context)
        if name is None:
            raise ToolCallFailed('no tool named: set Context {"tool": "<name>"}')
        executor = await self.executor()
        constant = self.context.get("arguments") or {}
        args = {**constant, **{k: v for k, v in inputs.items() if v is not None}}
        user_id = str(args.pop("user_id", None) or self.context.get("user_id") or "")
        result = await executor.execute(name, args, user_id)
        self.record_metadata(
            tool=name, tool_success=result.success, tool_error_code=result.error_code,
            tool_duration_ms=round(result.duration_ms, 3),
        )  # fmt: skip
        if not result.success:
            raise ToolCallFailed(f"{result.error} [{result.error_code}]")
        return result.data
