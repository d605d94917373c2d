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
    tracker = app.new_tracker(listener=lambda e: on_loop.append(threading.get_ident() == loop_thread))
    result = await app.ainvoke({"name": "Ada"}, tracker=tracker)
    assert result.state["greeting"] == "Hello, Ada!" and result.state["seen"] == "here"
    assert on_loop[:2] == [True, True]  # the template node started and ended on the event loop's thread
    assert _SEEN["Custom"] != loop_thread  # a custom synchronous agent may block: a worker thread


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
