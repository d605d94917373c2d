"""Quotes in CSV text that span lines: the one detector the workflow reader and a batch's input reader share.

A quoted cell may hold line breaks (RFC 4180), so one row of a table may take several lines of its file. Two ways
this goes wrong, both found here from the lines a row took:

- a quote that is never closed: the rest of the file is one cell (`open_quote`: the line and column it opened);
- a quote closed lines later, whose lines in between each read as a row of the table: rows hidden in one cell
  (`hidden_rows`).

`Records` reads the rows with the lines each took, as the standard library's `csv` module reads them.
"""

from __future__ import annotations

import bisect
import csv
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

__all__ = ["QUOTE_FIX", "Record", "Records", "hidden_rows", "open_quote", "spanned_column", "split_lines"]

QUOTE_FIX = 'close every quote you open; a quote inside a quoted cell is doubled: "say ""hi"""'
"""How to mend a quote: the fix said with every finding of this module."""

_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+", re.S)
_QUOTED = re.compile(r'"(?:[^"]|"")*+"')  # possessive: a quoted cell never matches less than it holds


def split_lines(text: str) -> list[str]:
    """`text` as the lines `csv` reads (`\\r\\n`, `\\r` or `\\n` end one; each line keeps its end)."""
    return _LINE.findall(text)


@dataclass(frozen=True)
class Record:
    """One row as `csv` read it: its first line (1-based), its cells and the lines of the file it took."""

    line: int
    cells: list[str]
    lines: Sequence[str]


class Records:
    """The rows of CSV lines (`csv.reader`), each with the lines it took.

    Args:
        lines: The file's lines with their ends (`split_lines`, or a file opened with `newline=""`).
        delimiter: The delimiter.
        strict: `csv`'s strict reading: text after a closing quote, or a quote open at the end, raises `csv.Error`.
    """

    def __init__(self, lines: Iterable[str], delimiter: str = ",", *, strict: bool = False) -> None:
        self._source = iter(lines)
        self._taken: list[str] = []
        self._start = 1
        self._reader = csv.reader(self._take(), delimiter=delimiter, strict=strict)

    def _take(self) -> Iterator[str]:
        for line in self._source:
            self._taken.append(line)
            yield line

    def __iter__(self) -> Iterator[Record]:
        """Each row; `csv.Error` as `csv` raises it (a cell over its size limit: `unfinished` is then the row)."""
        for cells in self._reader:
            yield Record(self._start, cells, self._taken)
            self._taken = []
            self._start = self._reader.line_num + 1

    def unfinished(self) -> Record:
        """The row being read when `csv` stopped: its first line and the lines taken so far (no cells)."""
        return Record(self._start, [], self._taken)


def open_quote(record: Record, delimiter: str = ",") -> tuple[int, int] | None:
    """Where a quote of the last row of a file opened, when it is never closed: `(line, column)`, the line 1-based
    and the column 0-based; None when every quote of the row closes.

    Only the last row can hold such a quote (it takes every line to the end of the file). Read as `csv` reads
    (not strict): a quote opens a cell only as its first character; `""` inside a quoted cell is one quote.
    """
    text = "".join(record.lines)
    plain = re.compile(f"[^{re.escape(delimiter)}\r\n]*")
    position = column = 0
    while position < len(text):
        if text[position] == '"':
            match = _QUOTED.match(text, position)
            if match is None:
                starts = [0]
                for line in record.lines:
                    starts.append(starts[-1] + len(line))
                return record.line + bisect.bisect_right(starts, position) - 1, column
            position = match.end()
        position = plain.match(text, position).end()  # type: ignore[union-attr]  # `*` always matches
        if position < len(text):
            if text[position] == delimiter:
                column += 1
            else:  # a line break outside quotes: the row ends (at the end of the file, only blank lines follow)
                column = 0
            position += 1
    return None


def spanned_column(record: Record) -> int | None:
    """The 0-based column of the first cell of `record` holding a line break (None when it took one line)."""
    if len(record.lines) < 2:
        return None
    return next((i for i, cell in enumerate(record.cells) if "\n" in cell or "\r" in cell), None)


def hidden_rows(record: Record, width: int, delimiter: str = ",") -> list[int]:
    """The lines after the first of a row that took several, each read on its own as a row of `width` cells.

    Args:
        record: The row.
        width: The number of columns of the table's header (a table of one column has no such sign: none found).
        delimiter: The delimiter.

    Returns:
        Those lines, 1-based, in order (empty when the row took one line).
    """
    if width < 2 or len(record.lines) < 2:
        return []
    return [
        record.line + offset
        for offset, text in enumerate(record.lines[1:], start=1)
        if len(next(csv.reader([text.rstrip("\r\n")], delimiter=delimiter, strict=False), [])) == width
    ]
