"""The runtime: compile a `GraphSpec` into LangGraph, run it, track it. Names load on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmap._lazy import lazy_exports

if TYPE_CHECKING:
    from agentmap.runtime.api import compile, load, load_graph, run, select_graph, validate
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.tracking import ExecutionTracker, NodeExecution

_HOMES = {
    "compile": "agentmap.runtime.api",
    "load": "agentmap.runtime.api",
    "load_graph": "agentmap.runtime.api",
    "run": "agentmap.runtime.api",
    "select_graph": "agentmap.runtime.api",
    "validate": "agentmap.runtime.api",
    "CompiledWorkflow": "agentmap.runtime.runner",
    "RunResult": "agentmap.runtime.results",
    "ExecutionTracker": "agentmap.runtime.tracking",
    "NodeExecution": "agentmap.runtime.tracking",
}
__all__ = [
    "CompiledWorkflow",
    "ExecutionTracker",
    "NodeExecution",
    "RunResult",
    "compile",
    "load",
    "load_graph",
    "run",
    "select_graph",
    "validate",
]
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
