"""`human` and `suspend` nodes (agentmap/agents/pausing.py): pause with a question, resume with a checked answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

import agentmap
from agentmap.agents.base import AgentEnvironment
from agentmap.agents.findings import ConfigWarning
from agentmap.agents.pausing import MESSAGING_KEYS, HumanAgent, SuspendAgent, pauses_run
from agentmap.agents.questions import AnswerError, check_answer, question

ENV = AgentEnvironment(base_dir=Path("."))


def _workflow(tmp_path: Path, agent_type: str, context: str, prompt: str = "Review {doc}?") -> Path:
    path = tmp_path / "flow.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
        f'Flow,Ask,{agent_type},"{prompt}","{context}",doc,answer,After\n'
        "Flow,After,echo,,,answer,echoed,\n",
        encoding="utf-8",
    )
    return path


def _start(path: Path, thread: str = "t") -> tuple[Any, Any, Any]:
    app = agentmap.compile(path, checkpointer="memory")
    config: Any = {"configurable": {"thread_id": thread}}
    return app, config, app.invoke({"doc": "the draft"}, config)


@pytest.mark.parametrize(
    ("context", "answer", "written"),
    [
        ('{""interaction_type"": ""approval""}', "Approve", True),
        ('{""interaction_type"": ""approval""}', {"approved": False}, False),
        ('{""interaction_type"": ""approval""}', {"approved": True, "note": "ok"}, {"approved": True, "note": "ok"}),
        ('{""interaction_type"": ""choice"", ""options"": [""a"", ""b""]}', "2", "b"),
        ('{""interaction_type"": ""text_input""}', "some text", "some text"),
        ('{""interaction_type"": ""edit""}', "the edited draft", "the edited draft"),
        ('{""interaction_type"": ""conversation""}', "hello", "hello"),
        ("", "no context: text", "no context: text"),
    ],
)
def test_human_pauses_with_a_question_and_writes_the_answer(
    tmp_path: Path, context: str, answer: Any, written: Any
) -> None:
    app, config, paused = _start(_workflow(tmp_path, "human", context))
    (pending,) = paused.interrupts
    assert pending.value["type"] == "agentmap.question" and pending.value["kind"] == "human"
    assert pending.value["question"] == "Review the draft?" and pending.value["node"] == "Ask"
    assert check_answer(pending.value, answer) is not None  # what a resumer checks before resuming
    result = app.invoke(Command(resume=answer), config)
    assert not result.interrupts and result.success
    assert result.state["answer"] == written


def test_an_edit_question_carries_the_text_to_edit_and_a_choice_its_options(tmp_path: Path) -> None:
    _, _, paused = _start(_workflow(tmp_path, "human", '{""interaction_type"": ""edit"", ""timeout_seconds"": 60}'))
    assert paused.interrupts[0].value["value"] == "the draft"
    assert paused.interrupts[0].value["timeout_seconds"] == 60
    _, _, paused = _start(
        _workflow(tmp_path, "human", '{""interaction_type"": ""choice"", ""options"": [""x"", ""y""]}')
    )
    assert paused.interrupts[0].value["options"] == ["x", "y"]


def test_a_wrong_answer_leaves_the_run_paused_asking_again_with_the_error(tmp_path: Path) -> None:
    app, config, _ = _start(
        _workflow(tmp_path, "human", '{""interaction_type"": ""choice"", ""options"": [""a"", ""b""]}')
    )
    again = app.invoke(Command(resume="c"), config)
    (pending,) = again.interrupts
    assert "'c' is not one of them" in pending.value["error"] and "answer one of: 'a', 'b'" in pending.value["error"]
    assert "answer" not in again.state and [e.name for e in again.summary if e.success] == []
    done = app.invoke(Command(resume="A"), config)
    assert done.state["answer"] == "a" and done.success


def test_an_empty_answer_takes_the_default_and_a_default_that_fits_nothing_is_ignored(tmp_path: Path) -> None:
    context = '{""interaction_type"": ""choice"", ""options"": [""go"", ""stop""], ""default_option"": ""stop""}'
    app, config, paused = _start(_workflow(tmp_path, "human", context))
    assert paused.interrupts[0].value["default"] == "stop"
    assert app.invoke(Command(resume=""), config).state["answer"] == "stop"  # like Enter at a prompt
    assert check_answer(paused.interrupts[0].value, None) == "stop"
    problems = HumanAgent.validate_config(
        "Q", {"interaction_type": "choice", "options": ["a"], "default_action": "z"}, ENV
    )
    assert len(problems) == 1 and isinstance(problems[0], ConfigWarning) and "is ignored" in problems[0]


def test_the_old_resume_envelope_is_understood(tmp_path: Path) -> None:
    approval = question("N", "human", "ok?", interaction="approval")
    assert check_answer(approval, {"action": "reject", "data": {}}) == {"approved": False}
    choice = question("N", "human", "which?", interaction="choice", options=["low", "high"])
    assert check_answer(choice, {"action": "choose", "data": {"choice": 2}}) == "high"
    text = question("N", "human", "say", interaction="text_input")
    assert check_answer(text, {"action": "respond", "data": {"feedback": "great"}}) == "great"
    edit = question("N", "human", "fix", interaction="edit")
    assert check_answer(edit, {"action": "edit", "data": {"edited": "fixed"}}) == "fixed"
    with pytest.raises(AnswerError):
        check_answer(text, {"action": "respond", "data": {"n": 1}})
    event = question("N", "suspend", "wait", interaction="event")
    assert check_answer(event, {"action": "x", "data": 1}) == {"action": "x", "data": 1}  # events keep it all


def test_on_reject_fail_takes_failure_next(tmp_path: Path) -> None:
    path = tmp_path / "flow.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next,Failure_Next\n"
        'F,Ask,human,Ship it?,"{""interaction_type"": ""approval"", ""on_reject"": ""fail""}",,ok,Yes,No\n'
        "F,Yes,success,,,,,,\nF,No,default,rejected,,,why,,\n",
        encoding="utf-8",
    )
    app = agentmap.compile(path, checkpointer="memory")
    config: Any = {"configurable": {"thread_id": "r"}}
    app.invoke({}, config)
    result = app.invoke(Command(resume={"approved": False, "note": "too risky"}), config)
    assert [e.name for e in result.summary] == ["Ask", "No"]
    assert "'Ask' was rejected: too risky" in result.errors[0]


def test_suspend_returns_whatever_the_resumer_sends(tmp_path: Path) -> None:
    context = '{""reason"": ""batch"", ""external_ref"": ""jobs"", ""send_suspend_message"": true}'
    app, config, paused = _start(_workflow(tmp_path, "suspend", context, prompt="Waiting for {doc}"))
    value = paused.interrupts[0].value
    assert (value["kind"], value["interaction"], value["question"]) == ("suspend", "event", "Waiting for the draft")
    assert (value["reason"], value["external_ref"], value["not_sent"]) == ("batch", "jobs", ["send_suspend_message"])
    result = app.invoke(Command(resume={"rows": [1, 2], "status": None}), config)
    assert result.state["answer"] == {"rows": [1, 2], "status": None}


def test_suspend_messaging_keys_are_a_warning_not_a_claim(tmp_path: Path) -> None:
    (finding,) = agentmap.validate(_workflow(tmp_path, "suspend", '{""send_resume_message"": true}'))
    assert (finding.severity, finding.code, finding.column) == ("warning", "config-assumed", "Context")
    assert "no message is sent" in finding.message
    assert SuspendAgent.validate_config("", {}, ENV) == []
    assert "send_graph_message" in MESSAGING_KEYS and "resume_message_topic" in MESSAGING_KEYS


def test_human_context_is_checked_at_validation() -> None:
    assert HumanAgent.validate_config("Q", {"interaction_type": "approval", "timeout_seconds": 10}, ENV) == []
    (unknown,) = HumanAgent.validate_config("Q", {"interaction_type": "vote"}, ENV)
    assert isinstance(unknown, ConfigWarning) and "text_input is assumed" in unknown
    problems = HumanAgent.validate_config(
        "Q", {"interaction_type": "choice", "timeout_seconds": -1, "on_reject": "x"}, ENV
    )
    assert [p.split(" ")[0] if isinstance(p, str) else p for p in problems] == ["a", "Context", "Context"]
    options = HumanAgent.validate_config("Q", {"options": "a|b"}, ENV)[0]
    assert isinstance(options, str) and options.startswith("Context options must be a list")


@pytest.mark.parametrize("agent_type", ["human", "suspend"])
def test_without_a_checkpointer_the_node_fails_saying_what_to_pass(tmp_path: Path, agent_type: str) -> None:
    result = agentmap.compile(_workflow(tmp_path, agent_type, "")).invoke({"doc": "d"})
    assert result.failed_nodes == ["Ask"]
    assert "needs a checkpointer" in result.errors[0] and 'checkpointer="memory"' in result.errors[0]
    assert "--checkpoint runs.db" in result.errors[0]


def test_pauses_run_names_the_nodes_that_need_a_checkpointer() -> None:
    from agentmap.agents.builtins import EchoAgent, InputAgent

    assert pauses_run(HumanAgent, {}) and pauses_run(SuspendAgent, {})
    assert pauses_run(InputAgent, {"interrupt": True}) and not pauses_run(InputAgent, {})
    assert not pauses_run(EchoAgent, {"interrupt": True})
