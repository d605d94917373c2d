"""How a node finds the run it is part of: the tracker travels in LangGraph's own run config.

The runner puts the run's tracker under `config["configurable"][TRACKER_KEY]`; LangGraph hands that config
to every node it runs (and to nested graphs), and `langgraph.config.get_config()` returns it inside a node.
No module-level state: two runs in two threads each see their own config.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TRACKER_KEY", "in_run", "run_tracker"]

TRACKER_KEY = "__agentmap_tracker"
"""The `configurable` key the runner puts the run's tracker under (`__` keeps it out of checkpoints)."""


def _config() -> Any:
    from langgraph.config import get_config

    try:
        return get_config()
    except RuntimeError:  # not inside a LangGraph run
        return None


def in_run() -> bool:
    """Whether the caller runs inside a LangGraph node."""
    return _config() is not None


def run_tracker() -> Any:
    """The tracker of the AgentMap run the calling node belongs to (None outside one)."""
    config = _config()
    if config is None:
        return None
    return (config.get("configurable") or {}).get(TRACKER_KEY)
