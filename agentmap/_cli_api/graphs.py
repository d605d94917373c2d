"""run, validate, inspect, export, scaffold: a workflow's graph chosen, its agent types named, drawn and ejected."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.spec.models import GraphSpec, Workflow

__all__ = ["eject", "normalize_type", "picture", "select_graph"]


def select_graph(workflow: Workflow, name: str | None, *, source: str | None = None) -> GraphSpec:
    """inspect, export, scaffold: the graph `name` of a loaded workflow (the only one when None), or the error
    naming the graphs the file holds."""
    from agentmap.runtime.api import select_graph

    return select_graph(workflow, name, source=source)


def normalize_type(name: str) -> str:
    """scaffold: an AgentType cell as the registry spells it (`EchoAgent` -> `echo`), to find the unknown types."""
    from agentmap.agents.registry import normalize_type

    return normalize_type(name)


def eject(app: CompiledWorkflow, success_policy: str = "all_nodes") -> str:
    """export --format python: the compiled workflow as a plain LangGraph script."""
    from agentmap.observe.eject import eject

    return eject(app, success_policy)


def picture(app: CompiledWorkflow, fmt: str) -> str | bytes:
    """export --format svg|png|dot: the graph drawn offline (PNG needs the `draw` extra)."""
    from agentmap.observe.draw import draw_graph, to_png
    from agentmap.observe.outputs import to_dot

    if fmt == "dot":
        return to_dot(app)
    svg = draw_graph(app)
    return to_png(svg) if fmt == "png" else svg
