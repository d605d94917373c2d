"""Clauses of the agent contract held exactly: hook state changes, trace lines, logging, and agents that
try to end the process; the template agent's limits (format-spec sizes, keys that are not inputs)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

import agentmap
from agentmap.agents.base import TRACE, BaseAgent
from agentmap.agents.builtins import EchoAgent, safe_format
from agentmap.cli import main as run_cli  # the public entry point: it puts back what a command changes
from agentmap.runtime.tracking import ExecutionTracker

LOG = logging.getLogger("tests.agents.clauses")


class Upper(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        return str(inputs.get("text", "")).upper()


class Boom(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        raise RuntimeError("kaput")


def _agent(cls: type[BaseAgent], logger: Any = LOG) -> BaseAgent:
    return cls("Node", "p", {"input_fields": ["text"], "output_field": "out"}, logger, ExecutionTracker())


def test_state_changes_made_by_the_hooks_are_part_of_the_update() -> None:
    class Stamped(Upper):
        def _pre_process(self, state: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
            return {**state, "started_by": self.name}, inputs

        def _post_process(self, state: Any, inputs: dict[str, Any], output: Any) -> tuple[Any, Any]:
            state["audit"] = ["done"]  # in place, too
            return state, output

    update = _agent(Stamped).run({"text": "a", "untouched": 1})
    assert update == {"started_by": "Node", "audit": ["done"], "out": "A", "last_action_success": True}


def test_hook_changes_survive_a_failure() -> None:
    class Noted(Boom):
        def _pre_process(self, state: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
            return {**state, "attempted": True}, inputs

    update = _agent(Noted).run({"text": "a"})
    assert update["attempted"] is True and update["last_action_success"] is False


@pytest.mark.parametrize(("cls", "outcome"), [(Upper, "COMPLETED"), (Boom, "FAILED")])
def test_the_run_ends_with_the_contract_trace_line(
    cls: type[BaseAgent], outcome: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(TRACE, logger=LOG.name):
        _agent(cls).run({"text": "a"})
    lines = [r.getMessage() for r in caplog.records]
    assert any(re.search(rf"\*\*\* AGENT Node RUN {outcome} \[\w{{8}}\] in \d+\.\d{{4}}s \*\*\*", m) for m in lines)


class _MinimalLogger:
    """A logger with only some level methods, as a test double or a third-party logger may be."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, message: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(("info", message))

    def error(self, message: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(("error", message))


def test_log_falls_back_to_info_for_a_logger_without_that_level() -> None:
    logger = _MinimalLogger()
    agent = _agent(Upper, logger)
    agent.log_trace("deep")
    agent.log("verbose", "chatty")
    assert logger.lines == [("info", "[Upper:Node] deep"), ("info", "[Upper:Node] chatty")]
    assert agent.run({"text": "x"})["out"] == "X"  # and run() works with it


def test_echo_logs_its_info_line_and_works_without_a_logger(caplog: pytest.LogCaptureFixture) -> None:
    assert EchoAgent("Echo", "{input}", {"input_fields": ["input"]}).process({"input": "hi"}) == {"input": "hi"}
    agent = EchoAgent("Echo", "p", {"input_fields": ["input"]}, LOG, ExecutionTracker())
    with caplog.at_level(logging.INFO, logger=LOG.name):
        agent.process({"input": "hi"})
    assert "[EchoAgent:Echo] [EchoAgent] 'Echo' received inputs: {'input': 'hi'} and prompt: 'p'" in caplog.messages


def test_set_output_field_formats_the_value_with_str(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=LOG.name):
        _agent(Upper).run({"text": "ada"})
    assert "[Upper:Node] Set output field 'out' = ADA" in caplog.messages


@pytest.mark.parametrize("signal", [SystemExit(3), KeyboardInterrupt()])
def test_an_agent_raising_system_exit_or_keyboard_interrupt_fails_its_node(signal: BaseException) -> None:
    class Quitter(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            raise signal

    update = _agent(Quitter).run({})
    assert update["last_action_success"] is False
    assert update["errors"] == [
        f"Error in Node: the agent raised {type(signal).__name__}({', '.join(map(repr, signal.args))})"
    ]


def test_a_quitting_custom_agent_fails_the_run_with_its_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "custom_agents").mkdir()
    (tmp_path / "custom_agents" / "quit.py").write_text(
        "from agentmap import BaseAgent, agent\n\n"
        "@agent('quitter')\nclass Quitter(BaseAgent):\n    def process(self, inputs):\n        raise SystemExit(0)\n"
    )
    (tmp_path / "flow.csv").write_text("GraphName,Node,AgentType,Failure_Next\nG,Q,quitter,Handle\nG,Handle,echo,\n")
    (tmp_path / "alone.csv").write_text("GraphName,Node,AgentType\nG,Q,quitter\n")
    monkeypatch.chdir(tmp_path)
    code = run_cli(["run", "alone.csv", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1 and document["errors"] == ["Error in Q: the agent raised SystemExit(0)"]
    code = run_cli(["run", "flow.csv", "--json"])  # the workflow handles the failure: Failure_Next
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["errors"] == ["Error in Q: the agent raised SystemExit(0)"]
    assert [(e["name"], e["success"]) for e in document["summary"]] == [("Q", False), ("Handle", True)]


def test_a_format_spec_cannot_build_a_huge_string() -> None:
    assert safe_format("{x:>5}", {"x": "a"}) == "    a"
    with pytest.raises(ValueError, match="above the limit"):
        safe_format("{x:>100000000}", {"x": "a"})
    with pytest.raises(ValueError, match="above the limit"):
        safe_format("{x:.99999999f}", {"x": 1.5})


def test_validate_catches_a_template_key_that_is_not_an_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "flow.csv").write_text(
        'GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nG,Greet,template,"Hello, {nmae}!",name,greeting\n'
    )
    monkeypatch.chdir(tmp_path)
    issues = agentmap.validate("flow.csv")
    assert [(i.row, i.column, i.code) for i in issues] == [(2, "Prompt", "bad-config")]
    assert "uses {nmae}" in issues[0].message and "Input_Fields" in issues[0].message
    assert run_cli(["validate", "flow.csv"]) == 4
    assert "flow.csv:2:Prompt" in capsys.readouterr().out
