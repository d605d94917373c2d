"""The provider's prompt cache: the static part of a node's prompt marked for it, as the provider asks.

A node's calls all begin with the same text: its system message up to the first `{placeholder}` of its Prompt
(`_conversation.static_prefix`; the whole constitution of an `assistant`), after the tool definitions. OpenAI and
Google cache a long common prefix by themselves: the messages already put that part first (system message, then
history, then the new message), so nothing is sent for them. Anthropic caches only up to a block marked
`cache_control`: `marked` splits the first message into that static block, marked, and the rest; a node whose
first message has no static part marks its last tool definition instead (tools come first in Anthropic's prefix).
What is marked is what the call sends, never what the call journal and the LLM response cache digest: marking
or not, a call is the same call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = ["EPHEMERAL", "marked", "marks_blocks"]

EPHEMERAL = {"type": "ephemeral"}
"""Anthropic's 5-minute cache (the default lifetime; written at 1.25x the input price, read at 0.1x)."""


def marks_blocks(model: Any) -> bool:
    """Whether `model`'s provider caches only the blocks marked `cache_control` (Anthropic's chat models, direct
    or through a cloud, whose LangChain type names start with `anthropic`)."""
    return str(getattr(model, "_llm_type", "")).startswith("anthropic")


def marked(messages: Sequence[BaseMessage], runnable: Any, static: str) -> tuple[list[BaseMessage], Any]:
    """The messages and the model (with its tools) as sent to a provider that caches marked blocks.

    Args:
        messages: The call's messages, as the node built them.
        runnable: The model, or the model with tools bound (a `RunnableBinding` with `tools`).
        static: The text every call of the node begins its first message with ("" when none).
    """
    sent = list(messages)
    first = sent[0] if sent else None
    content = getattr(first, "content", None)
    if first is not None and isinstance(content, str) and static.strip() and content.startswith(static):
        rest = content[len(static) :]
        # the API refuses an empty or blank block: with nothing after the static part, the whole text is the block
        blocks = [_text(static, cached=True), _text(rest)] if rest.strip() else [_text(content, cached=True)]
        sent[0] = first.model_copy(update={"content": blocks})
        return sent, runnable
    tools = (getattr(runnable, "kwargs", None) or {}).get("tools")
    if tools and isinstance(tools[-1], dict) and "cache_control" not in tools[-1]:
        return sent, runnable.bind(tools=[*tools[:-1], {**tools[-1], "cache_control": EPHEMERAL}])
    return sent, runnable


def _text(text: str, *, cached: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cached:
        block["cache_control"] = EPHEMERAL
    return block
