"""How the engine reads replies and answers: questions, refusals, confirmations, destructive tools."""

from __future__ import annotations

import pytest

from agentmap.contracts.tools import ToolResult
from agentmap.llm._replies import (
    ConfirmationReply,
    confirmation_policy,
    describe_action,
    is_question,
    read_confirmation,
    tool_result_text,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Which task do you mean?", True),
        ("Sure. Which one should I update?", True),
        ('Did you mean "buy milk"?"', True),
        ("Hello! How can I help you today?", False),
        ("Done. Anything else?", False),
        ("I added it.", False),
        ("Is it this one? I think so.", False),
        ("I can't do that. Would you like to add a task instead?", False),
    ],
)
def test_is_question(text: str, expected: bool) -> None:
    assert is_question(text) is expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("yes", ConfirmationReply.CONFIRMED),
        ("Yes!", ConfirmationReply.CONFIRMED),
        ("y", ConfirmationReply.CONFIRMED),
        ("Sure, go ahead", ConfirmationReply.CONFIRMED),
        ("please do", ConfirmationReply.CONFIRMED),
        ("Confirm.", ConfirmationReply.CONFIRMED),
        ("no", ConfirmationReply.DECLINED),
        ("Nope", ConfirmationReply.DECLINED),
        ("Don’t do it", ConfirmationReply.DECLINED),
        ("do not delete it", ConfirmationReply.DECLINED),
        ("cancel that", ConfirmationReply.DECLINED),
        ("add a task instead", ConfirmationReply.OTHER),
        ("yesterday's task", ConfirmationReply.OTHER),
        ("", ConfirmationReply.OTHER),
    ],
)
def test_read_confirmation(answer: str, expected: ConfirmationReply) -> None:
    assert read_confirmation(answer) is expected


def test_default_policy_confirms_destructive_verbs_only() -> None:
    needs = confirmation_policy(None)
    assert needs("delete_task") and needs("removeItem") and needs("purge-cache")
    assert not needs("add_task")
    assert not needs("complete_task")
    assert not needs("list_deleted_tasks")


def test_explicit_policies() -> None:
    assert confirmation_policy(["complete_task"])("complete_task")
    assert not confirmation_policy(["complete_task"])("delete_task")
    assert not confirmation_policy(())("delete_task")
    assert confirmation_policy(lambda name: name.endswith("!"))("go!")


def test_describe_action_prefers_the_models_question() -> None:
    assert describe_action("delete_task", {"task_id": 3}, "Really delete 'milk'?") == "Really delete 'milk'?"
    assert describe_action("delete_task", {"task_id": 3}, "") == (
        "Please confirm: delete task (task_id=3). Reply yes to proceed or no to cancel."
    )


def test_tool_result_text() -> None:
    assert tool_result_text(ToolResult(success=True, data="plain")) == "plain"
    assert tool_result_text(ToolResult(success=True, data={"id": 1})) == '{"id": 1}'
    failed = ToolResult(success=False, error="no task 9", error_code="execution_error")
    assert tool_result_text(failed) == "Error (execution_error): no task 9"
