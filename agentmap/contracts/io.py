"""The agent input/output contract: `AgentRequest` in, `AgentResponse` out.

Every agent an orchestrator routes to accepts an `AgentRequest` and returns an `AgentResponse`, so
routing needs no special cases. The types are dataclasses, as the contract declares them (`dataclasses.replace`
and `asdict` work), built with pydantic's dataclass decorator: the contract's rules are enforced when a value is
built (or re-checked by `validate_request` / `validate_response`), and both types survive a JSON round trip
(`model_dump(mode="json")` then `model_validate`) unchanged, because they travel in LangGraph state and
checkpoints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic.dataclasses import dataclass

from agentmap.contracts._dataclass import ModelMethods, fields_of
from agentmap.contracts._trace import new_trace_id, trace_event, utc_timestamp
from agentmap.errors import AgentMapError, ErrorCode

__all__ = [
    "AgentError",
    "AgentProtocol",
    "AgentRequest",
    "AgentResponse",
    "ErrorType",
    "OrchestrationError",
    "RequestMetadata",
    "ResponseStatus",
    "describe_validation_error",
    "error_response",
    "new_trace_id",
    "success_response",
    "trace_event",
    "utc_timestamp",
    "validate_request",
    "validate_response",
]


class ResponseStatus(StrEnum):
    """How an agent's work ended."""

    SUCCESS = "success"
    """Task completed successfully."""
    ERROR = "error"
    """Task failed unrecoverably."""
    PARTIAL = "partial"
    """Task partially completed."""
    PENDING = "pending"
    """Task pending (async/background)."""
    CANCELLED = "cancelled"
    """Task cancelled."""


class ErrorType(StrEnum):
    """The class of an `AgentError`."""

    VALIDATION = "validation"
    """Input validation failed."""
    EXECUTION = "execution"
    """Execution error."""
    TIMEOUT = "timeout"
    """Task timeout."""
    RESOURCE = "resource"
    """Resource unavailable."""
    PERMISSION = "permission"
    """Permission denied."""
    NETWORK = "network"
    """Network error."""
    UNKNOWN = "unknown"
    """Unknown error."""


def _blank_to_missing(value: Any) -> Any:
    return {} if value is None else value


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class RequestMetadata(ModelMethods):
    """Standard metadata for trace propagation and execution control (immutable).

    Attributes:
        trace_id: Unique trace id (required, non-empty); see `new_trace_id`.
        profile: Execution profile: selects the tool allowlist, budget and sandbox.
        priority: 0 (lowest) to 10 (highest); a queue serves higher priorities first.
        timeout_seconds: Deadline for the work, in seconds (positive), or None for no deadline.
        parent_context: The parent's trace context, when this request was made on behalf of another.
        tags: Custom string tags.
    """

    trace_id: str
    profile: str = "default"
    priority: int = 5
    timeout_seconds: float | None = None
    parent_context: dict[str, Any] | None = None
    tags: dict[str, str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _require_trace_id(cls, data: Any) -> Any:
        fields = fields_of(data)
        positional = getattr(data, "args", None) or ()
        if isinstance(fields, Mapping | type(None)) and not positional and (fields or {}).get("trace_id") is None:
            raise ValueError(
                "trace_id is required: pass a unique id for the request, e.g. RequestMetadata(trace_id=new_trace_id())"
            )
        return data

    @field_validator("trace_id")
    @classmethod
    def _trace_id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("trace_id must be a non-empty string; use new_trace_id() to make one")
        return value

    @field_validator("priority")
    @classmethod
    def _priority_in_range(cls, value: int) -> int:
        if not 0 <= value <= 10:
            raise ValueError(f"priority must be between 0 (lowest) and 10 (highest), got {value}")
        return value

    @field_validator("timeout_seconds")
    @classmethod
    def _timeout_positive(cls, value: float | None) -> float | None:
        if value is not None and not 0 < value < math.inf:
            raise ValueError(
                f"timeout_seconds must be a positive number of seconds (finite; None means no deadline), got {value}"
            )
        return value

    def to_dict(self) -> dict[str, Any]:
        """Return the metadata as a plain, JSON-serialisable dict."""
        return self.model_dump(mode="json")


@dataclass(config=ConfigDict(validate_assignment=True, extra="forbid"))
class AgentRequest(ModelMethods):
    """Canonical agent input.

    Attributes:
        goal: High-level objective (non-empty).
        task: The specific task for this invocation, action first (non-empty).
        metadata: Trace id, profile, priority, timeout.
        inputs: Agent-specific input data (default `{}`).
        context: Results of previous steps, for chaining without global state (default `{}`).
        constraints: Execution constraints (`max_api_calls`, `max_cost_usd`, `allowed_tools`,
            `blocked_domains`), enforced before execution (default `{}`).
        expected_output: A description of the expected output.
    """

    goal: str
    task: str
    metadata: RequestMetadata
    inputs: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    constraints: dict[str, Any] = Field(default_factory=dict)
    expected_output: str | None = None

    @field_validator("goal", "task")
    @classmethod
    def _not_blank(cls, value: str, info: Any) -> str:
        if not value.strip():
            what = "the high-level objective" if info.field_name == "goal" else "the specific task to do"
            raise ValueError(f"{info.field_name} must be a non-empty string describing {what}")
        return value

    @field_validator("inputs", "context", "constraints", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return _blank_to_missing(value)


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class AgentError(ModelMethods):
    """Structured error information (immutable).

    Attributes:
        type: The class of error.
        message: What went wrong, in words a person can act on (non-empty).
        details: Additional details.
        recoverable: Whether retrying may succeed.
        retry_after: Seconds to wait before a retry (non-negative).
        trace_context: Context for debugging (the trace id, the step, ...).
    """

    type: ErrorType
    message: str
    details: dict[str, Any] | None = None
    recoverable: bool = False
    retry_after: float | None = None
    trace_context: dict[str, Any] | None = None

    @field_validator("message")
    @classmethod
    def _message_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("message must be a non-empty, human-readable description of the error")
        return value

    @field_validator("retry_after")
    @classmethod
    def _retry_after_not_negative(cls, value: float | None) -> float | None:
        if value is not None and not 0 <= value < math.inf:
            raise ValueError(f"retry_after must be zero or a positive number of seconds (finite), got {value}")
        return value


@dataclass(config=ConfigDict(validate_assignment=True, extra="forbid"))
class AgentResponse(ModelMethods):
    """Canonical agent output.

    Attributes:
        status: How the work ended; SUCCESS requires `result`, ERROR requires `error`.
        result: The result data.
        error: The error, when the work failed.
        trace: Execution trace events, each a dict with an `"event"` key and the request's trace id.
        metadata: Timing, cost and resource usage (default `{}`).
        timestamp: ISO 8601 UTC; generated when not given.
    """

    status: ResponseStatus
    result: Any = None
    error: AgentError | None = None
    trace: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    timestamp: str = Field(default_factory=utc_timestamp)

    @field_validator("trace", "metadata", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any, info: Any) -> Any:
        if value is None:
            return [] if info.field_name == "trace" else {}
        return value

    @field_validator("timestamp")
    @classmethod
    def _iso_utc(cls, value: str) -> str:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"timestamp must be ISO 8601, e.g. 2025-01-01T10:00:00.123Z; got {value!r}") from None
        if parsed.tzinfo is None:
            raise ValueError(f"timestamp must be in UTC with a zone, e.g. 2025-01-01T10:00:00.123Z; got {value!r}")
        if parsed.utcoffset():
            return parsed.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return value

    @model_validator(mode="after")
    def _status_fields(self) -> AgentResponse:
        if self.status is ResponseStatus.SUCCESS and self.result is None:
            raise ValueError("a SUCCESS response requires a result; return error_response(...) when there is none")
        if self.status is ResponseStatus.ERROR and self.error is None:
            raise ValueError("an ERROR response requires an error; build it with error_response(type, message)")
        return self

    def is_success(self) -> bool:
        """Whether the status is SUCCESS."""
        return self.status is ResponseStatus.SUCCESS

    def is_error(self) -> bool:
        """Whether the status is ERROR."""
        return self.status is ResponseStatus.ERROR


@runtime_checkable
class AgentProtocol(Protocol):
    """What every routable agent implements."""

    async def process(self, request: AgentRequest) -> AgentResponse:
        """Do the work `request` asks for; failures are ERROR responses, not exceptions."""
        ...


class OrchestrationError(AgentMapError, RuntimeError):
    """An orchestrated request failed unrecoverably (raised only when configured to raise).

    Attributes:
        error: The `AgentError` that ended the orchestration.
        response: The ERROR response the orchestrator would have returned.
    """

    default_code = ErrorCode.ORCHESTRATION_FAILED

    def __init__(self, message: str, *, error: AgentError | None = None, response: AgentResponse | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.response = response


def success_response(
    result: Any, trace: list[dict[str, Any]] | None = None, metadata: dict[str, Any] | None = None
) -> AgentResponse:
    """Build a SUCCESS response.

    Raises:
        pydantic.ValidationError: If `result` is None (a SUCCESS requires a result).
    """
    return AgentResponse(status=ResponseStatus.SUCCESS, result=result, trace=trace or [], metadata=metadata or {})


def error_response(
    error_type: ErrorType | str,
    message: str,
    details: dict[str, Any] | None = None,
    recoverable: bool = False,
    retry_after: float | None = None,
    *,
    trace: list[dict[str, Any]] | None = None,
    metadata: dict[str, Any] | None = None,
    trace_context: dict[str, Any] | None = None,
) -> AgentResponse:
    """Build an ERROR response carrying an `AgentError`.

    Args:
        error_type: An `ErrorType` or its value (`"timeout"`).
        message: What went wrong and what to change.
        details: Additional details (a partial result, the offending value, ...).
        recoverable: Whether a retry may succeed.
        retry_after: Seconds to wait before retrying.
        trace: Trace events.
        metadata: Response metadata.
        trace_context: Context for debugging.
    """
    error = AgentError(
        type=ErrorType(error_type),
        message=message,
        details=details,
        recoverable=recoverable,
        retry_after=retry_after,
        trace_context=trace_context,
    )
    return AgentResponse(status=ResponseStatus.ERROR, error=error, trace=trace or [], metadata=metadata or {})


def validate_request(request: AgentRequest | Mapping[str, Any]) -> AgentRequest:
    """Check every rule of the contract on `request` (a request, or a dict such as one read from state).

    Returns:
        The validated request (a new one when a dict was given).

    Raises:
        pydantic.ValidationError: A `ValueError` naming each field that breaks a rule.
    """
    data = request.model_dump() if isinstance(request, AgentRequest) else request
    return AgentRequest.model_validate(data)


def validate_response(response: AgentResponse | Mapping[str, Any]) -> AgentResponse:
    """Check every rule of the contract on `response` (a response, or its dict form).

    Returns:
        The validated response.

    Raises:
        pydantic.ValidationError: A `ValueError` naming each field that breaks a rule.
    """
    data = response.model_dump() if isinstance(response, AgentResponse) else response
    return AgentResponse.model_validate(data)


def describe_validation_error(exc: PydanticValidationError) -> str:
    """Condense a pydantic validation error into one line per problem: `field: message`."""
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {msg}" if where else msg)
    return "; ".join(lines)
