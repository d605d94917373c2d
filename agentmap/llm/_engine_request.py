"""What `LLMAgentEngine` sends the model (csv_specs/engine.md, step 1): the constitution as the system message,
the last `include_history_messages` of the history, the new message; and the schemas of the tools it binds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentmap.llm.adapter import open_tool_schema

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from agentmap.contracts.engine import DecisionContext, Message, ToolExecutor

__all__ = ["request_messages", "tool_schemas"]


def request_messages(constitution: str, keep: int, context: DecisionContext) -> list[BaseMessage]:
    """The messages of a decision's first model call (`keep`: how many messages of the history; 0 none)."""
    from langchain_core.messages import HumanMessage, SystemMessage

    history = context.message_history[-keep:] if keep else []
    messages: list[BaseMessage] = [SystemMessage(content=constitution)]
    messages.extend(_to_langchain(m) for m in history)
    messages.append(HumanMessage(content=context.message))
    return messages


def tool_schemas(executor: ToolExecutor, names: Sequence[str]) -> list[Any]:
    """The executor's own tool schemas, else an open one per tool name."""
    get_schemas = getattr(executor, "get_tool_schemas", None)
    if callable(get_schemas):
        return list(get_schemas())
    return [open_tool_schema(name) for name in names]


def _to_langchain(message: Message) -> BaseMessage:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    if message.role == "user":
        return HumanMessage(content=message.content)
    if message.role == "assistant":
        return AIMessage(content=message.content)
    return SystemMessage(content=message.content)
