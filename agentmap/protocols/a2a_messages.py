"""A2A messages as runs of a graph (`a2a.py`): a request checked against its method, a message's parts as the graph's
input (a data part is the state, a text part the single input key), and as the answer to a paused task's question,
checked against it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentmap.errors import AgentMapError
from agentmap.protocols import _tools
from agentmap.protocols._tools import check_arguments, input_schema
from agentmap.spec.validation import SYSTEM_KEYS

if TYPE_CHECKING:
    from agentmap.server._graphs import Assistant

__all__ = ["answer_of", "check_answer_fits", "check_params", "input_keys", "run_input"]


def check_params(request: Mapping[str, Any]) -> None:
    """Refuse a request of an A2A 0.3 method (`message/send`, `tasks/get`, ...) whose params do not fit the method
    as -32602 naming the field (the SDK answers it -32600 with pydantic's whole report, and logs a traceback);
    A2A 1.0's methods the SDK answers -32602 itself.

    Raises:
        Refused: -32602 invalid params, e.g. `params.message.parts[0].data: Input should be a valid dictionary`.
    """
    import a2a.server.routes.jsonrpc_dispatcher  # noqa: F401 (imports the 0.3 adapter without an import cycle)
    from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter

    from agentmap.protocols._jsonrpc import INVALID_PARAMS, Refused

    model: Any = JSONRPC03Adapter.METHOD_TO_MODEL.get(str(request.get("method")))
    if model is None:
        return
    try:
        model.model_validate(request)
    except ValidationError as err:
        raise Refused(INVALID_PARAMS, _problem(request, err.errors()), request.get("id"), "request") from None


def _problem(request: Mapping[str, Any], errors: list[Any]) -> str:
    """The first of pydantic's errors, at its field; where a part fits no kind of part (pydantic tries each member of
    the union: `TextPart`, `FilePart`, `DataPart`), the errors of the kind the part names, else the kinds there are."""
    found: list[tuple[str, str | None, str, str]] = []  # (where, the union member tried, its field, message)
    for error in errors:
        where, member, field = "", None, ""
        value: Any = request
        for step in error["loc"]:
            tag = isinstance(value, Mapping) and isinstance(step, str) and step not in value and step[:1].isupper()
            if member is None and tag:
                member = step
                continue
            shown = f"[{step}]" if isinstance(step, int) else f".{step}"
            if member is None:
                where += shown if where else str(step)
            else:
                field += shown
            value = value[step] if _has(value, step) else None
        found.append((where, member, field, str(error["msg"])))
    where, member, field, message = found[0]
    if member is None:
        return f"{where}{field}: {message}"
    here = [e for e in found if e[0] == where]
    wrong_kind = {m for _, m, f, _ in here if f == ".kind"}
    named = [e for e in here if e[1] not in wrong_kind]
    if named:  # the member of the kind the part names: its own error
        return f"{where}{named[0][2]}: {named[0][3]}"
    kinds = " or ".join(msg.removeprefix("Input should be ") for _, _, f, msg in here if f == ".kind")
    return f"{where}.kind: Input should be {kinds}"


def _has(value: Any, step: Any) -> bool:
    return (isinstance(value, Mapping) and step in value) or (
        isinstance(value, list) and isinstance(step, int) and 0 <= step < len(value)
    )


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
