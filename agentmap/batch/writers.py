"""Output tables of a batch: CSV, JSON Lines, Parquet and Excel, written as streams (`tables` reads them).

A writer takes rows one at a time and writes to a temporary file beside the target, which `close()` moves into
place (a half-written output never replaces a good one). A text value a spreadsheet would run as a formula
(`spec.formulas`) is noted in a CSV output (`TableWriter.formula_cells`) and, with `formulas="escape"`, written
with a `'` before it, as a spreadsheet shows text; an Excel output holds text in text cells, never a formula.
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import json
import json.encoder
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentmap.batch.tables import ROW_GROUP, missing_extra, table_format
from agentmap.errors import ConfigError, ErrorCode
from agentmap.spec.formulas import as_text, escape_formula, formula_like

__all__ = ["FORMULA_MODES", "TableWriter", "cell_text", "check_formulas", "json_encoder", "open_writer"]

FORMULA_MODES = ("keep", "escape")
"""What a CSV output does with text a spreadsheet would run: written as it is (and noted), or escaped."""


def check_formulas(mode: str) -> None:
    """Check a `--csv-formulas` / `csv_formulas` value.

    Raises:
        ConfigError: It is not one of `FORMULA_MODES` (code `usage`).
    """
    if mode not in FORMULA_MODES:
        raise ConfigError(
            f"unknown --csv-formulas {mode!r}",
            code=ErrorCode.USAGE,
            hint="use keep (the values as they are, with a warning) or escape (a ' before each formula)",
        )


_JSON_CELL = json.JSONEncoder(ensure_ascii=False, default=str)
"""Lists and dicts as cell text: `json.dumps(value, ensure_ascii=False, default=str)`, one encoder for every cell."""


def json_encoder() -> Callable[[Any], str]:
    """`_JSON_CELL.encode` for one writer's cells (or one partial file's records), with the C encoder made once
    rather than per value (what `JSONEncoder.encode` costs over the encoding itself, for the few small values of a
    cell, is most of it); the same text. Not to be shared between threads (it keeps its circular-reference marks
    between calls)."""
    make = getattr(json.encoder, "c_make_encoder", None)  # not in typeshed: the standard library's own accelerator
    if make is None:  # no C accelerator: the standard encoder
        return _JSON_CELL.encode
    marks: dict[int, Any] = {}
    encoder = make(marks, str, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)

    def encode(value: Any) -> str:
        try:
            return "".join(encoder(value, 0))
        except Exception:
            marks.clear()  # a value it cannot encode: the standard encoder raises what is wrong with it
            return _JSON_CELL.encode(value)

    return encode


def cell_text(value: Any, encode: Callable[[Any], str] = _JSON_CELL.encode) -> str:
    """A value as one CSV cell: text as is, numbers as written, true/false, JSON for lists and dicts (`encode`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple | dict | set):
        return encode(list(value) if isinstance(value, set) else value)
    return str(value)


def _scalar(value: Any) -> Any:
    """A value for a typed cell (Excel, Parquet): scalars and dates kept, lists and dicts as JSON, others as text."""
    if value is None or isinstance(value, str | bool | int | float | datetime.date | datetime.time):
        return value
    return cell_text(value)


class TableWriter:
    """Writes rows to a temporary file beside `path`; `close()` puts it in place, `abort()` drops it.

    Attributes:
        formula_cells: Of a CSV output, each text cell a spreadsheet would run as a formula: its row in the
            table (the header is row 1), its column and the row's `row_id`.
    """

    def __init__(self, path: Path, columns: Sequence[str], *, formulas: str = "keep") -> None:
        self.path = path
        self.columns = list(columns)
        self.kind = table_format(path, "output table")
        self.escape = formulas == "escape"
        self.formula_cells: list[tuple[int, str, str]] = []
        self._rows_written = 0
        self._temp = path.with_name(f".{path.name}.writing")
        self._rows: list[dict[str, Any]] = []
        self._json = json_encoder()
        self._handle: Any = None
        self._writer: Any = None
        if self.kind in ("csv", "jsonl"):
            self._handle = self._temp.open("w", encoding="utf-8", newline="")
            if self.kind == "csv":
                self._writer = csv.writer(self._handle)
                self._writer.writerow(self.columns)
        elif self.kind == "excel":
            try:
                import openpyxl
            except ImportError:
                raise missing_extra(path, "excel", "openpyxl") from None
            self._book = openpyxl.Workbook(write_only=True)
            self._sheet = self._book.create_sheet("results")
            self._sheet.append([self._excel_cell(c) for c in self.columns])
        else:
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise missing_extra(path, "parquet", "pyarrow") from None

    def write(self, row: dict[str, Any]) -> None:
        """Write one row (missing columns are empty)."""
        if self.kind == "csv":
            self._rows_written += 1
            text = self._json
            cells = [cell_text(row.get(c), text) for c in self.columns]
            for i, cell in enumerate(cells):
                if formula_like(cell):  # rare: most cells are told apart by their first character
                    cells[i] = self._formula_cell(cell, self.columns[i], row)
            self._writer.writerow(cells)
        elif self.kind == "jsonl":
            self._handle.write(json.dumps({c: row.get(c) for c in self.columns}, ensure_ascii=False, default=str))
            self._handle.write("\n")
        elif self.kind == "excel":
            self._sheet.append([self._excel_cell(_scalar(row.get(c))) for c in self.columns])
        else:
            self._rows.append({c: _scalar(row.get(c)) for c in self.columns})
            if len(self._rows) >= ROW_GROUP:
                self._flush_parquet()

    def _formula_cell(self, text: str, column: str, row: dict[str, Any]) -> str:
        """A CSV cell a spreadsheet would run: noted, and escaped when asked."""
        self.formula_cells.append((self._rows_written + 1, column, cell_text(row.get("row_id"))))
        return escape_formula(text) if self.escape else text

    def _excel_cell(self, value: Any) -> Any:
        """A value for a write-only sheet: text as a text cell (with Excel's quote prefix when openpyxl would
        have made it a formula or an error value)."""
        if not isinstance(value, str):
            return value
        from openpyxl.cell import WriteOnlyCell

        cell = WriteOnlyCell(self._sheet, value=value)
        if as_text(cell):
            cell.quotePrefix = True
        return cell

    def _flush_parquet(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._writer is None:
            fields = []
            for column in self.columns:
                kind = pa.array([r[column] for r in self._rows]).type
                fields.append(pa.field(column, pa.string() if pa.types.is_null(kind) else kind))
            self._writer = pq.ParquetWriter(self._temp, pa.schema(fields))
        schema = self._writer.schema
        columns = []
        for field in schema:
            values = [r[field.name] for r in self._rows]
            if pa.types.is_string(field.type):
                values = [None if v is None else cell_text(v) for v in values]
            try:
                columns.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                raise ConfigError(
                    f"column {field.name!r} of {self.path} holds values of another type than in its first rows",
                    code=ErrorCode.BAD_OUTPUT,
                    hint="write the output as .jsonl or .csv, or make the workflow write one type to that field",
                ) from None
        self._writer.write_table(pa.Table.from_arrays(columns, schema=schema))
        self._rows.clear()

    def close(self) -> None:
        """Finish the file and move it over `path`."""
        if self.kind in ("csv", "jsonl"):
            self._handle.close()
        elif self.kind == "excel":
            self._book.save(self._temp)
        else:
            if self._rows or self._writer is None:
                self._flush_parquet()
            self._writer.close()
        os.replace(self._temp, self.path)

    def abort(self) -> None:
        """Drop the temporary file; `path` is left as it was."""
        with contextlib.suppress(Exception):
            if self._handle is not None:
                self._handle.close()
            if self.kind == "parquet" and self._writer is not None:
                self._writer.close()
        with contextlib.suppress(OSError):
            self._temp.unlink()


def open_writer(path: Path, columns: Sequence[str], *, formulas: str = "keep") -> TableWriter:
    """A `TableWriter` for `path` in the format of its extension (`formulas="escape"`: see `TableWriter`)."""
    return TableWriter(path, columns, formulas=formulas)
