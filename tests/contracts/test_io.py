"""The agent I/O contract types (seed 002): rules, defaults, helpers and the JSON round trip."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from agentmap.contracts.io import (
    AgentError,
    AgentProtocol,
    AgentRequest,
    AgentResponse,
    ErrorType,
    OrchestrationError,
    RequestMetadata,
    ResponseStatus,
    describe_validation_error,
    error_response,
    new_trace_id,
    success_response,
    validate_request,
    validate_response,
)
from agentmap.errors import AgentMapError


def _request(**overrides: object) -> AgentRequest:
    fields: dict[str, object] = {"goal": "Find flights", "task": "Search flights", "metadata": {"trace_id": "t-1"}}
    fields.update(overrides)
    return AgentRequest.model_validate(fields)


def test_enums_carry_the_seed_values() -> None:
    assert [s.value for s in ResponseStatus] == ["success", "error", "partial", "pending", "cancelled"]
    assert [e.value for e in ErrorType] == [
        "validation",
        "execution",
        "timeout",
        "resource",
        "permission",
        "network",
        "unknown",
    ]
    assert ResponseStatus("partial") is ResponseStatus.PARTIAL
    assert isinstance(ErrorType.TIMEOUT, str)


def test_request_defaults_and_none_mean_empty() -> None:
    request = _request(inputs=None, context=None)
    assert (request.inputs, request.context, request.constraints, request.expected_output) == ({}, {}, {}, None)
    meta = request.metadata
    assert (meta.profile, meta.priority, meta.timeout_seconds, meta.parent_context, meta.tags) == (
        "default",
        5,
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"goal": ""}, "goal", "goal must be a non-empty string"),
        ({"goal": "   "}, "goal", "goal must be a non-empty string"),
        ({"task": ""}, "task", "task must be a non-empty string"),
        ({"metadata": {}}, "metadata", "trace_id is required"),
        ({"metadata": {"trace_id": " "}}, "metadata.trace_id", "trace_id must be a non-empty string"),
        ({"metadata": {"trace_id": "t", "priority": 11}}, "metadata.priority", "between 0 (lowest) and 10"),
        ({"metadata": {"trace_id": "t", "priority": -1}}, "metadata.priority", "got -1"),
        ({"metadata": {"trace_id": "t", "timeout_seconds": -5}}, "metadata.timeout_seconds", "positive number"),
        ({"metadata": {"trace_id": "t", "timeout_seconds": 0}}, "metadata.timeout_seconds", "positive number"),
        ({"metadata": {"trace_id": "t", "timeout_seconds": float("inf")}}, "metadata.timeout_seconds", "finite"),
        ({"metadata": {"trace_id": "t", "timeout_seconds": float("nan")}}, "metadata.timeout_seconds", "got nan"),
    ],
)
def test_bad_requests_are_rejected_with_a_message_naming_the_field(
    overrides: dict[str, object], field: str, words: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        _request(**overrides)
    described = describe_validation_error(caught.value)
    assert described.startswith(f"{field}: ")
    assert words in described


def test_priority_bounds_are_inclusive() -> None:
    assert RequestMetadata(trace_id="a", priority=0).priority == 0
    assert RequestMetadata(trace_id="a", priority=10).priority == 10


def test_metadata_and_error_are_frozen() -> None:
    meta = RequestMetadata(trace_id="a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        meta.priority = 9  # type: ignore[misc]
    error = AgentError(type=ErrorType.EXECUTION, message="boom")
    with pytest.raises(dataclasses.FrozenInstanceError):
        error.recoverable = True  # type: ignore[misc]


def test_assigning_a_bad_value_to_a_request_is_rejected() -> None:
    request = _request()
    with pytest.raises(ValidationError, match="goal must be a non-empty string"):
        request.goal = ""


def test_metadata_to_dict_is_plain_json() -> None:
    meta = RequestMetadata(trace_id="a", timeout_seconds=2, tags={"team": "x"})
    as_dict = meta.to_dict()
    assert as_dict == {
        "trace_id": "a",
        "profile": "default",
        "priority": 5,
        "timeout_seconds": 2.0,
        "parent_context": None,
        "tags": {"team": "x"},
    }
    assert json.loads(json.dumps(as_dict)) == as_dict


def test_success_requires_a_result_and_error_requires_an_error() -> None:
    with pytest.raises(ValidationError, match="a SUCCESS response requires a result"):
        success_response(None)
    with pytest.raises(ValidationError, match="an ERROR response requires an error"):
        AgentResponse(status=ResponseStatus.ERROR)
    assert AgentResponse(status="partial").status is ResponseStatus.PARTIAL  # type: ignore[arg-type]


def test_error_message_must_say_something() -> None:
    with pytest.raises(ValidationError, match="message must be a non-empty"):
        error_response(ErrorType.EXECUTION, " ")
    with pytest.raises(ValidationError, match="retry_after must be zero or a positive"):
        error_response("timeout", "slow", retry_after=-1)
    for endless in (float("nan"), float("inf")):  # JSON has neither: they would not survive a round trip
        with pytest.raises(ValidationError, match=r"retry_after must be .* \(finite\), got"):
            error_response("timeout", "slow", retry_after=endless)


def test_helpers_build_the_shapes_the_seed_shows() -> None:
    ok = success_response({"steps": [1]}, trace=[{"event": "plan:complete"}], metadata={"tool_count": 1})
    assert ok.is_success() and not ok.is_error()
    assert (ok.result, ok.trace, ok.metadata, ok.error) == (
        {"steps": [1]},
        [{"event": "plan:complete"}],
        {"tool_count": 1},
        None,
    )
    bad = error_response("timeout", "Execution timeout after 3s", {"partial_result": 1}, True, 5.0)
    assert bad.is_error() and not bad.is_success()
    assert bad.error == AgentError(
        type=ErrorType.TIMEOUT,
        message="Execution timeout after 3s",
        details={"partial_result": 1},
        recoverable=True,
        retry_after=5.0,
    )
    with pytest.raises(ValueError, match="'fatal' is not a valid ErrorType"):
        error_response("fatal", "x")


def test_timestamp_is_generated_as_iso_8601_utc() -> None:
    before = datetime.now(UTC)
    stamp = success_response("done").timestamp
    assert stamp.endswith("Z")
    parsed = datetime.fromisoformat(stamp)
    assert parsed.utcoffset() is not None and not parsed.utcoffset()
    assert abs((parsed - before).total_seconds()) < 60


def test_given_timestamps_are_checked_and_kept_in_utc() -> None:
    shifted = AgentResponse(status=ResponseStatus.SUCCESS, result=1, timestamp="2025-01-01T12:00:00+02:00")
    assert shifted.timestamp == "2025-01-01T10:00:00.000Z"
    assert AgentResponse(status=ResponseStatus.SUCCESS, result=1, timestamp="2025-01-01T10:00:00.123Z").timestamp == (
        "2025-01-01T10:00:00.123Z"
    )
    with pytest.raises(ValidationError, match="timestamp must be ISO 8601"):
        AgentResponse(status=ResponseStatus.SUCCESS, result=1, timestamp="yesterday")
    with pytest.raises(ValidationError, match="timestamp must be in UTC"):
        AgentResponse(status=ResponseStatus.SUCCESS, result=1, timestamp="2025-01-01T10:00:00")


def test_request_and_response_survive_a_json_round_trip() -> None:
    request = _request(
        inputs={"origin": "NY", "n": 2},
        context={"previous_result": {"flights": [{"price": 299.5}]}},
        constraints={"max_api_calls": 3},
        expected_output="flights",
        metadata={
            "trace_id": "t",
            "priority": 9,
            "timeout_seconds": 1.5,
            "tags": {"a": "b"},
            "parent_context": {"p": 1},
        },
    )
    text = json.dumps(request.model_dump(mode="json"))
    assert AgentRequest.model_validate(json.loads(text)) == request
    response = error_response(
        ErrorType.NETWORK, "down", {"host": "x"}, True, 0.5, trace=[{"event": "e", "trace_id": "t"}], metadata={"k": 1}
    )
    text = json.dumps(response.model_dump(mode="json"))
    restored = AgentResponse.model_validate(json.loads(text))
    assert restored == response
    assert restored.error is not None and restored.error.type is ErrorType.NETWORK


def test_validate_request_and_response_recheck_values_built_without_validation() -> None:
    sneaky = AgentRequest.model_construct(goal="", task="t", metadata=RequestMetadata(trace_id="a"))
    with pytest.raises(ValidationError, match="goal must be a non-empty"):
        validate_request(sneaky)
    assert validate_request({"goal": "g", "task": "t", "metadata": {"trace_id": "a"}}).goal == "g"
    hollow = AgentResponse.model_construct(status=ResponseStatus.SUCCESS, result=None)
    with pytest.raises(ValidationError, match="requires a result"):
        validate_response(hollow)
    assert validate_response({"status": "cancelled"}).status is ResponseStatus.CANCELLED


def test_new_trace_ids_are_unique() -> None:
    assert len({new_trace_id() for _ in range(100)}) == 100


def test_agent_protocol_is_runtime_checkable() -> None:
    class Good:
        async def process(self, request: AgentRequest) -> AgentResponse:
            return success_response(request.goal)

    class Bad:
        pass

    assert isinstance(Good(), AgentProtocol)
    assert not isinstance(Bad(), AgentProtocol)


def test_orchestration_error_is_an_agentmap_error_carrying_the_response() -> None:
    response = error_response("execution", "step 'a' failed")
    exc = OrchestrationError("step 'a' failed", error=response.error, response=response)
    assert isinstance(exc, AgentMapError)
    assert exc.code == "orchestration-failed"
    assert exc.response is response and exc.error is response.error
    assert str(exc) == "step 'a' failed"


def test_the_types_are_dataclasses_as_the_contract_declares_them() -> None:
    meta = RequestMetadata(trace_id="a", priority=7)
    request = AgentRequest(goal="g", task="Do it", metadata=meta, inputs={"x": 1})
    response = error_response(ErrorType.TIMEOUT, "too slow", recoverable=True)
    for value in (meta, request, response, response.error):
        assert dataclasses.is_dataclass(value)
    assert dataclasses.fields(RequestMetadata)[0].name == "trace_id"
    assert dataclasses.replace(request, task="Do more").task == "Do more"
    with pytest.raises(ValidationError, match="priority must be between 0"):
        dataclasses.replace(meta, priority=11)  # replace validates like the constructor
    data = dataclasses.asdict(response)
    assert data["error"]["message"] == "too slow" and data["status"] is ResponseStatus.ERROR
    assert dataclasses.asdict(request)["metadata"] == {
        "trace_id": "a",
        "profile": "default",
        "priority": 7,
        "timeout_seconds": None,
        "parent_context": None,
        "tags": None,
    }
