"""Run hooks: one object, registered once, hears every run's start, node starts and ends, and end."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
