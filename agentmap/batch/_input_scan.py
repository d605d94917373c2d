"""The one pass over a batch's input, before any row runs: its columns (checked against what the workflow reads and
what the batch writes), its row ids (unique when a column names them, each computed once) and the rows an earlier
run finished. The pass keeps what it read (`ScannedInput`), so the input is read once: a table file is never opened
again (it may be a pipe), and the rows run and the output is written from that copy.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from agentmap.batch.rows import RESULT_COLUMNS, Shaper
from agentmap.batch.tables import Warn
from agentmap.errors import ConfigError, ErrorCode
from agentmap.runtime.options import CompileOptions

__all__ = ["Finished", "RowSource", "ScannedInput", "check_columns", "row_options", "scan"]

Keyed = tuple[int, str, Mapping[str, Any]]
"""(row number, row id, the row as read)."""


@dataclass(frozen=True)
class RowSource:
    """How a batch reads its input.

    Attributes:
        read: The one pass over the rows (a table file is read as it goes).
        held: The rows, when they are in memory already (a list, a DataFrame's records): the scan then keeps only
            their ids, not a copy of the rows.
    """

    read: Callable[[], Iterator[Mapping[str, Any]]]
    held: Sequence[Mapping[str, Any]] | None = None


class Finished:
    """Whether an earlier run of the batch finished a row (so this one skips it), noting the skipped failures."""

    def __init__(self, done: Mapping[str, bool], redo_failed: bool) -> None:
        self.done = done
        self.redo_failed = redo_failed
        self.failed: set[str] = set()

    def __call__(self, key: str) -> bool:
        succeeded = self.done.get(key)
        if succeeded is None or (not succeeded and self.redo_failed):
            return False
        if not succeeded:
            self.failed.add(key)
        return True


def check_columns(app: Any, keys: list[str], name: str, warn: Warn, mode: str = "error") -> None:
    """Refuse the batch (`mode` error) or warn once for it (`mode` warn) when its table lacks an input no node
    writes (`CompiledWorkflow.check_state`).

    Raises:
        ConfigError: `missing-state`, before any row runs, when `mode` is error and a column is missing.
    """
    found = None if mode == "ignore" else app.check_state(dict.fromkeys(keys, "..."))
    if found is None:
        return
    if mode == "error":
        raise ConfigError(
            f"{name}: {found.message}",
            code=ErrorCode.MISSING_STATE,
            hint=f"{found.hint('a column of the input')} (missing_inputs='warn', `--missing-inputs warn`, runs the "
            "rows anyway, the nodes reading None)",
        )
    warn(f"{name}: {found.message}; fix: {found.hint('a column of the input')}")


def row_options(options: CompileOptions) -> CompileOptions:
    """The options each row compiles with: with `missing_inputs="warn"` the table is warned of once
    (`check_columns`), so a row itself says nothing."""
    return options.but(missing_inputs="ignore") if options.missing_inputs == "warn" else options


class ScannedInput:
    """The input as its one pass left it: its columns, row count, rows done before, and every row with its id.

    `rows()` gives (number, id, row) for every row, in input order, as often as asked (the rows to run, then the
    output in input order), without reading the input again: a table file's rows from a temporary spool file (never
    in memory as a whole; it has no name, so it goes with the process even after `kill -9`), rows held in memory
    from memory with the ids the scan computed. `close()` (or the end of a `with` block) drops the spool.
    """

    def __init__(self, held: Sequence[Mapping[str, Any]] | None) -> None:
        self.columns: list[str] = []
        self.total = 0
        self.skipped = 0
        self._held = held
        self._keys: list[str] = []
        self._spool: _Spool | None = None if held is not None else _Spool()

    def _keep(self, number: int, key: str, row: Mapping[str, Any]) -> None:
        if self._spool is not None:
            self._spool.add((number, key, row))
        else:
            self._keys.append(key)

    def rows(self) -> Iterator[Keyed]:
        """Every row, in input order: (row number, row id, the row as read)."""
        if self._spool is not None:
            yield from self._spool
            return
        assert self._held is not None
        for number, (key, row) in enumerate(zip(self._keys, self._held, strict=True), start=1):
            yield number, key, row

    def close(self) -> None:
        """Drop the spool file (nothing to do for rows held in memory)."""
        if self._spool is not None:
            self._spool.close()

    def __enter__(self) -> ScannedInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Spool:
    """Rows pickled in blocks to an unnamed temporary file; read back in order, from the start each time."""

    BLOCK = 512

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `close`)
        self._block: list[Keyed] = []

    def add(self, item: Keyed) -> None:
        self._block.append(item)
        if len(self._block) >= self.BLOCK:
            self._dump()

    def _dump(self) -> None:
        self._file.seek(0, os.SEEK_END)
        pickle.dump(self._block, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._block = []

    def __iter__(self) -> Iterator[Keyed]:
        if self._block:
            self._dump()
        position = 0  # this pass's own place in the file (another pass may have moved the file's)
        while True:
            self._file.seek(position)
            try:
                block: list[Keyed] = pickle.load(self._file)  # our own file, written above
            except EOFError:
                return
            position = self._file.tell()
            yield from block

    def close(self) -> None:
        self._file.close()


def scan(rows: RowSource, shaper: Shaper, name: str, finished: Callable[[str], bool]) -> ScannedInput:
    """The one pass over the input: its columns, its row count, how many rows are done, and duplicate ids.

    Raises:
        ConfigError: A row that cannot run (a duplicate or missing id, a bad JSON cell), or a column the batch
            writes itself; the file and row are named.
    """
    scanned = ScannedInput(rows.held)
    try:
        _scan(rows.read(), scanned, shaper, name, finished)
    except BaseException:
        scanned.close()
        raise
    return scanned


def _scan(
    read: Iterator[Mapping[str, Any]],
    scanned: ScannedInput,
    shaper: Shaper,
    name: str,
    finished: Callable[[str], bool],
) -> None:
    columns: dict[str, None] = {}
    seen: dict[str, int] = {}
    total = skipped = 0
    for number, row in enumerate(read, start=1):
        total = number
        columns.update(dict.fromkeys(row))
        where = f"{name}, row {number}"
        key = shaper.key(number, row, where)
        if shaper.json_cells:
            shaper.state(row, where)  # a bad JSON cell stops the batch before any row runs
        if shaper.id_column is not None:
            if key in seen:
                raise ConfigError(
                    f"{name}, row {number}: id {key!r} in column {shaper.id_column!r} is already the id of row "
                    f"{seen[key]}",
                    code=ErrorCode.BAD_INPUT,
                    hint="give every row its own id (resuming a batch finds rows by id)",
                )
            seen[key] = number
        if finished(key):
            skipped += 1
        scanned._keep(number, key, row)
    clash = [c for c in columns if c in RESULT_COLUMNS]
    if clash:
        raise ConfigError(
            f"{name} has column{'s' if len(clash) > 1 else ''} {', '.join(map(repr, clash))}, which the batch "
            "writes itself",
            code=ErrorCode.BAD_INPUT,
            hint=f"rename that column in the input (the output adds {', '.join(RESULT_COLUMNS)})",
        )
    scanned.columns, scanned.total, scanned.skipped = list(columns), total, skipped
