"""The `chat_history` line format of csv_specs/run_agent.md (`user: ...` / `assistant: ...`) and its messages.

A line that starts with `user:`, `assistant:` or `system:` begins a message; any other line continues the
previous message, so multi-line messages survive a round trip.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["format_chat_history", "parse_chat_history", "to_langchain_messages"]

_START = re.compile(r"(user|assistant|system|human|ai):[ \t]?(.*)", re.IGNORECASE)
_ROLES = {"human": "user", "ai": "assistant"}


def parse_chat_history(text: str | None) -> list[tuple[str, str]]:
    """Parse a chat history string into `(role, text)` pairs.

    Args:
        text: Lines such as `user: hi` / `assistant: hello`; `human:`/`ai:` are read as user/assistant.
            Text before the first role line is treated as a user message.

    Returns:
        The messages in order, roles lower-cased (`user`, `assistant` or `system`).
    """
    messages: list[tuple[str, list[str]]] = []
    for line in (text or "").replace("\r\n", "\n").split("\n"):
        match = _START.match(line)
        if match:
            role = match.group(1).lower()
            messages.append((_ROLES.get(role, role), [match.group(2)]))
        elif messages:
            messages[-1][1].append(line)
        elif line.strip():
            messages.append(("user", [line]))
    return [(role, "\n".join(lines).strip("\n")) for role, lines in messages]


def format_chat_history(messages: Iterable[tuple[str, str]]) -> str:
    """Write `(role, text)` pairs in the contract's line format, one `role: text` per message."""
    return "\n".join(f"{role}: {text}" for role, text in messages)


def to_langchain_messages(messages: Iterable[tuple[str, str]]) -> list[object]:
    """Turn `(role, text)` pairs into langchain-core messages (Human, AI, System)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kinds = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}
    return [kinds.get(role, HumanMessage)(content=text) for role, text in messages]
