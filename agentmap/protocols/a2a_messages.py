"""A2A messages as runs of a graph (`a2a.py`): a message's parts as the graph's input (a data part is the state,
a text part the single input key), and as the answer to a paused task's question, checked against it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentmap.errors import AgentMapError
from agentmap.protocols._tools import check_arguments, input_schema
from agentmap.spec.validation import SYSTEM_KEYS

if TYPE_CHECKING:
    from agentmap.server._graphs import Assistant

__all__ = ["answer_of", "check_answer_fits", "input_keys", "run_input"]


def input_keys(assistant: Assistant) -> list[str]:
    return [k for k in assistant.input_keys if k not in SYSTEM_KEYS]


def _plain(value: Any) -> Any:
    """A data part's value with whole floats made ints again (the SDK carries every number as a double)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _parts(message: Any) -> tuple[list[Any], list[str]]:
    from a2a.helpers import get_data_parts, get_text_parts

    return [_plain(d) for d in get_data_parts(message.parts)], get_text_parts(message.parts)


def run_input(assistant: Assistant, message: Any) -> dict[str, Any]:
    """A message's parts as the graph's input: a data part is the state, a text part the single input key.

    Raises:
        InvalidParamsError: Neither fits (the error names the keys expected), or an argument has the wrong type.
    """
    from a2a.utils.errors import InvalidParamsError

    data, texts = _parts(message)
    keys = input_keys(assistant)
    schema = input_schema(assistant)
    if data:
        state: dict[str, Any] = {}
        for value in data:
            if not isinstance(value, Mapping):
                raise InvalidParamsError(
                    f"graph {assistant.graph_id!r}: message.parts: a data part must be an object of state keys, "
                    f"not {type(value).__name__}; keys: {', '.join(keys) or 'none'}"
                )
            state.update(value)
    elif len(keys) == 1 and texts:
        state = {keys[0]: "\n".join(texts)}
    elif keys:
        raise InvalidParamsError(
            f"graph {assistant.graph_id!r} takes {len(keys)} input keys ({', '.join(keys)}): send them as a data part "
            + json.dumps({k: "..." for k in keys})
        )
    else:
        state = {}
    try:
        return check_arguments(assistant.graph_id, schema, state)
    except AgentMapError as err:
        raise InvalidParamsError(f"{err.message} ({err.hint})" if err.hint else err.message) from None


def check_answer_fits(assistant: Assistant, thread_id: str, message: Any) -> None:
    """Refuse an answer that does not fit what the paused thread asks (the runtime's answer rule, `answers_for`:
    each answer checked against its question, one for each when several wait), before a run is made of it.

    Raises:
        InvalidParamsError: The answer does not fit (the error says what would).
    """
    from a2a.utils.errors import InvalidParamsError

    from agentmap.runtime.durable import answers_for

    pending = assistant.app.thread(thread_id).questions()
    if not pending:
        return
    try:
        answers_for(pending, answer_of(message), thread_id)
    except AgentMapError as err:
        raise InvalidParamsError(f"{err.message} ({err.hint})" if err.hint else err.message) from None


def answer_of(message: Any) -> Any:
    """The answer a message gives to a paused task: its data part, else its text."""
    data, texts = _parts(message)
    return data[0] if data else "\n".join(texts)
