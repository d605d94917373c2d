"""Parsers for the cells of a workflow row. Each raises `CellError` with a message and a fix."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from agentmap.spec.models import FuncRef, Targets, state_key

__all__ = ["CellError", "edge_overrides", "parse_context", "parse_fields", "parse_targets", "split_pipes", "state_key"]

_DIRECTIVE = re.compile(r"^\{\s*([A-Za-z_]\w*\s*=[^{}]*)\}$", re.S)
_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")
_KEY = re.compile(r"^[A-Za-z_][\w.\- ]*$")


class CellError(ValueError):
    """A cell could not be parsed; `code`, `message` and `fix` become a validation issue."""

    def __init__(self, code: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fix = fix


def split_pipes(text: str) -> tuple[str, ...]:
    """Split `a|b| c` into `("a", "b", "c")`, dropping empty parts."""
    if "|" not in text:  # most cells: one name or none
        part = text.strip()
        return (part,) if part else ()
    return tuple(part.strip() for part in text.split("|") if part.strip())


def parse_context(text: str, notes: list[CellError] | None = None) -> dict[str, Any]:
    """Parse a Context cell: a JSON object, a Python-literal dict, `{key=value, ...}` directives, a YAML flow
    mapping with unquoted keys (`{provider: anthropic}`), or plain text.

    The directive form is what existing AgentMap files use for subgraphs: `{workflow=::Inner}`. Plain text
    (`general`, a sentence) is kept as `{"context": text}`, as AgentMap 0.9 did, and so are unquoted keys;
    both add a warning to `notes` naming the modern spelling.

    Raises:
        CellError: For text starting with `{` that parses as nothing, a JSON value that is not an object,
            or a cell too deeply nested or with an integer too long to read.
    """
    text = text.strip()
    if not text:
        return {}
    _check_size(text)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as json_error:
        if not text.startswith("{"):
            legacy = _legacy_subgraph(text)
            if legacy is not None:
                if notes is not None:
                    notes.append(legacy[1])
                return legacy[0]
            if notes is not None:
                notes.append(
                    CellError(
                        "context-plain-text",
                        f'Context {_clip(text)} is plain text; it is kept as {{"context": ...}}',
                        'move prose to the Description column, or write settings as an object such as {"key": "value"}',
                    )
                )
            return {"context": text}
        value = _python_literal(text)
        if value is None:
            directive = _directives(text)
            if directive is not None:
                return directive
            value = _yaml_mapping(text, json_error, notes)
    except (RecursionError, ValueError) as exc:  # json's own limits, should a cell pass the size check
        raise CellError("bad-context", f"Context cannot be read: {exc}", _SIZE_FIX) from None
    if not isinstance(value, dict):
        raise CellError(
            "bad-context",
            f"Context must be an object, not {type(value).__name__}: {_clip(text)}",
            'write an object such as {"key": "value"}, or move plain text to the Description column',
        )
    return {str(k): v for k, v in value.items()}


_LEGACY_SUBGRAPH = re.compile(r"^subgraph_name\s*:\s*([\w.\-]+)\s*(?:,\s*csv_path\s*:\s*(.+))?$")


def _legacy_subgraph(text: str) -> tuple[dict[str, Any], CellError] | None:
    """AgentMap 0.9's `subgraph_name:X,csv_path:Y`, read as `{workflow=Y::X}`."""
    match = _LEGACY_SUBGRAPH.match(text)
    if match is None:
        return None
    name, path = match.group(1), (match.group(2) or "").strip()
    modern = f"{{workflow={path}::{name}}}"
    note = CellError(
        "legacy-subgraph",
        f"Context {_clip(text)} is the AgentMap 0.9 subgraph form; it is read as {modern}",
        f"write {modern}",
    )
    return {"subgraph_name": name, **({"csv_path": path} if path else {})}, note


_MAX_DEPTH = 100
_MAX_DIGITS = 4000
_DIGITS = re.compile(r"\d{" + str(_MAX_DIGITS + 1) + ",}")
_SIZE_FIX = "a Context holds a node's settings: keep it flat and short, and put long data in the state"


def _check_size(text: str) -> None:
    """Refuse cells that would exhaust a parser (deep nesting, huge integers) with a located error."""
    depth = deepest = 0
    for char in text:
        if char in "{[(":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}])":
            depth -= 1
    if deepest > _MAX_DEPTH:
        raise CellError(
            "bad-context", f"Context is nested {deepest} levels deep (at most {_MAX_DEPTH} are read)", _SIZE_FIX
        )
    digits = _DIGITS.search(text)
    if digits is not None:
        raise CellError(
            "bad-context",
            f"Context holds a number of {len(digits.group())} digits (at most {_MAX_DIGITS} are read)",
            _SIZE_FIX,
        )


def _yaml_mapping(text: str, json_error: json.JSONDecodeError, notes: list[CellError] | None) -> Any:
    """Read `{key: value}` with unquoted keys as the YAML flow mapping it is (AgentMap 0.9 files use it)."""
    why = f"{json_error.msg} at character {json_error.pos + 1}"
    try:
        import yaml

        from agentmap._yaml import load
    except ImportError:
        raise CellError(
            "bad-context",
            f"Context is not a JSON object ({why}) in {_clip(text)}; reading unquoted keys needs PyYAML",
            'pip install "agentmap[yaml]", or quote the keys: {"key": "value"}',
        ) from None
    try:
        value = load(text)
        named = isinstance(value, dict) and all(isinstance(k, str) and _KEY.match(k) for k in value)
        if not named or ":" not in text:
            raise yaml.YAMLError("its keys are not names")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at character {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise CellError(
            "bad-context",
            f"Context starts with '{{' but is neither JSON ({why}) nor a Python or YAML mapping "
            f"({problem}{where}): {_clip(text)}",
            "write an object such as {\"key\": \"value\"} (JSON) or {'key': 'value'} (Python), "
            "or move plain text to the Description column",
        ) from None
    if notes is not None:
        what = _unquoted(text, value)
        notes.append(
            CellError(
                "context-unquoted-keys",
                f"Context {_clip(text)} has unquoted {what}; it was read as a YAML flow mapping",
                f"quote the {what} to make it JSON: " + _clip(json.dumps(value, default=str), 100),
            )
        )
    return value


def _unquoted(text: str, value: dict[str, Any]) -> str:
    """What a YAML flow mapping leaves unquoted that JSON quotes: `keys`, `text values`, or both."""

    def quoted(word: str, after: str = "") -> bool:
        return re.search(f"[\"']{re.escape(word)}[\"']{after}", text) is not None

    keys = any(not quoted(k, r"\s*:") for k in value)
    values = any(isinstance(v, str) and not quoted(v) for v in value.values())
    return "keys and text values" if keys and values else "text values" if values else "keys"


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


def edge_overrides(fields: dict[str, Any], written: Mapping[str, str]) -> list[CellError]:
    """Edge beside Success_Next/Failure_Next on one row: Edge wins, as in AgentMap 0.9; the others are dropped.

    Args:
        fields: The parsed cells of the row (`edge`, `success_next`, `failure_next`); changed in place.
        written: Canonical column -> the header as the file spells it.

    Returns:
        One `edge-overrides-branches` warning naming the ignored cells, or nothing.
    """
    edge = fields.get("edge")
    if not isinstance(edge, tuple):
        return []  # no Edge, or a func: router, which receives both targets
    ignored = [
        f"{written.get(column, column)}={_show(fields[key])}"
        for column, key in (("Success_Next", "success_next"), ("Failure_Next", "failure_next"))
        if fields.get(key) is not None
    ]
    if not ignored:
        return []
    fields.pop("success_next", None)
    fields.pop("failure_next", None)
    return [
        CellError(
            "edge-overrides-branches",
            f"Edge {'|'.join(edge)!r} is followed always; {', '.join(ignored)} on the same row is ignored",
            "keep Edge alone for an unconditional next node, or clear Edge and keep Success_Next/Failure_Next "
            "to branch on success",
        )
    ]


def _show(targets: Any) -> str:
    return "|".join(targets) if isinstance(targets, tuple) else str(targets)
