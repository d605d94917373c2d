"""`LLMAgentEngine` driven through the real `ChatOpenAI` client against a scripted local server.

The tools are the task example's (graphs/tools/tasks.py) writing to a real SQLite file, and the
decision log is the real SQLite log.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import CONSTITUTION, RecordingExecutor, load_tasks_module, task_executor, task_titles
from openai_stub import OpenAIStub, Reply, chat_model, error, slow, text, tool_calls

from agentmap.contracts.engine import (
    AgentDecision,
    AgentEngineConfig,
    DecisionContext,
    DecisionType,
    Message,
    PendingAction,
    ToolCall,
)
from agentmap.llm.adapter import LLMAdapter
from agentmap.llm.decision_log import SQLiteDecisionLog
from agentmap.llm.engine import (
    LLM_FAILURE_MESSAGE,
    MAX_ITERATIONS_MESSAGE,
    RATE_LIMIT_MESSAGE,
    LLMAgentEngine,
)


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


@pytest.fixture
def tasks_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "tasks.db"
    monkeypatch.setenv("AGENTMAP_TASKS_DB", str(db))
    return db


@pytest.fixture
def log(tmp_path: Path) -> Iterator[SQLiteDecisionLog]:
    with SQLiteDecisionLog(tmp_path / "decisions.db") as decision_log:
        yield decision_log


def make_engine(
    stub: OpenAIStub,
    log: SQLiteDecisionLog | None = None,
    executor: RecordingExecutor | None = None,
    **kwargs: Any,
) -> LLMAgentEngine:
    return LLMAgentEngine(
        LLMAdapter(chat_model(stub)),
        executor or task_executor(),
        CONSTITUTION,
        decision_log=log,
        **kwargs,
    )


def ctx(message: str, history: list[Message] | None = None, pending: PendingAction | None = None) -> DecisionContext:
    return DecisionContext(
        user_id="alice",
        message=message,
        conversation_id="conv-1",
        message_history=history or [],
        pending_confirmation=pending,
    )


def roles(request: dict[str, Any]) -> list[str]:
    return [m["role"] for m in request["messages"]]


# -- the decision table --------------------------------------------------------------------------


async def test_text_only_is_respond_only_with_constitution_tools_and_temperature(stub: OpenAIStub) -> None:
    stub.script(text("Hello! How can I help with your tasks?."))
    decision = await make_engine(stub).process_message(ctx("hi there"))

    assert decision == AgentDecision(
        decision_type=DecisionType.RESPOND_ONLY, response_text="Hello! How can I help with your tasks?."
    )
    [request] = stub.requests
    assert request["messages"][0] == {"role": "system", "content": CONSTITUTION}
    assert request["messages"][-1] == {"role": "user", "content": "hi there"}
    assert request["temperature"] == 0.0
    assert sorted(t["function"]["name"] for t in request["tools"]) == [
        "add_task",
        "complete_task",
        "delete_task",
        "list_tasks",
        "update_task",
    ]
    add = next(t["function"] for t in request["tools"] if t["function"]["name"] == "add_task")
    assert add["parameters"]["required"] == ["title"]


async def test_configured_temperature_reaches_the_request(stub: OpenAIStub) -> None:
    stub.script(text("ok"))
    engine = make_engine(stub, config=AgentEngineConfig(temperature=0.7))
    await engine.process_message(ctx("hi"))
    assert stub.requests[0]["temperature"] == 0.7


async def test_tool_call_runs_the_tool_and_is_invoke_tool(stub: OpenAIStub, tasks_db: Path) -> None:
    stub.script(tool_calls(("add_task", {"title": "buy milk"})), text("I added 'buy milk'."))
    executor = task_executor()
    decision = await make_engine(stub, executor=executor).process_message(ctx("add a task: buy milk"))

    assert decision.decision_type is DecisionType.INVOKE_TOOL
    assert decision.response_text == "I added 'buy milk'."
    assert decision.tool_calls is not None
    assert [(c.tool_name, c.parameters) for c in decision.tool_calls] == [("add_task", {"title": "buy milk"})]
    assert task_titles(tasks_db) == {1: ("buy milk", False)}
    assert executor.calls == [("add_task", {"title": "buy milk"}, "alice")]
    # The second model call sees the call and its result.
    second = stub.requests[1]
    assert roles(second)[-2:] == ["assistant", "tool"]
    assert '"buy milk"' in second["messages"][-1]["content"]


async def test_several_tool_rounds_then_a_reply(stub: OpenAIStub, tasks_db: Path) -> None:
    stub.script(
        tool_calls(("add_task", {"title": "a"}), ("add_task", {"title": "b"})),
        tool_calls(("complete_task", {"task_id": 1})),
        text("Added two tasks and completed the first."),
    )
    decision = await make_engine(stub).process_message(ctx("add a and b, then finish a"))
    assert decision.decision_type is DecisionType.INVOKE_TOOL
    assert decision.tool_calls is not None
    assert [c.tool_name for c in decision.tool_calls] == ["add_task", "add_task", "complete_task"]
    assert task_titles(tasks_db) == {1: ("a", True), 2: ("b", False)}
    assert len(stub.requests) == 3


async def test_a_question_is_ask_clarification(stub: OpenAIStub) -> None:
    stub.script(text("Which task do you mean: the first or the second one?"))
    decision = await make_engine(stub).process_message(ctx("update my task"))
    assert decision.decision_type is DecisionType.ASK_CLARIFICATION
    assert decision.clarification_question == "Which task do you mean: the first or the second one?"
    assert decision.tool_calls is None and decision.pending_action is None


@pytest.mark.parametrize(
    "refusal",
    [
        "I can only help with your tasks, so I can't write poems.",
        "I'm sorry, but I can't help with that. Is there a task I can add for you?",
    ],
)
async def test_a_refusal_is_respond_only(stub: OpenAIStub, refusal: str) -> None:
    stub.script(text(refusal))
    decision = await make_engine(stub).process_message(ctx("write me a poem"))
    assert decision == AgentDecision(decision_type=DecisionType.RESPOND_ONLY, response_text=refusal)


# -- confirmation --------------------------------------------------------------------------------


async def add_tasks(*titles: str) -> None:
    tasks = load_tasks_module()
    for title in titles:
        tasks.add_task(title, user_id="alice")


async def test_delete_asks_for_confirmation_and_runs_nothing(stub: OpenAIStub, tasks_db: Path) -> None:
    await add_tasks("buy milk")
    stub.script(tool_calls(("delete_task", {"task_id": 1})))
    executor = task_executor()
    decision = await make_engine(stub, executor=executor).process_message(ctx("delete task 1"))

    assert decision.decision_type is DecisionType.REQUEST_CONFIRMATION
    action = decision.pending_action
    assert action is not None
    assert (action.tool_name, action.parameters) == ("delete_task", {"task_id": 1})
    assert decision.response_text == action.description
    assert "delete task" in action.description and "yes" in action.description
    assert executor.calls == []
    assert task_titles(tasks_db) == {1: ("buy milk", False)}


async def test_the_models_own_question_is_the_confirmation_text(stub: OpenAIStub, tasks_db: Path) -> None:
    await add_tasks("buy milk")
    stub.script(tool_calls(("delete_task", {"task_id": 1}), content="Delete 'buy milk' for good?"))
    decision = await make_engine(stub).process_message(ctx("delete task 1"))
    assert decision.pending_action is not None
    assert decision.response_text == decision.pending_action.description == "Delete 'buy milk' for good?"


@pytest.mark.parametrize("answer", ["yes", "Yes, please", "confirm", "OK go ahead", "go ahead"])
async def test_confirmed_action_runs_then_the_model_reports(
    stub: OpenAIStub, tasks_db: Path, log: SQLiteDecisionLog, answer: str
) -> None:
    await add_tasks("buy milk", "walk dog")
    pending = PendingAction(tool_name="delete_task", parameters={"task_id": 1}, description="Delete 1?")
    history = [Message(role="user", content="delete task 1"), Message(role="assistant", content="Delete 1?")]
    stub.script(text("Deleted 'buy milk'."))
    executor = task_executor()
    outcome = await make_engine(stub, log, executor=executor).decide(ctx(answer, history, pending))

    decision = outcome.decision
    assert decision.decision_type is DecisionType.INVOKE_TOOL
    assert decision.tool_calls == [
        ToolCall(tool_name="delete_task", parameters={"task_id": 1}, id=f"call_{pending.action_id}")
    ]
    assert decision.response_text == "Deleted 'buy milk'."
    assert task_titles(tasks_db) == {2: ("walk dog", False)}
    assert executor.calls == [("delete_task", {"task_id": 1}, "alice")]
    [request] = stub.requests
    assert roles(request) == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert request["messages"][-2]["tool_calls"][0]["function"]["name"] == "delete_task"
    assert [t.tool_name for t in log.get_tool_invocations(outcome.decision_id)] == ["delete_task"]


@pytest.mark.parametrize("answer", ["no", "No thanks", "cancel", "don't", "never mind"])
async def test_declined_action_never_runs(stub: OpenAIStub, tasks_db: Path, answer: str) -> None:
    await add_tasks("buy milk")
    pending = PendingAction(tool_name="delete_task", parameters={"task_id": 1}, description="Delete 1?")
    executor = task_executor()
    decision = await make_engine(stub, executor=executor).process_message(ctx(answer, pending=pending))

    assert decision.decision_type is DecisionType.RESPOND_ONLY
    assert decision.response_text is not None and "Nothing was changed" in decision.response_text
    assert executor.calls == []
    assert stub.requests == []
    assert task_titles(tasks_db) == {1: ("buy milk", False)}


async def test_an_unrelated_answer_drops_the_pending_action(stub: OpenAIStub, tasks_db: Path) -> None:
    await add_tasks("buy milk")
    pending = PendingAction(tool_name="delete_task", parameters={"task_id": 1}, description="Delete 1?")
    stub.script(tool_calls(("add_task", {"title": "call mom"})), text("Added 'call mom'."))
    decision = await make_engine(stub).process_message(ctx("add call mom instead", pending=pending))

    assert decision.decision_type is DecisionType.INVOKE_TOOL
    assert decision.tool_calls is not None and [c.tool_name for c in decision.tool_calls] == ["add_task"]
    assert task_titles(tasks_db) == {1: ("buy milk", False), 2: ("call mom", False)}


async def test_other_calls_of_the_same_reply_run_before_asking(stub: OpenAIStub, tasks_db: Path) -> None:
    await add_tasks("buy milk")
    stub.script(tool_calls(("list_tasks", {}), ("delete_task", {"task_id": 1})))
    decision = await make_engine(stub).process_message(ctx("show my tasks and delete the first"))
    assert decision.decision_type is DecisionType.REQUEST_CONFIRMATION
    assert decision.tool_calls is not None and [c.tool_name for c in decision.tool_calls] == ["list_tasks"]
    assert task_titles(tasks_db) == {1: ("buy milk", False)}


async def test_which_tools_need_confirmation_is_configurable(stub: OpenAIStub, tasks_db: Path) -> None:
    await add_tasks("buy milk", "walk dog")
    stub.script(
        tool_calls(("delete_task", {"task_id": 2})),
        text("Deleted."),
        tool_calls(("complete_task", {"task_id": 1})),
    )
    engine = make_engine(stub, confirm_tools={"complete_task"})
    deleted = await engine.process_message(ctx("delete task 2"))
    completing = await engine.process_message(ctx("complete task 1"))

    assert deleted.decision_type is DecisionType.INVOKE_TOOL
    assert completing.decision_type is DecisionType.REQUEST_CONFIRMATION
    assert task_titles(tasks_db) == {1: ("buy milk", False)}


# -- history -------------------------------------------------------------------------------------


async def test_only_the_last_history_messages_are_sent(stub: OpenAIStub) -> None:
    history = [Message(role="user" if i % 2 == 0 else "assistant", content=f"m{i}") for i in range(15)]
    stub.script(text("ok"), text("ok"), text("ok"))
    await make_engine(stub).process_message(ctx("now", history))
    await make_engine(stub, config=AgentEngineConfig(include_history_messages=3)).process_message(ctx("now", history))
    await make_engine(stub, config=AgentEngineConfig(include_history_messages=0)).process_message(ctx("now", history))

    sent = [[m["content"] for m in r["messages"][1:]] for r in stub.requests]
    assert sent[0] == [f"m{i}" for i in range(5, 15)] + ["now"]
    assert sent[1] == ["m12", "m13", "m14", "now"]
    assert sent[2] == ["now"]
    assert roles(stub.requests[1]) == ["system", "user", "assistant", "user", "user"]


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "sentence", "category"),
    [
        (error(429, "Rate limit reached for requests"), RATE_LIMIT_MESSAGE, "RATE_LIMITED"),
        (error(500, "The server had an error"), LLM_FAILURE_MESSAGE, "LLM_ERROR"),
        (error(401, "Incorrect API key provided"), LLM_FAILURE_MESSAGE, "LLM_ERROR"),
    ],
)
async def test_model_errors_become_the_seed_sentences(
    stub: OpenAIStub, log: SQLiteDecisionLog, reply: Reply, sentence: str, category: str
) -> None:
    stub.script(reply)
    outcome = await make_engine(stub, log).decide(ctx("hi"))
    assert outcome.decision == AgentDecision(decision_type=DecisionType.RESPOND_ONLY, response_text=sentence)
    assert outcome.outcome_category == category
    row = log.get_decision(outcome.decision_id)
    assert row is not None and row.outcome_category == category and row.error


async def test_a_slow_model_times_out_with_the_failure_sentence(stub: OpenAIStub) -> None:
    stub.script(slow(5, text("too late")))
    engine = make_engine(stub, config=AgentEngineConfig(timeout_seconds=1))
    started = time.perf_counter()
    outcome = await engine.decide(ctx("hi"))
    waited = time.perf_counter() - started

    assert outcome.decision.response_text == LLM_FAILURE_MESSAGE
    assert outcome.outcome_category == "TIMEOUT"
    assert waited < 5  # gave up at the time limit, before the reply came (5 s)


async def test_too_many_rounds_give_the_max_iterations_sentence(stub: OpenAIStub, tasks_db: Path) -> None:
    stub.script(*[tool_calls(("list_tasks", {})) for _ in range(3)])
    engine = make_engine(stub, max_iterations=3)
    decision = await engine.process_message(ctx("loop"))
    assert decision.decision_type is DecisionType.RESPOND_ONLY
    assert decision.response_text == MAX_ITERATIONS_MESSAGE
    # The calls that did run stay on the record.
    assert decision.tool_calls is not None and [c.tool_name for c in decision.tool_calls] == ["list_tasks"] * 3
    assert len(stub.requests) == 3


async def test_an_error_after_a_tool_ran_keeps_the_tool_on_record(stub: OpenAIStub, tasks_db: Path) -> None:
    stub.script(tool_calls(("add_task", {"title": "x"})), error(500))
    decision = await make_engine(stub).process_message(ctx("add x"))
    assert decision.decision_type is DecisionType.RESPOND_ONLY
    assert decision.response_text == LLM_FAILURE_MESSAGE
    assert decision.tool_calls is not None and [c.tool_name for c in decision.tool_calls] == ["add_task"]
    assert task_titles(tasks_db) == {1: ("x", False)}


async def test_a_failing_tool_is_reported_to_the_model(
    stub: OpenAIStub, tasks_db: Path, log: SQLiteDecisionLog
) -> None:
    stub.script(tool_calls(("complete_task", {"task_id": 42})), text("There is no task 42."))
    outcome = await make_engine(stub, log).decide(ctx("complete task 42"))

    assert outcome.decision.decision_type is DecisionType.INVOKE_TOOL
    assert outcome.decision.response_text == "There is no task 42."
    assert outcome.outcome_category == "TOOL_ERROR"
    tool_message = stub.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "there is no task 42" in tool_message["content"]
    [invocation] = log.get_tool_invocations(outcome.decision_id)
    assert not invocation.success and invocation.error_code == "execution_error"


async def test_an_unknown_tool_is_reported_to_the_model(stub: OpenAIStub) -> None:
    stub.script(tool_calls(("launch_rocket", {})), text("I can't do that."))
    decision = await make_engine(stub).process_message(ctx("launch"))
    assert "unknown_tool" in stub.requests[1]["messages"][-1]["content"]
    assert decision.response_text == "I can't do that."


async def test_an_empty_reply_is_a_failure(stub: OpenAIStub) -> None:
    stub.script(text(""))
    decision = await make_engine(stub).process_message(ctx("hi"))
    assert decision.response_text == LLM_FAILURE_MESSAGE


async def test_an_executor_without_schemas_offers_open_tools(stub: OpenAIStub, tasks_db: Path) -> None:
    stub.script(tool_calls(("add_task", {"title": "free form"})), text("Added."))
    decision = await make_engine(stub, executor=task_executor(schemas=False)).process_message(ctx("add"))
    tools = stub.requests[0]["tools"]
    assert {t["function"]["name"] for t in tools} == {
        "add_task",
        "list_tasks",
        "update_task",
        "complete_task",
        "delete_task",
    }
    assert decision.decision_type is DecisionType.INVOKE_TOOL
    assert task_titles(tasks_db) == {1: ("free form", False)}


# -- the decision log ----------------------------------------------------------------------------


async def test_the_decision_row_is_pending_during_the_model_call(stub: OpenAIStub, log: SQLiteDecisionLog) -> None:
    seen: list[tuple[str, str, str]] = []

    def check_log(body: dict[str, Any]) -> Reply:
        with sqlite3.connect(log.path) as conn:
            seen.extend(conn.execute("SELECT intent_type, decision_type, outcome_category FROM decisions"))
        return text("hello")

    stub.script(check_log)
    outcome = await make_engine(stub, log).decide(ctx("hi"))

    assert seen == [("LLM_PROCESSING", "PENDING", "PENDING")]
    row = log.get_decision(outcome.decision_id)
    assert row is not None
    assert (row.decision_type, row.outcome_category, row.response_text) == ("RESPOND_ONLY", "SUCCESS", "hello")
    assert (row.user_id, row.conversation_id, row.message) == ("alice", "conv-1", "hi")
    assert row.duration_ms > 0


async def test_outcome_reports_model_calls_and_token_usage(stub: OpenAIStub, tasks_db: Path) -> None:
    stub.script(tool_calls(("list_tasks", {})), text("No tasks.", usage=(20, 3)))
    outcome = await make_engine(stub).decide(ctx("list"))
    assert outcome.model_calls == 2
    assert outcome.usage == {"input_tokens": 30, "output_tokens": 8, "total_tokens": 38}


async def test_a_broken_log_does_not_cost_the_answer(stub: OpenAIStub, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    stub.script(text("hello"))
    decision = await make_engine(stub, SQLiteDecisionLog(blocker / "decisions.db")).process_message(ctx("hi"))
    assert decision.response_text == "hello"


class _BrokenExecutor:
    async def execute(self, tool_name: str, parameters: dict[str, Any], user_id: str) -> Any:
        raise AssertionError("never called")

    def get_available_tools(self) -> list[str]:
        return ["broken"]

    def get_tool_schemas(self) -> list[Any]:
        return [object()]  # nothing bind_tools can convert


async def test_an_unexpected_failure_still_gets_the_failure_sentence(stub: OpenAIStub, log: SQLiteDecisionLog) -> None:
    engine = LLMAgentEngine(LLMAdapter(chat_model(stub)), _BrokenExecutor(), CONSTITUTION, decision_log=log)
    outcome = await engine.decide(ctx("hi"))
    assert outcome.decision == AgentDecision(decision_type=DecisionType.RESPOND_ONLY, response_text=LLM_FAILURE_MESSAGE)
    row = log.get_decision(outcome.decision_id)
    assert row is not None and row.outcome_category == "LLM_ERROR"
    assert stub.requests == []
