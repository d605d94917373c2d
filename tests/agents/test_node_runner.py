"""`agentmap.agents.runner`: how the runtime runs an agent as a node, through public, typed names only."""

from __future__ import annotations

import ast
import asyncio
import logging
from pathlib import Path

import pytest

from agentmap.agents.base import BaseAgent
from agentmap.agents.builtins import EchoAgent, FailureAgent
from agentmap.agents.runner import arun_node, fail_node, input_keys, run_node, tracker_in, with_tracker
from agentmap.runtime.tracking import ExecutionTracker

LOG = logging.getLogger("tests.agents.runner")
PACKAGE = Path(__file__).parents[2] / "agentmap"
RUNTIME = PACKAGE / "runtime"


def test_run_node_records_on_the_tracker_it_is_given() -> None:
    tracker = ExecutionTracker()
    agent = EchoAgent("Echo", "", {"input_fields": ["x"], "output_field": "out"}, LOG)
    assert run_node(agent, {"x": 1, "y": 2}, tracker) == {"out": {"x": 1}, "last_action_success": True}
    assert [(e.name, e.success) for e in tracker.summary] == [("Echo", True)]


def test_arun_node_is_the_async_twin() -> None:
    tracker = ExecutionTracker()
    agent = FailureAgent("Fail", "no", {}, LOG)
    update = asyncio.run(arun_node(agent, {}, tracker))
    assert update["last_action_success"] is False and update["errors"] == ["Error in Fail: no"]
    assert [(e.name, e.success) for e in tracker.summary] == [("Fail", False)]


def test_without_a_tracker_outside_a_run_the_contract_error_stands() -> None:
    agent = EchoAgent("Echo", "", {}, LOG)
    with pytest.raises(ValueError, match="ExecutionTracker not provided to agent 'Echo'"):
        run_node(agent, {})
    with pytest.raises(ValueError, match="ExecutionTracker not provided to agent 'Echo'"):
        fail_node(agent, {}, TimeoutError("late"))


def test_fail_node_is_the_contract_failure() -> None:
    tracker = ExecutionTracker()
    agent = EchoAgent("Echo", "", {}, LOG)
    update = fail_node(agent, {}, TimeoutError("late"), tracker)
    assert update == {"graph_success": False, "last_action_success": False, "errors": ["Error in Echo: late"]}
    assert tracker.summary[0].error == "Error in Echo: late"


def test_input_keys_are_the_state_keys_read_without_renames() -> None:
    agent = BaseAgent("A", "", {"input_fields": ["a", "b:param", "a"]}, LOG)
    assert input_keys(agent) == ("a", "b")


def test_the_tracker_travels_in_the_config() -> None:
    tracker = ExecutionTracker()
    config = with_tracker({"configurable": {"thread_id": "t"}}, tracker)
    assert tracker_in(config) is tracker and config["configurable"]["thread_id"] == "t"
    assert tracker_in({}) is None and tracker_in(None) is None


def _private_agent_calls(path: Path) -> list[str]:
    """`x._run(...)`, `x._io`, `tracker._conclude()`...: BaseAgent's (and its tracker's) internals named in a
    module."""
    private = {"_run", "_arun", "_start", "_succeed", "_fail", "_io", "_tracker_for_this_run", "_given_tracker"}
    private |= {"_conclude"}
    return [
        f"{path.name}:{node.lineno} .{node.attr}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr in private
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
    ]


def test_the_runtime_runs_agents_through_the_runner_only() -> None:
    """No module outside `agents/` reaches into an agent (nor into a tracker): the runtime goes through
    `agentmap.agents.runner`, and the rest through public methods (`input_mapping()`, `conclude()`)."""
    outside = [path for path in sorted(PACKAGE.rglob("*.py")) if path.relative_to(PACKAGE).parts[0] != "agents"]
    assert RUNTIME / "runner.py" in outside and PACKAGE / "observe" / "eject.py" in outside
    found = [hit for path in outside for hit in _private_agent_calls(path)]
    assert found == [], "BaseAgent internals named outside agents/; use agentmap.agents.runner or a public method"


def test_the_runtime_reads_no_private_config_key() -> None:
    named = [
        p.name
        for p in sorted(RUNTIME.glob("*.py"))
        if "TRACKER_KEY" in p.read_text() or "_run_context" in p.read_text()
    ]
    assert named == []


def test_the_contract_class_holds_no_run_machinery() -> None:
    machinery = ("_run", "_arun", "_start", "_succeed", "_fail", "_trace_end", "_tracker_for_this_run")
    assert [name for name in machinery if hasattr(BaseAgent, name)] == []
    parts = ("base.py", "runner.py", "_steps.py", "_run_context.py", "_agent_log.py")
    long = [name for name in parts if len((RUNTIME.parent / "agents" / name).read_text().splitlines()) > 400]
    assert long == []


def test_an_agent_overriding_run_is_run_through_its_own_run() -> None:
    class Loud(EchoAgent):
        def run(self, state: dict[str, object]) -> dict[str, object]:
            return {**super().run(state), "loud": True}

    agent = Loud("L", "", {"input_fields": ["a"], "output_field": "b"}, LOG, ExecutionTracker())
    update = run_node(agent, {"a": 1}, ExecutionTracker())
    assert update["loud"] is True and update["last_action_success"] is True
