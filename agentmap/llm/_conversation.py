"""The text an LLM node sends: its Prompt with `{name}` placeholders filled from its inputs, the part of it every
call sends alike (what the provider's prompt cache can hold), and a stored conversation read as role/content
messages (`llm.agents` re-exports `format_prompt` and `history_entries`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["format_prompt", "history_entries", "static_prefix"]

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def format_prompt(template: str, values: Mapping[str, Any]) -> tuple[str, set[str]]:
    """Fill `{name}` placeholders from `values`; return the text and the names used.

    Only plain names are replaced (`{user.name}` or `{items[0]}` stay as written), so a prompt can never
    reach into an object's attributes.
    """
    used: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = match.group(1)
        if name not in values:
            return token
        used.add(name)
        value = values[name]
        return "" if value is None else str(value)

    return _PLACEHOLDER.sub(fill, template), used


def static_prefix(template: str) -> str:
    """The text `format_prompt(template, ...)` begins with whatever the values: the template up to its first
    `{name}` placeholder, with `{{` and `}}` read as the braces they stand for."""
    first = next((m for m in _PLACEHOLDER.finditer(template) if m.group(1)), None)
    return format_prompt(template if first is None else template[: first.start()], {})[0]


def history_entries(value: Any) -> list[dict[str, str]]:
    """A stored conversation (dicts, LangChain messages or (role, text) pairs) as role/content dicts."""
    roles = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant", "system": "system"}
    items: list[dict[str, str]] = []
    for entry in value or []:
        if isinstance(entry, Mapping):
            role, content = entry.get("role", entry.get("type")), entry.get("content")
        elif isinstance(entry, tuple | list) and len(entry) == 2:
            role, content = entry
        else:
            role, content = getattr(entry, "role", getattr(entry, "type", None)), getattr(entry, "content", None)
        role = roles.get(str(role).lower())
        if role is not None and isinstance(content, str):
            items.append({"role": role, "content": content})
    return items
