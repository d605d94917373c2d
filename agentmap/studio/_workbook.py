"""A sheet of an `.xlsx` workbook as the studio edits it, saved back into the same workbook through openpyxl.

The studio opens one sheet at a time, named `flows.xlsx[Sheet]`. Saving loads the workbook as it is on disk,
writes the sheet's cell values, and leaves everything else alone: the other sheets, fonts, fills, borders,
number formats and column widths. A cell whose text was not changed keeps its value as it was (a number stays
a number); a moved row takes its cells' formatting with it. The workbook is written atomically.

Text is saved as text: `=SUM(A1)` or `#N/A` typed in the grid is a text cell (with Excel's quote prefix), never
a formula or an error value, and reads back as the same text. A formula cell shows the value Excel last computed
for it, which is what `agentmap run` reads; the page does not edit it. A workbook holding formulas is not saved:
openpyxl writes formulas without their computed values, so the workflow would read those cells empty until Excel
opened and saved the file again.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from copy import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmap.errors import ErrorCode, WorkflowFileError
from agentmap.spec.formulas import as_text
from agentmap.spec.readers import Table, read_tables
from agentmap.spec.workbooks import check_unpacked, sheet_extent, sheet_table
from agentmap.studio._document import Document, Record, version_of

__all__ = ["Editable", "FormulaCellsError", "SheetDocument", "sheet_names", "split_sheet"]

_NAMED = re.compile(r"^(?P<file>.+\.xlsx)\[(?P<sheet>[^\]]+)\]$", re.IGNORECASE)

Rows = Sequence[tuple[int | None, Sequence[str]]]


def split_sheet(name: str) -> tuple[str, str | None]:
    """`flows.xlsx[Sheet]` -> `("flows.xlsx", "Sheet")`; any other name -> `(name, None)`."""
    found = _NAMED.match(name)
    return (found["file"], found["sheet"]) if found else (name, None)


class FormulaCellsError(WorkflowFileError):
    """The workbook holds formulas, whose computed values a save through openpyxl would drop."""

    default_code = ErrorCode.FORMULA_CELLS


def _workbook(data: bytes, path: Path, *, read_only: bool = False, data_only: bool = False) -> Any:
    try:
        import openpyxl
    except ImportError:
        raise WorkflowFileError(
            f"editing {path.name} needs the excel extra",
            code=ErrorCode.MISSING_EXTRA,
            hint='pip install "agentmap[excel]", or save the sheet as CSV',
        ) from None
    check_unpacked(path, data)
    try:
        return openpyxl.load_workbook(io.BytesIO(data), read_only=read_only, data_only=data_only)
    except Exception as exc:
        raise WorkflowFileError(f"cannot read {path} as a spreadsheet: {exc}", code=ErrorCode.UNREADABLE) from None


def sheet_names(path: Path) -> list[str]:
    """The sheets of the workbook `path`, in order.

    Raises:
        WorkflowFileError: The file is not a workbook (or openpyxl is missing).
    """
    book = _workbook(path.read_bytes(), path, read_only=True)
    try:
        return list(book.sheetnames)
    finally:
        book.close()


def _text(value: Any) -> str:
    return "" if value is None else str(value)


@dataclass
class SheetDocument:
    """One sheet of a workbook: its rows (every row down to the last used one) and the workbook's version.

    `records` hold the text each cell shows (a formula's computed value); `formulas` the formula of each formula
    cell, by `(record index, column)`.
    """

    path: Path
    sheet: str
    records: list[Record]
    values: list[list[Any]]
    version: str
    formulas: dict[tuple[int, int], str]
    _saved: tuple[tuple[int, int], list[Table]] | None = field(default=None, repr=False)

    @classmethod
    def read(cls, path: Path, sheet: str) -> SheetDocument:
        """Read sheet `sheet` of the workbook `path`.

        Raises:
            WorkflowFileError: The file cannot be read as a workbook, or has no such sheet.
        """
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise WorkflowFileError(f"cannot read {path}: {exc.strerror}", code=ErrorCode.UNREADABLE) from None
        book = _workbook(data, path)
        if sheet not in book.sheetnames:
            raise WorkflowFileError(
                f"{path.name} has no sheet {sheet!r}",
                code=ErrorCode.FILE_NOT_FOUND,
                hint="its sheets: " + ", ".join(book.sheetnames),
            )
        # The grid ends at the last cell holding something (a cell emptied at XFD1048576 is no grid of 17 billion),
        # found within the bounds a workbook is read in.
        last_row, last_column = sheet_extent(path, sheet)
        bounds = {"max_row": last_row, "max_col": last_column}
        grid = [list(row) for row in book[sheet].iter_rows(**bounds)] if last_row else []
        values = [[cell.value for cell in row] for row in grid]
        formulas = {  # by the cell's type: a text cell `=SUM(A1)` is text
            (r, c): str(getattr(cell.value, "text", cell.value))
            for r, row in enumerate(grid)
            for c, cell in enumerate(row)
            if cell.data_type == "f"
        }
        shown = values
        if formulas:  # the values Excel computed for them, as `agentmap run` reads the sheet
            computed = _workbook(data, path, data_only=True)[sheet]
            shown = [list(row) for row in computed.iter_rows(**bounds, values_only=True)]
        width = max((len(row) for row in values), default=0)
        records = []
        for row in shown:
            cells = [_text(v) for v in row] + [""] * (width - len(row))  # every row as wide as the sheet
            records.append(Record(cells=cells, original=list(cells)))
        return cls(path=path, sheet=sheet, records=records, values=values, version=version_of(data), formulas=formulas)

    def lines(self, rows: Rows) -> list[int]:
        """Each row's row number in the sheet once saved."""
        return list(range(1, len(rows) + 1))

    def table(self, rows: Rows) -> Table:
        """The sheet's table as the CLI reads it from the saved workbook.

        Raises:
            WorkflowFileError: The rows have no header row.
        """
        numbered = [(line, list(cells)) for line, (_, cells) in zip(self.lines(rows), rows, strict=True)]
        return sheet_table(self.path, numbered, self.sheet)

    def tables(self, rows: Rows) -> list[Table]:
        """The workbook's tables as `agentmap validate` reads them once `rows` are saved: the other sheets as
        they are on disk (read again only when the file changed), this one from `rows`.

        Raises:
            WorkflowFileError: The rows have no header row, or the workbook on disk cannot be read.
        """
        table = self.table(rows)
        stat = self.path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if self._saved is None or self._saved[0] != key:  # a check runs on every key typed: read the file once
            try:
                self._saved = (key, read_tables(self.path))
            except WorkflowFileError as err:
                if err.code != "empty-file":
                    raise
                self._saved = (key, [])
        saved = self._saved[1]
        if not any(t.sheet == self.sheet for t in saved):  # this sheet was empty on disk
            return [*saved, table]
        return [table if t.sheet == self.sheet else t for t in saved]

    def data(self, rows: Rows) -> bytes:
        """The workbook on disk now with this sheet's cells written from `rows` (what a save writes).

        Raises:
            FormulaCellsError: The workbook holds formulas (a save would drop the values they show).
        """
        book = _workbook(self.path.read_bytes(), self.path)
        _refuse_formulas(book, self.path)
        sheet = book[self.sheet]
        width = max([sheet.max_column, *(len(cells) for _, cells in rows)])
        styles = {
            r: [copy(sheet.cell(row=r, column=c)._style) for c in range(1, width + 1)]
            for r in range(1, sheet.max_row + 1)
        }
        for line, (index, cells) in enumerate(rows, start=1):
            known = index is not None and 0 <= index < len(self.records)
            original = (self.records[index].original or []) if index is not None and known else None
            values = self.values[index] if index is not None and known else []
            for column in range(width):
                text = cells[column] if column < len(cells) else ""
                cell = sheet.cell(row=line, column=column + 1)
                was = None if original is None else original[column] if column < len(original) else ""
                kept = was == text  # unchanged: the value as it was, a number stays a number
                cell.value = (values[column] if column < len(values) else None) if kept else (text or None)
                quoted = as_text(cell)  # `=SUM(A1)` typed is text, not a formula
                if index is not None and index + 1 in styles:  # a moved row takes its formatting along
                    cell._style = copy(styles[index + 1][column])
                if quoted:
                    cell.quotePrefix = True
        if sheet.max_row > len(rows):
            sheet.delete_rows(len(rows) + 1, sheet.max_row - len(rows))
        out = io.BytesIO()
        book.save(out)
        return out.getvalue()


def _refuse_formulas(book: Any, path: Path) -> None:
    found = [
        f"{sheet.title}!{cell.coordinate}"
        for sheet in book.worksheets
        for row in sheet.iter_rows()
        for cell in row
        if cell.data_type == "f"
    ]
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise FormulaCellsError(
            f"{path.name} holds formulas ({shown}); saving it here would keep them but lose the values they show, "
            "which agentmap run reads",
            hint="edit this workbook in Excel, or replace its formulas by their values (Paste Special, Values) "
            "and open it again",
        )


Editable = Document | SheetDocument
"""A file the studio edits: a CSV/TSV document, or a sheet of a workbook."""
