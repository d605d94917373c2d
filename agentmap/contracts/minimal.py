"""The minimal agent output of csv_specs/run_agent.md: what every `run_agent` returns.

`AgentOutputMinimal` holds the three required fields (`content`, `response_time_secs`, `traces`); extra
fields (`results`, `timings`, `models`, ...) are kept, as the contract allows. `AGENT_OUTPUT_SCHEMA` is the
contract's language-agnostic JSON schema, to validate an output produced by any agent.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AGENT_OUTPUT_SCHEMA", "AgentOutputMinimal", "ToolTraceMinimal"]


class ToolTraceMinimal(BaseModel):
    """One tool call made while answering.

    Attributes:
        tool: The tool's name.
        output: The tool's result serialized to text.
        args: The JSON-serializable arguments, when known.
        duration_secs: Wall-clock seconds the call took, when measured.
    """

    model_config = ConfigDict(extra="forbid")

    tool: str
    output: str
    args: dict[str, Any] | None = None
    duration_secs: float | None = None


class AgentOutputMinimal(BaseModel):
    """The fields every agent returns; additional fields are allowed and preserved.

    Attributes:
        content: The final response text.
        response_time_secs: Total wall-clock seconds for the call.
        traces: Zero or more tool calls, in the order they were made.
    """

    model_config = ConfigDict(extra="allow")

    content: str
    response_time_secs: float
    traces: list[ToolTraceMinimal] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return the output as plain JSON data that `AGENT_OUTPUT_SCHEMA` accepts.

        Optional trace fields that are unset are left out rather than written as `null`, since the
        schema types them as an object and a number.
        """
        data = self.model_dump(mode="json")
        data["traces"] = [t.model_dump(mode="json", exclude_none=True) for t in self.traces]
        return data


AGENT_OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["content", "response_time_secs", "traces"],
    "properties": {
        "content": {"type": "string"},
        "response_time_secs": {"type": "number"},
        "traces": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool", "output"],
                "properties": {
                    "tool": {"type": "string"},
                    "output": {"type": "string"},
                    "args": {"type": "object"},
                    "duration_secs": {"type": "number"},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": True,
}
"""The contract's JSON schema (draft) for an agent's output; validate with `jsonschema.validate`."""
