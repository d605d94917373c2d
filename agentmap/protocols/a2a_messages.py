"""A2A messages as runs of a graph (`a2a.py`): a message's parts as the graph's input (a data part is the state,
a text part the single input key), and as the answer to a paused task's question, checked against it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentmap.errors import AgentMapError
from agentmap.protocols import _tools
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
    """Refuse an answer that does not fit what the paused thread asks (`_tools.check_answer_fits`, the one rule of
    every channel), before a run is made of it: the task stays `input-required`.

    Raises:
        InvalidParamsError: The answer does not fit (the error names `message.parts` and says what would).
    """
    from a2a.utils.errors import InvalidParamsError

    try:
        _tools.check_answer_fits(assistant, thread_id, answer_of(message))
    except AgentMapError as err:
        why = f"{err.message} ({err.hint})" if err.hint else err.message
        raise InvalidParamsError(f"message.parts: {why}; the task is still input-required") from None


def answer_of(message: Any) -> Any:
    """The answer a message gives to a paused task, as the client sent it: its data part, else its text read as
    typed text (`typed_answer`: the words as typed, as on the command line)."""
    from agentmap.agents.questions import typed_answer

    data, texts = _parts(message)
    return data[0] if data else typed_answer("\n".join(texts))
