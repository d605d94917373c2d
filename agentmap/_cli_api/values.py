"""run, resume, chat, ask: a JSON value given on the command line, read and checked as every entry point reads one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentmap.runtime.values import Problem

__all__ = ["read_json_value", "state_key_problem", "value_problem"]


def read_json_value(text: str | bytes) -> tuple[Any, Problem | None]:
    """run, resume, chat: the JSON value of `--state`, `--state-file`, `--data`, `--resume` or `--agent-config`, and
    None; or None and what is wrong with it (not JSON, a lone surrogate, too deep, an integer beyond 64 bits)."""
    from agentmap.runtime.values import BadValue, read_json

    try:
        return read_json(text), None
    except BadValue as exc:
        return None, exc.problem


def value_problem(value: Any) -> Problem | None:
    """resume: what is wrong with the ANSWER as `typed_answer` read it (a lone surrogate from bytes that are not
    UTF-8, NaN, an integer beyond 64 bits, nesting deeper than 100 levels), or None."""
    from agentmap.runtime.values import value_problem

    return value_problem(value)


def state_key_problem(state: Mapping[str, Any]) -> Problem | None:
    """run: the first key of an initial state the run cannot start with (LangGraph's own, or a system key of the
    wrong type), or None."""
    from agentmap.runtime.values import state_problem

    return state_problem(state)
