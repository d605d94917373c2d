"""The built-in agent types that need no LLM, driven through `run` with a real tracker."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any, TypedDict

import pytest

from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.agents.builtins import (
    BranchingAgent,
    DefaultAgent,
    EchoAgent,
    FailureAgent,
    InputAgent,
    SuccessAgent,
    SummaryAgent,
    TemplateAgent,
    safe_format,
)
from agentmap.agents.questions import question
from agentmap.runtime.tracking import ExecutionTracker

LOG = logging.getLogger("tests.agents.builtins")
ENV = AgentEnvironment(base_dir=Path("."))


def run(cls: type[BaseAgent], state: dict[str, Any], prompt: str = "", **context: Any) -> dict[str, Any]:
    context.setdefault("input_fields", list(state))
    agent = cls("Node", prompt, context, LOG, ExecutionTracker())
    return agent.run(state)


def test_default_names_the_node_and_its_prompt() -> None:
    assert run(DefaultAgent, {}, "Plan the trip")["output"] == "[Node] Plan the trip"
    assert run(DefaultAgent, {})["output"] == "[Node] DefaultAgent executed"


def test_echo_returns_its_inputs_unchanged() -> None:
    assert run(EchoAgent, {"a": 1, "b": [2]})["output"] == {"a": 1, "b": [2]}
    assert run(EchoAgent, {})["output"] == "No input provided to echo"


def test_echo_process_directly_as_the_seed_shows() -> None:
    agent = EchoAgent("Echo", "{input}", {"input_fields": ["input"], "output_field": "echoed"}, LOG)
    assert agent.process({"input": "Hello, world!"})["input"] == "Hello, world!"


def test_template_formats_the_prompt_with_its_inputs() -> None:
    assert run(TemplateAgent, {"name": "Ada", "n": 3}, "Hello, {name}! x{n:>3}")["output"] == "Hello, Ada! x  3"


@pytest.mark.parametrize(
    ("prompt", "needle"),
    [
        ("{name.__class__}", "not allowed"),
        ("{name[0]}", "not allowed"),
        ("{0}", "not allowed"),
        ("{}", "not allowed"),
        ("{missing}", "add missing to Input_Fields"),
        ("{name", "expected '}'"),
    ],
)
def test_template_refuses_attribute_index_positional_and_unknown_fields(prompt: str, needle: str) -> None:
    update = run(TemplateAgent, {"name": "Ada"}, prompt)
    assert update["last_action_success"] is False
    assert needle in update["errors"][0]


def test_safe_format_does_not_reach_into_objects() -> None:
    class Secret:
        token = "s3cr3t"

    with pytest.raises(ValueError, match="no attribute access"):
        safe_format("{obj.token}", {"obj": Secret()})
    assert safe_format("{a}-{b!r}", {"a": 1, "b": "x"}) == "1-'x'"


@pytest.mark.parametrize(
    ("prompt", "problems"),
    [
        ("Hello {name}", []),
        ("", [("Prompt", "a template node needs a Prompt such as 'Hello, {name}!'")]),
        (
            "{user.name} {x[1]}",
            [
                ("Prompt", "template field {user.name} is not allowed: use plain names such as {name}"),
                ("Prompt", "template field {x[1]} is not allowed: use plain names such as {name}"),
            ],
        ),
    ],
)
def test_template_checks_its_prompt_before_the_run(prompt: str, problems: list[tuple[str, str]]) -> None:
    assert TemplateAgent.validate_config(prompt, {}, ENV) == problems


def test_template_reports_a_malformed_prompt() -> None:
    (problem,) = TemplateAgent.validate_config("{oops", {}, ENV)
    assert isinstance(problem, tuple) and problem[0] == "Prompt"
    assert problem[1].startswith("the Prompt is not a valid template")


@pytest.mark.parametrize(
    ("value", "success"),
    [
        ("yes", True),
        ("TRUE", True),
        (1, True),
        ("anything else", True),
        ("no", False),
        ("0", False),
        ("", False),
        (None, False),
        (False, False),
        ("Failure", False),
    ],
)
def test_branching_default_values(value: Any, success: bool) -> None:
    update = run(BranchingAgent, {"decision": value})
    assert update["last_action_success"] is success
    if not success:
        assert update["errors"] == [f"Error in Node: decision={value!r} is a failure value"]
    else:
        assert update["output"] == f"Node: decision={value!r} -> success"


def test_branching_reads_the_configured_field_and_values() -> None:
    state = {"first": "no", "verdict": "approved"}
    assert run(BranchingAgent, state, field="verdict", success_values=["approved"])["last_action_success"] is True
    assert run(BranchingAgent, state, field="first", success_values=["approved"])["last_action_success"] is False
    assert run(BranchingAgent, {"v": "meh"}, failure_values=["meh"])["last_action_success"] is False
    assert run(BranchingAgent, {"v": "no"}, failure_values=["meh"])["last_action_success"] is True


def test_branching_without_inputs_fails() -> None:
    assert run(BranchingAgent, {})["errors"] == ["Error in Node: None=None is a failure value"]


def test_branching_values_must_be_lists() -> None:
    assert BranchingAgent.validate_config("", {"success_values": "yes", "failure_values": ["no"]}, ENV) == [
        'Context \'success_values\' must be a list of values, e.g. ["yes", "ok"]'
    ]


def test_success_and_failure_agents() -> None:
    assert run(SuccessAgent, {})["output"] == "[Node] succeeded"
    assert run(SuccessAgent, {}, "All good")["output"] == "All good"
    assert run(FailureAgent, {})["errors"] == ["Error in Node: this node always fails (agent type 'failure')"]
    assert run(FailureAgent, {}, "Card declined")["errors"] == ["Error in Node: Card declined"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_input_without_a_terminal_fails_with_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    (error,) = run(InputAgent, {}, "Your name?")["errors"]
    assert "needs a terminal" in error and '{"default": "..."}' in error
    assert "--state" in error and "--resume" in error


def test_input_without_a_terminal_reads_a_piped_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Ada\r\nGrace\n"))
    assert run(InputAgent, {}, "Your name?")["output"] == "Ada"
    assert run(InputAgent, {}, "Your name?", default="x")["output"] == "Grace"


def test_input_without_a_terminal_uses_the_context_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert run(InputAgent, {}, "Your name?", default="Grace")["output"] == "Grace"


def test_input_asks_the_formatted_prompt_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _Terminal("Ada\n"))
    assert run(InputAgent, {"who": "guest"}, "Name of the {who}?", default="unused")["output"] == "Ada"
    assert capsys.readouterr().out == "Name of the guest? "


def test_summary_joins_inputs_with_format_and_separator() -> None:
    state = {"a": "one", "b": 2}
    assert run(SummaryAgent, state)["output"] == "a: one\n\nb: 2"
    assert run(SummaryAgent, state, format="<{value}>", separator=", ")["output"] == "<one>, <2>"
    assert run(SummaryAgent, state, "Report for {a}", separator=" | ")["output"] == "Report for one | a: one | b: 2"


class _AskState(TypedDict, total=False):
    title: str
    name: str
    last_action_success: bool
    errors: list[str]


def _ask_graph(checkpointer: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    agent = InputAgent(
        "Ask",
        "What is your name, {title}?",
        {"interrupt": True, "input_fields": ["title"], "output_field": "name"},
        LOG,
        ExecutionTracker(),
    )
    builder = StateGraph(_AskState)
    builder.add_node("Ask", agent.run)
    builder.add_edge(START, "Ask")
    builder.add_edge("Ask", END)
    return builder.compile(checkpointer=checkpointer)


def test_input_in_interrupt_mode_pauses_and_returns_the_resume_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    monkeypatch.setattr("sys.stdin", io.StringIO("not read\n"))
    graph = _ask_graph(InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"title": "sir"}, config)
    assert [i.value for i in paused["__interrupt__"]] == [question("Ask", "input", "What is your name, sir?")]
    assert "name" not in paused
    final = graph.invoke(Command(resume="Ada"), config)
    assert final["name"] == "Ada"
    assert final["last_action_success"] is True
    assert "__interrupt__" not in final


def test_input_in_interrupt_mode_without_a_checkpointer_fails_saying_what_to_pass() -> None:
    final = _ask_graph(None).invoke({"title": "sir"})
    assert final["last_action_success"] is False
    assert "needs a checkpointer" in final["errors"][0]
    assert "--checkpoint" in final["errors"][0]


def test_input_interrupt_must_be_a_boolean() -> None:
    assert InputAgent.validate_config("Q?", {"interrupt": "yes"}, ENV)
    assert not InputAgent.validate_config("Q?", {"interrupt": True}, ENV)


def test_echo_warns_that_it_leaves_a_prompt_with_placeholders_unused() -> None:
    from agentmap.agents.builtins import EchoAgent
    from agentmap.agents.findings import ConfigWarning

    (problem,) = EchoAgent.validate_config("Hello {name}!", {}, ENV)
    assert isinstance(problem, tuple) and problem[0] == "Prompt" and isinstance(problem[1], ConfigWarning)
    assert "{name}" in problem[1] and "template" in problem[1]
    assert EchoAgent.validate_config("Says hello", {}, ENV) == []  # a Prompt without placeholders is only text
