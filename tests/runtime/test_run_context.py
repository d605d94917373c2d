"""A compiled node finds the tracker in the run's LangGraph config; its environment, from its constructor."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from timing import scaled

import agentmap
from agentmap import BaseAgent
from agentmap.agents.registry import AgentRegistry

WriteCsv = Callable[..., Path]
HELLO = 'GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nG,Greet,template,"Hi {name}",name,greeting\n'


def test_a_compiled_agent_run_outside_a_graph_asks_for_a_tracker(write_csv: WriteCsv) -> None:
    greet = agentmap.compile(write_csv(HELLO)).agents["Greet"]
    with pytest.raises(ValueError, match="ExecutionTracker not provided to agent 'Greet'"):
        greet.run({"name": "Ada"})


def test_the_same_agent_runs_outside_a_graph_with_a_tracker_given(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv(HELLO))
    greet = app.agents["Greet"]
    tracker = app.new_tracker()
    greet._execution_tracker = tracker  # the contract's constructor argument, set afterwards
    assert greet.run({"name": "Ada"}) == {"greeting": "Hi Ada", "last_action_success": True}
    assert [e.name for e in tracker.summary] == ["Greet"]


def test_the_constructor_builds_the_agent_with_its_environment(write_csv: WriteCsv, tmp_path: Path) -> None:
    greet = agentmap.compile(write_csv(HELLO)).agents["Greet"]
    assert greet.environment.base_dir == tmp_path and greet.environment.graph_name == "G"
    assert "environment" in vars(greet)  # the instance's own, not the class default patched over


def test_an_agent_with_the_contracts_five_argument_constructor_still_gets_its_environment(
    write_csv: WriteCsv, tmp_path: Path
) -> None:
    class Strict(BaseAgent):
        def __init__(
            self, name: str, prompt: str, context: Any = None, logger: Any = None, execution_tracker: Any = None
        ) -> None:
            super().__init__(name, prompt, context, logger, execution_tracker)

        def process(self, inputs: dict[str, Any]) -> Any:
            return str(self.environment.base_dir)

    registry = AgentRegistry()
    registry.register("strict", Strict)
    path = write_csv("GraphName,Node,AgentType,Output_Field\nG,S,strict,where\n")
    result = agentmap.compile(path, registry=registry).invoke({})
    assert result.success and result.state["where"] == str(tmp_path)


def test_parallel_runs_in_threads_each_record_on_their_own_tracker(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv(HELLO))
    results: dict[str, Any] = {}

    def run(name: str) -> None:
        tracker = app.new_tracker()
        results[name] = (app.invoke({"name": name}, tracker=tracker), tracker)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("Ada", "Bob", "Cy", "Di")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, (result, tracker) in results.items():
        assert result.state["greeting"] == f"Hi {name}"
        assert [(e.name, e.inputs) for e in tracker.summary] == [("Greet", {"name": name})]


def test_concurrent_runs_of_one_workflow_each_trace_their_own_execution_id(write_csv: WriteCsv) -> None:
    # One agent object serves every run of a compiled workflow: the slow run starts, the quick run starts and
    # ends, then the slow run ends. Each run's RUN COMPLETED line must name its own RUN START's id.
    started, quick_done = threading.Event(), threading.Event()

    class Gate(BaseAgent):
        def process(self, inputs: dict[str, Any]) -> Any:
            if inputs["who"] == "slow":
                started.set()
                assert quick_done.wait(scaled(60)), "the quick run never ended"
            return inputs["who"]

    class Lines(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.DEBUG)
            self.lines: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            if "*** AGENT Gate RUN" in record.getMessage():
                self.lines.append(record.getMessage())

    registry = AgentRegistry()
    registry.register("gate", Gate)
    app = agentmap.compile(
        write_csv("GraphName,Node,AgentType,Input_Fields,Output_Field\nG,Gate,gate,who,out\n"), registry=registry
    )
    logger, handler = logging.getLogger("agentmap.agents"), Lines()  # the compiled agents' logger
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)  # trace lines go to a standard logger's info
    try:
        results: dict[str, Any] = {}
        slow = threading.Thread(target=lambda: results.update(slow=app.invoke({"who": "slow"})))
        slow.start()
        assert started.wait(scaled(60)), "the slow run never started"
        results["quick"] = app.invoke({"who": "quick"})
        quick_done.set()
        slow.join(scaled(60))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert results["slow"].state["out"] == "slow" and results["quick"].state["out"] == "quick"
    lines = handler.lines
    starts = [line.split("[")[2].split("]")[0] for line in lines if "RUN START" in line]
    ends = [line.split("[")[2].split("]")[0] for line in lines if "RUN COMPLETED" in line]
    assert len(starts) == 2 and len(set(starts)) == 2, lines
    assert ends == [starts[1], starts[0]], lines  # the quick run (started second) ends first


def test_a_node_embedded_in_someone_elses_graph_is_tracked_on_its_own(write_csv: WriteCsv) -> None:
    greet = agentmap.compile(write_csv(HELLO)).agents["Greet"]
    outer: StateGraph[Any, Any, Any, Any] = StateGraph(dict)
    outer.add_node("greet", greet.run)
    outer.add_edge(START, "greet")
    outer.add_edge("greet", END)
    assert outer.compile().invoke({"name": "Ada"})["greeting"] == "Hi Ada"  # no tracker asked for


def test_a_tracker_given_to_the_agent_comes_before_the_runs_inside_a_graph(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv(HELLO))
    own = app.new_tracker()
    app.agents["Greet"]._execution_tracker = own
    result = app.invoke({"name": "Ada"})
    assert [e.name for e in own.summary] == ["Greet"]
    assert all(e.name != "Greet" for e in result.summary)


def test_a_logger_level_changed_after_compiling_is_honoured(
    write_csv: WriteCsv, caplog: pytest.LogCaptureFixture
) -> None:
    app = agentmap.compile(write_csv(HELLO))
    app.invoke({"name": "Ada"})
    with caplog.at_level(logging.DEBUG, logger="agentmap.agents"):
        app.invoke({"name": "Ada"})
    assert "[TemplateAgent:Greet] Set output field 'greeting' = Hi Ada" in caplog.text
