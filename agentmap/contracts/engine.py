"""The decision engine's data types (csv_specs/engine.md): `DecisionContext` in, `AgentDecision` out.

`ToolCall`, `ToolResult` and `ToolExecutor` live in `agentmap.contracts.tools` (one executor serves
the engine, the orchestration worker and the `tool` agent type) and are re-exported here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentmap.contracts.tools import ToolCall, ToolExecutor, ToolResult

__all__ = [
    "AgentDecision",
    "AgentEngineConfig",
    "DecisionContext",
    "DecisionType",
    "Message",
    "PendingAction",
    "ToolCall",
    "ToolExecutor",
    "ToolResult",
]


class DecisionType(StrEnum):
    """What the engine decided to do with a message.

    Attributes:
        RESPOND_ONLY: A plain reply (conversation, a refusal, or one of the error replies).
        INVOKE_TOOL: Tools were called; `tool_calls` lists them and `response_text` reports the outcome.
        ASK_CLARIFICATION: The model asks the user a question before acting.
        REQUEST_CONFIRMATION: A tool that needs confirmation was requested; it waits in `pending_action`.
    """

    RESPOND_ONLY = "RESPOND_ONLY"
    INVOKE_TOOL = "INVOKE_TOOL"
    ASK_CLARIFICATION = "ASK_CLARIFICATION"
    REQUEST_CONFIRMATION = "REQUEST_CONFIRMATION"


class Message(BaseModel):
    """One earlier message of the conversation.

    Attributes:
        role: Who wrote it: `"user"`, `"assistant"` or `"system"`.
        content: The text.
        timestamp: When it was written, if known.
    """

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant", "system"]
    content: str
    timestamp: datetime | None = None


class PendingAction(BaseModel):
    """A tool call waiting for the user's confirmation.

    The engine returns it in `AgentDecision.pending_action`; the caller stores it and passes it back
    as `DecisionContext.pending_confirmation` with the user's next message. The action runs only if
    that message confirms it ("yes", "confirm", ...).

    Attributes:
        action_id: A unique id for this request.
        tool_name: The tool to run once confirmed.
        parameters: Its arguments (excluding `user_id`).
        description: The question put to the user.
        created_at: When the confirmation was requested (UTC).
    """

    model_config = ConfigDict(frozen=True)

    action_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    tool_name: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    description: str = ""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def as_tool_call(self) -> ToolCall:
        """The tool call this action stands for."""
        return ToolCall(tool_name=self.tool_name, parameters=dict(self.parameters), id=self.action_id)


class DecisionContext(BaseModel):
    """Everything the engine needs to decide about one user message.

    Attributes:
        user_id: The authenticated user; passed to every tool call.
        message: The user's new message.
        conversation_id: Groups the decisions of one conversation in the logs.
        message_history: Earlier messages, oldest first (the engine uses the last
            `AgentEngineConfig.include_history_messages`).
        pending_confirmation: The action the previous decision asked the user to confirm, if any.
    """

    user_id: str
    message: str
    conversation_id: str
    message_history: list[Message] = Field(default_factory=list)
    pending_confirmation: PendingAction | None = None


class AgentDecision(BaseModel):
    """The engine's answer to a `DecisionContext`.

    Attributes:
        decision_type: What kind of decision this is.
        tool_calls: The tool calls executed while deciding (INVOKE_TOOL), else None.
        response_text: The reply to show the user.
        clarification_question: The question asked (ASK_CLARIFICATION), else None.
        pending_action: The action awaiting confirmation (REQUEST_CONFIRMATION), else None.
    """

    decision_type: DecisionType
    tool_calls: list[ToolCall] | None = None
    response_text: str | None = None
    clarification_question: str | None = None
    pending_action: PendingAction | None = None

    @model_validator(mode="after")
    def _check_shape(self) -> AgentDecision:
        if self.decision_type is DecisionType.REQUEST_CONFIRMATION and self.pending_action is None:
            raise ValueError("a REQUEST_CONFIRMATION decision needs a pending_action")
        if self.decision_type is DecisionType.ASK_CLARIFICATION and not self.clarification_question:
            raise ValueError("an ASK_CLARIFICATION decision needs a clarification_question")
        return self


@dataclass
class AgentEngineConfig:
    """Settings of `LLMAgentEngine`.

    Attributes:
        max_iterations: Model calls allowed per message before giving up.
        include_history_messages: How many of the latest history messages are sent to the model.
        temperature: Sampling temperature passed to every model call.
        timeout_seconds: Time limit of each model call.
    """

    max_iterations: int = 5
    include_history_messages: int = 10  # Last N messages
    temperature: float = 0.0
    timeout_seconds: int = 30

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ValueError(f"max_iterations must be at least 1, got {self.max_iterations}")
        if self.include_history_messages < 0:
            raise ValueError(f"include_history_messages must be 0 or more, got {self.include_history_messages}")
        if self.timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive, got {self.timeout_seconds}")
