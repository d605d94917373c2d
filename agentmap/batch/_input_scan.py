"""One pass over a batch's input before any row runs: its columns (checked against what the workflow reads and
what the batch writes), its row ids (unique when a column names them) and the rows an earlier run finished.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from agentmap.batch.rows import RESULT_COLUMNS, Shaper
from agentmap.batch.tables import Warn
from agentmap.errors import ConfigError, ErrorCode
from agentmap.runtime.options import CompileOptions

__all__ = ["Finished", "RowSource", "check_columns", "row_options", "scan"]

RowSource = Callable[[], Iterator[Mapping[str, Any]]]
"""How a batch reads its input: each call a fresh pass over the rows."""


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


def scan(rows: RowSource, shaper: Shaper, name: str, finished: Callable[[str], bool]) -> tuple[list[str], int, int]:
    """One pass over the input: its columns, its row count, how many rows are done, and duplicate ids."""
    columns: dict[str, None] = {}
    seen: dict[str, int] = {}
    total = skipped = 0
    for number, row in enumerate(rows(), start=1):
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
    clash = [c for c in columns if c in RESULT_COLUMNS]
    if clash:
        raise ConfigError(
            f"{name} has column{'s' if len(clash) > 1 else ''} {', '.join(map(repr, clash))}, which the batch "
            "writes itself",
            code=ErrorCode.BAD_INPUT,
            hint=f"rename that column in the input (the output adds {', '.join(RESULT_COLUMNS)})",
        )
    return list(columns), total, skipped
