"""What a paused node asks, and whether an answer fits it.

A node that pauses a run (`input` with `interrupt: true`, `human`, `suspend`) hands LangGraph's
`interrupt()` a *question*: a plain dict, so it checkpoints with any serializer and crosses HTTP as JSON.
Whoever resumes the run (`agentmap resume`, `CompiledWorkflow.resume`, the server) calls `check_answer`
first: an answer that does not fit is refused with what would fit, and the run stays paused. The node
calls it again on the value `interrupt()` returns, so an answer that skipped the check cannot slip through.

```python
q = question("Review", "human", "Publish this draft?", interaction="approval")
check_answer(q, "yes")      # -> True
check_answer(q, "maybe")    # AnswerError: ... answer one of: yes, no, true, false, approve, reject
check_answer(q, {"approved": "no"})  # -> {"approved": False}: the same words, in a form's field
```

Every channel (the command line, the server's `command.resume`, MCP elicitation and its `resume` tool, A2A, the
studio) hands the client's value to `check_answer` as it came, never coerced first (`bool("no")` is True); an
answer typed as text is read by `typed_answer`, the command line's rule.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agentmap.errors import ConfigError, ErrorCode

__all__ = [
    "INTERACTIONS",
    "AnswerError",
    "Interaction",
    "check_answer",
    "example_answer",
    "inbox_fields",
    "is_question",
    "question",
    "typed_answer",
]

Interaction = Literal["any", "approval", "choice", "text_input", "edit", "conversation", "event"]
INTERACTIONS: tuple[str, ...] = ("any", "approval", "choice", "text_input", "edit", "conversation", "event")

_YES = ("yes", "y", "true", "approve", "approved", "ok", "accept")
_NO = ("no", "n", "false", "reject", "rejected", "deny", "decline")
_MARK = "agentmap.question"


class AnswerError(ConfigError):
    """An answer does not fit the question of a paused node; the run stays paused."""

    default_code = ErrorCode.BAD_ANSWER


def question(
    node: str,
    kind: str,
    text: str,
    *,
    interaction: str = "any",
    options: Sequence[Any] = (),
    **extra: Any,
) -> dict[str, Any]:
    """The value a pausing node passes to `interrupt()`.

    Args:
        node: The node's name.
        kind: The agent type that asks (`input`, `human`, `suspend`).
        text: The question shown to the person (or the event awaited).
        interaction: One of `INTERACTIONS`; decides which answers fit.
        options: The allowed answers of a `choice` question.
        **extra: Anything else worth showing (`timeout_seconds`, the value to `edit`, ...); JSON values only.
    """
    if interaction not in INTERACTIONS:
        raise ValueError(f"unknown interaction {interaction!r}; use one of {', '.join(INTERACTIONS)}")
    payload: dict[str, Any] = {
        "type": _MARK,
        "node": node,
        "kind": kind,
        "question": text,
        "interaction": interaction,
    }
    if options:
        payload["options"] = list(options)
    payload.update(extra)
    return {**payload, **inbox_fields(payload)}


def inbox_fields(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of LangGraph's `HumanInterrupt` (the agent inbox's shape, which LangChain's Agent Chat UI shows
    with Accept / Respond buttons) for a question a person answers: `action_request`, `config`, `description` (the
    question, and its `error`). None for `any` and `event`, which any client value answers."""
    interaction = payload.get("interaction")
    if interaction not in _INBOX:
        return {}
    text = str(payload.get("question", ""))
    if payload.get("options"):
        text += "\n\nAnswer one of: " + ", ".join(str(o) for o in payload["options"])
    if payload.get("error"):
        text += f"\n\n{payload['error']}"
    return {
        "action_request": {"action": str(payload.get("node", "")), "args": {}},
        "config": {
            "allow_accept": interaction == "approval",
            "allow_respond": True,
            "allow_edit": False,
            "allow_ignore": False,
        },
        "description": text,
    }


def is_question(value: Any) -> bool:
    """True for a dict made by `question` (other `interrupt()` values carry no answer rules)."""
    return isinstance(value, Mapping) and value.get("type") == _MARK


def check_answer(payload: Any, answer: Any) -> Any:
    """The answer as the paused node will receive it, or `AnswerError` saying what fits.

    `approval` takes a bool, `yes`/`no`/`approve`/`reject` (any case), or `{"approved": ..., ...}` holding one
    of those, and returns `{"approved": bool, ...}` (a number, null or any other word is refused, never read as
    yes); `choice` takes one of the options (or its 1-based number as text);
    `text_input`, `edit` and `conversation` take text (a non-text JSON value is refused); `event` and `any`
    take anything, `None` included. A value that is not a question (another node's `interrupt()`) passes.
    An empty answer (`""` or `None`) takes the question's `default` when it has one. The existing
    AgentMap's resume envelope `{"action": "approve" | "respond" | "choose" | "edit", "data": {...}}` is
    read too (`data.choice`, `data.text`, `data.edited`, ...).
    """
    if not is_question(payload):
        return answer
    if payload.get("kind") == "journal":  # an in-doubt call: done, retry, fail or {"done": RESULT}
        from agentmap.agents.journal import unwrap_answer

        return unwrap_answer(payload, answer)
    interaction = payload.get("interaction", "any")
    node = payload.get("node", "?")
    answer = _unwrap_inbox(interaction, answer)
    if (answer is None or answer == "") and "default" in payload:
        answer = payload["default"]
    answer = _unwrap_envelope(interaction, answer)
    if interaction == "approval":
        return _approval(node, answer)
    if interaction == "choice":
        return _choice(node, list(payload.get("options") or ()), answer)
    if interaction in ("text_input", "edit", "conversation"):
        if isinstance(answer, str):
            return answer
        raise AnswerError(
            f"node {node!r} asks for text; {answer!r} is not text",
            hint="answer with text: `agentmap resume THREAD 'my answer'` (or --data '\"my answer\"')",
        )
    return answer


def example_answer(payload: Any) -> str:
    """An answer to `payload` as a person would type it after `agentmap resume ID`, quoted for a shell.

    `yes` for an approval, the first option of a choice, the default where the question has one, else
    `'your answer'`: never JSON, which the command line does not need for any of these.
    """
    if not is_question(payload):
        return shlex.quote("your answer")
    interaction = payload.get("interaction", "any")
    options = list(payload.get("options") or ())
    if "default" in payload and payload["default"] not in (None, ""):
        text = str(payload["default"])
    elif interaction == "approval":
        text = "yes"
    elif interaction == "choice" and options:
        text = str(options[0])
    else:
        text = "your answer"
    return shlex.quote(text)


def typed_answer(text: str) -> Any:
    """An answer typed as text (`agentmap resume ID ANSWER`, a form's text field, an A2A text part, the studio's
    answer box): the words as typed (`yes`, `2`, `Paris`, `true` stay text), or the JSON object, list or string
    it is when it starts like one (`{`, `[`, `"`) and parses."""
    if not text.lstrip().startswith(("{", "[", '"')):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON after all (or too deep or long to read as such): the text
        return text


def _approval(node: str, answer: Any) -> dict[str, Any]:
    if isinstance(answer, Mapping) and "approved" in answer:  # a form's field: the same words, never bool() of it
        return {**answer, "approved": _yes_or_no(node, answer["approved"], '"approved": ')}
    return {"approved": _yes_or_no(node, answer, "")}


def _yes_or_no(node: str, value: Any, field: str) -> bool:
    """True or False for a bool or a yes/no word; anything else (a number, null, `maybe`) is refused."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in (*_YES, *_NO):
        return value.strip().lower() in _YES
    raise AnswerError(
        f"node {node!r} asks for an approval; {field}{value!r} is neither yes nor no",
        hint='answer one of: yes, no, approve, reject, true, false, or {"approved": true, "note": "..."}',
    )


def _choice(node: str, options: list[Any], answer: Any) -> Any:
    if answer in options:
        return answer
    if isinstance(answer, str):
        folded = {str(o).strip().lower(): o for o in options}
        if answer.strip().lower() in folded:
            return folded[answer.strip().lower()]
        if answer.strip().isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1]
    if isinstance(answer, int) and not isinstance(answer, bool) and 1 <= answer <= len(options):
        return options[answer - 1]  # the option's number, sent as a JSON number (`--data 2`, an API call)
    listed = ", ".join(repr(o) for o in options) or "(no options given)"
    raise AnswerError(
        f"node {node!r} asks to choose one option; {answer!r} is not one of them",
        hint=f"answer one of: {listed} (or its number, 1 to {len(options)})",
    )


_INBOX = ("approval", "choice", "text_input", "edit", "conversation")
_INBOX_KEYS = {"type", "args"}
_ENVELOPE_KEYS = {"action", "data", "request_id", "thread_id"}
_TEXT_KEYS = {
    "text_input": ("text", "response", "feedback", "message", "value"),
    "conversation": ("message", "text", "response", "value"),
    "edit": ("edited", "content", "text", "value"),
}


def _unwrap_inbox(interaction: str, answer: Any) -> Any:
    """The answer inside LangGraph's `HumanResponse` (`[{"type": "accept" | "response", "args": ...}]`, what the
    agent inbox and Agent Chat UI send): `accept` approves an approval; a response's text is read as typed
    (`typed_answer`). Anything else (`ignore`, `edit`, an accept of another question) stays as sent, to be refused
    if it does not fit."""
    if interaction not in _INBOX:
        return answer
    single = answer[0] if isinstance(answer, list) and len(answer) == 1 else answer
    if not (isinstance(single, Mapping) and set(single) <= _INBOX_KEYS and "type" in single):
        return answer
    if single["type"] == "accept" and interaction == "approval":
        return True
    if single["type"] == "response" and isinstance(single.get("args"), str):
        return typed_answer(single["args"])
    return answer


def _unwrap_envelope(interaction: str, answer: Any) -> Any:
    """The answer inside the existing AgentMap's `{"action": ..., "data": ...}` resume envelope."""
    if interaction in ("any", "event"):
        return answer  # whatever the resumer sends is the answer, envelope and all
    if not (isinstance(answer, Mapping) and "action" in answer and set(answer) <= _ENVELOPE_KEYS):
        return answer
    action, data = answer.get("action"), answer.get("data")
    if interaction == "approval":
        return action
    if not isinstance(data, Mapping):
        return data if data is not None else answer
    if interaction == "choice" and "choice" in data:
        choice = data["choice"]
        return str(choice) if isinstance(choice, int) and not isinstance(choice, bool) else choice
    for key in _TEXT_KEYS.get(interaction, ()):
        if isinstance(data.get(key), str):
            return data[key]
    return answer
