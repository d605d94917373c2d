"""The orchestrator of AgentMap 0.9: an `orchestrator` row with no planner routes to the best-matching node.

Its Context keys: `nodes` (the candidates, `A|B` or a list; default every other node of the graph),
`matching_strategy` and `confidence_threshold` (accepted; matching here is always the deterministic word
match of `_matching`), `default_target` (where to go when nothing matches). The request is the node's
inputs; each candidate is described by its name, Description and Prompt. The chosen node's name is the
node's output, and the run goes there next, as it did in 0.9.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.constants import END
from langgraph.types import Command

from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.agents.registry import registry
from agentmap.orchestration._matching import match_worker, profile
from agentmap.orchestration.agents import OrchestratorNode
from agentmap.orchestration.orchestrator import OrchestratorConfig

__all__ = ["LegacyOrchestratorAgent", "OrchestratorSwitch", "is_legacy"]

_LEGACY_KEYS = ("nodes", "matching_strategy", "confidence_threshold", "default_target")
_CONFIG_KEYS = frozenset(OrchestratorConfig.model_fields)


def is_legacy(context: Mapping[str, Any]) -> bool:
    """An orchestrator Context with no planner, no workers and none of their settings is the 0.9 kind."""
    if context.get("planner") or context.get("workers"):
        return False
    return any(k in context for k in _LEGACY_KEYS) or not any(k in context for k in _CONFIG_KEYS)


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [] if value.strip().lower() in ("", "all") else [v.strip() for v in value.split("|") if v.strip()]
    if isinstance(value, Sequence):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


class _Route:
    """Sends the run to the node the orchestrator chose (its output); a failed node takes its Failure_Next
    (node names only), or ends the run. Edge and Success_Next give way to the choice, as in 0.9."""

    def __init__(self, agent: LegacyOrchestratorAgent, node: Any) -> None:
        self.agent = agent
        failure = getattr(node, "failure_next", None)  # the node's spec, as the compiler passes it
        self.on_failure = [str(n) for n in failure] if isinstance(failure, tuple) else []
        self.destinations = tuple(dict.fromkeys([*agent.candidates(), *self.on_failure]))

    def __call__(self, state: Mapping[str, Any], update: dict[str, Any]) -> Command[Any]:
        if not update.get("last_action_success"):
            return Command(update=update, goto=self.on_failure or END)
        chosen = update.get(self.agent.output_field)
        return Command(update=update, goto=chosen if chosen in self.destinations else END)


class LegacyOrchestratorAgent(BaseAgent):
    """Routes the request to the node whose name, Description and Prompt share the most words with it."""

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """`confidence_threshold` must be a number from 0 to 1; `nodes` names nodes (checked as references)."""
        threshold = context.get("confidence_threshold", 0)
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
            return [f"confidence_threshold must be a number from 0 to 1, not {threshold!r}"]
        return []

    @classmethod
    def referenced_nodes(cls, context: Mapping[str, Any]) -> list[str]:
        """The listed candidates and the default target."""
        default = str(context.get("default_target") or "").strip()
        return [*_names(context.get("nodes")), *([default] if default else [])]

    def candidates(self) -> list[str]:
        """The nodes this orchestrator may send the run to (the default target last)."""
        listed = _names(self.context.get("nodes")) or [n for n in self.environment.agents if n != self.name]
        default = str(self.context.get("default_target") or "").strip()
        return list(dict.fromkeys([*listed, *([default] if default else [])]))

    def own_route(self, node: Any) -> _Route:
        """The router the compiler attaches to this node (its next node is its output); `node` is its spec."""
        return _Route(self, node)

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the name of the best-matching candidate, else `default_target`."""
        request = " ".join(str(v) for v in inputs.values() if v not in (None, ""))
        agents = self.environment.agents
        listed = _names(self.context.get("nodes")) or [n for n in agents if n != self.name]
        profiles = {
            name: profile(name, f"{agents[name].description} {agents[name].prompt}" if name in agents else "", ())
            for name in listed
        }
        best = match_worker([request], profiles).best
        if best:
            return best[0]
        default = str(self.context.get("default_target") or "").strip()
        if default:
            return default
        raise ValueError(
            f"no node matches the request {request[:80]!r} (candidates: {', '.join(listed) or 'none'}); "
            'set Context "default_target" to the node to use when nothing matches'
        )


class OrchestratorSwitch(OrchestratorNode):  # type: ignore[misc,valid-type]
    """The `orchestrator` type: the planner/workers orchestrator, or the 0.9 router when Context has neither."""

    def __new__(cls, name: str, prompt: str = "", context: dict[str, Any] | None = None, *args: Any, **kw: Any) -> Any:
        if is_legacy(context or {}):
            return LegacyOrchestratorAgent(name, prompt, context, *args, **kw)
        return super().__new__(cls)

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[Any]:
        """The checks of whichever orchestrator the Context asks for."""
        if is_legacy(context):
            return LegacyOrchestratorAgent.validate_config(prompt, context, environment)
        return list(super().validate_config(prompt, context, environment))

    @classmethod
    def dialect_notes(cls, prompt: str, context: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """An LLM matching strategy or a confidence threshold of 0.9 is not used here: say so."""
        if not is_legacy(context):
            return []
        unused = [
            f"{key}={context[key]!r}"
            for key in ("matching_strategy", "confidence_threshold")
            if key in context and context[key] != "algorithm"
        ]
        if not unused:
            return []
        return [
            (
                "Context",
                f"{', '.join(unused)} (AgentMap 0.9) is not used: the request is matched against the nodes' "
                "names, Descriptions and Prompts by shared words, with no model call",
                '{"matching_strategy": "algorithm"}, or a planner and workers for an LLM-planned orchestration',
            )
        ]

    @classmethod
    def referenced_nodes(cls, context: Mapping[str, Any]) -> list[str]:
        """The nodes whichever orchestrator the Context asks for calls."""
        if is_legacy(context):
            return LegacyOrchestratorAgent.referenced_nodes(context)
        return list(super().referenced_nodes(context))


registry.register("orchestrator", OrchestratorSwitch)
