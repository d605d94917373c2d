"""Seed 003's data types: fields, defaults and the shapes a decision may take."""

from __future__ import annotations

import dataclasses

import pydantic
import pytest

from agentmap.contracts import tools
from agentmap.contracts.engine import (
    AgentDecision,
    AgentEngineConfig,
    DecisionContext,
    DecisionType,
    Message,
    PendingAction,
    ToolCall,
    ToolExecutor,
    ToolResult,
)


def test_config_defaults_are_the_seeds() -> None:
    config = AgentEngineConfig()
    assert dataclasses.asdict(config) == {
        "max_iterations": 5,
        "include_history_messages": 10,
        "temperature": 0.0,
        "timeout_seconds": 30,
    }


@pytest.mark.parametrize(
    ("field", "value"), [("max_iterations", 0), ("include_history_messages", -1), ("timeout_seconds", 0)]
)
def test_config_rejects_values_that_cannot_work(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=field):
        AgentEngineConfig(**{field: value})


def test_decision_types_are_the_four_of_the_seed() -> None:
    assert [t.value for t in DecisionType] == [
        "RESPOND_ONLY",
        "INVOKE_TOOL",
        "ASK_CLARIFICATION",
        "REQUEST_CONFIRMATION",
    ]


def test_tool_types_are_the_shared_ones() -> None:
    assert ToolCall is tools.ToolCall
    assert ToolResult is tools.ToolResult
    assert ToolExecutor is tools.ToolExecutor


def test_context_fields_and_defaults() -> None:
    context = DecisionContext(user_id="u1", message="hi", conversation_id="c1")
    assert context.message_history == []
    assert context.pending_confirmation is None
    assert set(DecisionContext.model_fields) == {
        "user_id",
        "message",
        "conversation_id",
        "message_history",
        "pending_confirmation",
    }


def test_context_round_trips_through_json_with_a_pending_action() -> None:
    action = PendingAction(tool_name="delete_task", parameters={"task_id": 3}, description="Delete task 3?")
    context = DecisionContext(
        user_id="u1",
        message="yes",
        conversation_id="c1",
        message_history=[Message(role="user", content="delete 3"), Message(role="assistant", content="Sure?")],
        pending_confirmation=action,
    )
    again = DecisionContext.model_validate_json(context.model_dump_json())
    assert again == context
    assert again.pending_confirmation is not None
    assert again.pending_confirmation.as_tool_call() == ToolCall(
        tool_name="delete_task", parameters={"task_id": 3}, id=action.action_id
    )


def test_pending_actions_get_distinct_ids() -> None:
    assert PendingAction(tool_name="x").action_id != PendingAction(tool_name="x").action_id


def test_message_role_is_checked() -> None:
    with pytest.raises(pydantic.ValidationError, match="role"):
        Message(role="robot", content="beep")  # type: ignore[arg-type]


def test_decision_fields_default_to_none() -> None:
    decision = AgentDecision(decision_type=DecisionType.RESPOND_ONLY, response_text="hello")
    assert decision.model_dump() == {
        "decision_type": DecisionType.RESPOND_ONLY,
        "tool_calls": None,
        "response_text": "hello",
        "clarification_question": None,
        "pending_action": None,
    }


def test_confirmation_decision_needs_its_pending_action() -> None:
    with pytest.raises(pydantic.ValidationError, match="pending_action"):
        AgentDecision(decision_type=DecisionType.REQUEST_CONFIRMATION, response_text="sure?")


def test_clarification_decision_needs_its_question() -> None:
    with pytest.raises(pydantic.ValidationError, match="clarification_question"):
        AgentDecision(decision_type=DecisionType.ASK_CLARIFICATION)


def test_decision_serialises_its_type_as_the_seed_name() -> None:
    decision = AgentDecision(decision_type=DecisionType.INVOKE_TOOL, tool_calls=[ToolCall(tool_name="t")])
    assert decision.model_dump(mode="json")["decision_type"] == "INVOKE_TOOL"
