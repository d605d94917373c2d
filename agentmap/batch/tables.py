"""Input and output tables of a batch: CSV, JSON Lines, Parquet and Excel, read as streams (`writers` writes them).

Readers yield one `dict` per data row (column -> value) without holding the table. Parquet needs the `parquet`
extra (pyarrow), Excel the `excel` extra (openpyxl); both are imported only when such a file is used.
"""

from __future__ import annotations

import contextlib
import csv
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agentmap.errors import ConfigError, ErrorCode, WorkflowFileError
from agentmap.spec.quoting import QUOTE_FIX, Record, Records, hidden_rows, open_quote, spanned_column

__all__ = ["FORMATS", "ROW_GROUP", "Warn", "missing_extra", "read_rows", "table_format"]

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".xlsx": "excel"}
"""File extension -> table format."""

ROW_GROUP = 1000  # rows per Parquet row group read or written


def table_format(path: Path, what: str) -> str:
    """The format of a table file from its extension.

    Raises:
        ConfigError: The extension is not one of `FORMATS`.
    """
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ConfigError(
            f"{what} {path} has an unsupported extension {path.suffix or '(none)'!r}",
            code=ErrorCode.UNSUPPORTED_FORMAT,
            hint="use .csv, .jsonl, .parquet or .xlsx",
        )
    return kind


def missing_extra(path: Path, extra: str, module: str) -> ConfigError:
    """The error of a table whose format needs a package that is not installed (`extra` installs it)."""
    return ConfigError(
        f"{path.name} needs the {module} package, which is not installed",
        code=ErrorCode.MISSING_EXTRA,
        hint=f'pip install "agentmap[{extra}]", or use a .csv or .jsonl file',
    )


Warn = Callable[[str], None]
"""Told of a row that the reader reads as it stands instead of refusing it (`--lenient`)."""


def read_rows(
    path: Path, *, sheet: str | None = None, warn: Warn | None = None, note: Warn | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the data rows of an input table, one dict per row, in order.

    Args:
        path: The table.
        sheet: The Excel sheet (default: the first).
        warn: Lenient reading: a row that does not fit the header (too few or too many cells, a quote left
            open) is passed to `warn` as a message and read as it stands. Without it, such a row is an error.
        note: Told of a row read as it stands that may not be what the table meant, however it is read: a quoted
            CSV cell whose lines each read as a row of the header's width (`rows-in-quoted-cell`).

    Raises:
        WorkflowFileError: The file does not exist (exit code 3).
        ConfigError: The file is not a readable table of its format (the message names file and line).
    """
    kind = table_format(path, "input table")
    if path.is_fifo() and kind in ("parquet", "excel"):
        raise ConfigError(
            f"input table {path} is a pipe, and a {path.suffix} table is read from a file",
            code=ErrorCode.UNSUPPORTED_FORMAT,
            hint="write the table to a file first, or send .csv or .jsonl rows through the pipe",
        )
    if not path.is_file() and not path.is_fifo():  # a named pipe of CSV or JSON Lines: the batch reads it once
        raise WorkflowFileError(
            f"input table {path} {'is a directory' if path.is_dir() else 'does not exist'}",
            code=ErrorCode.INPUT_NOT_FOUND,
            hint="name a .csv, .jsonl, .parquet or .xlsx file of rows",
        )
    if kind == "csv":
        return _read_csv(path, warn, note)
    if kind == "jsonl":
        return _read_jsonl(path)
    if kind == "parquet":
        return _read_parquet(path)
    return _read_excel(path, sheet, warn)


_LENIENT = "or pass --lenient to run such rows as they stand"


def _problem(warn: Warn | None, message: str, hint: str) -> None:
    """Refuse a row that does not fit its table, or only warn of it when reading leniently."""
    if warn is None:
        raise ConfigError(message, code=ErrorCode.BAD_INPUT, hint=hint)
    warn(f"{message} (--lenient: the row runs as it stands)")


def _read_csv(path: Path, warn: Warn | None, note: Warn | None) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        # Strict: a quote left open to the end of the file, or text after a closing quote, is an error (also when
        # lenient: no reading of such a file as rows is better than another).
        records = Records(handle, strict=True)
        rows = iter(records)
        try:
            header = next(rows, None)
            if header is None:
                return
            names = [h.strip() for h in header.cells]
            _check_header(path, names)
            for record in rows:
                if not any(c.strip() for c in record.cells):
                    continue
                _check_cells(path, record, len(names), warn, note)
                cells = record.cells
                yield {name: cells[i] if i < len(cells) else "" for i, name in enumerate(names)}
        except csv.Error as exc:
            unfinished = records.unfinished()
            opened = open_quote(unfinished) if "end of data" in str(exc) else None
            what = f"the quote opened in column {opened[1] + 1} on line {opened[0]} is never closed" if opened else exc
            raise ConfigError(
                f"{path}:{unfinished.line}: not valid CSV in the row starting on this line: {what}",
                code=ErrorCode.BAD_INPUT,
                hint=QUOTE_FIX,
            ) from None
        except UnicodeDecodeError:
            raise ConfigError(
                f"{path} is not UTF-8 text", code=ErrorCode.BAD_INPUT, hint="save it as UTF-8 CSV"
            ) from None


def _check_cells(path: Path, record: Record, width: int, warn: Warn | None, note: Warn | None) -> None:
    """A row of the header's width, with no quote that ran on over whole rows (`agentmap.spec.quoting`).

    Lines of a quoted cell that read as rows of the header's width are taken for rows a quote left open swallowed
    when the cell is the row's last (the swallowed text then ends the row, so the row still has the header's width)
    or when the row does not have the header's width anyway: refused (or warned of, leniently). Otherwise, when
    every line after the row's first reads so, the row is read as it stands and `note` is told.
    """
    cells, line = record.cells, record.line
    rows = hidden_rows(record, width)
    column = spanned_column(record)
    if rows and column is not None and (column == len(cells) - 1 or len(cells) != width):
        _problem(
            warn,
            f"{path}:{line}: the quote opened in column {column + 1} of this row is still open on line {rows[0]}, "
            "which reads as a row of its own: the lines in between would be one cell",
            f"close the quote on line {line}; a cell meant to span lines must not hold lines that look like rows, "
            + _LENIENT,
        )
    elif len(cells) > width:
        _problem(
            warn,
            f"{path}:{line}: the row has {len(cells)} cells but the header names {width}",
            f"quote cells that contain commas, or add a header for the extra column, {_LENIENT} (extra cells dropped)",
        )
    elif len(cells) < width:
        _problem(
            warn,
            f"{path}:{line}: the row has {len(cells)} cell{'s' if len(cells) != 1 else ''} but the header names "
            f"{width}",
            f"add the missing cells (an empty cell is nothing between two commas), {_LENIENT} (missing cells empty)",
        )
    elif rows and len(rows) == len(record.lines) - 1 and note is not None:
        lines = f"line {rows[0]}" if len(rows) == 1 else f"lines {rows[0]} to {rows[-1]}"
        note(
            f"{path}:{line}: the quoted cell in column {(column or 0) + 1} of this row runs on over {lines}, each of "
            f"which reads as a row of {width} cells: they are read as part of that cell, not as rows "
            f"(rows-in-quoted-cell); if they are rows, close the quote where the cell ends on line {line}"
        )


def _check_header(path: Path, names: Sequence[str]) -> None:
    seen: set[str] = set()
    for position, name in enumerate(names, start=1):
        if not name:
            raise ConfigError(
                f"{path}:1: column {position} has no name", code=ErrorCode.BAD_INPUT, hint="give every column a header"
            )
        if name in seen:
            raise ConfigError(f"{path}:1: two columns are named {name!r}", code=ErrorCode.BAD_INPUT, hint="rename one")
        seen.add(name)


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"{path}:{line_number}: not valid JSON: {exc.msg} (column {exc.colno})",
                    code=ErrorCode.BAD_INPUT,
                    hint='write one JSON object per line, e.g. {"name": "Ada"}',
                ) from None
            if not isinstance(value, dict):
                raise ConfigError(
                    f"{path}:{line_number}: each line must be a JSON object, not {type(value).__name__}",
                    code=ErrorCode.BAD_INPUT,
                    hint='e.g. {"name": "Ada"}',
                )
            yield value


def _read_parquet(path: Path) -> Iterator[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise missing_extra(path, "parquet", "pyarrow") from None
    try:
        source = pq.ParquetFile(path)
    except Exception as exc:
        raise ConfigError(f"cannot read {path} as Parquet: {exc}", code=ErrorCode.BAD_INPUT) from None
    with contextlib.closing(source):
        for batch in source.iter_batches(batch_size=ROW_GROUP):
            yield from batch.to_pylist()


def _read_excel(path: Path, sheet: str | None, warn: Warn | None) -> Iterator[dict[str, Any]]:
    try:
        import openpyxl
        from openpyxl.utils import get_column_letter
    except ImportError:
        raise missing_extra(path, "excel", "openpyxl") from None
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:
        raise ConfigError(f"cannot read {path} as a spreadsheet: {exc}", code=ErrorCode.BAD_INPUT) from None
    try:
        if sheet is not None and sheet not in book.sheetnames:
            raise ConfigError(
                f"{path} has no sheet {sheet!r} (sheets: {', '.join(book.sheetnames)})",
                code=ErrorCode.BAD_INPUT,
                hint="pass --sheet with one of those names",
            )
        table = book[sheet] if sheet is not None else book.worksheets[0]
        rows = table.iter_rows(values_only=True)
        header = next(rows, None)
        if header is None:
            return
        names = ["" if h is None else str(h).strip() for h in header]
        while names and not names[-1]:
            names.pop()
        _check_header(path, names)
        for number, values in enumerate(rows, start=(table.min_row or 1) + 1):
            if all(_empty(v) for v in values):
                continue
            extra = next((i for i in range(len(names), len(values)) if not _empty(values[i])), None)
            if extra is not None:
                letter = get_column_letter(extra + 1)
                _problem(
                    warn,
                    f"{path}, row {number}: cell {letter}{number} holds a value but column {letter} has no header",
                    f"add a header for column {letter}, or move the value, {_LENIENT} (such cells dropped)",
                )
            yield {name: values[i] if i < len(values) else None for i, name in enumerate(names)}
    finally:
        book.close()


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())
