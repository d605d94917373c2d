"""`from agentmap.agents.base_agent import BaseAgent`, as custom agent files written for AgentMap 0.9 do.

The class is `agentmap.BaseAgent` with the old constructor keywords accepted (see `LegacyInit`); the
contract is the same: implement `process(self, inputs)`. New code imports `agentmap.BaseAgent`.
"""

from __future__ import annotations

from agentmap.agents import _legacy
from agentmap.agents.base import BaseAgent as _BaseAgent

__all__ = ["BaseAgent"]

_legacy.install()


class BaseAgent(_legacy.LegacyInit, _BaseAgent):
    """`agentmap.BaseAgent` accepting the AgentMap 0.9 constructor keywords."""
