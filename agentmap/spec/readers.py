"""Readers: turn a workflow file into a header row and data rows, each with its line number.

CSV is read with the standard library (UTF-8 with or without BOM, RFC 4180 quoting). `.xlsx` needs
the `excel` extra (openpyxl) and `.yaml`/`.yml` the `yaml` extra; both are imported only when used.
Each sheet of a workbook is a table of its own (`read_tables`). Rows whose first cell starts with `#`,
and blank rows, are skipped.
"""

from __future__ import annotations

import contextvars
import csv
import difflib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentmap._sources import is_stored, read_bytes
from agentmap.errors import ErrorCode, WorkflowFileError
from agentmap.spec.models import Issue
from agentmap.spec.quoting import QUOTE_FIX, Record, Records, hidden_rows, open_quote, spanned_column, split_lines

__all__ = [
    "SUFFIXES",
    "Table",
    "column_letter",
    "content_rows",
    "csv_table",
    "file_bytes",
    "read_table",
    "read_tables",
    "split_header",
    "unsaved_tables",
]

SUFFIXES = (".csv", ".tsv", ".xlsx", ".yaml", ".yml")


@dataclass(frozen=True)
class Table:
    """A file's header row and data rows; each row carries its 1-based line (or row) number."""

    headers: list[str]
    rows: list[tuple[int, list[str]]]
    header_line: int = 1
    notes: tuple[tuple[str, str, str], ...] = ()
    """How the file was read when it was not as expected: `(code, message, fix)` warnings."""
    sheet: str | None = None
    """The workbook sheet the table is (None for a CSV or YAML file); its rows are the sheet's row numbers."""
    issues: tuple[Issue, ...] = ()
    """Findings at a row of the file made while reading it (a quote never closed, rows inside a quoted cell)."""


def read_table(path: Path) -> Table:
    """Read a workflow file (the first sheet holding rows, for a workbook).

    Raises:
        WorkflowFileError: The file is missing, is a directory, is not a supported format, or is not
            readable text.
    """
    return read_tables(path)[0]


_UNSAVED: contextvars.ContextVar[Mapping[Path, Sequence[Table]] | None] = contextvars.ContextVar(
    "agentmap_unsaved", default=None
)


@contextmanager
def unsaved_tables(files: Mapping[Path, Sequence[Table]]) -> Iterator[None]:
    """While inside, `read_tables` returns these tables for these files instead of reading them from disk.

    The studio checks a sheet not yet saved this way: every read of its file, also the reads a `graph` node's
    check makes of the graphs it calls, sees the rows on screen.
    """
    token = _UNSAVED.set({path.resolve(): tables for path, tables in files.items()})
    try:
        yield
    finally:
        _UNSAVED.reset(token)


def read_tables(path: Path) -> list[Table]:
    """Read a workflow file: one table, or one per sheet of a workbook that holds rows (in sheet order).

    Raises:
        WorkflowFileError: The file is missing, is a directory, is not a supported format, or is not
            readable text (or a workbook has no sheet with rows).
    """
    unsaved = _UNSAVED.get()
    if unsaved and path.resolve() in unsaved:
        return list(unsaved[path.resolve()])
    check_file(path)
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return [_read_csv(path, delimiter="\t" if suffix == ".tsv" else ",")]
    if suffix == ".xlsx":
        from agentmap.spec.workbooks import read_workbook  # the `excel` extra's reader, loaded when used

        return read_workbook(path)
    return [_read_yaml(path)]


def column_letter(position: int) -> str:
    """The spreadsheet letter of the 0-based column `position`: 0 -> `A`, 25 -> `Z`, 26 -> `AA`."""
    letters = ""
    number = position + 1
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def check_file(path: Path) -> None:
    """Raise `WorkflowFileError` unless `path` is an existing file of a supported format (or one a stored revision
    holds, `agentmap._sources`)."""
    if is_stored(path) and path.suffix.lower() in SUFFIXES:
        return
    if path.is_dir():
        raise WorkflowFileError(
            f"{path} is a directory, not a workflow file",
            code=ErrorCode.NOT_A_FILE,
            hint=_nearby(path, inside=True) or "name a .csv, .tsv, .xlsx or .yaml workflow file",
        )
    if not path.exists():
        raise WorkflowFileError(f"workflow file {path} does not exist", hint=_nearby(path, inside=False))
    if path.suffix.lower() not in SUFFIXES:
        raise WorkflowFileError(
            f"{path} is not a workflow file: AgentMap reads {', '.join(SUFFIXES)} files",
            code=ErrorCode.UNSUPPORTED_FORMAT,
            hint="save the spreadsheet as CSV (UTF-8) and run it again",
        )


def _nearby(path: Path, *, inside: bool) -> str | None:
    folder = path if inside else path.parent
    try:
        candidates = [p.name for p in folder.iterdir() if p.suffix.lower() in SUFFIXES]
    except OSError:
        return None
    if inside:
        return f"workflow files there: {', '.join(sorted(candidates))}" if candidates else None
    stems = {Path(c).stem: c for c in candidates}  # compare stems: a shared ".csv" is no likeness
    close = difflib.get_close_matches(path.stem, list(stems), n=3, cutoff=0.6)
    if close:
        return f"did you mean {' or '.join(str(folder / stems[c]) for c in close)}?"
    return f"workflow files there: {', '.join(sorted(candidates))}" if candidates else None


def content_rows(numbered: Iterable[tuple[int, list[str]]]) -> Iterator[tuple[int, list[str]]]:
    """The rows that hold something, with their numbers: not blank, not a `#` comment."""
    for line, row in numbered:
        if not row or all(not cell.strip() for cell in row):
            continue
        if row[0].lstrip().startswith("#"):
            continue
        yield line, row


def split_header(path: Path, numbered: Iterable[tuple[int, list[str]]]) -> Table:
    """The table of numbered rows: its first row holding something is the header.

    Raises:
        WorkflowFileError: No row holds anything (`empty-file`).
    """
    rows = content_rows(numbered)
    first = next(rows, None)
    if first is None:
        raise WorkflowFileError(
            f"{path} is empty: it has no header row and no graph rows",
            code=ErrorCode.EMPTY_FILE,
            hint="the first row names the columns, e.g. GraphName,Node,AgentType,Edge",
        )
    return Table(headers=[h.strip() for h in first[1]], rows=list(rows), header_line=first[0])


def _read_csv(path: Path, *, delimiter: str) -> Table:
    data = file_bytes(path)
    if b"\x00" in data[:4096]:
        raise WorkflowFileError(
            f"{path} is a binary file, not CSV text",
            code=ErrorCode.NOT_TEXT,
            hint="save the spreadsheet as 'CSV UTF-8' (an .xlsx file is read as is, with the excel extra)",
        )
    notes: list[tuple[str, str, str]] = []
    text = _decode(path, data, notes)
    return csv_table(path, text, delimiter=delimiter, notes=notes)


def file_bytes(path: Path) -> bytes:
    """The bytes of workflow file `path` (a stored revision's, else the disk's: `agentmap._sources`)."""
    try:
        return read_bytes(path)
    except OSError as exc:
        raise WorkflowFileError(f"cannot read {path}: {exc.strerror}", code=ErrorCode.UNREADABLE) from None


def csv_table(path: Path, text: str, *, delimiter: str = ",", notes: list[tuple[str, str, str]] | None = None) -> Table:
    """The table of CSV `text` read as if it were the file `path` (the studio checks unsaved sheets this way).

    A quote never closed (or not closed within the longest cell `csv` reads) is an error at the line and column it
    opened, the rows before it read; a quoted cell whose lines each read as a row of the header's width, a warning
    (`agentmap.spec.quoting`).

    Raises:
        WorkflowFileError: The text has a line longer than `csv` reads, or no header row.
    """
    notes = [] if notes is None else notes
    if delimiter == ",":
        delimiter = _sniff_delimiter(path, text, notes)
    records = Records(split_lines(text), delimiter)
    numbered: list[tuple[int, list[str]]] = []
    spanning: list[Record] = []
    last: Record | None = None
    at_limit = False  # reading stopped at a cell longer than `csv` reads
    try:
        for last in records:
            numbered.append((last.line, last.cells))
            if len(last.lines) > 1:
                spanning.append(last)
        opened = open_quote(last, delimiter) if last is not None and len(last.lines) > 1 else None
        if opened is not None:  # the rest of the file, read as one cell: not a row
            numbered.pop()
            spanning.pop()
    except csv.Error as exc:  # in practice, a cell longer than `csv` reads (`csv.field_size_limit`)
        last, at_limit = records.unfinished(), True
        opened = open_quote(last, delimiter)
        if opened is None:
            line = last.line + max(len(last.lines) - 1, 0)
            raise WorkflowFileError(
                f"{path}:{line}: {exc}: a cell of this line is longer than the {csv.field_size_limit():,} characters "
                "a cell may hold",
                code=ErrorCode.FILE_TOO_BIG,
                hint="keep a long prompt in a file of its own (Prompt file:prompt.md)",
            ) from None
    if opened is not None and not numbered:
        raise WorkflowFileError(
            f"{path}:{opened[0]}: the quote that opens column {opened[1] + 1} of the header row is never closed",
            code=ErrorCode.UNREADABLE,
            hint=QUOTE_FIX,
        )
    table = split_header(path, numbered)
    found = [_unclosed(path, opened, last, table.headers, at_limit)] if opened is not None and last is not None else []
    for spanned in spanning:
        if spanned.line > table.header_line:
            found += _hidden(path, spanned, table.headers, delimiter)
    return Table(table.headers, table.rows, table.header_line, tuple(notes), issues=tuple(found))


def _unclosed(path: Path, opened: tuple[int, int], record: Record, headers: Sequence[str], at_limit: bool) -> Issue:
    """The error of a quote never closed: `record` is the row it opened, read to the end of the file (or to the
    longest cell `csv` reads, `at_limit`)."""
    line, position = opened
    column = headers[position] if position < len(headers) else None
    named = f"the {column} cell" if column else f"column {position + 1}"
    rest = record.line + len(record.lines) - 1 - line
    after = f"the {rest:,} line{'s' if rest != 1 else ''} after it {'are' if rest != 1 else 'is'} read as that one cell"
    where = (
        f"it is still open after {csv.field_size_limit():,} characters, more than a cell may hold"
        if at_limit
        else f"the file ends inside it, {after}, and the rows among them are lost"
    )
    return Issue(
        severity="error",
        code="unclosed-quote",
        message=f"the quote that opens {named} on line {line} is never closed: {where}",
        fix=f"close the quote on line {line}; {QUOTE_FIX}",
        file=str(path),
        row=line,
        column=column,
    )


def _hidden(path: Path, record: Record, headers: Sequence[str], delimiter: str) -> list[Issue]:
    """The warning of a quoted cell whose later lines each read as a row of the header's width, if it is one."""
    rows = hidden_rows(record, len(headers), delimiter)
    if not rows or len(rows) < len(record.lines) - 1:
        return []
    position = spanned_column(record)
    column = headers[position] if position is not None and position < len(headers) else None
    named = f"the {column} cell" if column else "a quoted cell"
    lines = f"line {rows[0]}" if len(rows) == 1 else f"lines {rows[0]} to {rows[-1]}"
    return [
        Issue(
            severity="warning",
            code="rows-in-quoted-cell",
            message=f"{named} of the row on line {record.line} runs on over {lines}, each of which reads as a row "
            f"of {len(headers)} cells: {'it is' if len(rows) == 1 else 'they are'} read as part of that cell, not as "
            f"row{'s' if len(rows) > 1 else ''}",
            fix=f"if {'it is a row' if len(rows) == 1 else 'they are rows'}, close the quote where the cell ends on "
            f"line {record.line}; {QUOTE_FIX}",
            file=str(path),
            row=record.line,
            column=column,
        )
    ]


def _decode(path: Path, data: bytes, notes: list[tuple[str, str, str]]) -> str:
    """UTF-8 (with or without BOM); else Windows-1252, as Excel saves "CSV" on Western Windows, with a warning."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        error = exc
    try:
        text = data.decode("cp1252")  # strict: the bytes cp1252 leaves undefined still refuse the file
    except UnicodeDecodeError:
        text = ""
    if text:
        notes.append(
            (
                "encoding",
                f"{path.name} is not UTF-8; it was read as Windows-1252 (cp1252), the encoding Excel uses for 'CSV'",
                "check the accented letters, then save the spreadsheet as 'CSV UTF-8' to silence this warning",
            )
        )
        return text
    raise WorkflowFileError(
        f"{path} is not UTF-8 text (byte {error.start}): it is not a CSV file, or was saved in another encoding",
        code=ErrorCode.NOT_TEXT,
        hint="save the spreadsheet as 'CSV UTF-8' and run it again",
    ) from None


def _sniff_delimiter(path: Path, text: str, notes: list[tuple[str, str, str]]) -> str:
    """`,`, or the `;` / tab the header row is separated by (Excel's CSV in many locales), with a warning."""
    header = next((line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    if "," in header or not any(c in header for c in ";\t"):
        return ","
    try:
        delimiter = csv.Sniffer().sniff(header, delimiters=";\t").delimiter
    except csv.Error:
        return ","
    name = "tabs" if delimiter == "\t" else f"'{delimiter}'"
    notes.append(
        (
            "csv-dialect",
            f"{path.name} separates its columns with {name}, not commas; it was read that way",
            "save it as 'CSV UTF-8 (Comma delimited)' (or name it .tsv for tabs) to silence this warning",
        )
    )
    return delimiter


def _read_yaml(path: Path) -> Table:
    """YAML: a list of rows (mappings with column names as keys), or `{graphs: {Name: [rows]}}`."""
    try:
        import yaml

        from agentmap._yaml import load
    except ImportError:
        raise WorkflowFileError(
            f"reading {path.name} needs the yaml extra",
            code=ErrorCode.MISSING_EXTRA,
            hint='pip install "agentmap[yaml]"',
        ) from None
    try:
        data: Any = load(file_bytes(path).decode("utf-8-sig"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise WorkflowFileError(f"{path} is not valid YAML: {exc}", code=ErrorCode.NOT_TEXT) from None
    records: list[dict[str, Any]] = []
    if isinstance(data, dict) and isinstance(data.get("graphs"), dict):
        for graph, nodes in data["graphs"].items():
            for node in nodes or []:
                records.append({"GraphName": graph, **(node if isinstance(node, dict) else {})})
    elif isinstance(data, list):
        records = [r for r in data if isinstance(r, dict)]
    else:
        raise WorkflowFileError(f"{path} must hold a list of rows or a 'graphs:' mapping", code=ErrorCode.EMPTY_FILE)
    headers: list[str] = []
    for record in records:
        headers += [str(k) for k in record if str(k) not in headers]
    rows = [(i, [_yaml_cell(r.get(h)) for h in headers]) for i, r in enumerate(records, start=1)]
    return split_header(path, [(0, headers), *rows])


def _yaml_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, list):
        return "|".join(map(str, value))
    return str(value)
