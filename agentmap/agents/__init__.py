"""Agents: `BaseAgent`, `StateAdapter`, the registry and the built-in types (imported here, which registers them)."""

from agentmap.agents.base import AgentEnvironment, BaseAgent, Tracker
from agentmap.agents.builtins import (
    BranchingAgent,
    DefaultAgent,
    EchoAgent,
    FailureAgent,
    InputAgent,
    SuccessAgent,
    SummaryAgent,
    TemplateAgent,
)
from agentmap.agents.registry import AgentRegistry, agent, normalize_type, registry
from agentmap.agents.state import StateAdapter

__all__ = [
    "AgentEnvironment",
    "AgentRegistry",
    "BaseAgent",
    "BranchingAgent",
    "DefaultAgent",
    "EchoAgent",
    "FailureAgent",
    "InputAgent",
    "StateAdapter",
    "SuccessAgent",
    "SummaryAgent",
    "TemplateAgent",
    "Tracker",
    "agent",
    "normalize_type",
    "registry",
]
