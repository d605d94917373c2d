"""What the runtime calls to run an agent as a node of a graph: the runtime's side of the agent contract.

The compiler, the retry wrapper and chain fusion run agents through these functions only, never through
`BaseAgent`'s internals. Each takes the run's `Tracker` when the caller holds it already (a compiled node
finds it in the config LangGraph passes it, `tracker_in`); without one, the agent looks for it in the run
it is part of, as `BaseAgent.run` does.
"""

from __future__ import annotations

from typing import Any

from agentmap.agents._run_context import run_config, run_tracker, tracker_in, with_tracker
from agentmap.agents.base import BaseAgent, Tracker

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


def run_node(agent: BaseAgent, state: Any, tracker: Tracker | None = None) -> dict[str, Any]:
    """`agent.run(state)`, recording on `tracker` (the run's) when given.

    An agent that overrides `run` (the contract says not to) is called through its own `run`, which finds
    the tracker itself.
    """
    if type(agent).run is BaseAgent.run:
        return agent._run(state, tracker)
    return agent.run(state)


async def arun_node(agent: BaseAgent, state: Any, tracker: Tracker | None = None) -> dict[str, Any]:
    """The async twin of `run_node`: `await agent.arun(state)`."""
    if type(agent).arun is BaseAgent.arun:
        return await agent._arun(state, tracker)
    return await agent.arun(state)


def fail_node(agent: BaseAgent, state: Any, error: Exception, tracker: Tracker | None = None) -> dict[str, Any]:
    """The contract's failure of `agent`'s node with `error`, when the runtime ended it (a timeout, say).

    It is what `run` returns when `process` raises `error`: logged, recorded on the tracker (the one given,
    else the agent's), `_post_process` applied, and the error update returned.

    Raises:
        ValueError: No tracker given, and the agent has none (not in a run).
    """
    return agent._fail(state, {}, error, tracker if tracker is not None else agent._tracker_for_this_run())


def input_keys(agent: BaseAgent) -> tuple[str, ...]:
    """The state keys `agent` reads (its Input_Fields without their renames), each once, in order."""
    return tuple(dict.fromkeys(key for key, _ in agent._io._inputs))
