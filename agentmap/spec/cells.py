"""Parsers for the cells of a workflow row. Each raises `CellError` with a message and a fix."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from agentmap.spec.models import FuncRef, Targets, state_key

__all__ = ["CellError", "parse_context", "parse_fields", "parse_targets", "split_pipes", "state_key"]

_DIRECTIVE = re.compile(r"^\{\s*([A-Za-z_]\w*\s*=[^{}]*)\}$", re.S)
_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")


class CellError(ValueError):
    """A cell could not be parsed; `code`, `message` and `fix` become a validation issue."""

    def __init__(self, code: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fix = fix


def split_pipes(text: str) -> tuple[str, ...]:
    """Split `a|b| c` into `("a", "b", "c")`, dropping empty parts."""
    return tuple(part.strip() for part in text.split("|") if part.strip())


def parse_context(text: str) -> dict[str, Any]:
    """Parse a Context cell: a JSON object, a Python-literal dict, or `{key=value, ...}` directives.

    The directive form is what existing AgentMap files use for subgraphs: `{workflow=::Inner}`.

    Raises:
        CellError: For anything else, including plain text.
    """
    text = text.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as json_error:
        value = _python_literal(text)
        if value is None:
            directive = _directives(text)
            if directive is not None:
                return directive
            raise CellError(
                "bad-context",
                f"Context is not a JSON object: {json_error.msg} at character {json_error.pos + 1} in {_clip(text)}",
                "write an object such as {\"key\": \"value\"} (JSON) or {'key': 'value'} (Python), "
                "or move plain text to the Description column",
            ) from None
    if not isinstance(value, dict):
        raise CellError(
            "bad-context",
            f"Context must be an object, not {type(value).__name__}: {_clip(text)}",
            'write an object such as {"key": "value"}, or move plain text to the Description column',
        )
    return {str(k): v for k, v in value.items()}


def _python_literal(text: str) -> Any:
    if not text.startswith("{"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _directives(text: str) -> dict[str, Any] | None:
    match = _DIRECTIVE.match(text)
    if match is None:
        return None
    result: dict[str, Any] = {}
    for part in match.group(1).split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip().isidentifier():
            return None
        result[key.strip()] = value.strip()
    return result


def _clip(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def parse_fields(text: str, *, allow_rename: bool) -> tuple[str, ...]:
    """Parse Input_Fields (`a|b`, `state_key:param`, `param=state_key`) or Output_Field (`a|b`,
    `state_key=result_key`).

    Raises:
        CellError: For an empty side of a rename, several renames in one entry, or `:` in Output_Field.
    """
    fields = split_pipes(text)
    for field in fields:
        separators = field.count(":") + field.count("=")
        if separators == 0:
            continue
        left, _, right = field.partition(":" if ":" in field else "=")
        if not allow_rename and ":" in field:
            raise CellError(
                "bad-field",
                f"{field!r}: write an output rename as state_key=result_key",
                "e.g. 'answer=text' writes the agent's result['text'] to the state key 'answer'",
            )
        if separators > 1 or not left.strip() or not right.strip():
            usage = (
                "'state_key', 'state_key:param' or 'param=state_key'"
                if allow_rename
                else ("'state_key' or 'state_key=result_key'")
            )
            raise CellError("bad-field", f"{field!r} is not {usage}", f"write each entry as {usage}")
    return fields


def parse_targets(text: str) -> Targets | None:
    """Parse Edge / Success_Next / Failure_Next: `A`, `A|B` (parallel), `func:name`, `func:module:function`.

    Raises:
        CellError: For a malformed `func:` reference or one mixed with node names.
    """
    parts = split_pipes(text)
    if not parts:
        return None
    funcs = [p for p in parts if p.lower().startswith("func:")]
    if not funcs:
        return parts
    if len(parts) > 1:
        raise CellError(
            "bad-target",
            f"{text.strip()!r} mixes a func: router with other targets",
            "a router returns the next node(s) itself: write only func:name in this cell",
        )
    ref = funcs[0][len("func:") :].strip()
    module, sep, name = ref.rpartition(":")
    if not sep:
        module, name = "", ref
    if not _NAME.match(name) or not name.replace(".", "").replace("-", "").isidentifier():
        raise CellError(
            "bad-target",
            f"{text.strip()!r} does not name a function",
            "write func:name (a function in the functions folder) or func:module:function",
        )
    return FuncRef(name=name, module=module.strip() or None)
