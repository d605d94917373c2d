"""`csv_reader` and `csv_writer`: rows of a CSV file under the storage folder (stdlib `csv`, no pandas).

Context keys are documented in csv_specs/storage.md.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmap.agents.registry import agent
from agentmap.storage._base import StorageAgent
from agentmap.storage._files import file_lock, read_csv, read_text, render_csv, write_atomic

__all__ = ["CSVReaderAgent", "CSVWriterAgent"]

_WRITER_CONTROL = frozenset(("mode", "document_id", "path", "id_field", "collection", "file_path", "csv_file"))
"""Inputs of a csv_writer that steer it rather than become columns (as in the existing AgentMap; `id` is a column)."""


def _matches(row: Mapping[str, Any], query: Mapping[str, Any]) -> bool:
    return all(str(row.get(key, "")) == str(value) for key, value in query.items())


@agent("csv_reader")
class CSVReaderAgent(StorageAgent):
    """Reads a CSV file: every row (as dicts of text), the rows a `query` selects, or one row by id.

    Context:
        format: `records` (default; a list of rows), `list` (the same), `dict` (rows keyed by `id_field`
            when given, else by row number), `dataframe` (a pandas DataFrame; needs pandas).
        id_field: The id column (default `id`) for `document_id` and `format: dict`.
        document_id: Return only the row with this id (also an input `document_id` or `id`).
        query: `{"column": value}` keeps the rows whose cells equal the values (also an input `query`).
        default: The result when the file does not exist (otherwise the node fails).
        encoding: The file's encoding (default utf-8).
    """

    kind = "csv"
    formats = ("records", "list", "dict", "dataframe")

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the rows in the requested format."""
        where = self.location(inputs)
        if not where.path.is_file():
            return self.missing(where)
        header, rows = read_csv(where.path, self.encoding(inputs))
        id_field = str(self.option(inputs, "id_field", "id"))
        document_id = self.option(inputs, "document_id", inputs.get("id"))
        if document_id is not None:
            for row in rows:
                if str(row.get(id_field)) == str(document_id):
                    return row
            if "default" in self.context:
                return self.context["default"]
            raise LookupError(f"{where.text!r} has no row with {id_field}={document_id!r}")
        query = self.option(inputs, "query")
        if isinstance(query, Mapping):
            rows = [row for row in rows if _matches(row, query)]
        fmt = str(self.option(inputs, "format", "records")).lower()
        if fmt == "dict":
            keyed = "id_field" in self.context or "id_field" in inputs
            if keyed and id_field not in header:
                raise ValueError(f"{where.text!r} has no column {id_field!r} (columns: {', '.join(header)})")
            return {(row[id_field] if keyed else i): row for i, row in enumerate(rows)}
        if fmt == "dataframe":
            import pandas

            return pandas.DataFrame(rows, columns=header)
        if fmt not in ("records", "list"):
            raise ValueError(f"unknown format {fmt!r}: use records, list, dict or dataframe")
        return rows


def _rows(data: Any) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        values = list(data.values())
        if values and all(isinstance(v, Mapping) for v in values):
            return values  # rows keyed by id or row number, as csv_reader's `dict` format gives them
        return [data]
    if isinstance(data, (list, tuple)) and all(isinstance(v, Mapping) for v in data):
        return list(data)
    if hasattr(data, "to_dict") and callable(data.to_dict):  # a pandas DataFrame
        records = data.to_dict(orient="records")
        if isinstance(records, list):
            return records
    raise TypeError(
        f"csv_writer writes rows: a dict (one row), a list of dicts, or the node's inputs as columns; got "
        f"{type(data).__name__}. Name the columns in Input_Fields (e.g. name|email) or pass a list of dicts as `data`"
    )


def _append_in_copy(path: Path, rows: list[Mapping[str, Any]], encoding: str) -> bool:
    """Append without parsing every row when the header already has every column: copy the text, add lines.

    Returns False (nothing written) when the rows bring new columns or the file does not end with a newline.
    """
    text = read_text(path, encoding, newline="")
    header = next(csv.reader(io.StringIO(text, newline="")), [])
    if not header or not text.endswith("\n") or any(str(k) not in header for row in rows for k in row):
        return False
    write_atomic(path, text + render_csv(header, rows, with_header=False), encoding)
    return True


def _union(header: list[str], rows: list[Mapping[str, Any]]) -> list[str]:
    columns = list(header)
    for row in rows:
        columns += [str(k) for k in row if str(k) not in columns]
    return columns


@agent("csv_writer")
class CSVWriterAgent(StorageAgent):
    """Writes rows to a CSV file: its inputs as the columns of one row, or an input `data` (rows).

    Context:
        mode: `append` (default; add the rows, keeping every earlier row), `write` (replace the file),
            `update` (replace the rows whose `id_field` matches, add the others).
        id_field: The id column for `update` (default `id`).
        encoding: The file's encoding (default utf-8).
    """

    kind = "csv"
    modes = ("append", "write", "update")

    def process(self, inputs: dict[str, Any]) -> Any:
        """Write the rows atomically; return what was done (`success`, `mode`, `file_path`, counts)."""
        where = self.location(inputs)
        data = inputs["data"] if "data" in inputs else {k: v for k, v in inputs.items() if k not in _WRITER_CONTROL}
        if data is None or (isinstance(data, (Mapping, list)) and not data):
            raise ValueError("no data to write: the node's inputs are empty")
        rows = _rows(data)
        mode = self.mode(inputs)
        encoding = self.encoding(inputs)
        id_field = str(self.option(inputs, "id_field", "id"))
        updated = 0
        with file_lock(where.path):
            existed = where.path.is_file()
            if mode == "append" and existed and _append_in_copy(where.path, rows, encoding):
                return self.written(where, mode, existed, rows_written=len(rows))
            header, old = read_csv(where.path, encoding) if existed else ([], [])
            if mode == "write":
                header, new = _union([], rows), [dict(r) for r in rows]
            elif mode == "append":
                header, new = _union(header, rows), [*old, *(dict(r) for r in rows)]
            else:
                missing = [r for r in rows if r.get(id_field) is None]
                if missing:
                    raise ValueError(
                        f"mode update needs the id column {id_field!r} in every row (set Context id_field)"
                    )
                new = list(old)
                index = {str(row.get(id_field)): i for i, row in enumerate(new)}
                for row in rows:
                    at = index.get(str(row[id_field]))
                    if at is None:
                        index[str(row[id_field])] = len(new)
                        new.append(dict(row))
                    else:
                        new[at] = {**new[at], **row}
                        updated += 1
                header = _union(header, rows)
            write_atomic(where.path, render_csv(header, new), encoding)
        counts = {"rows_updated": updated, "rows_added": len(rows) - updated} if mode == "update" else {}
        return self.written(where, mode, existed, rows_written=len(rows), **counts)
