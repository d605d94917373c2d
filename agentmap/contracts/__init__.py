"""The data types of the contracts AgentMap implements: validation only, no behaviour.

* Agent I/O (seed 002): `AgentRequest`, `RequestMetadata`, `AgentResponse`, `ResponseStatus`, `AgentError`, ...
* The decision engine (seed 003): `DecisionContext`, `AgentDecision`, `DecisionType`, `ToolCall`, `ToolResult`, ...
* The minimal agent output (seed 001): `AgentOutputMinimal`, `ToolTraceMinimal`, `AGENT_OUTPUT_SCHEMA`.
* The conversation log (seed 000): `ConversationLog`, `RunMetadata`, `Turn`, `StopReason`.
"""

from agentmap.contracts.conversation import ConversationLog, RunMetadata, StopReason, Turn
from agentmap.contracts.engine import (
    AgentDecision,
    AgentEngineConfig,
    DecisionContext,
    DecisionType,
    Message,
    PendingAction,
)
from agentmap.contracts.io import (
    AgentError,
    AgentProtocol,
    AgentRequest,
    AgentResponse,
    ErrorType,
    OrchestrationError,
    RequestMetadata,
    ResponseStatus,
    error_response,
    success_response,
    validate_request,
    validate_response,
)
from agentmap.contracts.minimal import AGENT_OUTPUT_SCHEMA, AgentOutputMinimal, ToolTraceMinimal
from agentmap.contracts.tools import ToolCall, ToolExecutor, ToolResult

__all__ = [  # noqa: RUF022 (grouped by contract)
    # seed 002
    "AgentError",
    "AgentProtocol",
    "AgentRequest",
    "AgentResponse",
    "ErrorType",
    "OrchestrationError",
    "RequestMetadata",
    "ResponseStatus",
    "error_response",
    "success_response",
    "validate_request",
    "validate_response",
    # seed 003
    "AgentDecision",
    "AgentEngineConfig",
    "DecisionContext",
    "DecisionType",
    "Message",
    "PendingAction",
    "ToolCall",
    "ToolExecutor",
    "ToolResult",
    # seed 001
    "AGENT_OUTPUT_SCHEMA",
    "AgentOutputMinimal",
    "ToolTraceMinimal",
    # seed 000
    "ConversationLog",
    "RunMetadata",
    "StopReason",
    "Turn",
]
