"""Run one storage agent on a state, in a workflow folder."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.runtime.tracking import ExecutionTracker

LOG = logging.getLogger("tests.storage")


def environment(folder: Path, storage: dict[str, Any] | None = None) -> AgentEnvironment:
    """The environment of a workflow in `folder`, with `storage` settings."""
    return AgentEnvironment(base_dir=folder, settings={"storage": storage or {}})


def run(cls: type[BaseAgent], folder: Path, prompt: str, state: dict[str, Any], **context: Any) -> dict[str, Any]:
    """The state update of a `cls` node with `prompt` and Context `context`, its inputs all of `state`."""
    context.setdefault("input_fields", list(state))
    agent = cls("Node", prompt, context, LOG, ExecutionTracker())
    agent.environment = environment(folder)
    return agent.run(state)
