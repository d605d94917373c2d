"""The `tool` agent type: call one tool with the node's inputs as its arguments.

```
GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Tool_Source,Success_Next,Failure_Next
calc,Add,tool,"{""tool"": ""add_numbers""}",a|b,sum,tools.py,Done,Oops
```

Context keys: `tool` (the tool's name; optional when Available_Tools names exactly one; with several
and no `tool`, each run picks the one whose name and description share the most words with the inputs,
as AgentMap 0.9's tool_agent did; `name("what it does")` in Available_Tools adds to a description), `arguments`
(constant arguments, overridden by inputs), `user_id` (for tools that take one; an input named
`user_id` wins), `tool_timeout` (seconds), `idempotent` (true: a call cut short by a crash is made again on
resume; by default it is in doubt and the run asks, see csv_specs/llm.md). Inputs that are missing from the
state (None) are left out, so the tool's defaults apply. A failed call fails the node (Failure_Next) with the
tool's reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem
from agentmap.agents.registry import agent
from agentmap.agents.tool_sources import build_tool_executor, check_tool_config
from agentmap.agents.tool_sources import split_names as split

if TYPE_CHECKING:
    from agentmap.agents.tools import LocalToolExecutor

__all__ = ["ToolAgent", "ToolCallFailed"]


def _names(value: Any) -> list[str]:
    """`"a|b"` or a list -> names (see `agentmap.agents.tool_sources.split_names`)."""
    # Imported here: agentmap.agents.tools imports this module to register the `tool` type.

    return split(value)


class ToolCallFailed(RuntimeError):
    """A tool call reported failure; the message holds the tool's reason and error code."""


_DESCRIBED = re.compile(r"""^\s*([\w.\-]+)\s*\(\s*(["'])(.*)\2\s*\)\s*$""", re.S)
_WORDS = re.compile(r"[a-z0-9]+")


def _described(context: Mapping[str, Any]) -> dict[str, str]:
    """Available_Tools as `{name: description}`; AgentMap 0.9 wrote `add("adds numbers")`."""
    found: dict[str, str] = {}
    for entry in _names(context.get("available_tools")):
        match = _DESCRIBED.match(entry)
        found[match.group(1) if match else entry] = match.group(3) if match else ""
    return found


def _effective(context: Mapping[str, Any]) -> dict[str, Any]:
    """The context with plain tool names, Available_Tools defaulting to the tool's name (so `tools/` is searched)."""
    effective = dict(context)
    if _names(effective.get("available_tools")):
        effective["available_tools"] = list(_described(context))
    if not _names(effective.get("tool_source")) and not _names(effective.get("available_tools")):
        effective["available_tools"] = _tool_name(context)
    return effective


def _tool_name(context: Mapping[str, Any]) -> str | None:
    name = context.get("tool")
    if isinstance(name, str) and name.strip():
        return name.strip()
    available = list(_described(context))
    return available[0] if len(available) == 1 else None


def _pick(requests: list[str], tools: Mapping[str, str]) -> str:
    """The tool whose name and description share the most words with the first request any tool matches
    (the inputs, then the Prompt); the first tool on a tie or when nothing matches."""
    profiles = {name: set(_WORDS.findall(f"{name} {text}".lower().replace("_", " "))) for name, text in tools.items()}
    for request in requests:
        wanted = set(_WORDS.findall(request.lower()))
        scores = {name: len(wanted & words) for name, words in profiles.items()}
        if any(scores.values()):
            return max(scores, key=lambda name: scores[name])
    return next(iter(tools))


@agent("tool")
class ToolAgent(BaseAgent):
    """Calls the tool named by Context `tool` with the node's inputs as arguments; see the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._executor: LocalToolExecutor | None = None

    @classmethod
    def may_pause(cls, context: Mapping[str, Any]) -> bool:
        """A tool call cut short by a crash is in doubt and asks (the call journal), unless Context says
        `idempotent`."""
        return not context.get("idempotent")

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        """Report a missing tool name or source, and what `check_tool_config` finds."""
        problems: list[ConfigProblem] = []
        name = _tool_name(context)
        if name is None and len(_described(context)) < 2:
            problems.append(
                'a tool node needs the tool\'s name: set Context {"tool": "<name>"} or list exactly one '
                "name in Available_Tools"
            )
        if not _names(context.get("tool_source")) and not (environment.base_dir / "tools").is_dir():
            problems.append("a tool node needs a Tool_Source (a .py file or folder, module:<name>, or an mcp: server)")
            return problems

        available = list(_described(context))
        if name and available and name not in available:
            problems.append(f"Context tool '{name}' is not listed in Available_Tools ({', '.join(available)})")
            name = None  # already reported
        problems.extend(check_tool_config(_effective(context), environment, tool=name))
        return problems

    async def executor(self) -> LocalToolExecutor:
        """The node's tools, loaded on first use."""
        if self._executor is None:
            self._executor = await build_tool_executor(_effective(self.context), self.environment)
        return self._executor

    async def process(self, inputs: dict[str, Any]) -> Any:
        """Call the tool; return its result.

        Raises:
            ToolCallFailed: When the tool fails, times out, is unknown or gets bad arguments.
        """
        name = _tool_name(self.context)
        executor = await self.executor()
        if name is None and len(_described(self.context)) > 1:
            name = self._choose(inputs, executor)
        if name is None:
            raise ToolCallFailed('no tool named: set Context {"tool": "<name>"}')
        constant = self.context.get("arguments") or {}
        args = {**constant, **{k: v for k, v in inputs.items() if v is not None}}
        user_id = str(args.pop("user_id", None) or self.context.get("user_id") or "")
        marked = self.context.get("idempotent")
        idempotent = None if marked is None else bool(marked)
        result = await executor.execute(name, args, user_id, idempotent=idempotent)
        self.record_metadata(
            tool=name,
            tool_success=result.success,
            tool_error_code=result.error_code,
            tool_duration_ms=round(result.duration_ms, 3),
        )
        if not result.success:
            raise ToolCallFailed(f"{result.error} [{result.error_code}]")
        return result.data

    def _choose(self, inputs: Mapping[str, Any], executor: LocalToolExecutor) -> str:
        """Pick among several Available_Tools by the request (the inputs), as AgentMap 0.9 did."""
        described = {}
        for name, text in _described(self.context).items():
            tool = executor.get_tool(name)
            described[name] = f"{text} {tool.description if tool is not None else ''}"
        request = " ".join(str(v) for v in inputs.values() if v is not None)
        return _pick([request, self.prompt], described)
