"""The seed 001 output types and JSON schema."""

from __future__ import annotations

import jsonschema
import pytest
from pydantic import ValidationError

from agentmap.contracts.minimal import AGENT_OUTPUT_SCHEMA, AgentOutputMinimal, ToolTraceMinimal

SEED_EXAMPLE = {
    "content": "Here is your plan for today...",
    "response_time_secs": 2.81,
    "traces": [
        {
            "tool": "COACHBYTE_GET_WORKOUT_TODAY",
            "args": {"date": "2025-09-10"},
            "output": '{"plan":"..."}',
            "duration_secs": 0.34,
        }
    ],
}


def test_seed_example_validates_against_schema_and_model() -> None:
    jsonschema.validate(SEED_EXAMPLE, AGENT_OUTPUT_SCHEMA)
    output = AgentOutputMinimal.model_validate(SEED_EXAMPLE)
    assert output.traces[0].tool == "COACHBYTE_GET_WORKOUT_TODAY"
    assert output.to_dict() == SEED_EXAMPLE


def test_traces_default_to_empty_and_unset_trace_fields_are_omitted() -> None:
    output = AgentOutputMinimal(content="hi", response_time_secs=0.1)
    assert output.traces == []
    output = AgentOutputMinimal(content="hi", response_time_secs=0.1, traces=[ToolTraceMinimal(tool="t", output="x")])
    data = output.to_dict()
    assert data["traces"] == [{"tool": "t", "output": "x"}]
    jsonschema.validate(data, AGENT_OUTPUT_SCHEMA)


def test_extra_fields_are_kept_on_output_but_rejected_on_traces() -> None:
    output = AgentOutputMinimal.model_validate({**SEED_EXAMPLE, "models": {"router": "offline"}})
    assert output.to_dict()["models"] == {"router": "offline"}
    with pytest.raises(ValidationError):
        ToolTraceMinimal.model_validate({"tool": "t", "output": "x", "extra": 1})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"content": "", "response_time_secs": 1, "traces": [{"tool": "t", "output": "x", "extra": 1}]},
            AGENT_OUTPUT_SCHEMA,
        )


def test_schema_rejects_missing_required_fields() -> None:
    with pytest.raises(jsonschema.ValidationError, match="response_time_secs"):
        jsonschema.validate({"content": "x", "traces": []}, AGENT_OUTPUT_SCHEMA)
