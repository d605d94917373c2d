"""Agents: `BaseAgent`, `StateAdapter`, the registry and the built-in types."""

from agentmap.agents.base import AgentEnvironment, BaseAgent, Tracker
from agentmap.agents.registry import AgentRegistry, agent, normalize_type, registry
from agentmap.agents.state import StateAdapter

from agentmap.agents import builtins as _builtins  # noqa: I001  (registers the built-in types)

__all__ = [
    "AgentEnvironment",
    "AgentRegistry",
    "BaseAgent",
    "StateAdapter",
    "Tracker",
    "agent",
    "normalize_type",
    "registry",
]
