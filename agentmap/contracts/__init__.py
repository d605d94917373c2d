"""The data types of the contracts AgentMap implements: validation only, no behaviour.

* Agent I/O (csv_specs/agents.md): `AgentRequest`, `RequestMetadata`, `AgentResponse`, `AgentError`, ...
* The decision engine (csv_specs/engine.md): `DecisionContext`, `AgentDecision`, `DecisionType`, `ToolCall`, ...
* The minimal agent output (csv_specs/run_agent.md): `AgentOutputMinimal`, `ToolTraceMinimal`, `AGENT_OUTPUT_SCHEMA`.
* The conversation log (csv_specs/evaluation.md): `ConversationLog`, `RunMetadata`, `Turn`, `StopReason`.
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
    # csv_specs/agents.md
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
    # csv_specs/engine.md
    "AgentDecision",
    "AgentEngineConfig",
    "DecisionContext",
    "DecisionType",
    "Message",
    "PendingAction",
    "ToolCall",
    "ToolExecutor",
    "ToolResult",
    # csv_specs/run_agent.md
    "AGENT_OUTPUT_SCHEMA",
    "AgentOutputMinimal",
    "ToolTraceMinimal",
    # csv_specs/evaluation.md
    "ConversationLog",
    "RunMetadata",
    "StopReason",
    "Turn",
]
