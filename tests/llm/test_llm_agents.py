"""LLM agent types in CSV workflows: the offline model, and the real ChatOpenAI against a local stub."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from openai_stub import OpenAIStub, error, slow, text, tool_calls

import agentmap
from agentmap.llm.agents import LLMAgent, format_prompt

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

HEADER = [
    "GraphName",
    "Node",
    "AgentType",
    "Prompt",
    "Context",
    "Input_Fields",
    "Output_Field",
    "Success_Next",
    "Failure_Next",
    "Tool_Source",
    "Available_Tools",
]
TOOLS = '''
def add_numbers(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''


def workflow(folder: Path, *rows: list[Any]) -> Path:
    """Write a CSV workflow; a dict in the Context position is written as JSON."""
    (folder / "tools.py").write_text(TOOLS)
    path = folder / "flow.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        for row in rows:
            cells = [json.dumps(c) if isinstance(c, dict) else c for c in row]
            writer.writerow(cells + [""] * (len(HEADER) - len(cells)))
        writer.writerow(["g", "Oops", "echo", "", "", "errors", "problem"])
    return path


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    with OpenAIStub() as server:
        yield server


def openai_context(stub: OpenAIStub, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-stub", "base_url": stub.base_url, "max_retries": 0, **extra}


# -- prompts -----------------------------------------------------------------------------------


def test_prompt_formatting_is_safe() -> None:
    filled, used = format_prompt("Hi {name}! {user.name} {items[0]} {{literal}} {unknown}", {"name": "Ada", "x": 1})
    assert filled == "Hi Ada! {user.name} {items[0]} {literal} {unknown}"
    assert used == {"name"}


def test_offline_node_answers_from_its_inputs(tmp_path: Path) -> None:
    path = workflow(
        tmp_path,
        ["g", "Chat", "offline", "You are terse.", "", "question", "answer", "", "Oops"],
    )
    result = agentmap.compile(path).invoke({"question": "tell me a joke"})
    assert result.success
    assert result.state["answer"] == "[offline] tell me a joke"
    metadata = result.summary[0].metadata
    assert metadata["model"] == "offline:offline" and metadata["stand_in"] is True
    assert metadata["total_tokens"] == metadata["input_tokens"] + metadata["output_tokens"] > 0
    assert metadata["duration_ms"] >= 0


def test_prompt_as_the_user_message(tmp_path: Path) -> None:
    path = workflow(
        tmp_path,
        [
            "g",
            "Sum",
            "llm",
            "Summarize: {text}",
            {"model": "offline", "prompt_role": "user"},
            "text|tone|size",
            "summary",
            "",
            "Oops",
        ],
    )
    result = agentmap.compile(path).invoke({"text": "the cat sat", "tone": "dry", "size": "short"})
    # Inputs the prompt does not use follow it as `name: value` lines.
    assert result.state["summary"] == "[offline] Summarize: the cat sat tone: dry size: short"


# -- the real OpenAI client against the stub ---------------------------------------------------


def test_openai_node_sends_system_and_user_messages(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("Bonjour!", usage=(12, 3)))
    path = workflow(
        tmp_path,
        [
            "g",
            "Translate",
            "openai",
            "Translate into {language}.",
            openai_context(stub, temperature=0.2),
            "language|phrase",
            "french",
            "",
            "Oops",
        ],
    )
    result = agentmap.compile(path).invoke({"language": "French", "phrase": "Hello!"})
    assert result.success and result.state["french"] == "Bonjour!"
    [request] = stub.requests
    assert request["messages"] == [
        {"role": "system", "content": "Translate into French."},
        {"role": "user", "content": "Hello!"},
    ]
    assert request["temperature"] == 0.2 and request["model"] == "gpt-stub"
    metadata = result.summary[0].metadata
    assert (metadata["model"], metadata["input_tokens"], metadata["output_tokens"]) == ("openai:gpt-stub", 12, 3)


def test_rows_on_threads_reaching_a_node_at_once_build_its_model_once(
    tmp_path: Path, stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model's clients cost tens of milliseconds of CPU each (TLS contexts): eight rows of a batch arriving at a
    node's first call together get the one model, not eight."""
    from agentmap.llm import models

    built: list[str] = []

    def build(spec: Any) -> Any:
        built.append(spec.name)
        return real(spec)

    real = models.build_model
    monkeypatch.setattr("agentmap.llm.agents.build_model", build)
    stub.script(*[text("ok")] * 8)
    path = workflow(tmp_path, ["g", "Say", "openai", "Say {n}.", openai_context(stub), "n", "said", "", "Oops"])
    result = agentmap.batch(str(path), [{"n": i} for i in range(8)], concurrency=8)
    assert result.successes == 8 and len(stub.requests) == 8
    assert built == ["openai:gpt-stub"]


def test_memory_is_kept_in_the_state_with_a_window(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(text("one"), text("two"), text("three"))
    context = openai_context(stub, memory_key="history", max_memory_messages=3)
    path = workflow(tmp_path, ["g", "Chat", "openai", "Be brief.", context, "message", "reply|history", "", "Oops"])
    app = agentmap.compile(path)
    state: dict[str, Any] = {"message": "a"}
    for message in ("a", "b", "c"):
        state = app.invoke({**state, "message": message}).state
    assert state["reply"] == "three"
    assert state["history"] == [
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "three"},
    ]
    sent = [[m["content"] for m in r["messages"]] for r in stub.requests]
    assert sent[1] == ["Be brief.", "a", "one", "b"]
    assert sent[2] == ["Be brief.", "one", "b", "two", "c"]  # the last 3 messages of the history


def test_a_chat_in_messages_grows_by_each_turn_and_answers_the_last_user_message(
    tmp_path: Path, stub: OpenAIStub
) -> None:
    stub.script(text("one"), text("two"))
    context = openai_context(stub, memory_key="messages")
    path = workflow(tmp_path, ["g", "Chat", "openai", "Be brief.", context, "messages", "reply|messages", "", "Oops"])
    app = agentmap.compile(path, checkpointer="memory")
    thread: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    app.invoke({"messages": [{"type": "human", "content": "a", "id": "m1"}]}, thread)
    state = app.invoke({"messages": [{"type": "human", "content": "b", "id": "m2"}]}, thread).state
    assert [(m["type"], m["content"]) for m in state["messages"]] == [
        ("human", "a"),
        ("ai", "one"),
        ("human", "b"),
        ("ai", "two"),
    ]
    assert [m["id"] for m in state["messages"]][::2] == ["m1", "m2"] and state["reply"] == "two"
    sent = [[(m["role"], m["content"]) for m in r["messages"]] for r in stub.requests]
    assert sent == [
        [("system", "Be brief."), ("user", "a")],
        [("system", "Be brief."), ("user", "a"), ("assistant", "one"), ("user", "b")],
    ]


def test_parallel_branches_both_add_to_the_chat_in_messages(tmp_path: Path) -> None:
    path = tmp_path / "chat.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        "G,Split,template,go,q,note,Left|Right\n"
        "G,Left,template,left says {q},q,messages,Join\n"
        "G,Right,template,right says {q},q,messages,Join\n"
        "G,Join,template,done,q,result,\n",
        encoding="utf-8",
    )
    assert agentmap.validate(path) == []  # not a parallel write: the chat is appended to
    result = agentmap.run(path, {"q": "hi"})
    assert sorted(m["content"] for m in result.state["messages"]) == ["left says hi", "right says hi"]


def test_a_chat_input_that_is_no_message_is_refused_by_name(tmp_path: Path) -> None:
    context = {"model": "offline", "memory_key": "messages"}
    path = workflow(tmp_path, ["g", "Chat", "llm", "Be brief.", context, "messages", "reply|messages", "", "Oops"])
    with pytest.raises(agentmap.ConfigError, match="messages holds chat messages, and 5 is not a list of them") as info:
        agentmap.compile(path).invoke({"messages": 5})
    assert info.value.code == "bad-state" and '{"type": "human", "content": "..."}' in (info.value.hint or "")


@pytest.mark.parametrize(
    ("reply", "context", "reason"),
    [
        (error(429, "slow down"), {}, "rate limit reached"),
        (error(500, "upstream broke"), {}, "HTTP 500"),
        (slow(5, text("too late")), {"timeout": 0.5}, "did not answer within 0.5s"),
    ],
)
def test_provider_failures_fail_the_node(
    tmp_path: Path, stub: OpenAIStub, reply: Any, context: dict[str, Any], reason: str
) -> None:
    stub.script(reply)
    path = workflow(
        tmp_path,
        ["g", "Ask", "openai", "Be brief.", openai_context(stub, **context), "q", "answer", "Done", "Oops"],
        ["g", "Done", "echo", "", "", "answer", "final"],
    )
    result = agentmap.compile(path).invoke({"q": "hi"})
    assert result.failed_nodes == ["Ask"]
    assert "answer" not in result.state and "final" not in result.state
    [message] = result.state["errors"]
    assert message.startswith("Error in Ask: model 'gpt-stub'") and reason in message
    assert reason in str(result.state["problem"])
    metadata = result.summary[0].metadata
    assert metadata["model"] == "openai:gpt-stub" and metadata["duration_ms"] > 0


def test_tools_loop_through_the_engine(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(tool_calls(("add_numbers", {"a": 2, "b": 40})), text("The sum is 42."))
    path = workflow(
        tmp_path,
        [
            "g",
            "Calc",
            "openai",
            "Use tools.",
            openai_context(stub),
            "q",
            "answer",
            "",
            "Oops",
            "tools.py",
            "add_numbers",
        ],
    )
    result = agentmap.compile(path).invoke({"q": "what is 2 + 40?"})
    assert result.success and result.state["answer"] == "The sum is 42."
    first, second = stub.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["add_numbers"]
    tool_message = second["messages"][-1]
    assert (tool_message["role"], tool_message["content"]) == ("tool", "42")
    assert result.summary[0].metadata["tool_calls"] == ["add_numbers"]
    assert result.summary[0].metadata["model_calls"] == 2


def test_tool_nodes_run_repeatedly_in_sync_workflows(tmp_path: Path, stub: OpenAIStub) -> None:
    # Each sync run must not leave the provider's pooled async connections on a dead event loop.
    for _ in range(3):
        stub.script(tool_calls(("add_numbers", {"a": 1, "b": 1})), text("2"))
    path = workflow(
        tmp_path,
        ["g", "Calc", "openai", "Use tools.", openai_context(stub), "q", "answer", "", "Oops", "tools.py"],
    )
    app = agentmap.compile(path)
    assert [app.invoke({"q": "1+1"}).state.get("answer") for _ in range(3)] == ["2", "2", "2"]


async def test_tool_nodes_in_async_workflows(tmp_path: Path, stub: OpenAIStub) -> None:
    for _ in range(2):
        stub.script(tool_calls(("add_numbers", {"a": 1, "b": 1})), text("2"))
    path = workflow(
        tmp_path,
        ["g", "Calc", "openai", "Use tools.", openai_context(stub), "q", "answer", "", "Oops", "tools.py"],
    )
    app = agentmap.compile(path)
    assert [(await app.ainvoke({"q": "1+1"})).state.get("answer") for _ in range(2)] == ["2", "2"]


def test_running_out_of_iterations_fails_the_node(tmp_path: Path, stub: OpenAIStub) -> None:
    stub.script(*[tool_calls(("add_numbers", {"a": 1, "b": 1}))] * 2)
    path = workflow(
        tmp_path,
        [
            "g",
            "Calc",
            "openai",
            "Use tools.",
            openai_context(stub, max_iterations=2),
            "q",
            "answer",
            "",
            "Oops",
            "tools.py",
        ],
    )
    result = agentmap.compile(path).invoke({"q": "loop"})
    assert result.failed_nodes == ["Calc"]
    assert "still calling tools after 2 model calls" in result.state["errors"][0]


# -- validation before the run -----------------------------------------------------------------


def test_configuration_problems_are_reported_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = workflow(
        tmp_path,
        ["g", "A", "openai", "x", {"model": "gpt-4o"}, "q", "a", "B"],
        ["g", "B", "llm", "x", {"model": "offline", "memory_key": "chat"}, "q", "b", "C"],
        ["g", "C", "llm", "x", {"model": "offline", "prompt_role": "assistant"}, "q", "c", "D"],
        ["g", "D", "llm", "x", {"model": "offline"}, "q", "d", "", "", "tools.py", "add_nums"],
    )
    with pytest.raises(agentmap.WorkflowValidationError) as raised:
        agentmap.compile(path)
    message = str(raised.value)
    assert "model openai:gpt-4o needs an API key: set the environment variable OPENAI_API_KEY" in message
    assert "memory_key 'chat' must also be listed in Output_Field" in message and "write b|chat" in message
    assert "prompt_role must be 'system' or 'user'" in message
    assert "did you mean 'add_numbers'?" in message


def test_validate_config_accepts_a_good_node(tmp_path: Path) -> None:
    from agentmap.agents.base import AgentEnvironment

    context = {"model": "offline", "memory_key": "chat", "output_field": "reply|chat"}
    assert LLMAgent.validate_config("x", context, AgentEnvironment(base_dir=tmp_path)) == []


@pytest.mark.parametrize("value", ["many", 0, 2.5, True])
def test_a_bad_max_iterations_is_reported_before_the_run(tmp_path: Path, value: Any) -> None:
    from agentmap.agents.base import AgentEnvironment

    (tmp_path / "tools.py").write_text(TOOLS)
    context = {"model": "offline", "max_iterations": value, "tool_source": "tools.py", "output_field": "a"}
    assert LLMAgent.validate_config("x", context, AgentEnvironment(base_dir=tmp_path)) == [
        f"Context max_iterations must be a whole number >= 1, got {value!r}"
    ]
