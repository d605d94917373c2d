"""How a node finds the run it is part of: the tracker travels in LangGraph's own run config.

The runner puts the run's tracker in the config it invokes the graph with (`with_tracker`); LangGraph hands
that config to every node it runs (and to nested graphs), and `langgraph.config.get_config()` returns it
inside a node. No module-level state: two runs in two threads each see their own config. This module is the
only one that knows where in the config the tracker sits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from agentmap.agents.base import Tracker

__all__ = ["TRACKER_KEY", "in_run", "run_config", "run_tracker", "tracker_in", "with_tracker"]

TRACKER_KEY = "__agentmap_tracker"
"""The `configurable` key the runner puts the run's tracker under (`__` keeps it out of checkpoints)."""


_CONFIG_VAR: Any = None


def run_config() -> RunnableConfig | None:
    """The LangGraph run config of the calling node (what `langgraph.config.get_config()` reads), or None."""
    global _CONFIG_VAR
    if _CONFIG_VAR is None:  # imported on first use: validating a workflow needs none of it
        from langchain_core.runnables.config import var_child_runnable_config

        _CONFIG_VAR = var_child_runnable_config
    return cast("RunnableConfig | None", _CONFIG_VAR.get())


def in_run() -> bool:
    """Whether the caller runs inside a LangGraph node."""
    return run_config() is not None


def tracker_in(config: Mapping[str, Any] | None) -> Tracker | None:
    """The run's tracker in `config` (the config LangGraph hands a node), or None: not an AgentMap run."""
    configurable = config.get("configurable") if config is not None else None
    return cast("Tracker | None", configurable.get(TRACKER_KEY)) if configurable else None


def run_tracker() -> Tracker | None:
    """The tracker of the AgentMap run the calling node belongs to (None outside one)."""
    return tracker_in(run_config())


def with_tracker(config: RunnableConfig, tracker: Tracker, **configurable: Any) -> RunnableConfig:
    """`config` carrying `tracker` (and the other `configurable` entries given) for every node of the run."""
    return {**config, "configurable": {**(config.get("configurable") or {}), TRACKER_KEY: tracker, **configurable}}
