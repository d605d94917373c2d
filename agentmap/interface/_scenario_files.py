"""Reading a scenarios file into numbered rows of text cells: CSV, xlsx (first sheet) or JSONL.

Every format becomes the same thing, `[(row or line number, [cell, ...]), ...]` with the header first, so the
scenario rules (`agentmap.interface.scenarios`) are written once. A JSONL line is one row: an object whose keys
are the columns; its header is every key in order of first appearance.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, ClassVar

from agentmap.errors import AgentMapError, ErrorCode, Location

__all__ = ["SCENARIO_SUFFIXES", "ScenarioError", "read_numbered"]

SCENARIO_SUFFIXES = (".csv", ".xlsx", ".jsonl")
"""The scenario file formats, by extension."""

_LISTS = ("must_include", "must_not_include", "expected_trajectory")


class ScenarioError(AgentMapError, ValueError):
    """The scenarios file is missing or has a mistake; the location names the file, row and column."""

    default_code = ErrorCode.BAD_SCENARIOS
    exit_code: ClassVar[int] = 2


Numbered = list[tuple[int, list[str]]]


def read_numbered(file: Path, fold: dict[str, str]) -> Numbered:
    """The rows of `file` with their numbers (CSV record, sheet row, JSONL line), the header first.

    Args:
        file: The scenarios file.
        fold: Header text -> canonical column (only used to let JSONL lists fill `|`-separated columns).

    Raises:
        ScenarioError: The file is missing, has another extension, is not readable as its format, or a JSONL
            line is not an object of text, numbers, yes/no and (for list columns) lists of text.
    """
    suffix = file.suffix.lower()
    if not file.is_file():
        raise ScenarioError(
            f"scenarios file not found: {file}",
            location=Location(file=str(file)),
            hint="Pass the path of a CSV with columns scenario, turn, user_message.",
        )
    if suffix == ".xlsx":
        return _xlsx(file)
    if suffix == ".jsonl":
        return _jsonl(file, fold)
    rows: Numbered = []
    try:
        with file.open(encoding="utf-8-sig", newline="") as handle:
            rows.extend(enumerate(csv.reader(handle, strict=True), start=1))
            return rows
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"the scenarios file is not UTF-8 text (byte {exc.start})",
            location=Location(file=str(file)),
            hint="save it as 'CSV UTF-8' and run again",
        ) from None
    except csv.Error as exc:  # a quote left open to the end of the file, text after a closing quote
        what = "a quote opened in this row is never closed" if "end of data" in str(exc) else f"not valid CSV: {exc}"
        raise ScenarioError(
            what,
            location=Location(file=str(file), row=len(rows) + 1),
            hint='close every quote you open; a quote inside a quoted cell is doubled: "say ""hi"""',
        ) from None


def _xlsx(file: Path) -> Numbered:
    try:
        import openpyxl
    except ImportError:
        raise ScenarioError(
            f"reading {file.name} needs the excel extra",
            code=ErrorCode.MISSING_EXTRA,
            location=Location(file=str(file)),
            hint='pip install "agentmap[excel]", or save the sheet as CSV',
        ) from None
    try:
        book = openpyxl.load_workbook(file, read_only=True, data_only=True)
    except Exception as exc:
        raise ScenarioError(
            f"cannot read the scenarios file as a spreadsheet: {exc}",
            location=Location(file=str(file)),
            hint="save it from a spreadsheet program as .xlsx, or as CSV",
        ) from None
    try:
        rows = book.worksheets[0].iter_rows(values_only=True)
        return [(number, [_text(value) for value in row]) for number, row in enumerate(rows, start=1)]
    finally:
        book.close()


def _jsonl(file: Path, fold: dict[str, str]) -> Numbered:
    records: list[tuple[int, dict[str, str]]] = []
    try:
        lines = file.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"the scenarios file is not UTF-8 text (byte {exc.start})", location=Location(file=str(file))
        ) from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScenarioError(
                f"line {number} is not valid JSON: {exc.msg} (column {exc.colno})",
                location=Location(file=str(file), row=number),
                hint='Write one JSON object per line, e.g. {"scenario": "greeting", "user_message": "Hello"}.',
            ) from None
        if not isinstance(value, dict):
            raise ScenarioError(
                f"line {number} must be a JSON object, not {type(value).__name__}",
                location=Location(file=str(file), row=number),
                hint='e.g. {"scenario": "greeting", "user_message": "Hello"}',
            )
        records.append((number, {str(key): _cell(file, number, str(key), cell, fold) for key, cell in value.items()}))
    header = list(dict.fromkeys(key for _, record in records for key in record))
    first = records[0][0] if records else 1
    return [(first, header), *((number, [record.get(key, "") for key in header]) for number, record in records)]


def _cell(file: Path, line: int, key: str, value: Any, fold: dict[str, str]) -> str:
    column = fold.get("".join(key.split()).replace("_", "").replace("-", "").lower(), "")
    if isinstance(value, list) and column in _LISTS and all(isinstance(v, str) for v in value):
        return "|".join(value)
    if isinstance(value, list | dict):
        allowed = f"; a list of texts only in {', '.join(_LISTS)}" if isinstance(value, list) else ""
        raise ScenarioError(
            f"line {line}, key {key!r}: a {type(value).__name__} is not a cell{allowed}",
            location=Location(file=str(file), row=line, column=key),
            hint="Give text, a number, true/false or null.",
        )
    return _text(value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
