"""What the runtime calls to run an agent as a node of a graph: the runtime's side of the agent contract.

The compiler, the retry wrapper and chain fusion run agents through these functions only, never through
`BaseAgent`'s internals. `run_node` / `arun_node` / `fail_node` are the machinery of a node run itself
(`agents._steps`, which this module owns): `BaseAgent.run` calls the same functions, so a compiled node
runs its agent in one call. Each takes the run's `Tracker` when the caller holds it already (a compiled node
finds it in the config LangGraph passes it, `tracker_in`); without one, the agent looks for it in the run
it is part of, as `BaseAgent.run` does.
"""

from __future__ import annotations

from agentmap.agents._run_context import run_config, run_tracker, tracker_in, with_tracker
from agentmap.agents._steps import arun_node, fail_node, run_node
from agentmap.agents.base import BaseAgent

__all__ = [
    "arun_node",
    "fail_node",
    "input_keys",
    "run_config",
    "run_node",
    "run_tracker",
    "tracker_in",
    "with_tracker",
]


def input_keys(agent: BaseAgent) -> tuple[str, ...]:
    """The state keys `agent` reads (its Input_Fields without their renames), each once, in order."""
    return tuple(dict.fromkeys(key for key, _ in agent.input_mapping()))
