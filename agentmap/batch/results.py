"""What a batch returns and raises: `BatchResult` (its rows and counts), `BatchInterrupted`, `BatchOverBudget`,
and the `Progress` protocol that watches a batch as it runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentmap.agents.costs import BudgetExceeded
from agentmap.batch._llm_rounds import LLMBatchReport
from agentmap.batch.rows import RowResult

__all__ = ["BatchInterrupted", "BatchOverBudget", "BatchResult", "Progress"]


class Progress(Protocol):
    """What watches a batch: told the row counts once, then each result as it arrives."""

    def start(self, total: int, skipped: int) -> None:
        """Called once, before the first row: rows in the input, and how many were done before."""

    def advance(self, result: RowResult) -> None:
        """Called as each row finishes (once it is written to the `.partial` file, when the batch has one)."""

    def stop(self) -> None:
        """Called once at the end (also after Ctrl-C)."""


@dataclass
class BatchResult:
    """What a batch did.

    Attributes:
        rows: The rows run by this call, in input order (empty when the rows were not kept).
        total: Rows in the input.
        successes: Rows that succeeded in this call.
        failures: Rows that failed in this call.
        skipped: Rows skipped because an earlier run of the same batch had done them.
        failed_before: Of those, the rows that had failed (their error is still in the output; `redo_failed`
            runs them again).
        duration_s: Seconds the batch took.
        output: The output table written, if any.
        interrupted: True when Ctrl-C stopped the batch (finished rows are kept in the `.partial` file).
        graph: The graph that ran.
        tokens_in: Input tokens of the model calls of the rows run by this call.
        tokens_out: Their output tokens.
        tokens_cached: Of their input tokens, those read from the provider's prompt cache.
        cost: What they cost in USD, at the prices paid (None: no call had a price).
        over_budget: The budget stopped the batch (`BatchOverBudget`).
        llm: With `--llm-batch`: what the provider batch jobs did, and the rows still waiting (`waiting_rows`:
            run the same command again to collect them).
        formula_cells: Cells of the CSV output that a spreadsheet would run as formulas (`=HYPERLINK(...)` from
            a model): written as they are, with a warning, or escaped (`csv_formulas="escape"`).
        revision: The revision of the workflow file as it is now (`runtime.revisions`), which new rows run.
        earlier: Rows of this call that continued their thread on the earlier revision it started on, by revision
            id (`agentmap batch` after an edit, with `--checkpoint`).
        moved: Rows of this call whose thread was moved to `revision` first (`latest`).
    """

    rows: list[RowResult] = field(default_factory=list)
    total: int = 0
    successes: int = 0
    failures: int = 0
    skipped: int = 0
    failed_before: int = 0
    duration_s: float = 0.0
    output: Path | None = None
    interrupted: bool = False
    graph: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    cost: float | None = None
    over_budget: bool = False
    formula_cells: int = 0
    revision: str | None = None
    earlier: dict[str, int] = field(default_factory=dict)
    moved: int = 0
    llm: LLMBatchReport | None = None

    @property
    def success(self) -> bool:
        """True when no row of the output failed: neither in this call nor in an earlier one it skipped."""
        return self.failures == 0 and self.failed_before == 0

    @property
    def failed_rows(self) -> list[RowResult]:
        """The rows that failed."""
        return [r for r in self.rows if not r.success]

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame: inputs, outputs, then the result columns (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError('to_frame() needs pandas: pip install "agentmap[notebook]"') from None
        return pd.DataFrame([r.columns() for r in self.rows])

    def summary(self) -> dict[str, Any]:
        """The counts as a JSON-friendly dict."""
        done = self.successes + self.failures
        return {
            "graph": self.graph,
            "rows": self.total,
            "ran": done,
            "succeeded": self.successes,
            "failed": self.failures,
            "skipped": self.skipped,
            "failed_before": self.failed_before,
            "duration_s": round(self.duration_s, 3),
            "rows_per_s": round(done / self.duration_s, 2) if self.duration_s > 0 else None,
            "output": str(self.output) if self.output else None,
            "interrupted": self.interrupted,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_cached": self.tokens_cached,
            "cost": None if self.cost is None else round(self.cost, 8),
            "formula_cells": self.formula_cells,
            "revision": self.revision,
            "on_earlier_revisions": dict(self.earlier),
            "moved_to_revision": self.moved,
            **({"llm_batch": dict(self.llm.__dict__)} if self.llm is not None else {}),
        }

    def count_revision(self, row: RowResult) -> None:
        """Count the revision a row of this call ran: an earlier one (continued), or moved to `revision`."""
        if row.moved:
            self.moved += 1
        elif row.revision is not None and self.revision is not None and row.revision != self.revision:
            self.earlier[row.revision] = self.earlier.get(row.revision, 0) + 1


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a batch; `result` counts what finished (kept in the `.partial` file)."""

    def __init__(self, result: BatchResult) -> None:
        super().__init__("batch interrupted")
        self.result = result


class BatchOverBudget(BudgetExceeded):
    """The batch reached its budget: rows finished are kept (in `<output>.partial`), the rest did not run.

    Attributes:
        result: What the batch did until then.
    """

    def __init__(self, result: BatchResult, budget: float, spent: float, partial: Path | None) -> None:
        self.result = result
        kept = f"; the rows finished are kept in {partial}" if partial is not None else ""
        super().__init__(
            f"the batch stopped at its ${budget:.4f} budget after spending ${spent:.4f}: "
            f"{result.successes + result.failures} rows ran{kept}",
            hint="run the same command again with a higher --budget to run the rest",
        )
