"""The CSV agent types `planner`, `worker` and `orchestrator` (registered when this module is imported).

Each is an `AgentProtocol` class adapted into a workflow node by `agentmap.agents.protocol.protocol_agent`:

* `planner` (`PlannerAgent`): Context `steps` (a fixed plan) and/or `rules` (goal -> steps).
* `worker` (`WorkerAgent`): tools from Tool_Source / Available_Tools.
* `orchestrator` (`Orchestrator`): Context `planner` and `workers` name nodes of the same graph.

All three share the node keys of `ProtocolAgent` (`task`, `profile`, `priority`, `timeout_seconds`,
`constraints`, `fail_on`, ...); see csv_specs/orchestration.md.
"""

from __future__ import annotations

from agentmap.agents.protocol import ProtocolAgent
from agentmap.agents.registry import registry
from agentmap.orchestration.orchestrator import Orchestrator
from agentmap.orchestration.planner import PlannerAgent
from agentmap.orchestration.worker import WorkerAgent

__all__ = ["OrchestratorNode", "PlannerNode", "WorkerNode"]

PlannerNode: type[ProtocolAgent] = registry.register("planner", PlannerAgent)  # type: ignore[assignment]
"""The `planner` node class."""
WorkerNode: type[ProtocolAgent] = registry.register("worker", WorkerAgent)  # type: ignore[assignment]
"""The `worker` node class."""
OrchestratorNode: type[ProtocolAgent] = registry.register("orchestrator", Orchestrator)  # type: ignore[assignment]
"""The `orchestrator` node class."""

from agentmap.orchestration import _legacy  # noqa: E402,F401  (the 0.9 orchestrator shares the type name)
