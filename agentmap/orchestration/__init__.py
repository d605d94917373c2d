"""Orchestration (csv_specs/agents.md): a planner turns a goal into steps, workers run them, an orchestrator routes.

```python
from agentmap.orchestration import DeterministicPlanner, Orchestrator, PlannerAgent, WorkerAgent

orchestrator = Orchestrator(PlannerAgent(DeterministicPlanner(steps=[...])), {"tools": WorkerAgent(executor)})
response = await orchestrator.run("Plan a trip from NYC to Paris")
```
"""

from agentmap.contracts.io import OrchestrationError
from agentmap.orchestration.orchestrator import Orchestrator, OrchestratorConfig
from agentmap.orchestration.planner import (
    DeterministicPlanner,
    Planner,
    PlannerAgent,
    PlanningError,
    PlanRule,
    PlanStep,
)
from agentmap.orchestration.policy import PolicyEnforcer, PolicyError, PolicyLimits, PolicySession
from agentmap.orchestration.worker import StepError, WorkerAgent, resolve_references

__all__ = [
    "DeterministicPlanner",
    "OrchestrationError",
    "Orchestrator",
    "OrchestratorConfig",
    "PlanRule",
    "PlanStep",
    "Planner",
    "PlannerAgent",
    "PlanningError",
    "PolicyEnforcer",
    "PolicyError",
    "PolicyLimits",
    "PolicySession",
    "StepError",
    "WorkerAgent",
    "resolve_references",
]
