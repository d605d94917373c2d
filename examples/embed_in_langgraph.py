"""Embed AgentMap workflows as nodes of a hand-written LangGraph application.

`agentmap.compile(...).graph` is LangGraph's own `CompiledStateGraph`, so it is added to a parent
`StateGraph` like any node: the keys the two schemas share flow in and out, and the parent's
checkpointer, config and streaming cover the embedded workflow too.

Run: `python examples/embed_in_langgraph.py [NAME] [CITY]`
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import agentmap

GRAPHS = Path(__file__).resolve().parents[1] / "graphs"


class Visit(TypedDict, total=False):
    """The parent application's state; `name`, `city`, `greeting` and `briefing` are shared with the workflows."""

    name: str
    city: str
    greeting: str
    briefing: str
    card: str


def tidy(state: Visit) -> dict[str, Any]:
    """A hand-written node before the workflows: clean up the user's input."""
    return {"name": state["name"].strip().title(), "city": state["city"].strip().title()}


def write_card(state: Visit) -> dict[str, Any]:
    """A hand-written node after them: combine what the two workflows wrote."""
    return {"card": f"{state['greeting']}\n{'-' * len(state['greeting'])}\n{state['briefing']}"}


def build() -> Any:
    """The parent graph: tidy -> hello (AgentMap) -> briefing (AgentMap, parallel inside) -> card."""
    hello = agentmap.compile(GRAPHS / "hello_world.csv").graph  # reads name, writes greeting
    briefing = agentmap.compile(GRAPHS / "parallel.csv").graph  # reads city, writes briefing

    parent = StateGraph(Visit)
    parent.add_node("tidy", tidy)
    parent.add_node("hello", hello)
    parent.add_node("briefing", briefing)
    parent.add_node("card", write_card)
    parent.add_edge(START, "tidy")
    parent.add_edge("tidy", "hello")
    parent.add_edge("hello", "briefing")
    parent.add_edge("briefing", "card")
    parent.add_edge("card", END)
    return parent.compile(checkpointer=InMemorySaver())


def main(argv: list[str]) -> int:
    """Run the parent app, printing each node as it finishes, then the card."""
    name = argv[0] if argv else "ada"
    city = argv[1] if len(argv) > 1 else "lisbon"
    app = build()
    config = {"configurable": {"thread_id": "embed-demo"}}
    for update in app.stream({"name": name, "city": city}, config, stream_mode="updates"):
        for node, values in update.items():
            print(f"finished {node}: wrote {', '.join(sorted(values or {}))}")
    final = app.get_state(config).values  # the checkpointer kept the final state of the thread
    print()
    print(final["card"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
