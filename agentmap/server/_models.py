"""Request bodies of the LangGraph server protocol, as `langgraph-sdk` sends them.

Fields the SDK may send but this server does not offer are listed per body: a request that sets one gets a
422 naming it, rather than being quietly run without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentmap.errors import AgentMapError, ErrorCode
from agentmap.runtime.durable import Durability
from agentmap.runtime.values import value_problem
from agentmap.server._records import ServerThreadStatus

__all__ = [
    "THREAD_ID_RULE",
    "ApiError",
    "AssistantSearch",
    "CronCreate",
    "CronSearch",
    "CronUpdate",
    "HistoryRequest",
    "LatestVersion",
    "ProtocolCode",
    "RunCreate",
    "ThreadCreate",
    "ThreadSearch",
    "VersionSearch",
    "check_json",
    "check_thread_id",
    "refuse_unsupported",
    "valid_thread_id",
]


ProtocolCode = Literal[
    "not-supported",
    "bad-request",
    "thread-exists",
    "thread-graph-mismatch",
    "assistant-not-found",
    "version-not-found",
    "thread-not-found",
    "run-not-found",
    "checkpoint-not-found",
    "cron-not-found",
    "bad-event-id",
    "unauthorized",
    "body-too-large",
    "internal-error",
    "http-error",
    "busy",
]
"""The server protocol's own error codes (`csv_specs/serve.md`), which are not `ErrorCode` members: those of
`ApiError` and those the server answers outside a route (a missing API key, a body over the limit, a failure)."""


class ApiError(AgentMapError):
    """An error with its HTTP status (404 unknown assistant, 409 busy thread, 422 not supported, ...) and the
    headers its answer carries (`Retry-After` of a quota, an auth handler's own)."""

    def __init__(
        self,
        status: int,
        code: ErrorCode | ProtocolCode,
        message: str,
        *,
        hint: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.code = ErrorCode.coerce(code)
        self.status = status
        self.headers = dict(headers) if headers else None


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")


class AssistantSearch(_Body):
    """`POST /assistants/search`."""

    graph_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)


class VersionSearch(_Body):
    """`POST /assistants/{assistant_id}/versions` (`assistants.get_versions`)."""

    metadata: dict[str, Any] | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)


class LatestVersion(_Body):
    """`POST /assistants/{assistant_id}/latest` (`assistants.set_latest`)."""

    version: int = Field(ge=1)


THREAD_ID_RULE = "a thread id is 1 to 256 characters: letters, digits and - _ . : @"


def valid_thread_id(thread_id: str) -> bool:
    """Whether `thread_id` follows `THREAD_ID_RULE` (so it can be named in a URL path and stored as it is)."""
    return 0 < len(thread_id) <= 256 and thread_id.isascii() and all(c.isalnum() or c in "-_.:@" for c in thread_id)


def check_thread_id(thread_id: str) -> str:
    """`thread_id` itself, or a 422 naming the rule it breaks."""
    if not valid_thread_id(thread_id):
        shown = thread_id[:40].encode("utf-8", "backslashreplace").decode()
        raise ApiError(422, "bad-request", f"thread id {shown!r} is refused: {THREAD_ID_RULE}", hint="e.g. a UUID")
    return thread_id


def check_json(value: Any, where: str) -> None:
    """Refuse a value a run cannot keep (`runtime.values.value_problem`: a lone surrogate, NaN, an integer beyond
    64 bits, nesting deeper than 100 levels) before a run starts, naming where: the check of every run's input, also
    those that came by MCP or A2A rather than in a request body (which `_bodies` reads with the same rules).

    Raises:
        ApiError: 422 `bad-input` with the place of the value (`input.name`).
    """
    problem = value_problem(value)
    if problem is not None:
        raise ApiError(422, ErrorCode.BAD_INPUT, problem.message(where), hint=problem.hint)


class ThreadCreate(_Body):
    """`POST /threads`."""

    thread_id: str | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None

    @field_validator("thread_id")
    @classmethod
    def _checked(cls, value: str | None) -> str | None:
        if value is not None and not valid_thread_id(value):
            raise ValueError(THREAD_ID_RULE)
        return value


class ThreadSearch(_Body):
    """`POST /threads/search`."""

    metadata: dict[str, Any] | None = None
    ids: list[str] | None = None
    status: ServerThreadStatus | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)


class HistoryRequest(_Body):
    """`POST /threads/{thread_id}/history`."""

    limit: int = Field(10, ge=1, le=1000)
    before: str | dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None


class StateUpdate(_Body):
    """`POST /threads/{thread_id}/state` (`threads.update_state`)."""

    values: Any = None
    as_node: str | None = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None


class RunCreate(_Body):
    """The body of every run: `POST /threads/{id}/runs[/wait|/stream]`, `/runs[/wait|/stream]`, `/runs/batch`."""

    assistant_id: str
    input: dict[str, Any] | None = None
    command: dict[str, Any] | None = None
    stream_mode: str | list[str] | None = None
    config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    checkpoint: dict[str, Any] | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    on_disconnect: Literal["cancel", "continue"] | None = None
    on_completion: Literal["delete", "keep"] | None = None
    durability: Durability | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    checkpoint_during: bool | None = None
    strict_resume: bool | None = None
    thread_id: str | None = None
    webhook: str | None = None
    """A URL POSTed the run when it ends or pauses (its host must be allowed by the server)."""

    @model_validator(mode="after")
    def _no_input_with_a_command(self) -> RunCreate:
        """An empty input sent with a command is no input, as LangGraph's server takes it (LangChain's Agent Chat UI
        resumes with `{"input": {}, "command": {"resume": ...}}`); a command with an input that says something is
        refused when the run starts."""
        if self.command is not None and self.input == {}:
            self.input = None
        return self


class CronCreate(_Body):
    """`POST /runs/crons` and `POST /threads/{id}/runs/crons`: a schedule and the run each tick starts."""

    assistant_id: str
    schedule: str
    input: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    end_time: datetime | None = None
    enabled: bool = True
    timezone: str | None = None
    stream_mode: str | list[str] | None = None
    durability: Durability | None = None
    checkpoint_during: bool | None = None
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    webhook: str | None = None


class CronUpdate(_Body):
    """`PATCH /runs/crons/{cron_id}`: the fields to change (an explicit `end_time: null` clears it)."""

    schedule: str | None = None
    end_time: datetime | None = None
    input: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    enabled: bool | None = None
    timezone: str | None = None
    stream_mode: str | list[str] | None = None
    durability: Durability | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    webhook: str | None = None


class CronSearch(_Body):
    """`POST /runs/crons/search` and `POST /runs/crons/count`."""

    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)


_UNSUPPORTED: dict[type[BaseModel], tuple[str, ...]] = {
    AssistantSearch: ("sort_by", "sort_order", "select"),
    ThreadCreate: ("supersteps", "ttl"),
    ThreadSearch: ("values", "sort_by", "sort_order", "select", "extract"),
    HistoryRequest: ("select",),
    RunCreate: ("context", "after_seconds", "feedback_keys", "langsmith_tracer"),
    CronCreate: ("context",),
    CronUpdate: ("context",),
    CronSearch: ("sort_by", "sort_order", "select"),
}


def refuse_unsupported(body: BaseModel, what: str) -> None:
    """Raise a 422 when `body` sets a field this server does not offer.

    Raises:
        ApiError: Naming the field and what the server offers instead.
    """
    extra = body.model_extra or {}
    for name in _UNSUPPORTED.get(type(body), ()):
        if extra.get(name) not in (None, {}, []):
            raise ApiError(
                422,
                "not-supported",
                f"{what}: {name!r} is not supported by agentmap serve",
                hint="leave it out; csv_specs/serve.md lists what the server offers",
            )
    if isinstance(body, RunCreate) and body.stream_subgraphs:
        raise ApiError(422, "not-supported", f"{what}: stream_subgraphs is not supported by agentmap serve")
