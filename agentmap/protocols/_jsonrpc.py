"""One JSON-RPC message read safely, before an SDK parses it: the shared check of `agentmap mcp` (stdio), `/mcp` and
`/a2a` (`read_message`).

The SDKs read a message with `json.loads` or pydantic, which meet some client input with an exception of their own
(a RecursionError for deep nesting, a ValueError for an integer of more than 4,300 digits), read what JSON cannot
carry back (a lone surrogate `"\\ud800"`, `1e400` read as infinity) or drop a message whose `id` has the wrong type:
an HTTP 500, or a request never answered. `read_message` reads it first and refuses it as JSON-RPC 2.0 says:

- not UTF-8 text, not JSON (`NaN` included): -32700 parse error, id null;
- not one object (a batch), an `id` neither text nor integer, a `method` that is not text: -32600 invalid request
  (id null, or the id when it is a valid one);
- in `params`: nesting deeper than `MAX_DEPTH`, an integer of more than `MAX_DIGITS` digits, a number too large for
  a double, a lone surrogate, or `params` not an object: -32602 invalid params naming the field, with the id.

```python
try:
    message = read_message(body)        # the message as a dict, for the SDK to read as before
except Refused as refused:
    refused.answer()                    # {"jsonrpc": "2.0", "id": ..., "error": {"code": -32602, "message": ...}}
```
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

__all__ = ["INVALID_PARAMS", "INVALID_REQUEST", "MAX_DEPTH", "MAX_DIGITS", "PARSE_ERROR", "Refused", "read_message"]

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
MAX_DEPTH = 100
"""The deepest nesting of a message read, its own object counted (the SDKs' parsers stop at about 200)."""
MAX_DIGITS = 4300
"""The most digits of an integer read: Python's own limit (`sys.get_int_max_str_digits`), past which `json.loads`
raises."""

Kind = Literal["unreadable", "request", "notification", "response"]

_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_SPACE = re.compile(r"[ \t\n\r]*")
_LITERALS = {"true": True, "false": False, "null": None}
_LONE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F]"
)
"""A surrogate escape that may stand alone (a high one not followed by a low one, a low one not after a high one):
only the careful reader judges it (a `\\` before it makes it text)."""
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_PAIRS = re.compile(rb"(?:\[\]|\{\})+")


class Refused(Exception):
    """A message this server does not read, and the JSON-RPC error that answers it.

    Attributes:
        code: `PARSE_ERROR`, `INVALID_REQUEST` or `INVALID_PARAMS`.
        message: What is wrong, naming the field (`params.arguments.x: ...`).
        request_id: The id to answer with (None when it is not known or not valid).
        kind: What the message was: `request` (answer it), `notification` (JSON-RPC answers none), `response` (the
            client's answer to a request of the server: hand the SDK `instead()`), or `unreadable` (answer it, id null).
    """

    def __init__(self, code: int, message: str, request_id: str | int | None = None, kind: Kind = "unreadable") -> None:
        super().__init__(message)
        self.code, self.message, self.request_id, self.kind = code, message, request_id, kind

    def answer(self) -> dict[str, Any]:
        """The JSON-RPC error response."""
        return {"jsonrpc": "2.0", "id": self.request_id, "error": {"code": self.code, "message": self.message}}

    def instead(self) -> dict[str, Any]:
        """For a refused response of the client: an error response to the server's request it answered, so what
        waits for it gets an error rather than waiting on."""
        error = {"code": self.code, "message": f"the client's response was refused: {self.message}"}
        return {"jsonrpc": "2.0", "id": self.request_id, "error": error}


def read_message(data: bytes | str, *, null_id: bool = True, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """The JSON-RPC message `data` holds, once it is known to be safe for an SDK to read.

    Args:
        data: One message (a request, a notification or a response), as received.
        null_id: Whether `"id": null` is a request's id (JSON-RPC 2.0 allows it; MCP does not).
        max_depth: The deepest nesting read (A2A reads less: its SDK makes a data part a protobuf Struct).

    Raises:
        Refused: The message is not read (see the module's table): what to answer.
    """
    if isinstance(data, bytes):
        raw = data
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise Refused(PARSE_ERROR, f"the message is not UTF-8 text (byte {err.start + 1})") from None
    else:
        raw, text = data.encode("utf-8", "surrogatepass"), data
    value, problem = _read(text, raw, max_depth)
    return _checked(value, problem, null_id)


def _read(text: str, raw: bytes, max_depth: int) -> tuple[Any, tuple[list[str | int], str] | None]:
    """The value and the first problem in it (its path and what is wrong): by `json.loads` when it reads the text
    and nothing in it needs judging, else by the careful reader, which finds where."""
    if "\\u" not in text or not _LONE.search(text):
        try:
            value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
        except (ValueError, RecursionError):  # not JSON, too deep for the parser, an integer too long, infinity
            pass
        else:
            if not _too_deep(raw, max_depth):
                return value, None
    return _Careful(text, max_depth).read()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError("too large for a double")
    return number


def _too_deep(raw: bytes, max_depth: int) -> bool:
    """Whether the text may nest deeper than `max_depth`: its brackets alone, each pass removing the innermost pairs
    (brackets inside strings may make it say yes: the careful reader then decides)."""
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return False
    brackets = raw.translate(None, _NOT_BRACKETS)
    for _ in range(max_depth):
        if not brackets:
            return False
        brackets = _PAIRS.sub(b"", brackets)
    return bool(brackets)


class _Careful:
    """A JSON reader that keeps going past what it refuses (a value too deep, too long, not Unicode), so the message's
    `id` is still read, and says where the first such value is. Its own recursion stops at `max_depth`."""

    def __init__(self, text: str, max_depth: int) -> None:
        self.text, self.pos, self.max_depth = text, 0, max_depth
        self.problem: tuple[list[str | int], str] | None = None

    def read(self) -> tuple[Any, tuple[list[str | int], str] | None]:
        value = self.value([], 1)
        self.space()
        if self.pos != len(self.text):
            raise self.syntax("more after the message")
        return value, self.problem

    def note(self, path: list[str | int], why: str) -> None:
        if self.problem is None:
            self.problem = (path, why)

    def space(self) -> None:
        match = _SPACE.match(self.text, self.pos)
        self.pos = match.end() if match else self.pos

    def peek(self) -> str:
        self.space()
        return self.text[self.pos : self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.syntax(f"{char!r} expected")
        self.pos += 1

    def syntax(self, why: str) -> Refused:
        shown = repr(self.text[self.pos : self.pos + 20]) if self.text[self.pos :].strip() else "the end"
        return Refused(PARSE_ERROR, f"the message is not JSON: {why} at character {self.pos + 1} ({shown})")

    def value(self, path: list[str | int], depth: int) -> Any:
        char = self.peek()
        if char in ("{", "["):
            if depth > self.max_depth:
                self.note(path, f"is nested more than {self.max_depth} levels deep")
                self.skip()
                return None
            return self.object(path, depth) if char == "{" else self.array(path, depth)
        if char == '"':
            return self.string(path)
        number = _NUMBER.match(self.text, self.pos)
        if number:
            self.pos = number.end()
            return self.number(path, number)
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        raise self.syntax("a value expected")

    def object(self, path: list[str | int], depth: int) -> dict[str, Any]:
        self.expect("{")
        found: dict[str, Any] = {}
        if self.peek() == "}":
            self.pos += 1
            return found
        while True:
            if self.peek() != '"':
                raise self.syntax("a key in double quotes expected")
            key = self.string(path, key=True)
            self.expect(":")
            found[key] = self.value([*path, key], depth + 1)
            if self.peek() == "}":
                self.pos += 1
                return found
            self.expect(",")

    def array(self, path: list[str | int], depth: int) -> list[Any]:
        self.expect("[")
        found: list[Any] = []
        if self.peek() == "]":
            self.pos += 1
            return found
        while True:
            found.append(self.value([*path, len(found)], depth + 1))
            if self.peek() == "]":
                self.pos += 1
                return found
            self.expect(",")

    def string(self, path: list[str | int], *, key: bool = False) -> str:
        match = _STRING.match(self.text, self.pos)
        if match is None:
            raise self.syntax("a string that does not end, or holds a control character or a bad escape")
        self.pos = match.end()
        text: str = json.loads(match.group())
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            held = f"a lone surrogate ({text[err.start]!r}), which is not Unicode text"
            self.note(path, f"has a key that holds {held}" if key else f"holds {held}")
        return text

    def number(self, path: list[str | int], match: re.Match[str]) -> Any:
        text = match.group()
        if match.group(1) is None and match.group(2) is None:
            digits = len(text.lstrip("-"))
            if digits > MAX_DIGITS:
                self.note(path, f"is an integer of {digits} digits (at most {MAX_DIGITS} are read)")
                return None
            return int(text)
        number = float(text)
        if number in (float("inf"), float("-inf")):
            self.note(path, f"is a number too large for a double ({text[:20]}...)")
            return None
        return number

    def skip(self) -> None:
        """Past the array or object here, however deep, without reading it (no recursion)."""
        depth = 0
        while True:
            char = self.peek()
            if char in ("{", "["):
                depth += 1
            elif char in ("}", "]"):
                depth -= 1
            elif char == '"':
                match = _STRING.match(self.text, self.pos)
                if match is None:
                    raise self.syntax("a string that does not end, or holds a control character or a bad escape")
                self.pos = match.end()
                continue
            elif not char:
                raise self.syntax("the message ends inside an array or object")
            self.pos += 1
            if depth == 0:
                return


def _where(path: list[str | int]) -> str:
    """`params.message.parts[0].data`: a path as a reader writes it (its first 8 steps, then `...`)."""
    shown = ""
    for step in path[:8]:
        if isinstance(step, int):
            shown += f"[{step}]"
        elif step.isidentifier():
            shown += f".{step}" if shown else step
        else:
            shown += f"[{json.dumps(step)}]"
    return (shown or "the message") + ("..." if len(path) > 8 else "")


def _checked(value: Any, problem: tuple[list[str | int], str] | None, null_id: bool) -> dict[str, Any]:
    """`value` as a JSON-RPC message, or `Refused` with the answer to give."""
    if not isinstance(value, dict):
        what = "a batch (an array), which is not supported" if isinstance(value, list) else type(value).__name__
        raise Refused(INVALID_REQUEST, f"a JSON-RPC message is one object, not {what}")
    request_id = value.get("id")
    if problem is not None and problem[0][:1] == ["id"]:
        raise Refused(INVALID_REQUEST, f"id {problem[1]}")
    if "id" in value and not _valid_id(request_id, null_id):
        allowed = "a text or an integer" + (" or null" if null_id else "")
        raise Refused(INVALID_REQUEST, f"id must be {allowed}, not {_shown(request_id)}")
    if "id" in value and "method" not in value and ("result" in value or "error" in value):
        kind: Kind = "response"
    else:
        kind = "request" if "id" in value else "notification"
    if value.get("jsonrpc") != "2.0":
        raise Refused(INVALID_REQUEST, f'jsonrpc must be "2.0", not {_shown(value.get("jsonrpc"))}', request_id, kind)
    if kind != "response" and not isinstance(value.get("method"), str):
        raise Refused(INVALID_REQUEST, f"method must be a text, not {_shown(value.get('method'))}", request_id, kind)
    if problem is not None:
        path, why = problem
        code = INVALID_PARAMS if path[:1] == ["params"] else INVALID_REQUEST
        raise Refused(code, f"{_where(path)} {why}", request_id, kind)
    if "params" in value and not isinstance(value["params"], dict):
        raise Refused(INVALID_PARAMS, f"params must be an object, not {_shown(value['params'])}", request_id, kind)
    if kind == "response" and not isinstance(value.get("result", value.get("error")), dict):
        raise Refused(INVALID_REQUEST, "a response's result or error must be an object", request_id, kind)
    return value


def _valid_id(value: Any, null_id: bool) -> bool:
    return (
        isinstance(value, str)
        or (isinstance(value, int) and not isinstance(value, bool))
        or (null_id and value is None)
    )


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    kind = {dict: "an object", list: "an array", bool: "a boolean", float: "a number"}.get(type(value))
    return kind or repr(value)[:40]
