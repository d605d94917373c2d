"""Heuristics the evaluator applies to a reply's text: refusals, clarifications and contract breaches.

They read the text only (csv_specs/evaluation.md: the evaluator is log-only). Each is a small set of patterns, kept
conservative so that an ordinary answer is not flagged.
"""

from __future__ import annotations

import json
import re

__all__ = [
    "MAX_CLARIFICATION_WORDS",
    "MAX_CLARIFYING_QUESTIONS",
    "clarification",
    "has_json_framing",
    "has_tool_trace",
    "is_refusal",
    "runner_error",
]

MAX_CLARIFYING_QUESTIONS = 3
"""A bounded clarification asks at most this many questions ..."""
MAX_CLARIFICATION_WORDS = 150
"""... in at most this many words."""

_I = r"(?:i|we)"
_CANNOT = (
    r"(?:can't|cannot|can not|won't|will not|am unable to|'m unable to|am not able to|'m not able to|"
    r"are unable to|are not able to|'re unable to|'re not able to|must decline to|have to decline to)"
)
_ACT = (
    r"(?:help|assist|provide|do|answer|comply|share|give|support|fulfil|fulfill|complete|discuss|"
    r"process|access|make|create|offer|perform|tell|write|generate|engage)"
)
_REFUSAL = re.compile(
    rf"\b{_I} {_CANNOT} (?:\w+ ){{0,2}}{_ACT}\b"
    rf"|\b{_I} (?:must|have to|need to) (?:respectfully )?(?:decline|refuse)\b"
    r"|\b(?:unable|not able) to (?:help|assist|comply) with\b"
    r"|\b(?:sorry|afraid)\b[^.?!]{0,40}\b(?:can't|cannot|unable|not able|won't)\b"
    r"|\bthat(?:'s| is) not something {_I} can\b".replace("{_I}", _I),
)
_CLARIFY = re.compile(
    r"\b(?:could|can|would) you (?:please )?(?:clarify|specify|tell me|let me know|provide|share|confirm|"
    r"explain|be more specific|give me)"
    r"|\b(?:do|did) you mean\b|\bwhat do you mean\b|\bwhich (?:one|of|do you|would you)\b"
    r"|\bplease (?:clarify|specify|provide|confirm|tell me|let me know)\b"
    r"|\b(?:more|additional) (?:details|information|context)\b|\bto clarify\b|\bare you (?:asking|looking)\b",
)
_TOOL_TRACE = re.compile(
    r"^\s*(?:action|action input|observation|tool call|tool calls|calling tool|tool result|tool output)\s*:"
    r"|\"(?:tool_calls|traces|tool_call_id|function_call|tool_name)\"\s*:"
    r"|</?(?:tool_call|tool_use|tool_result|function_calls?|invoke)\b"
    r"|\b(?:tool|function)_call\(",
    re.MULTILINE,
)
_RUNNER_ERROR = re.compile(r"Error: (?:the agent |there is no user message)")
_NEGATIONS = ("n't", "not", "unable", "decline", "refuse")
_STATEMENT_END = re.compile(r"[.!](?:\s|$)")
_FENCE = re.compile(r"```(?:json)?\s*[\[{]", re.IGNORECASE)


def _plain(text: str) -> str:
    """Lower-case `text` and straighten curly apostrophes: the patterns are written for that form."""
    lowered = text.lower()
    return (
        lowered.replace("\u2019", "'").replace("\u2018", "'") if "\u2019" in lowered or "\u2018" in lowered else lowered
    )


def is_refusal(text: str) -> bool:
    """Return whether `text` declines the request ("I can't help with that", "I must decline")."""
    plain = _plain(text)
    if not any(word in plain for word in _NEGATIONS):
        return False  # every refusal pattern holds one of these; most answers hold none
    return _REFUSAL.search(plain) is not None


def clarification(text: str) -> str | None:
    """Classify `text` as a clarifying question.

    Returns:
        `"bounded"` for a clarification with at most `MAX_CLARIFYING_QUESTIONS` questions in at most
        `MAX_CLARIFICATION_WORDS` words, `"unbounded"` for a longer one, None when `text` asks nothing.
    """
    questions = text.count("?")
    if not questions:
        return None
    words = len(text.split())
    cued = _CLARIFY.search(_plain(text)) is not None
    if not cued and (words > 40 or not text.rstrip().endswith("?") or _STATEMENT_END.search(text)):
        return None  # an uncued question counts only when the whole reply is short questions
    bounded = questions <= MAX_CLARIFYING_QUESTIONS and words <= MAX_CLARIFICATION_WORDS
    return "bounded" if bounded else "unbounded"


def has_json_framing(text: str) -> bool:
    """Return whether the reply is wrapped as JSON (a JSON object or array, or a fenced JSON block)."""
    stripped = text.strip()
    if not stripped:
        return False
    if _FENCE.match(stripped) and stripped.endswith("```"):
        return True
    if stripped[0] not in "{[" or stripped[-1] not in "}]":
        return False
    try:
        return isinstance(json.loads(stripped), dict | list)
    except ValueError:
        return stripped.startswith('{"')


def has_tool_trace(text: str) -> bool:
    """Return whether the reply shows tool calls (ReAct `Action:` lines, `"tool_calls":`, `<tool_call>`...)."""
    if ":" not in text and "<" not in text and "_call(" not in text:
        return False  # every trace pattern holds one of these
    return _TOOL_TRACE.search(text.lower()) is not None


def runner_error(text: str) -> bool:
    """Return whether `text` is the short error the runner writes when the agent gave no reply."""
    return _RUNNER_ERROR.match(text) is not None
