"""LLM agents, models, tools and the decision engine (csv_specs/engine.md).

Names load on first use, so a workflow with no LLM node never imports the LLM stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmap._lazy import lazy_exports

if TYPE_CHECKING:
    from agentmap.llm.adapter import LLMAdapter, LLMError, LLMRateLimitError, LLMTimeoutError
    from agentmap.llm.agents import LLMAgent
    from agentmap.llm.assistant import AssistantAgent
    from agentmap.llm.decision_log import SQLiteDecisionLog
    from agentmap.llm.engine import DecisionOutcome, LLMAgentEngine
    from agentmap.llm.models import check_model, resolve_model
    from agentmap.llm.offline import OfflineChatModel

_HOMES = {
    "LLMAdapter": "agentmap.llm.adapter",
    "LLMError": "agentmap.llm.adapter",
    "LLMRateLimitError": "agentmap.llm.adapter",
    "LLMTimeoutError": "agentmap.llm.adapter",
    "LLMAgent": "agentmap.llm.agents",
    "AssistantAgent": "agentmap.llm.assistant",
    "SQLiteDecisionLog": "agentmap.llm.decision_log",
    "DecisionOutcome": "agentmap.llm.engine",
    "LLMAgentEngine": "agentmap.llm.engine",
    "check_model": "agentmap.llm.models",
    "resolve_model": "agentmap.llm.models",
    "OfflineChatModel": "agentmap.llm.offline",
}
__all__ = [
    "AssistantAgent",
    "DecisionOutcome",
    "LLMAdapter",
    "LLMAgent",
    "LLMAgentEngine",
    "LLMError",
    "LLMRateLimitError",
    "LLMTimeoutError",
    "OfflineChatModel",
    "SQLiteDecisionLog",
    "check_model",
    "resolve_model",
]
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
