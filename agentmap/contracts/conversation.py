"""The conversation log of csv_specs/evaluation.md: run metadata, turns and stop reasons.

A log is what the runner writes for every run and the evaluator reads back. The text format itself
(`Run metadata:` / `Conversation:`) lives in `agentmap.interface.logs`; these types only hold and validate
the data, so that every value they accept can be written and read back unchanged.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ConversationLog", "RunMetadata", "StopReason", "Turn"]

_ROLE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


class StopReason(StrEnum):
    """Why a run stopped; written as the `stop_reason` of the run metadata.

    Other strings are accepted in a log (an external runner may have its own); these are the ones
    AgentMap writes.
    """

    SINGLE_TURN = "single_turn"
    """A single-turn run: the one user message was answered."""
    COMPLETED = "completed"
    """A multi-turn run: every scripted user message was answered."""
    MAX_TURNS = "max_turns"
    """The run reached its `max_turns` limit before the script ended."""
    USER_EXIT = "user_exit"
    """An interactive session ended by the user."""
    AGENT_ERROR = "agent_error"
    """The agent raised or returned no usable reply; the last assistant turn holds a short error."""
    TIMEOUT = "timeout"
    """The agent did not reply in time; the last assistant turn says so."""
    MISSING_INPUT = "missing_input"
    """There was no user message to send; the last assistant turn says so."""


def _single_line(value: str, what: str) -> str:
    if not value or value != value.strip() or "\n" in value or "\r" in value:
        raise ValueError(f"{what} must be a non-empty single line without leading or trailing spaces, got {value!r}")
    return value


class RunMetadata(BaseModel):
    """The `Run metadata:` block: kept for repeatability, never used for scoring.

    Attributes:
        session_id: A unique id of the run (also the log file's stem when AgentMap writes it).
        mode: How user messages were produced (`synthetic` for scripted scenarios, `interactive`).
        scenario: The scenario's name.
        max_turns: The most user turns the run was allowed.
        stop_reason: Why the run stopped (see `StopReason`).
    """

    model_config = ConfigDict(frozen=True)

    session_id: str
    mode: str
    scenario: str
    max_turns: int = Field(ge=0)
    stop_reason: str

    @field_validator("session_id", "mode", "scenario", "stop_reason")
    @classmethod
    def _check_line(cls, value: str) -> str:
        return _single_line(value, "a run metadata value")


class Turn(BaseModel):
    """One message of the conversation.

    Attributes:
        role: Who spoke: `user` or `assistant` (other word-like roles are kept but break the contract).
        timestamp: When, to the second, in local time without a zone (the log's resolution).
        text: The message; line breaks are normalized to `\\n`.
    """

    model_config = ConfigDict(frozen=True)

    role: str
    timestamp: datetime
    text: str

    @field_validator("role")
    @classmethod
    def _check_role(cls, value: str) -> str:
        if not _ROLE.fullmatch(value):
            raise ValueError(f"a role is one word of letters, digits, '_' or '-', got {value!r}")
        return value

    @field_validator("timestamp")
    @classmethod
    def _to_seconds(cls, value: datetime) -> datetime:
        if value.tzinfo is not None:
            value = value.astimezone().replace(tzinfo=None)
        return value.replace(microsecond=0)

    @field_validator("text")
    @classmethod
    def _normalize_newlines(cls, value: str) -> str:
        return value.replace("\r\n", "\n").replace("\r", "\n")


class ConversationLog(BaseModel):
    """A whole log: the run metadata and the conversation, in order.

    Attributes:
        metadata: The `Run metadata:` block.
        turns: The `Conversation:` block.
    """

    model_config = ConfigDict(frozen=True)

    metadata: RunMetadata
    turns: tuple[Turn, ...] = ()
