"""Async runs (`ainvoke`, `astream`): where nodes run, and a caller that stops reading stops the graph at once."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

import agentmap
from agentmap import BaseAgent
from agentmap.agents import EchoAgent

WriteCsv = Callable[..., Path]

_SEEN: dict[str, int] = {}


class _WhereAgent(BaseAgent):
    """Records the thread it ran on."""

    def process(self, inputs: dict[str, Any]) -> Any:
        _SEEN[self.name] = threading.get_ident()
        return "here"


def _where_type() -> str:
    name = f"where_{uuid.uuid4().hex[:8]}"
    agentmap.agent(name)(_WhereAgent)
    return name


async def test_computing_builtins_run_on_the_loop_and_other_sync_agents_in_a_thread(write_csv: WriteCsv) -> None:
    where = _where_type()
    path = write_csv(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        f'G,Greet,template,"Hello, {{name}}!",name,greeting,Custom\nG,Custom,{where},,greeting,seen,\n'
    )
    app = agentmap.compile(path)
    loop_thread = threading.get_ident()
    on_loop: list[bool] = []

    class Where(agentmap.RunHooks):
        def node_started(self, run: agentmap.RunInfo, node: agentmap.NodeExecution) -> None:
            on_loop.append(threading.get_ident() == loop_thread)

        node_ended = node_started

    result = await app.ainvoke({"name": "Ada"}, hooks=[Where()])
    assert result.state["greeting"] == "Hello, Ada!" and result.state["seen"] == "here"
    assert on_loop[:2] == [True, True]  # the template node started and ended on the event loop's thread
    assert _SEEN["Custom"] != loop_thread  # a custom synchronous agent may block: a worker thread


class _ComputingAgent(_WhereAgent):
    """Declares that it only computes, so an async run may run it on the event loop."""

    computes_only = True


class _EchoSubclass(EchoAgent):
    """A subclass of a computing built-in that does not say it only computes itself (it might do I/O)."""

    def process(self, inputs: dict[str, Any]) -> Any:
        _SEEN[self.name] = threading.get_ident()
        return "here"


async def test_an_agent_runs_on_the_loop_only_when_its_own_class_declares_it_computes_only(write_csv: WriteCsv) -> None:
    declared, inherited = f"comp_{uuid.uuid4().hex[:8]}", f"sub_{uuid.uuid4().hex[:8]}"
    agentmap.agent(declared)(_ComputingAgent)
    agentmap.agent(inherited)(_EchoSubclass)
    path = write_csv(
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\n"
        f"G,Declared,{declared},name,a,Inherited\nG,Inherited,{inherited},a,b,\n"
    )
    app = agentmap.compile(path)
    _SEEN.clear()
    result = await app.ainvoke({"name": "Ada"})
    assert result.success and result.state["b"] == "here"
    assert _SEEN["Declared"] == threading.get_ident()  # declared: on the event loop
    assert _SEEN["Inherited"] != threading.get_ident()  # inherited from echo only: a worker thread
    assert not _EchoSubclass.computes_only and EchoAgent.computes_only


async def test_a_caller_that_stops_reading_stops_the_graph_after_the_step_saved(write_csv: WriteCsv) -> None:
    where = _where_type()
    path = write_csv(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        f"G,First,template,one {{name}},name,first,Second\nG,Second,{where},,first,seen,\n"
    )
    app = agentmap.compile(path, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    _SEEN.clear()
    stream = app.astream({"name": "x"}, config)
    assert list(await anext(stream)) == ["First"]
    await stream.aclose()  # LangGraph's stream is closed with ours: First's step is saved, Second never runs
    assert app.graph.get_state(config).next == ("Second",)
    assert "Second" not in _SEEN
