"""How the engine reads texts: questions, refusals, confirmations, and which tools need confirming."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Collection
from enum import Enum
from typing import Any

from agentmap.contracts.tools import ToolResult

__all__ = [
    "ConfirmationReply",
    "confirmation_policy",
    "describe_action",
    "is_question",
    "is_refusal",
    "read_confirmation",
    "tool_result_text",
]

_WORD = re.compile(r"[a-z0-9']+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_TRAILING = " \t\r\n\"')]*_`»”’"

# Words that mark a tool as destructive when no explicit list is configured.
_DESTRUCTIVE = frozenset({"delete", "remove", "erase", "destroy", "purge", "drop"})

_YES_WORDS = frozenset(
    {
        "yes",
        "y",
        "yeah",
        "yep",
        "yup",
        "sure",
        "ok",
        "okay",
        "confirm",
        "confirmed",
        "proceed",
        "absolutely",
        "affirmative",
        "correct",
        "approve",
        "approved",
    }
)
_YES_PHRASES = ("go ahead", "do it", "please do", "i confirm", "that's right", "of course")
_NO_WORDS = frozenset(
    {"no", "n", "nope", "nah", "cancel", "stop", "abort", "don't", "dont", "nevermind", "decline", "negative"}
)
_NO_PHRASES = ("do not", "never mind", "not now", "keep it")

_REFUSAL_OPENINGS = (
    "i can't",
    "i cannot",
    "i can not",
    "i'm not able",
    "i am not able",
    "i'm unable",
    "i am unable",
    "i won't",
    "i will not",
    "sorry, but i",
    "i'm sorry, but i",
    "i am sorry, but i",
    "i can only help",
    "i'm only able",
    "i only help",
)


# Questions that offer help rather than ask for what the request lacks.
_OFFERS = (
    "how can i help",
    "how may i help",
    "how can i assist",
    "how may i assist",
    "what can i do for you",
    "what can i help",
    "anything else",
    "is there anything",
    "can i help you with anything",
    "what would you like to do",
    "what else",
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class ConfirmationReply(Enum):
    """How a user answered a confirmation question."""

    CONFIRMED = "confirmed"
    DECLINED = "declined"
    OTHER = "other"
    """Neither: the pending action is dropped and the message is handled as a new request."""


def read_confirmation(message: str) -> ConfirmationReply:
    """Classify the user's answer to "are you sure?" (`yes`, `confirm`, `go ahead` / `no`, `cancel`)."""
    text = " ".join(_WORD.findall(message.lower().replace("’", "'")))
    if not text:
        return ConfirmationReply.OTHER
    first = text.split(" ", 1)[0]
    if first in _NO_WORDS or text.startswith(_NO_PHRASES):
        return ConfirmationReply.DECLINED
    if first in _YES_WORDS or text.startswith(_YES_PHRASES):
        return ConfirmationReply.CONFIRMED
    return ConfirmationReply.OTHER


def is_refusal(text: str) -> bool:
    """Whether a reply declines the request ("I can't help with that...")."""
    opening = text.strip().lower().replace("’", "'")
    return opening.startswith(_REFUSAL_OPENINGS)


def is_question(text: str) -> bool:
    """Whether a reply asks the user for something it needs: its last sentence is a question.

    Refusals and open offers ("How can I help you today?", "Anything else?") are not questions.
    """
    body = text.rstrip(_TRAILING)
    if not body.endswith("?") or is_refusal(text):
        return False
    last = _SENTENCE_END.split(body[:-1])[-1].strip().lower().replace("’", "'")
    return not any(offer in last for offer in _OFFERS)


def _words(tool_name: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", tool_name).lower()) if w]


@functools.lru_cache(maxsize=1024)
def _is_destructive(name: str) -> bool:
    return any(w in _DESTRUCTIVE for w in _words(name))


def confirmation_policy(
    confirm_tools: Collection[str] | Callable[[str], bool] | None,
) -> Callable[[str], bool]:
    """Return the predicate saying whether a tool needs the user's confirmation.

    Args:
        confirm_tools: The names of the tools to confirm, a predicate, or None for the default:
            tools whose name contains a destructive verb (delete, remove, erase, destroy, purge, drop).
    """
    if confirm_tools is None:
        return _is_destructive
    if callable(confirm_tools):
        return confirm_tools
    names = frozenset(confirm_tools)
    return names.__contains__


def describe_action(tool_name: str, parameters: dict[str, Any], model_text: str) -> str:
    """The question that asks the user to confirm a call (the model's own question when it wrote one)."""
    if model_text.strip() and is_question(model_text):
        return model_text.strip()
    args = ", ".join(f"{k}={v!r}" for k, v in parameters.items())
    what = " ".join(_words(tool_name)) + (f" ({args})" if args else "")
    return f"Please confirm: {what}. Reply yes to proceed or no to cancel."


def tool_result_text(result: ToolResult) -> str:
    """The content of the tool message the model sees for a result."""
    if not result.success:
        return f"Error ({result.error_code or 'execution_error'}): {result.error or 'the tool failed'}"
    if isinstance(result.data, str):
        return result.data
    return json.dumps(result.data, default=str, ensure_ascii=False)
