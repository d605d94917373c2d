"""What a batch does with each row as it finishes: record it in the `.partial` file, count it, keep it, and report it
done (the progress, `on_result`) once it is recorded: a row is never reported done before it is on disk."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from agentmap.batch.results import BatchResult, Progress
from agentmap.batch.resume import PartialFile
from agentmap.batch.rows import RowResult

__all__ = ["Recorder"]


class Recorder:
    """Takes a batch's finished rows, in the order they finish.

    Attributes:
        result: What the batch did so far: each row is counted as it is taken (a row the budget stopped is not: it
            is reported, but not recorded, so a later run runs it).
        kept: Input row by row number, for the rows kept in `result.rows` (None: rows are not kept).
    """

    def __init__(
        self,
        result: BatchResult,
        partial: PartialFile | None,
        kept: dict[int, Mapping[str, Any]] | None,
        progress: Progress | None,
        on_result: Callable[[RowResult], None] | None,
    ) -> None:
        self.result = result
        self.kept = kept
        self._partial = partial
        self._progress = progress
        self._on_result = on_result

    def take(self, row_result: RowResult) -> None:
        """Record one finished row, then report the rows recorded by now."""
        self._report(self._record(row_result))

    def finish(self) -> None:
        """Every row is taken: write those still waiting and report them."""
        if self._partial is not None:
            self._report(self._partial.close())

    def stop(self) -> None:
        """The batch ends, whichever way: write the rows still waiting (nothing more is reported)."""
        if self._partial is not None:
            self._partial.close()

    def _record(self, row_result: RowResult) -> list[RowResult]:
        result = self.result
        if row_result.over_budget:  # not done: a run of the batch with a higher budget runs it
            result.over_budget = True
            return [row_result]
        if self.kept is not None:
            row_result = replace(row_result, inputs=dict(self.kept.pop(row_result.row, {})))
        # appended before it is counted: a row counted is one the partial file has (a Ctrl-C may come in between)
        recorded = self._partial.append(row_result) if self._partial is not None else [row_result]
        if self.kept is not None:
            result.rows.append(row_result)
        result.count_revision(row_result)
        if row_result.success:
            result.successes += 1
        else:
            result.failures += 1
        result.tokens_in += row_result.tokens_in
        result.tokens_out += row_result.tokens_out
        result.tokens_cached += row_result.tokens_cached
        if row_result.cost is not None:
            result.cost = (result.cost or 0.0) + row_result.cost
        return recorded

    def _report(self, recorded: list[RowResult]) -> None:
        for row_result in recorded:
            if self._progress is not None:
                self._progress.advance(row_result)
            if self._on_result is not None:
                self._on_result(row_result)
