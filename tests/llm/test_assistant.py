"""The `assistant` agent type, run as CSV workflows through `agentmap.compile`.

The task example (graphs/task_assistant.csv) runs on the offline model with its SQLite tools; the same
node on `openai:` talks to the scripted local server through the real `ChatOpenAI`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import REPO, task_titles
from langgraph.checkpoint.memory import InMemorySaver
from openai_stub import OpenAIStub, error, text, tool_calls

import agentmap
from agentmap.cli.logs import render_logs
from agentmap.llm.decision_log import SQLiteDecisionLog
from agentmap.llm.engine import RATE_LIMIT_MESSAGE

EXAMPLE = REPO / "graphs" / "task_assistant.csv"
HEADER = "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next,Failure_Next,Tool_Source"


@pytest.fixture
def dbs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    tasks, log = tmp_path / "tasks.db", tmp_path / "decisions.db"
    monkeypatch.setenv("AGENTMAP_TASKS_DB", str(tasks))
    monkeypatch.setenv("AGENTMAP_DECISION_LOG", str(log))
    return tasks, log


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIStub() as server:
        yield server


def turn(app: agentmap.CompiledWorkflow, message: str, thread: str = "t1") -> dict[str, Any]:
    result = app.invoke({"message": message, "user_id": "ada"}, {"configurable": {"thread_id": thread}})
    assert result.success, result.state.get("errors")
    return dict(result.state)


def test_the_task_example_validates() -> None:
    assert [i for i in agentmap.validate(EXAMPLE) if i.severity == "error"] == []


def test_task_example_conversation_on_the_offline_model(dbs: tuple[Path, Path]) -> None:
    tasks_db, log_db = dbs
    app = agentmap.compile(EXAMPLE, checkpointer=InMemorySaver())

    assert turn(app, "hello")["decision_type"] == "RESPOND_ONLY"
    added = turn(app, "add a task buy milk")
    assert added["decision_type"] == "INVOKE_TOOL"
    assert "buy milk" in added["response"]
    turn(app, "add a task call mom")
    assert turn(app, "rename task 2 to call dad")["decision"]["tool_calls"][0]["parameters"] == {
        "task_id": 2,
        "title": "call dad",
    }
    turn(app, "complete task 1")
    assert task_titles(tasks_db, "ada") == {1: ("buy milk", True), 2: ("call dad", False)}

    asked = turn(app, "delete task 2")
    assert asked["decision_type"] == "REQUEST_CONFIRMATION"
    assert asked["pending_confirmation"]["tool_name"] == "delete_task"
    assert task_titles(tasks_db, "ada") == {1: ("buy milk", True), 2: ("call dad", False)}
    confirmed = turn(app, "yes")
    assert confirmed["decision_type"] == "INVOKE_TOOL"
    assert confirmed["pending_confirmation"] is None
    assert task_titles(tasks_db, "ada") == {1: ("buy milk", True)}

    assert turn(app, "delete task 1")["decision_type"] == "REQUEST_CONFIRMATION"
    declined = turn(app, "no")
    assert declined["decision_type"] == "RESPOND_ONLY"
    assert task_titles(tasks_db, "ada") == {1: ("buy milk", True)}

    clarify = turn(app, "update my task")
    assert clarify["decision_type"] == "ASK_CLARIFICATION"
    assert clarify["decision"]["clarification_question"] == clarify["response"]

    # The conversation accumulated in the checkpointed state: two messages per turn.
    assert len(clarify["history"]) == 2 * 10
    assert clarify["history"][-2] == {"role": "user", "content": "update my task"}

    log = SQLiteDecisionLog(log_db)
    decisions = log.list_decisions(user_id="ada", limit=None)
    assert [d.decision_type for d in decisions][-4:] == [
        "INVOKE_TOOL",
        "REQUEST_CONFIRMATION",
        "RESPOND_ONLY",
        "ASK_CLARIFICATION",
    ]
    assert len(decisions) == 10
    assert all(d.outcome_category != "PENDING" for d in decisions)
    deletes = [d for d in decisions if d.message == "yes"]
    assert [t.tool_name for t in log.get_tool_invocations(deletes[0].decision_id)] == ["delete_task"]
    assert "tool delete_task" in render_logs(log_db, limit=50)
    log.close()


def test_each_user_gets_their_own_tasks(dbs: tuple[Path, Path]) -> None:
    tasks_db, _ = dbs
    app = agentmap.compile(EXAMPLE)
    for user, title in (("ada", "pay rent"), ("bob", "fix bike")):
        result = app.invoke({"message": f"add a task {title}", "user_id": user})
        assert result.success
    assert list(task_titles(tasks_db, "ada").values()) == [("pay rent", False)]
    assert list(task_titles(tasks_db, "bob").values()) == [("fix bike", False)]


def test_execution_summary_records_the_decision(dbs: tuple[Path, Path]) -> None:
    result = agentmap.compile(EXAMPLE).invoke({"message": "add a task water plants", "user_id": "ada"})
    [entry] = result.summary
    meta = entry.metadata
    assert meta["model"] == "offline:offline" and meta["stand_in"] is True
    assert meta["decision_type"] == "INVOKE_TOOL" and meta["tool_calls"] == ["add_task"]
    assert meta["model_calls"] == 2 and meta["total_tokens"] > 0
    assert len(meta["decision_id"]) == 32


# -- the same node on an OpenAI-compatible server --------------------------------------------------


def write_graph(folder: Path, context: str, outputs: str = "response|pending_confirmation") -> Path:
    (folder / "tools").mkdir(exist_ok=True)
    shutil.copy(REPO / "graphs" / "tools" / "tasks.py", folder / "tools" / "tasks.py")
    path = folder / "assistant.csv"
    rows = [
        HEADER,
        f"Chat,Assistant,assistant,You manage tasks.,{context},message|user_id,{outputs},Done,Failed,tools/tasks.py",
        "Chat,Done,echo,,,response,final,,,",
        "Chat,Failed,echo,,,errors,final,,,",
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def openai_context(stub: OpenAIStub, **extra: Any) -> str:
    import json

    context = {"model": "openai:gpt-stub", "base_url": stub.base_url, "max_retries": 0, "temperature": 0.3, **extra}
    return '"' + json.dumps(context).replace('"', '""') + '"'


def test_assistant_on_openai_runs_tools_and_passes_the_settings(
    stub: OpenAIStub, tmp_path: Path, dbs: tuple[Path, Path]
) -> None:
    tasks_db, _ = dbs
    stub.script(tool_calls(("add_task", {"title": "buy milk"})), text("Added buy milk."))
    app = agentmap.compile(write_graph(tmp_path, openai_context(stub)))
    result = app.invoke({"message": "add buy milk", "user_id": "ada"})

    assert result.success
    assert result.state["response"] == "Added buy milk."
    assert [e.name for e in result.summary] == ["Assistant", "Done"]
    assert task_titles(tasks_db, "ada") == {1: ("buy milk", False)}
    first = stub.requests[0]
    assert first["temperature"] == 0.3
    assert first["messages"][0] == {"role": "system", "content": "You manage tasks."}
    add = next(t["function"] for t in first["tools"] if t["function"]["name"] == "add_task")
    assert "user_id" not in add["parameters"]["properties"]


def test_an_assistant_with_context_cache_answers_a_repeated_request_from_the_llm_cache(
    stub: OpenAIStub, tmp_path: Path, dbs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the cache without a checkpoint: .agentmap/llm_cache.db in the working folder
    stub.script(text("Hello, Ada."))
    path = write_graph(tmp_path, openai_context(stub, cache={"ttl": 3600}))
    answers = [agentmap.compile(path).invoke({"message": "hi", "user_id": "ada"}) for _ in range(2)]
    assert [r.state["response"] for r in answers] == ["Hello, Ada."] * 2
    assert len(stub.requests) == 1  # the second run's request was answered by the cache
    assert answers[1].summary[0].metadata["cache_hits"] == 1


def test_a_rate_limit_is_a_polite_reply_by_default(stub: OpenAIStub, tmp_path: Path, dbs: tuple[Path, Path]) -> None:
    stub.script(error(429, "slow down"))
    result = agentmap.compile(write_graph(tmp_path, openai_context(stub))).invoke({"message": "hi", "user_id": "ada"})
    assert result.success
    assert result.state["response"] == RATE_LIMIT_MESSAGE
    assert [e.name for e in result.summary] == ["Assistant", "Done"]
    assert result.summary[0].metadata["outcome"] == "RATE_LIMITED"


def test_fail_on_error_takes_failure_next_with_the_reason(
    stub: OpenAIStub, tmp_path: Path, dbs: tuple[Path, Path]
) -> None:
    stub.script(error(429, "slow down"))
    path = write_graph(tmp_path, openai_context(stub, fail_on_error=True))
    result = agentmap.compile(path).invoke({"message": "hi", "user_id": "ada"})
    assert result.failed_nodes == ["Assistant"]
    assert [e.name for e in result.summary] == ["Assistant", "Failed"]
    [reason] = result.state["errors"]
    assert "rate limit" in reason and "Assistant" in reason


def test_a_single_output_field_receives_the_decision(stub: OpenAIStub, tmp_path: Path, dbs: tuple[Path, Path]) -> None:
    stub.script(text("Which task?"))
    path = write_graph(tmp_path, openai_context(stub), outputs="decision")
    app = agentmap.compile(path, missing_inputs="ignore")  # Done reads `response`, which no node writes here
    state = app.invoke({"message": "update it", "user_id": "ada"}).state
    assert state["decision"] == {
        "decision_type": "ASK_CLARIFICATION",
        "tool_calls": None,
        "response_text": "Which task?",
        "clarification_question": "Which task?",
        "pending_action": None,
    }


def test_decision_log_can_be_turned_off(stub: OpenAIStub, tmp_path: Path, dbs: tuple[Path, Path]) -> None:
    _, log_db = dbs
    stub.script(text("hi"))
    path = write_graph(tmp_path, openai_context(stub, decision_log=False))
    assert agentmap.compile(path).invoke({"message": "hello", "user_id": "ada"}).success
    assert not log_db.exists()


def test_decision_log_path_in_context_is_relative_to_the_workflow(
    stub: OpenAIStub, tmp_path: Path, dbs: tuple[Path, Path]
) -> None:
    stub.script(text("hi"))
    path = write_graph(tmp_path, openai_context(stub, decision_log="logs/chat.db"))
    assert agentmap.compile(path).invoke({"message": "hello", "user_id": "ada"}).success
    assert [d.response_text for d in SQLiteDecisionLog(tmp_path / "logs" / "chat.db").list_decisions()] == ["hi"]


@pytest.mark.parametrize(
    ("context", "outputs", "expected"),
    [
        ('"{""model"": ""offline"", ""max_iterations"": 0}"', "response", "max_iterations must be a whole number >= 1"),
        ('"{""model"": ""offline""}"', "response|mood", "Output_Field 'mood' is not something an assistant writes"),
        ('"{""model"": ""nosuch:x""}"', "response", "unknown model provider"),
        ('"{""model"": ""offline"", ""confirm_tools"": 3}"', "response", "confirm_tools must be a list"),
        ('"{""model"": ""offline"", ""cache"": {""ttl"": 0}}"', "response", 'Context cache "ttl" must be a positive'),
    ],
)
def test_bad_configuration_is_found_before_the_run(tmp_path: Path, context: str, outputs: str, expected: str) -> None:
    issues = agentmap.validate(write_graph(tmp_path, context, outputs))
    messages = [i.message for i in issues if i.severity == "error"]
    assert any(expected in m for m in messages), messages


def test_missing_openai_key_is_found_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    issues = agentmap.validate(write_graph(tmp_path, '"{""model"": ""openai:gpt-4o-mini""}"'))
    assert any("OPENAI_API_KEY" in i.message for i in issues)


async def test_a_chat_keeping_only_the_text_history_can_confirm_a_delete(dbs: tuple[Path, Path]) -> None:
    # `agentmap chat` (seed 001's run_agent) passes back only the text of the conversation, not the
    # pending action: the node remembers the action it asked about while its question is the last reply.
    from agentmap.interface.agent import agent_for
    from agentmap.interface.history import format_chat_history

    tasks_db, _ = dbs
    run_agent = agent_for(EXAMPLE)
    history: list[tuple[str, str]] = []

    async def say(message: str) -> str:
        reply = str((await run_agent(message, chat_history=format_chat_history(history) or None))["content"])
        history.extend([("user", message), ("assistant", reply)])
        return reply

    await say("add a task buy milk")
    await say("add a task walk the dog")
    assert (await say("delete task 1")).startswith("Please confirm: delete task (task_id=1).")
    assert "deleted" in await say("yes")
    assert task_titles(tasks_db, "default") == {2: ("walk the dog", False)}

    assert (await say("delete task 2")).startswith("Please confirm")
    assert await say("no") == "Okay, I won't do that. Nothing was changed."
    assert "deleted" not in await say("yes")  # the question was answered: a later yes confirms nothing
    assert task_titles(tasks_db, "default") == {2: ("walk the dog", False)}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (
            {"message": "yes", "pending_confirmation": "delete", "user_id": "ada"},
            "the state's pending_confirmation is not a pending action",
        ),
        (
            {"message": "yes", "pending_confirmation": {"parameters": {}}, "user_id": "ada"},
            "the state's pending_confirmation is not a pending action (tool_name: Field required)",
        ),
        ({"message": "   ", "user_id": "ada"}, "the message to answer is empty: give the state a non-blank 'message'"),
        ({"user_id": "ada", "message": None}, "the message to answer is empty: give the state a non-blank 'message'"),
    ],
)
def test_bad_turn_state_fails_the_node_with_what_to_change(
    dbs: tuple[Path, Path], state: dict[str, Any], expected: str
) -> None:
    result = agentmap.compile(EXAMPLE).invoke(state)
    assert not result.success
    (error,) = result.errors
    assert expected in str(error)
    assert "pydantic" not in str(error)
