"""How a node finds the run it is part of: the tracker travels in LangGraph's own run config.

The runner puts the run's tracker under `config["configurable"][TRACKER_KEY]`; LangGraph hands that config
to every node it runs (and to nested graphs), and `langgraph.config.get_config()` returns it inside a node.
No module-level state: two runs in two threads each see their own config.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TRACKER_KEY", "in_run", "run_config", "run_tracker"]

TRACKER_KEY = "__agentmap_tracker"
"""The `configurable` key the runner puts the run's tracker under (`__` keeps it out of checkpoints)."""


_CONFIG_VAR: Any = None


def run_config() -> Any:
    """The LangGraph run config of the calling node (what `langgraph.config.get_config()` reads), or None."""
    global _CONFIG_VAR
    if _CONFIG_VAR is None:  # imported on first use: validating a workflow needs none of it
        from langchain_core.runnables.config import var_child_runnable_config

        _CONFIG_VAR = var_child_runnable_config
    return _CONFIG_VAR.get()


def in_run() -> bool:
    """Whether the caller runs inside a LangGraph node."""
    return run_config() is not None


def run_tracker() -> Any:
    """The tracker of the AgentMap run the calling node belongs to (None outside one)."""
    config = run_config()
    if config is None:
        return None
    return (config.get("configurable") or {}).get(TRACKER_KEY)
