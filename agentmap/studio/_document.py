"""A CSV workflow file as the studio edits it: every record with its original text, written back as it was.

A person opens a file they wrote by hand or saved from a spreadsheet; saving it from the studio must not
reformat it. Each record keeps its original text: a record whose cells were not changed is written back
byte for byte; a changed or new record is written in the file's own style (delimiter, line ending, quotes
where the original cell had them, or everywhere when the file quotes every cell). Comment rows, blank rows,
the byte-order mark, the encoding and the final newline are kept.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentmap.errors import ErrorCode, WorkflowFileError
from agentmap.spec.readers import Table, csv_table

__all__ = ["Document", "Record", "Style", "version_of"]

_LINES = re.compile(r"[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+$")
_ENDING = re.compile(r"(\r\n|\n|\r)$")
_BREAKS = re.compile(r"\r\n|\n|\r")


def version_of(data: bytes) -> str:
    """The version token of a file's bytes (a save names the version it was edited from)."""
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass(frozen=True)
class Style:
    """How a file is written: encoding (with or without BOM), delimiter, line ending, quoting, final newline."""

    encoding: str = "utf-8"
    delimiter: str = ","
    newline: str = "\n"
    quote_all: bool = False
    final_newline: bool = True


@dataclass
class Record:
    """One record of the file: its cells and, when it came from the file, its text and which cells were quoted."""

    cells: list[str]
    body: str = ""
    end: str = ""
    quoted: list[bool] = field(default_factory=list)
    original: list[str] | None = None


@dataclass
class Document:
    """A workflow file's records and style; `render` writes records back in that style."""

    path: Path
    style: Style
    records: list[Record]
    version: str

    @classmethod
    def read(cls, path: Path) -> Document:
        """Read `path` (CSV or TSV) keeping every record's text.

        Raises:
            WorkflowFileError: The file cannot be read or is not text.
        """
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise WorkflowFileError(f"cannot read {path}: {exc.strerror}", code=ErrorCode.UNREADABLE) from None
        return cls.parse(path, data)

    @classmethod
    def parse(cls, path: Path, data: bytes) -> Document:
        """The document of `data`, the bytes of `path`.

        Raises:
            WorkflowFileError: The bytes are not UTF-8 or Windows-1252 text, or not valid CSV.
        """
        encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            try:
                text, encoding = data.decode("cp1252"), "cp1252"
            except UnicodeDecodeError:
                raise WorkflowFileError(f"{path} is not UTF-8 text", code=ErrorCode.NOT_TEXT) from None
        lines = _LINES.findall(text)
        first = _ENDING.search(lines[0]) if lines else None
        delimiter = "\t" if path.suffix.lower() == ".tsv" else _delimiter(lines)
        records = _records(path, lines, delimiter)
        content = [r for r in records if r.cells]
        quote_all = bool(content) and all(all(r.quoted) and r.quoted for r in content)
        style = Style(
            encoding=encoding,
            delimiter=delimiter,
            newline=first.group(1) if first else "\n",
            quote_all=quote_all,
            final_newline=not lines or bool(_ENDING.search(lines[-1])),
        )
        return cls(path=path, style=style, records=records, version=version_of(data))

    def render(self, rows: Sequence[tuple[int | None, Sequence[str]]]) -> str:
        """The file's text for `rows`: `(record index or None for a new row, cells)`, in the order to write."""
        return "".join(self.pieces(rows))

    def pieces(self, rows: Sequence[tuple[int | None, Sequence[str]]]) -> list[str]:
        """The text of each row of `rows` (see `render`), its line ending included."""
        out: list[str] = []
        last = len(rows) - 1
        for position, (index, cells) in enumerate(rows):
            record = self.records[index] if index is not None and 0 <= index < len(self.records) else None
            if record is not None and record.original == list(cells):
                body, end = record.body, record.end
            else:
                body = self._write(cells, record.quoted if record else [])
                end = record.end if record is not None else ""
            if not end and (position < last or self.style.final_newline):
                end = self.style.newline
            out.append(body + end)
        return out

    def lines(self, rows: Sequence[tuple[int | None, Sequence[str]]]) -> list[int]:
        """Each row's line in the file `rows` make (a record whose cell holds line breaks spans several)."""
        lines: list[int] = []
        line = 1
        for piece in self.pieces(rows):
            lines.append(line)
            line += len(_BREAKS.findall(piece))
        return lines

    def table(self, rows: Sequence[tuple[int | None, Sequence[str]]]) -> Table:
        """The table of the file `rows` make, as the CLI would read it.

        Raises:
            WorkflowFileError: The rows are not valid CSV, or have no header row.
        """
        return csv_table(self.path, self.render(rows), delimiter=self.style.delimiter)

    def tables(self, rows: Sequence[tuple[int | None, Sequence[str]]]) -> list[Table]:
        """The file's tables once `rows` are saved: its one table."""
        return [self.table(rows)]

    def data(self, rows: Sequence[tuple[int | None, Sequence[str]]]) -> bytes:
        """The bytes of the file `rows` make (what a save writes)."""
        return self.encode(self.render(rows))

    def encode(self, text: str) -> bytes:
        """`text` in the file's encoding (with its BOM when it had one)."""
        return text.encode(self.style.encoding)

    def _write(self, cells: Sequence[str], quoted: Sequence[bool]) -> str:
        style = self.style
        special = (style.delimiter, '"', "\r", "\n")
        written = []
        for i, cell in enumerate(cells):
            keep = quoted[i] if i < len(quoted) else False
            if style.quote_all or keep or any(c in cell for c in special) or cell != cell.strip(" "):
                written.append('"' + cell.replace('"', '""') + '"')
            else:
                written.append(cell)
        return style.delimiter.join(written)


def _delimiter(lines: Sequence[str]) -> str:
    header = next((line for line in lines if line.strip() and not line.lstrip().startswith("#")), "")
    if "," in header or not any(c in header for c in ";\t"):
        return ","
    return ";" if header.count(";") >= header.count("\t") else "\t"


def _records(path: Path, lines: Sequence[str], delimiter: str) -> list[Record]:
    """Each CSV record with the physical lines it spans (a quoted cell may hold line breaks)."""
    reader = csv.reader(io.StringIO("".join(lines), newline=""), delimiter=delimiter, strict=False)
    records: list[Record] = []
    start = 0
    try:
        for cells in reader:
            raw = "".join(lines[start : reader.line_num])
            start = reader.line_num
            ending = _ENDING.search(raw)
            end = ending.group(1) if ending else ""
            body = raw[: len(raw) - len(end)]
            records.append(Record(cells=cells, body=body, end=end, quoted=_quoted(body, delimiter), original=cells))
    except csv.Error as exc:
        raise WorkflowFileError(f"{path}:{start + 1}: not valid CSV: {exc}", code=ErrorCode.UNREADABLE) from None
    return records


def _quoted(body: str, delimiter: str) -> list[bool]:
    """Which fields of a record's text start with a quote (the style a changed cell is written back in)."""
    flags = [body.startswith('"')]
    inside = False
    for i, char in enumerate(body):
        if char == '"':
            inside = not inside
        elif char == delimiter and not inside:
            flags.append(body[i + 1 : i + 2] == '"')
    return flags
