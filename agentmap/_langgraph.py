"""The one door to LangGraph's internals: the private keys of a run's config, and the config of the running task.

LangGraph keeps what a running task needs in its config (`config["configurable"]`): the checkpointer, the task's
id, the durability, the cache, the runtime. Those keys are private (`__pregel_*`); AgentMap reads five of them
(the call journal, the node cache, the retry wrapper, a pause's check for a checkpointer), the running task's
config itself (langchain-core's context variable), and the runtime's `execution_info` (which attempt of a node is
running: langgraph 1.1.3 and later), here and nowhere else. Importing this module checks that the
installed LangGraph still has them: a release that renamed or removed one fails at once, naming its version and
the versions AgentMap is tested with, instead of turning the call journal off in silence.

`SUPPORTED` is the range `pyproject.toml` allows; CI runs the call journal's tests with its lowest and its highest
release (`.ci/run`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from importlib.metadata import version
from typing import Any

__all__ = [
    "CACHE_KEY",
    "CHECKPOINTER_KEY",
    "DURABILITY_KEY",
    "RUNTIME_KEY",
    "SUPPORTED",
    "TASK_ID_KEY",
    "current_config",
    "set_current_config",
]

SUPPORTED = ">=1.1.3,<1.3"
"""The LangGraph releases AgentMap is tested with (its dependency in pyproject.toml)."""

try:
    from langchain_core.runnables.config import var_child_runnable_config
    from langgraph._internal._constants import (
        CONFIG_KEY_CACHE,
        CONFIG_KEY_CHECKPOINTER,
        CONFIG_KEY_DURABILITY,
        CONFIG_KEY_RUNTIME,
        CONFIG_KEY_TASK_ID,
    )
    from langgraph.runtime import Runtime

    if "execution_info" not in Runtime.__dataclass_fields__:  # which attempt of a node runs (langgraph 1.1.3)
        raise ImportError("cannot import name 'execution_info' of langgraph.runtime.Runtime")
except ImportError as missing:
    raise ImportError(
        f"AgentMap needs LangGraph internals that langgraph {version('langgraph')} (langchain-core "
        f"{version('langchain-core')}) does not have: {missing}. AgentMap is tested with langgraph{SUPPORTED}: "
        f'install one of those (pip install "langgraph{SUPPORTED}")'
    ) from missing

CHECKPOINTER_KEY: str = CONFIG_KEY_CHECKPOINTER
"""The running task's checkpointer (None: the run has none)."""
TASK_ID_KEY: str = CONFIG_KEY_TASK_ID
"""The running task's id (the call journal keys calls by it)."""
DURABILITY_KEY: str = CONFIG_KEY_DURABILITY
"""The run's durability (`sync`, `async`, `exit`)."""
CACHE_KEY: str = CONFIG_KEY_CACHE
"""The graph's node cache for this run (None turns it off for the run)."""
RUNTIME_KEY: str = CONFIG_KEY_RUNTIME
"""The task's runtime (its `execution_info` says which attempt of the node this is)."""


_NONE: Mapping[str, Any] = {}


def current_config() -> Mapping[str, Any]:
    """The config of the task running here (LangGraph's node or a runnable it calls); empty outside a run."""
    return var_child_runnable_config.get() or _NONE


def set_current_config(context: contextvars.Context, config: Any) -> None:
    """Make `config` the running task's config inside `context` (a copy of the caller's context)."""
    context.run(var_child_runnable_config.set, config)
