"""Write and read conversation logs in the exact text format of csv_specs/evaluation.md.

```
Run metadata:
- session_id: example_20251222T120000
- mode: synthetic
- scenario: example_scenario
- max_turns: 1
- stop_reason: single_turn

Conversation:

 - user [2025-12-22 12:00:00]:
  What does the document say about nurse licensing in Spain?
 - assistant [2025-12-22 12:00:01]:
  The document explains the licensing steps ...
```

Every line of a message is indented by two spaces, so multi-line text survives; `parse_log(format_log(log))
== log` for every valid `ConversationLog`. The parser is strict: anything else raises `LogFormatError` with
the line number. `parse_conversation` reads only the `Conversation:` section, which is all the evaluator
may use.
"""

from __future__ import annotations

import os
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import ClassVar, NoReturn

from agentmap.contracts.conversation import ConversationLog, RunMetadata, Turn
from agentmap.errors import AgentMapError, ErrorCode, Location

__all__ = [
    "METADATA_KEYS",
    "LogFormatError",
    "format_log",
    "parse_conversation",
    "parse_conversation_texts",
    "parse_log",
    "read_log",
    "write_log",
]

METADATA_KEYS = ("session_id", "mode", "scenario", "max_turns", "stop_reason")
"""The run metadata keys, in the order they are written."""

_METADATA_HEADER = "Run metadata:"
_CONVERSATION_HEADER = "Conversation:"
_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
_TURN = re.compile(r" - ([A-Za-z][A-Za-z0-9_-]*) \[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\]:")
_TURN_BLOCK = re.compile(r" - ([A-Za-z][A-Za-z0-9_-]*) \[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\]:\n((?:  [^\n]*\n)+)")
_CONVERSATION_LINE = re.compile(r"^Conversation:$", re.MULTILINE)
_ITEM = re.compile(r"- ([a-z_]+): (.+)")


class LogFormatError(AgentMapError, ValueError):
    """A conversation log does not follow the csv_specs/evaluation.md format; `location.row` is the 1-based line."""

    default_code = ErrorCode.BAD_CONVERSATION_LOG
    exit_code: ClassVar[int] = 4


def format_log(log: ConversationLog) -> str:
    """Return the text of `log`, ending with a newline.

    Args:
        log: The log to write.

    Returns:
        The log in the contract's format; an empty message is written as one indented empty line.
    """
    meta = log.metadata
    lines = [_METADATA_HEADER]
    lines += [f"- {key}: {getattr(meta, key)}" for key in METADATA_KEYS]
    lines += ["", _CONVERSATION_HEADER, ""]
    for turn in log.turns:
        lines.append(f" - {turn.role} [{turn.timestamp.strftime(_TIME_FORMAT)}]:")
        lines += ["  " + part for part in turn.text.split("\n")]
    return "\n".join(lines) + "\n"


def write_log(path: str | os.PathLike[str], log: ConversationLog, *, atomic: bool = True) -> Path:
    """Write `log` to `path` in UTF-8, atomically: the file either holds the whole log or is unchanged.

    Args:
        path: The file to (over)write; its folder is created if needed.
        log: The log to write.
        atomic: False writes the file in place, into a folder that must exist (fewer file operations), for a
            caller that marks elsewhere when the log is whole (`eval run`'s run records).

    Returns:
        The path written.
    """
    target = Path(path)
    if not atomic:
        with open(target, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(format_log(log))
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(format_log(log))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_log(path: str | os.PathLike[str]) -> ConversationLog:
    """Read and strictly parse the log file at `path`.

    Raises:
        LogFormatError: When the file is not a valid log (the location names the file and line).
        OSError: When the file cannot be read.
    """
    return parse_log(_read_text(path), source=str(path))


def parse_log(text: str, *, source: str | None = None) -> ConversationLog:
    """Parse a whole log: the run metadata and the conversation.

    Args:
        text: The log's text (`\\r\\n` line ends are accepted).
        source: The file name, used in error locations.

    Returns:
        The parsed log.

    Raises:
        LogFormatError: When the text does not follow the format; the message says which line and why.
    """
    lines = _split(text)
    if not lines or lines[0] != _METADATA_HEADER:
        _fail(source, 1, f"a log must start with the line {_METADATA_HEADER!r}", lines[0] if lines else "")
    values: dict[str, str] = {}
    index = 1
    while index < len(lines) and lines[index] != "":
        match = _ITEM.fullmatch(lines[index])
        if match is None:
            _fail(source, index + 1, "expected a metadata line '- key: value'", lines[index])
        key, value = match.group(1), match.group(2)
        if key not in METADATA_KEYS:
            _fail(source, index + 1, f"unknown metadata key {key!r}; expected one of {METADATA_KEYS}")
        if key in values:
            _fail(source, index + 1, f"metadata key {key!r} appears twice")
        values[key] = value
        index += 1
    missing = [key for key in METADATA_KEYS if key not in values]
    if missing:
        _fail(source, index + 1, f"run metadata is missing {', '.join(missing)}")
    if not values["max_turns"].isdigit():
        line = 2 + list(values).index("max_turns")
        _fail(source, line, f"max_turns must be a whole number, got {values['max_turns']!r}")
    try:
        fields: dict[str, object] = {**values, "max_turns": int(values["max_turns"])}
        metadata = RunMetadata.model_validate(fields)
    except ValueError as exc:
        _fail(source, 2, f"invalid run metadata: {exc}")
    start = _expect_conversation_header(lines, index, source)
    return ConversationLog(metadata=metadata, turns=_parse_turns(lines, start, source))


def parse_conversation(text: str, *, source: str | None = None) -> tuple[Turn, ...]:
    """Parse only the `Conversation:` section of a log; the run metadata is skipped unread.

    Args:
        text: The log's text.
        source: The file name, used in error locations.

    Returns:
        The turns, in order.

    Raises:
        LogFormatError: When the `Conversation:` header is missing or a turn is malformed.
    """
    lines = _split(text)
    return _parse_turns(lines, _conversation_start(lines, source), source)


def _conversation_start(lines: list[str], source: str | None) -> int:
    try:
        header = lines.index(_CONVERSATION_HEADER)
    except ValueError:
        _fail(source, len(lines) or 1, f"the header line {_CONVERSATION_HEADER!r} is missing")
    if header + 1 < len(lines) and lines[header + 1] != "":
        _fail(source, header + 2, "expected an empty line", lines[header + 1])
    return header + 2


def parse_conversation_texts(text: str, *, source: str | None = None) -> list[tuple[str, str]]:
    """Like `parse_conversation`, but return only `(role, text)` pairs: the evaluator's fast path.

    Raises:
        LogFormatError: As `parse_conversation`.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    header = _CONVERSATION_LINE.search(text)
    pairs: list[tuple[str, str]] = []
    after = text[header.end() :] if header is not None else None
    if after is not None and (after.startswith("\n\n") or not after.strip("\n")):
        # One regex match per turn over the whole section; anything unusual takes the line-by-line path,
        # which gives the same result or the line-numbered error.
        section = after[2:].rstrip("\n")
        section = section + "\n" if section else section
        at, end = 0, len(section)
        while at < end:
            match = _TURN_BLOCK.match(section, at)
            if match is None:
                break
            try:
                datetime.fromisoformat(match.group(2))
            except ValueError:
                break
            pairs.append((match.group(1), match.group(3)[2:-1].replace("\n  ", "\n")))
            at = match.end()
        else:
            return pairs
    lines = _split(text)
    return [(role, body) for role, _, body in _raw_turns(lines, _conversation_start(lines, source), source)]


def _read_text(path: str | os.PathLike[str]) -> str:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise LogFormatError(
            f"the log is not valid UTF-8 ({exc.reason} at byte {exc.start}); logs are written in UTF-8",
            location=Location(file=str(path)),
        ) from exc


def _split(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and lines[-1] == "":  # the final newline, and blank lines an editor left at the end
        lines.pop()
    return lines


def _expect_conversation_header(lines: list[str], blank: int, source: str | None) -> int:
    """Check `blank` is an empty line followed by `Conversation:` and an empty line; return the next index."""
    expected = ("", _CONVERSATION_HEADER, "")
    for offset, want in enumerate(expected):
        index = blank + offset
        if index >= len(lines):
            if offset == 2:  # a conversation with no turns may end right after its header
                return index
            _fail(source, index + 1, f"expected {want!r} but the log ends here")
        if lines[index] != want:
            what = "an empty line" if want == "" else repr(want)
            _fail(source, index + 1, f"expected {what}", lines[index])
    return blank + len(expected)


def _parse_turns(lines: list[str], start: int, source: str | None) -> tuple[Turn, ...]:
    # Everything was validated while parsing; skipping pydantic's validation keeps reading logs fast.
    return tuple(
        Turn.model_construct(role=role, timestamp=stamp, text=text)
        for role, stamp, text in _raw_turns(lines, start, source)
    )


def _raw_turns(lines: list[str], start: int, source: str | None) -> list[tuple[str, datetime, str]]:
    turns: list[tuple[str, datetime, str]] = []
    index = start
    count = len(lines)
    while index < count:
        header = lines[index]
        match = _TURN.fullmatch(header)
        if match is None:
            _fail(source, index + 1, "expected a turn header ' - role [YYYY-MM-DD HH:MM:SS]:'", header)
        try:
            stamp = datetime.fromisoformat(match.group(2))
        except ValueError as exc:
            _fail(source, index + 1, f"invalid timestamp {match.group(2)!r}: {exc}")
        index += 1
        first = index
        while index < count and lines[index].startswith("  "):
            index += 1
        if index == first:
            where = lines[index] if index < count else ""
            _fail(source, index + 1, "a turn's text must follow its header, each line indented by two spaces", where)
        text = lines[first][2:] if index == first + 1 else "\n".join(line[2:] for line in lines[first:index])
        turns.append((match.group(1), stamp, text))
    return turns


def _fail(source: str | None, line: int, message: str, found: str | None = None) -> NoReturn:
    detail = f"{message} (found {found!r})" if found is not None else message
    raise LogFormatError(
        f"malformed conversation log: {detail}",
        location=Location(file=source, row=line),
        hint="See csv_specs/evaluation.md for the conversation log format.",
    )
