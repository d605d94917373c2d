"""The state key `messages`: a chat, kept as LangGraph's `MessagesState` keeps it.

A graph whose state has a key named `messages` keeps a conversation there the way a LangGraph user (and a chat front
end speaking the LangGraph API, such as LangChain's Agent Chat UI) expects: what a run's input or a node writes to
it is *appended* (LangGraph's `add_messages` rule: a message whose `id` is already there replaces that one), never
written over. The messages are stored as LangChain's message dicts (`{"type": "human" | "ai" | "system" | "tool",
"content": ..., "id": ..., ...}`), plain JSON like the rest of the state; a node may write them as such dicts, as
`{"role": "user" | "assistant", "content": ...}` dicts, as LangChain message objects or as text (a user message).

```python
merge_messages([], [{"type": "human", "content": "hi", "id": "m1"}])  # -> [{"type": "human", "content": "hi", ...}]
```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

__all__ = ["MESSAGES_KEY", "MESSAGE_HINT", "merge_messages", "messages_problem"]

MESSAGES_KEY = "messages"
"""The state key that holds a chat (appended to, as LangGraph's `MessagesState`)."""


def merge_messages(left: Any, right: Any) -> list[dict[str, Any]]:
    """`left` with `right` appended (or, for a message whose id is in `left`, put in its place), as message dicts.

    Raises:
        ValueError: `right` holds something that is not a message (a number, a dict with neither `role` nor
            `type`), naming it and what a message looks like.
    """
    from langchain_core.messages import BaseMessage
    from langgraph.graph.message import add_messages

    try:
        merged = add_messages(_listed(left), _listed(right))
    except (NotImplementedError, ValueError) as exc:
        raise ValueError(f"state key {MESSAGES_KEY!r} {_unfit(right, exc)}: {MESSAGE_HINT}") from None
    return [message.model_dump() for message in merged if isinstance(message, BaseMessage)]  # all are, merged


MESSAGE_HINT = 'write messages as {"type": "human", "content": "..."} (or {"role": "user", "content": "..."}, or text)'
"""What a message looks like, said when a value is none."""


def messages_problem(value: Any) -> str | None:
    """Why `value` cannot be written to `messages` (the end of a sentence whose subject is the key), or None."""
    from langgraph.graph.message import add_messages

    try:
        add_messages([], _listed(value))
    except (NotImplementedError, ValueError) as exc:
        return _unfit(value, exc)
    return None


def _unfit(value: Any, exc: Exception) -> str:
    return f"holds chat messages, and {value!r} is not a list of them ({str(exc).splitlines()[0]})"


def _listed(value: Any) -> list[Any]:
    """`value` as a list of messages; a message dict with a `type` read back whole (its every field, as stored)."""
    if value is None:
        return []
    return [_read(entry) for entry in (value if isinstance(value, list) else [value])]


def _read(entry: Any) -> Any:
    from langchain_core.messages import messages_from_dict

    if not (isinstance(entry, Mapping) and isinstance(entry.get("type"), str)):
        return entry  # a role dict, a message object, text: `add_messages` reads it
    try:
        return messages_from_dict([{"type": entry["type"], "data": dict(entry)}])[0]
    except (ValueError, ValidationError, TypeError):
        return entry  # not a message after all: `add_messages` says why
