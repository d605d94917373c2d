"""Resume bookkeeping: the `.partial` file beside a batch's output.

Each finished row is appended to `<output>.partial` as one JSON line. Lines are written in blocks (`BlockWriter`):
a row's line is written, flushed and synced with the rows that finished with it, at most `BLOCK_SECONDS` after the
batch took the row (and once `BLOCK_ROWS` rows wait), and at once when the batch ends, stops on Ctrl-C or on an error.
A row is reported done (the progress, `on_result`) only once its line is written. So a batch killed at any moment
(`kill -9`, a lost machine) keeps every row it reported and loses at most the rows of that last fraction of a second,
which running it again runs again (and, with `--checkpoint`, takes from their finished threads).

Running the batch again reads the file and skips those rows. When every row is done, the output table is written
from the file in input order (the last record of a row wins, so a row is never in the output twice) and the file is
removed. Running a finished batch again reads the finished output instead, so it skips every row; it reads the cells
as they were written (an escaped `'=1+2` stays `'=1+2`, and escaping it again changes nothing), so the output is
written again the same.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmap.batch._blocks import BlockWriter
from agentmap.batch.rows import RESULT_COLUMNS, RowResult, output_row
from agentmap.batch.tables import Warn, read_rows
from agentmap.batch.writers import json_encoder, open_writer
from agentmap.errors import ConfigError, ErrorCode

__all__ = ["PartialFile", "partial_path"]

_FORMAT = "agentmap-batch/1"


def partial_path(output: Path) -> Path:
    """`results.csv` -> `results.csv.partial`."""
    return output.with_name(f"{output.name}.partial")


class PartialFile:
    """The append-only record of a batch's finished rows.

    Attributes:
        path: The `.partial` file.
        output: The output table it becomes.
        formulas: `escape`: text a spreadsheet would run is written to a CSV output with a `'` before it
            (`TableWriter`); `keep`: as it is. The file itself holds the values as the rows made them.
    """

    def __init__(self, output: Path, *, graph: str, outputs: Sequence[str], formulas: str = "keep") -> None:
        self.output = output
        self.path = partial_path(output)
        self.graph = graph
        self.outputs = list(outputs)
        self.formulas = formulas
        self.formula_cells: list[tuple[int, str, str]] = []
        """After `finish`: the cells of a CSV output a spreadsheet would run (`TableWriter.formula_cells`)."""
        self._blocks: BlockWriter[RowResult] = BlockWriter(self.path)
        self._record = json_encoder()  # a row's record as its line (json.dumps(..., ensure_ascii=False, default=str))
        self._offsets: dict[str, int] = {}  # row id -> where its last record starts
        self._end = 0  # the file's size once every line given is written

    def load(self) -> dict[str, bool]:
        """Read what earlier runs finished: row id -> success (the last record of a row wins).

        Starts the file (from the finished output table, when there is one) if it does not exist, or if a kill cut
        its first line short as it was started, and cuts off a last line a killed process left half-written.

        Raises:
            ConfigError: The file belongs to another graph, or is not a batch's partial file.
        """
        if not self.path.exists():
            self._start()
        read = self._read()
        if read is None:  # its header cut short: nothing else is in it
            self._start()
            read = self._read()
        done, whole = read or ({}, 0)
        if whole < self.path.stat().st_size:
            os.truncate(self.path, whole)
        self._end = whole
        return done

    def _read(self) -> tuple[dict[str, bool], int] | None:
        """The rows recorded (row id -> success; where each record starts is noted) and where the whole lines end,
        or None when the file has no whole first line."""
        done: dict[str, bool] = {}
        self._offsets = {}
        whole = 0
        header = False
        with self.path.open("rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):
                    break  # a line cut short by a kill; everything after it is rewritten
                try:
                    record = json.loads(line)
                except ValueError:
                    record = None
                if not header:
                    self._check_header(record if isinstance(record, dict) else {})
                    header = True
                elif not isinstance(record, dict):
                    break
                else:
                    key = str(record["row_id"])
                    done[key] = bool(record.get("success"))
                    self._offsets[key] = whole
                whole += len(line)
        return (done, whole) if header else None

    def _check_header(self, header: Mapping[str, Any]) -> None:
        if header.get("format") != _FORMAT:
            raise ConfigError(
                f"{self.path} is not the partial results of an agentmap batch",
                code=ErrorCode.BAD_PARTIAL,
                hint="move it away, or write the output somewhere else",
            )
        if header.get("graph") != self.graph:
            raise ConfigError(
                f"{self.path} holds the partial results of graph {header.get('graph')!r}, not {self.graph!r}",
                code=ErrorCode.BAD_PARTIAL,
                hint="write the output somewhere else, or delete that file to start over",
            )

    def _start(self) -> None:
        header = {"format": _FORMAT, "graph": self.graph, "outputs": self.outputs}
        # Read as it stands: cells a workflow wrote may hold lines that look like rows.
        finished = read_rows(self.output, warn=_ignore) if self.output.exists() else iter(())
        first = next(finished, None)
        if first is not None and "row_id" not in first:
            raise ConfigError(
                f"{self.output} exists and is not the output of a batch (it has no row_id column)",
                code=ErrorCode.OUTPUT_EXISTS,
                hint="name another --output file, or move that one away; it is never overwritten",
            )
        with self.path.open("w", encoding="utf-8") as handle:
            handle.write(json.dumps(header) + "\n")
            for row in itertools.chain([first] if first is not None else [], finished):  # a finished batch
                if row.get("row_id") in (None, ""):
                    continue
                record = {
                    "row": 0,
                    "row_id": str(row["row_id"]),
                    "success": str(row.get("success")).lower() in ("true", "1"),
                    "error": row.get("error") or None,
                    "failed_nodes": row.get("failed_nodes") or "",
                    "duration_s": row.get("duration_s") or 0.0,
                    "outputs": {k: row.get(k) for k in self.outputs},
                }
                handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")

    def append(self, result: RowResult) -> list[RowResult]:
        """Record one finished row: its line is written with its block (see the module's docstring).

        Returns:
            The rows now written to the file that were not returned before (this one, or not yet), in the order
            they were given: what may be reported done.
        """
        line = (self._record(result.record()) + "\n").encode()
        self._offsets[result.id] = self._end
        self._end += len(line)
        return self._blocks.add(line, result)

    def close(self) -> list[RowResult]:
        """Write the rows still waiting; the file stays on disk. Returns the rows not returned before."""
        return self._blocks.close()

    def finish(self, rows: Iterable[tuple[str, dict[str, Any]]], columns: Sequence[str], warn: Warn) -> int:
        """Write the output table in input order from the recorded rows, then remove this file.

        Args:
            rows: (row id, input row) for every input row, in order.
            columns: The input columns.
            warn: Told of the cells of a CSV output that a spreadsheet would run, when they are written as they
                are (`formulas="keep"`).

        Returns:
            The number of rows written.
        """
        self.close()
        offsets = self._offsets
        header = [*columns, *(o for o in self.outputs if o not in columns), *RESULT_COLUMNS]
        writer = open_writer(self.output, header, formulas=self.formulas)
        written = 0
        try:
            with self.path.open("rb") as source:
                at = 0  # where the file is read up to: rows recorded in input order are read on, without a seek
                for key, inputs in rows:
                    position = offsets.get(key)
                    if position is None:
                        continue
                    if position != at:
                        source.seek(position)
                    line = source.readline()
                    at = position + len(line)
                    writer.write(output_row(json.loads(line), inputs))
                    written += 1
        except BaseException:
            writer.abort()
            raise
        writer.close()
        self.formula_cells = writer.formula_cells
        self.path.unlink()
        if self.formula_cells and self.formulas == "keep":
            warn(_formulas_kept(self.output, self.formula_cells))
        return written


def _formulas_kept(output: Path, cells: Sequence[tuple[int, str, str]]) -> str:
    """The warning of the cells of a CSV output a spreadsheet would run, written as they are: the first three."""
    named = [f"row {row} column {column}" + (f" (row_id {key})" if key else "") for row, column, key in cells[:3]]
    more = f" and {len(cells) - 3} more" if len(cells) > 3 else ""
    return (
        f"{output}: {len(cells)} cell{'s' if len(cells) != 1 else ''} start like a spreadsheet formula "
        f"({', '.join(named)}{more}): a spreadsheet opening this CSV file runs them (formula injection); they are "
        "written as the rows made them. Read the file as data, write the output as .xlsx (its cells are text), "
        'or pass --csv-formulas escape (csv_formulas="escape") to write them with a \' before them'
    )


def records(path: Path) -> Iterator[dict[str, Any]]:
    """The row records of a partial file (for tests and tools)."""
    with path.open(encoding="utf-8") as handle:
        next(handle, None)
        for line in handle:
            yield json.loads(line)


def _ignore(message: str) -> None:
    """An output table's oddities are the workflow's values, not mistakes in the input."""
