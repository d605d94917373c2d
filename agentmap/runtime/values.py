"""A value from outside a run, as JSON: what a run may be given and a checkpoint can keep.

A run's state is saved in checkpoints (msgpack, which holds integers of 64 bits and nests a few hundred levels)
and sent back as JSON (UTF-8 text, finite numbers). A value that breaks either rule would run and then fail
where nobody asked for it: the checkpoint write, the answer of a request, a later search. So a value given
from outside is read once, here, and refused with the place it breaks a rule:

- `read_json`: text (or bytes) as JSON, refused when it is not JSON or breaks a rule of `value_problem`; the
  command line reads `--state`, `--state-file`, `--data` and `--resume` with it, and the server every request body.
- `value_problem`: a lone surrogate (`"\\ud800"`, which Python's JSON reads but UTF-8 cannot write), a number that
  is not finite (`NaN`, `1e400`), an integer beyond 64 bits (or of more digits than Python reads), objects and
  arrays nested deeper than `MAX_DEPTH`.
- `state_problem`: the keys of an initial state: LangGraph's own names (`__interrupt__`, `checkpoint_ns`, ...)
  and the runtime's system keys given a value of another type (`errors` is a list, the two successes booleans).
- `repaired`: a value read back from a store written before these rules, with its lone surrogates replaced, so
  one old record cannot break every answer that lists it.

Each problem is a `Problem` (where in the value, what is wrong, what to do); the caller words the error with
the option or field it came from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentmap.agents.messages import MESSAGE_HINT, MESSAGES_KEY, messages_problem

__all__ = [
    "INT_RANGE",
    "LANGGRAPH_KEYS",
    "MAX_DEPTH",
    "BadValue",
    "Problem",
    "read_json",
    "repaired",
    "state_problem",
    "value_problem",
]

MAX_DEPTH = 100
"""How deep objects and arrays may nest in a value (the outer object is level 1); msgpack stops near 254."""

INT_RANGE = (-(2**63), 2**63 - 1)
"""The integers a value may hold: those a checkpoint keeps (64 bits, signed)."""

LANGGRAPH_KEYS = ("checkpoint_id", "checkpoint_map", "checkpoint_ns", "configurable", "langsmith:hidden", "|", ":")
"""Names LangGraph keeps for itself besides those beginning with `__` (`__interrupt__`, `__start__`, ...)."""

_SYSTEM_TYPES: dict[str, tuple[type, str, str]] = {
    "errors": (list, "a list", "the runtime appends the error of every failed node to it"),
    "last_action_success": (bool, "true or false", "the runtime sets it after every node"),
    "graph_success": (bool, "true or false", "the runtime sets it to the run's verdict"),
}


@dataclass(frozen=True)
class Problem:
    """What is wrong with a value, and where.

    Attributes:
        path: Where in the value: `""` the whole value, `name`, `items[2].text`.
        reason: What is wrong, as the end of a sentence whose subject is the place (`holds a lone surrogate ...`).
        hint: What to give instead.
        syntax: Whether the text was not JSON at all (the caller's own example helps more than `hint` then).
    """

    path: str
    reason: str
    hint: str
    syntax: bool = False

    def message(self, where: str = "", whole: str = "the value") -> str:
        """The place and the reason: `input.name holds ...` for `where="input"`; `whole` names the whole value."""
        if not where or not self.path:
            place = where or self.path or whole
        else:
            place = where + self.path if self.path.startswith("[") else f"{where}.{self.path}"
        return f"{place} {self.reason}"


class BadValue(ValueError):
    """A value `read_json` refused: its `problem` says where and why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message())
        self.problem = problem


@dataclass(frozen=True)
class _LongInteger:
    """An integer of more digits than 64 bits hold, kept as its length until the walk finds where it is."""

    digits: int


def _integer(text: str) -> int | _LongInteger:
    digits = len(text.lstrip("-"))
    return _LongInteger(digits) if digits > 19 else int(text)


def read_json(text: str | bytes) -> Any:
    """`text` as JSON, checked by `value_problem`.

    Raises:
        BadValue: The text is not JSON (the problem's reason gives the line and column) or not UTF-8, or the
            value breaks a rule of `value_problem`.
    """
    try:
        value = json.loads(text, parse_int=_integer)
    except json.JSONDecodeError as exc:
        reason = f"is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise BadValue(Problem("", reason, "write one JSON value", syntax=True)) from None
    except UnicodeDecodeError:
        raise BadValue(Problem("", "is not UTF-8 text", "save or send the JSON as UTF-8", syntax=True)) from None
    except RecursionError:  # Python's reader gives up near 1000 levels, where the rule stops at MAX_DEPTH
        raise BadValue(_too_deep("")) from None
    problem = value_problem(value)
    if problem is not None:
        raise BadValue(problem)
    return value


def value_problem(value: Any) -> Problem | None:
    """The first place (in document order) where `value` breaks a rule of this module, or None.

    A value nested too deep is named by its place two levels down (`input.name`), not by the hundred indexes
    that reach its bottom.
    """
    stack: list[tuple[Any, str, int, str]] = [(value, "", 1, "")]  # the value, its path, its level, its anchor
    while stack:
        item, path, level, anchor = stack.pop()
        if level <= _ANCHOR_LEVEL:
            anchor = path
        children: list[tuple[Any, str, int, str]] = []
        if isinstance(item, Mapping):
            if level > MAX_DEPTH:
                return _too_deep(anchor)
            for key, child in item.items():
                if isinstance(key, str) and not _is_text(key):
                    return Problem(path, f"has a key {_shown(key)} that {_NOT_TEXT}", _TEXT_HINT)
                children.append((child, _join(path, str(key)), level + 1, anchor))
        elif isinstance(item, list | tuple):
            if level > MAX_DEPTH:
                return _too_deep(anchor)
            children = [(child, f"{path}[{index}]", level + 1, anchor) for index, child in enumerate(item)]
        else:
            problem = _scalar_problem(item, path)
            if problem is not None:
                return problem
        stack.extend(reversed(children))
    return None


def state_problem(state: Mapping[str, Any]) -> Problem | None:
    """The first key of an initial state that the run cannot start with, or None.

    A key LangGraph keeps for itself (beginning with `__`, or one of `LANGGRAPH_KEYS`) is refused; the runtime's
    system keys (`errors`, `last_action_success`, `graph_success`) may be given, with a value of their type, and
    `messages` (a chat, agents/messages.py) with messages.
    """
    for key, value in state.items():
        if not isinstance(key, str):
            continue
        if key.startswith("__") or key in LANGGRAPH_KEYS:
            return Problem(
                key,
                "is a name LangGraph keeps for itself (as every key beginning with __, and "
                f"{', '.join(LANGGRAPH_KEYS[:-1])} and {LANGGRAPH_KEYS[-1]}): a run cannot start with it",
                "rename the key (in the workflow too, if a node reads it)",
            )
        if key == MESSAGES_KEY and (unfit := messages_problem(value)) is not None:
            return Problem(key, unfit, MESSAGE_HINT)
        if key in _SYSTEM_TYPES:
            kind, wanted, why = _SYSTEM_TYPES[key]
            if not isinstance(value, kind):
                return Problem(
                    key,
                    f"must be {wanted}, not {_json_type(value)}: {why}",
                    f"give {key} as {wanted}, or leave it out",
                )
    return None


def repaired(value: Any) -> tuple[Any, bool]:
    """`value` with every lone surrogate (in text and keys) replaced by U+FFFD, and whether there was one.

    For values read back from a store that took them before `read_json` refused them: one such record must not
    make every answer listing it fail.
    """
    if isinstance(value, str):
        return (value, False) if _is_text(value) else (_replaced(value), True)
    if isinstance(value, Mapping):
        changed = False
        fixed: dict[Any, Any] = {}
        for key, child in value.items():
            new_key, key_changed = repaired(key)
            fixed[new_key], child_changed = repaired(child)
            changed = changed or key_changed or child_changed
        return (fixed, True) if changed else (value, False)
    if isinstance(value, list):
        parts = [repaired(child) for child in value]
        changed = any(c for _, c in parts)
        return ([p for p, _ in parts], True) if changed else (value, False)
    return value, False


_ANCHOR_LEVEL = 3
_NOT_TEXT = (
    "holds a lone surrogate (a \\ud800-\\udfff escape without its pair, or a byte that is not UTF-8), "
    "which is not Unicode text"
)
_TEXT_HINT = "give UTF-8 text; a character written as two escapes (an emoji) needs both halves of its pair"


def _scalar_problem(item: Any, path: str) -> Problem | None:
    if isinstance(item, str):
        if not _is_text(item):
            return Problem(path, f"{_NOT_TEXT}: {_shown(item)}", _TEXT_HINT)
    elif isinstance(item, _LongInteger):
        return Problem(path, f"is an integer of {item.digits} digits, beyond the {_INT_RULE}", _INT_HINT)
    elif isinstance(item, int) and not isinstance(item, bool):
        if not INT_RANGE[0] <= item <= INT_RANGE[1]:
            return Problem(path, f"is {item}, beyond the {_INT_RULE}", _INT_HINT)
    elif isinstance(item, float) and not math.isfinite(item):
        return Problem(
            path,
            f"is {item}: JSON carries finite numbers only (NaN, Infinity and 1e400 are not)",
            "give a finite number",
        )
    return None


_INT_RULE = f"integers a checkpoint keeps ({INT_RANGE[0]} to {INT_RANGE[1]})"
_INT_HINT = 'give a larger number as text ("123...") or as a float'


def _too_deep(path: str) -> Problem:
    return Problem(path, f"nests objects and arrays deeper than {MAX_DEPTH} levels", "give a flatter value")


def _is_text(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _replaced(text: str) -> str:
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


def _shown(text: str) -> str:
    """`text` (its start) with lone surrogates as `\\udXXX` escapes, so the message itself can be printed."""
    short = text if len(text) <= 40 else text[:40] + "..."
    return '"' + short.encode("utf-8", "backslashreplace").decode("utf-8") + '"'


def _join(path: str, key: str) -> str:
    """`path.key`, or `path["key"]` for a key that is not a plain name."""
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=True)}]"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__
