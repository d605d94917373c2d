"""The offline stand-in model: deterministic replies, tool choice, argument filling, clarifications."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from agentmap.llm.offline import OfflineChatModel


def add_task(title: str, priority: Literal["low", "normal", "high"] = "normal") -> dict[str, Any]:
    """Create a new task with a title."""
    return {"title": title, "priority": priority}


def delete_task(task_id: int) -> str:
    """Delete a task by its id."""
    return "deleted"


def list_tasks() -> list[str]:
    """List all tasks."""
    return []


def update_task(task_id: int, title: str) -> str:
    """Change the title of a task."""
    return "ok"


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Get the current weather for a city."""
    return "sunny"


TOOLS: list[Any] = [add_task, delete_task, list_tasks, update_task, get_weather]


def ask(message: str, tools: list[Any] = TOOLS, **kwargs: Any) -> AIMessage:
    reply = OfflineChatModel().bind_tools(tools, **kwargs).invoke([SystemMessage("be helpful"), HumanMessage(message)])
    assert isinstance(reply, AIMessage)
    return reply


def calls(reply: AIMessage) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["args"]) for c in reply.tool_calls]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("add a task buy milk", [("add_task", {"title": "buy milk"})]),
        ('create task "call mom" priority high', [("add_task", {"title": "call mom", "priority": "high"})]),
        ("delete task 3", [("delete_task", {"task_id": 3})]),
        ("please remove task #12", [("delete_task", {"task_id": 12})]),
        ("show my tasks", [("list_tasks", {})]),
        ("update task 2 to buy bread", [("update_task", {"task_id": 2, "title": "buy bread"})]),
        ("what's the weather in Paris?", [("get_weather", {"city": "Paris"})]),
        ("weather city=London unit=fahrenheit", [("get_weather", {"city": "London", "unit": "fahrenheit"})]),
    ],
)
def test_picks_the_matching_tool_and_fills_its_arguments(message: str, expected: list[Any]) -> None:
    reply = ask(message)
    assert calls(reply) == expected
    assert reply.response_metadata["finish_reason"] == "tool_calls"


def test_asks_a_question_when_a_required_argument_is_missing() -> None:
    reply = ask("remove a task")
    assert reply.tool_calls == []
    assert reply.text == "I can delete task for you, but I need more details: what is the task id?"


@pytest.mark.parametrize("message", ["tell me a joke", "can you help me with my tasks?"])
def test_no_tool_when_nothing_specific_matches(message: str) -> None:
    reply = ask(message)
    assert reply.tool_calls == []
    assert reply.text == f"[offline] {message}"


def test_greets_a_greeting() -> None:
    assert ask("Hello!").text == "Hello! How can I help you today?"


def test_summarizes_tool_results_after_the_call() -> None:
    model = OfflineChatModel().bind_tools(TOOLS)
    first = model.invoke([HumanMessage("delete task 3")])
    assert isinstance(first, AIMessage)
    call_id = first.tool_calls[0]["id"]
    assert call_id
    ok = model.invoke([HumanMessage("delete task 3"), first, ToolMessage("deleted", tool_call_id=call_id)])
    assert ok.text == "Done: delete task returned deleted."
    failed = model.invoke(
        [HumanMessage("delete task 3"), first, ToolMessage("no task 3", tool_call_id=call_id, status="error")]
    )
    assert failed.text == "Delete task failed: no task 3"


def test_replies_are_deterministic() -> None:
    first, second = ask("delete task 3"), ask("delete task 3")
    assert first.tool_calls == second.tool_calls
    assert first.usage_metadata == second.usage_metadata
    assert ask("tell me a joke").text == ask("tell me a joke").text


def test_replies_are_labelled_as_a_stand_in_with_word_counts() -> None:
    reply = OfflineChatModel(model_name="demo").invoke([HumanMessage("three little words")])
    assert reply.response_metadata["model_provider"] == "offline"
    assert reply.response_metadata["stand_in"] is True
    assert reply.usage_metadata == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}


def test_scripted_responses_win() -> None:
    model = OfflineChatModel(responses={"capital of france": "Paris."})
    assert model.bind_tools(TOOLS).invoke("What is the capital of France?").text == "Paris."


def test_tool_choice_forces_or_forbids_a_call() -> None:
    assert calls(ask("tell me a joke", tool_choice="list_tasks")) == [("list_tasks", {})]
    assert ask("delete task 3", tool_choice="none").tool_calls == []
    forced = ask("tell me a joke", tools=[list_tasks], tool_choice="any")
    assert calls(forced) == [("list_tasks", {})]


async def test_async_matches_sync() -> None:
    model = OfflineChatModel().bind_tools(TOOLS)
    sync = model.invoke([HumanMessage("delete task 3")])
    async_reply = await model.ainvoke([HumanMessage("delete task 3")])
    assert isinstance(sync, AIMessage) and isinstance(async_reply, AIMessage)
    assert sync.tool_calls == async_reply.tool_calls
