"""A workbook (`.xlsx`, the `excel` extra's openpyxl) read as tables, one a sheet, by the cells it holds and within
bounds (`XLSX_*`): a small file may unpack to gigabytes, or declare a sheet of a million rows.

`spec.readers` reads a workflow file of this kind through `read_workbook`; the studio reads a sheet's extent and
checks a sheet not saved yet with the rest.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agentmap.errors import ErrorCode, WorkflowFileError
from agentmap.spec.models import sheet_location
from agentmap.spec.readers import Table, column_letter, content_rows, file_bytes, split_header

__all__ = [
    "XLSX_SPAN",
    "XLSX_UNPACKED",
    "XLSX_VALUES",
    "check_unpacked",
    "read_workbook",
    "sheet_extent",
    "sheet_table",
]


XLSX_UNPACKED = 10_000_000
"""Bytes a workbook's parts may unpack to, in all (a 1 MB `.xlsx` can unpack to gigabytes)."""
XLSX_VALUES = 100_000
"""Cells holding a value a workbook may have, in all sheets."""
XLSX_SPAN = 5_000_000
"""Cells the rows of a workbook may span, in all: each row is read as wide as its last cell (a value or not), and a
row of no cells between two rows counts one."""


def read_workbook(path: Path) -> list[Table]:
    """Each sheet's rows, bounded by the cells the sheet holds, not by the size it declares (`XLSX_*`)."""
    tables = []
    for title, numbered in _sheets(path, data_only=True):
        if any(True for _ in content_rows(numbered)):
            tables.append(sheet_table(path, numbered, title))
    return tables or [split_header(path, [])]  # no sheet with rows: empty-file


def sheet_extent(path: Path, sheet: str) -> tuple[int, int]:
    """The rows and columns of sheet `sheet` of workbook `path` down to its last cell holding a value or a formula
    (the size a sheet declares, or a cell emptied far away, is no grid to show), read within the same bounds, the
    grid they make spanning at most `XLSX_SPAN` cells.

    Raises:
        WorkflowFileError: The workbook cannot be read, or is beyond a bound (`file-too-big`).
    """
    rows = cols = 0
    for title, numbered in _sheets(path, data_only=False):
        if title == sheet and numbered:
            rows, cols = numbered[-1][0], max(len(cells) for _, cells in numbered)
    if rows * cols > XLSX_SPAN:  # as a grid, every row as wide as the widest
        corner = f"{column_letter(cols - 1)}{rows}"
        raise WorkflowFileError(
            f"{sheet_location(str(path), sheet, rows, corner)}: the sheet is refused: its cells reach row {rows:,} and "
            f"column {column_letter(cols - 1)}, a grid of {rows * cols:,} cells, more than the {XLSX_SPAN:,} a sheet "
            "may span",
            code=ErrorCode.FILE_TOO_BIG,
            hint="delete the cells far below or beside the table, or save the workflow as CSV (UTF-8)",
        )
    return rows, cols


def _sheets(path: Path, *, data_only: bool) -> list[tuple[str, list[tuple[int, list[str]]]]]:
    """Each sheet's title and rows holding a value (`data_only`: a formula's computed value, else the formula), all
    as wide as the widest (the padding counts in the span)."""
    try:
        import openpyxl
    except ImportError:
        raise WorkflowFileError(
            f"reading {path.name} needs the excel extra",
            code=ErrorCode.MISSING_EXTRA,
            hint='pip install "agentmap[excel]", or save the sheet as CSV',
        ) from None
    data = file_bytes(path)
    check_unpacked(path, data)
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=data_only)
    except Exception as exc:
        raise WorkflowFileError(f"cannot read {path} as a spreadsheet: {exc}", code=ErrorCode.UNREADABLE) from None
    counts = [0, 0]  # values, span
    sheets = []
    try:
        for sheet in book.worksheets:
            numbered = list(_sheet_rows(path, sheet, counts))
            width = max((len(cells) for _, cells in numbered), default=0)
            counts[1] += sum(width - len(cells) for _, cells in numbered)
            if counts[1] > XLSX_SPAN:
                raise _too_many(path, sheet.title, numbered[-1][0], f"its rows span more than {XLSX_SPAN:,} cells", 0)
            sheets.append((sheet.title, [(number, cells + [""] * (width - len(cells))) for number, cells in numbered]))
    finally:
        book.close()
    return sheets


def check_unpacked(path: Path, data: bytes | None = None) -> None:
    """Refuse a workbook whose parts unpack to more than `XLSX_UNPACKED` bytes, before any is read (`data`: the
    file's bytes, when already read).

    Raises:
        WorkflowFileError: `file-too-big`, or `unreadable` for a file that is not a zip archive.
    """
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data) if data is not None else path) as archive:
            parts = archive.infolist()
    except (OSError, zipfile.BadZipFile) as exc:
        raise WorkflowFileError(f"cannot read {path} as a spreadsheet: {exc}", code=ErrorCode.UNREADABLE) from None
    size = sum(part.file_size for part in parts)  # what each part says it unpacks to: reading stops there
    if size > XLSX_UNPACKED:
        biggest = max(parts, key=lambda part: part.file_size)
        raise WorkflowFileError(
            f"{path} unpacks to {size:,} bytes ({biggest.filename}: {biggest.file_size:,}), more than the "
            f"{XLSX_UNPACKED:,} a workbook may",
            code=ErrorCode.FILE_TOO_BIG,
            hint="save the workflow as CSV (UTF-8), or keep long texts in files of their own (Prompt file:prompt.md)",
        )


def _sheet_rows(path: Path, sheet: Any, counts: list[int]) -> Iterator[tuple[int, list[str]]]:
    """The rows of `sheet` that hold a value, as text to their last cell holding one; `counts` the values and the
    span of the workbook so far (`XLSX_VALUES`, `XLSX_SPAN`)."""
    if hasattr(sheet, "reset_dimensions"):  # the size a sheet declares may be anything: read its cells
        sheet.reset_dimensions()
    number = 0
    for row in sheet.iter_rows(values_only=True):
        number += 1
        counts[1] += 1 + len(row)
        if not row:  # a row the sheet does not have, between two it has (up to a million of them): nothing to do
            continue
        if counts[1] > XLSX_SPAN:
            raise _too_many(path, sheet.title, number, f"its rows span more than {XLSX_SPAN:,} cells", len(row))
        values = sum(value is not None for value in row)
        if not values:
            continue
        counts[0] += values
        if counts[0] > XLSX_VALUES:
            raise _too_many(path, sheet.title, number, f"it holds more than {XLSX_VALUES:,} cells with a value", 0)
        cells = ["" if value is None else str(value) for value in row]
        while cells and not cells[-1]:
            cells.pop()
        yield number, cells


def _too_many(path: Path, sheet: str, row: int, what: str, width: int) -> WorkflowFileError:
    cell = f"{column_letter(width - 1)}{row}" if width else f"{row}:{row}"
    return WorkflowFileError(
        f"{sheet_location(str(path), sheet, row, cell if width else None)}: the workbook is refused here: {what}",
        code=ErrorCode.FILE_TOO_BIG,
        hint="delete the rows and columns below and beside the table (a cell far away, even emptied, makes every row "
        "that wide), or save the workflow as CSV (UTF-8)",
    )


def sheet_table(path: Path, numbered: Iterable[tuple[int, list[str]]], sheet: str) -> Table:
    """The table of sheet `sheet` of workbook `path` from its rows `(row number, cells)` (the studio checks unsaved
    sheets this way).

    Raises:
        WorkflowFileError: The sheet has no header row.
    """
    table = split_header(path, numbered)
    return Table(table.headers, table.rows, table.header_line, sheet=sheet)
