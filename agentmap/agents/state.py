"""`StateAdapter`: read and write workflow state, whatever its shape.

A state may be a dict (what LangGraph hands a node), a pydantic model, or a plain object. Reads of a
missing key give None; writes return a new state and never mutate the one given.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["StateAdapter", "parse_input_field", "parse_output_field"]


def parse_input_field(field: str) -> tuple[str, str]:
    """Split an Input_Fields entry into `(state_key, param)`.

    `key` reads `key`; `state_key:param` and `param=state_key` both hand the agent `state[state_key]`
    under the name `param` (the second is how subgraph mappings are usually written: `child=parent`).
    """
    if "=" in field:
        param, _, key = field.partition("=")
        return key.strip(), param.strip()
    key, sep, param = field.partition(":")
    key = key.strip()
    return (key, param.strip() or key) if sep else (key, key)


def parse_output_field(field: str) -> tuple[str, str | None]:
    """Split an Output_Field entry into `(state_key, result_key)`: `state_key=result_key` writes
    `result[result_key]` to `state_key`; a plain `key` has no result key."""
    key, sep, source = field.partition("=")
    return (key.strip(), source.strip()) if sep else (key.strip(), None)


class StateAdapter:
    """Static helpers that read from and write to a state of any supported shape."""

    @staticmethod
    def get_value(state: Any, key: str, default: Any = None) -> Any:
        """Return `state[key]` (or the attribute `key`), or `default` when it is missing."""
        if isinstance(state, Mapping):
            return state.get(key, default)
        return getattr(state, key, default)

    @staticmethod
    def get_inputs(state: Any, fields: Iterable[str]) -> dict[str, Any]:
        """Return `{param: value}` for each field; `state_key:param` renames, a missing key reads as None."""
        inputs: dict[str, Any] = {}
        for field in fields:
            key, param = parse_input_field(field)
            inputs[param] = StateAdapter.get_value(state, key)
        return inputs

    @staticmethod
    def set_value(state: Any, field: str, value: Any) -> Any:
        """Return a copy of `state` with `field` set to `value`; the state given is left unchanged."""
        if isinstance(state, Mapping):
            return {**state, field: value}
        model_copy = getattr(state, "model_copy", None)
        if callable(model_copy):
            return model_copy(update={field: value})
        new_state = copy.copy(state)
        setattr(new_state, field, value)
        return new_state
