"""How a node finds the run it is part of: the tracker travels in LangGraph's own run config.

The runner puts the run's tracker in the config it invokes the graph with (`with_tracker`); LangGraph hands
that config to every node it runs (and to nested graphs), and `langgraph.config.get_config()` returns it
inside a node. No module-level state: two runs in two threads each see their own config. This module is the
only one that knows where in the config the tracker sits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from agentmap.agents.base import Tracker

__all__ = ["TRACKER_KEY", "in_run", "run_config", "run_tracker", "tracker_in", "with_tracker"]

TRACKER_KEY = "__agentmap_tracker"
"""The `configurable` key the runner puts the run's tracker under (`__` keeps it out of checkpoints)."""


def run_config() -> RunnableConfig | None:
    """The LangGraph run config of the calling node (LangGraph's `get_config()`), or None outside a run."""
    from langgraph.config import get_config  # imported on first use: validating a workflow needs none of it

    try:
        return get_config()
    except RuntimeError:  # not inside a LangGraph run
        return None


def in_run() -> bool:
    """Whether the caller runs inside a LangGraph node."""
    return run_config() is not None


def tracker_in(config: RunnableConfig | None) -> Tracker | None:
    """The run's tracker in `config` (the config LangGraph hands a node), or None: not an AgentMap run."""
    configurable = config.get("configurable") if config is not None else None
    # only `with_tracker` writes this key, always with a Tracker: a cast, not a per-node isinstance check
    return cast("Tracker | None", configurable.get(TRACKER_KEY)) if configurable else None


def run_tracker() -> Tracker | None:
    """The tracker of the AgentMap run the calling node belongs to (None outside one)."""
    return tracker_in(run_config())


def with_tracker(config: RunnableConfig, tracker: Tracker, **configurable: object) -> RunnableConfig:
    """`config` carrying `tracker` (and the other `configurable` entries given) for every node of the run."""
    return {**config, "configurable": {**(config.get("configurable") or {}), TRACKER_KEY: tracker, **configurable}}
