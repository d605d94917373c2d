"""Run hooks: one object, registered once, hears every run's start, node starts and ends, and end."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from timing import scaled

import agentmap
from agentmap.runtime.events import RunEnd, RunHooks, RunInfo
from agentmap.runtime.results import RunResult
from agentmap.runtime.tracking import NodeExecution

WriteCsv = Callable[..., Path]

OUTER = """
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
Outer,Prepare,template,"{user}",,user,who,Call
Outer,Call,graph,,{workflow=::Inner},name=who,greeting=message,Done
Outer,Done,template,"done: {greeting}",,greeting,out,
Inner,Hello,template,"Hello, {name}!",,name,message,
"""


class Recorder(RunHooks):
    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []
        self.lock = threading.Lock()

    def add(self, *event: object) -> None:
        with self.lock:
            self.events.append(event)

    def run_started(self, run: RunInfo) -> None:
        self.add("run", run.workflow.spec.name, run.depth)

    def node_started(self, run: RunInfo, node: NodeExecution) -> None:
        self.add("start", node.name, run.depth)

    def node_ended(self, run: RunInfo, node: NodeExecution) -> None:
        self.add("end", node.name, node.success, run.depth)

    def run_ended(self, run: RunInfo, result: RunResult | None, error: BaseException | None) -> None:
        self.add("done", run.workflow.spec.name, None if result is None else result.success, error)


def outer_events(user: str = "Ada") -> list[tuple[object, ...]]:
    return [
        ("run", "Outer", 0),
        ("start", "Prepare", 0),
        ("end", "Prepare", True, 0),
        ("start", "Call", 0),
        ("run", "Inner", 1),  # the nested run: the same hooks, one level down
        ("start", "Hello", 1),
        ("end", "Hello", True, 1),
        ("done", "Inner", True, None),
        ("end", "Call", True, 0),
        ("start", "Done", 0),
        ("end", "Done", True, 0),
        ("done", "Outer", True, None),
    ]


def test_one_hook_object_hears_invoke_stream_batch_and_nested_runs(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv(OUTER), "Outer")
    hooks = Recorder()
    app.observers.append(hooks)

    assert app.invoke({"user": "Ada"}).success
    assert hooks.events == outer_events()

    hooks.events.clear()
    assert [next(iter(chunk)) for chunk in app.stream({"user": "Ada"})] == ["Prepare", "Call", "Done"]
    assert hooks.events == outer_events()

    hooks.events.clear()
    assert [r.success for r in app.batch([{"user": "Ada"}, {"user": "Bob"}])] == [True, True]
    runs = [e for e in hooks.events if e[0] in ("run", "done")]
    assert runs.count(("run", "Outer", 0)) == 2 and runs.count(("done", "Outer", True, None)) == 2
    assert runs.count(("run", "Inner", 1)) == 2
    ended = [str(e[1]) for e in hooks.events if e[0] == "end"]
    assert sorted(ended) == sorted(["Prepare", "Call", "Done", "Hello"] * 2)


def test_a_stream_the_caller_closes_ends_its_run_without_a_result(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv(OUTER), "Outer")
    hooks = Recorder()
    app.observers.append(hooks)
    stream: Any = app.stream({"user": "Ada"})  # a generator
    next(stream)
    stream.close()  # the caller stopped reading
    name, graph, success, error = hooks.events[-1]
    assert (name, graph, success) == ("done", "Outer", None) and isinstance(error, GeneratorExit)


class OlderShape:
    """An observer of the older shape: only `run_started`, returning the end function."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bool | None]] = []

    def run_started(self, run: RunInfo) -> RunEnd:
        def end(result: RunResult | None, error: BaseException | None) -> None:
            self.seen.append((run.workflow.spec.name, None if result is None else result.success))

        return end


def test_an_observer_of_the_older_shape_still_hears_runs_and_flushes(write_csv: WriteCsv) -> None:
    from agentmap.runtime.events import flush_observers

    app = agentmap.compile(write_csv(OUTER), "Outer")
    older = OlderShape()
    app.observers.append(older)  # type: ignore[arg-type]
    assert app.invoke({"user": "Ada"}).success
    assert older.seen == [("Inner", True), ("Outer", True)]
    flush_observers(app)  # no `flush`: nothing to send


class _Gate(agentmap.BaseAgent):
    """Holds both runs in the same node until each has reached it: the runs overlap for sure."""

    gate = threading.Barrier(2, timeout=scaled(30))

    def process(self, inputs: dict[str, Any]) -> Any:
        self.gate.wait()
        return inputs["who"]


GATED = """
GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge
G,Prepare,template,"{user}",user,who,Wait
G,Wait,{gate},,who,seen,Done
G,Done,template,"done: {seen}",seen,out,
"""


def test_a_runs_own_hooks_hear_that_run_only_through_invoke_and_stream(write_csv: WriteCsv) -> None:
    gate = f"gate_{threading.get_ident()}_{id(write_csv)}"
    agentmap.agent(gate)(_Gate)
    _Gate.gate.reset()
    app = agentmap.compile(write_csv(GATED.replace("{gate}", gate)))
    workflow_hooks = Recorder()
    app.observers.append(workflow_hooks)
    by_invoke, by_stream = Recorder(), Recorder()
    results: dict[str, Any] = {}

    def invoke() -> None:
        results["invoke"] = app.invoke({"user": "Ada"}, hooks=[by_invoke])

    def stream() -> None:
        results["stream"] = [next(iter(c)) for c in app.stream({"user": "Bob"}, hooks=[by_stream])]

    threads = [threading.Thread(target=invoke), threading.Thread(target=stream)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["invoke"].state["out"] == "done: Ada" and results["stream"] == ["Prepare", "Wait", "Done"]
    one_run = [
        ("run", "G", 0),
        ("start", "Prepare", 0),
        ("end", "Prepare", True, 0),
        ("start", "Wait", 0),
        ("end", "Wait", True, 0),
        ("start", "Done", 0),
        ("end", "Done", True, 0),
        ("done", "G", True, None),
    ]
    assert by_invoke.events == one_run and by_stream.events == one_run
    assert len(workflow_hooks.events) == 2 * len(by_invoke.events)  # the workflow's hooks heard both runs


def test_a_runs_own_hooks_are_not_inherited_by_the_runs_nested_in_it(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv(OUTER), "Outer")
    own = Recorder()
    assert app.invoke({"user": "Ada"}, hooks=[own]).success
    assert own.events == [e for e in outer_events() if e[-1] != 1 and e[1] != "Inner"]


PAUSING = """
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge
G,Greet,template,"hi {name}",,name,greeting,Ask
G,Ask,input,Who?,"{""interrupt"": true}",,answer,Done
G,Done,template,"{answer}",,answer,out,
"""


def test_a_resumed_runs_own_hooks_hear_its_earlier_steps_first_and_the_workflows_do_not(write_csv: WriteCsv) -> None:
    app = agentmap.compile(write_csv(PAUSING), checkpointer="memory")
    assert app.invoke({"name": "Ada"}, {"configurable": {"thread_id": "t"}}).interrupts
    workflow_hooks, own = Recorder(), Recorder()
    app.observers.append(workflow_hooks)
    earlier: list[NodeExecution] = []

    class Earlier(RunHooks):
        def node_ended(self, run: RunInfo, node: NodeExecution) -> None:
            if node.metadata.get("before_resume"):
                earlier.append(node)

    result = app.resume("t", "Bob", hooks=[own, Earlier()])
    assert result.state["out"] == "Bob"
    assert own.events[:3] == [("run", "G", 0), ("end", "Greet", True, 0), ("start", "Ask", 0)]
    assert [e.name for e in earlier] == ["Greet"] and earlier[0] is result.summary[0]
    assert ("end", "Greet", True, 0) not in workflow_hooks.events  # a trace covers what this run ran


def test_a_hooks_error_stops_the_run_whoever_gave_the_hooks(write_csv: WriteCsv) -> None:
    class Failing(RunHooks):
        def node_started(self, run: RunInfo, node: NodeExecution) -> None:
            raise RuntimeError("the hook broke")

    app = agentmap.compile(write_csv(OUTER), "Outer")
    with pytest.raises(RuntimeError, match="the hook broke"):
        app.invoke({"user": "Ada"}, hooks=[Failing()])
    app.observers.append(Failing())
    with pytest.raises(RuntimeError, match="the hook broke"):
        app.invoke({"user": "Ada"})
