"""How `agentmap batch` shows its progress on stderr: a rich bar in a terminal (`BarProgress`), else a line every few
seconds (`LineProgress`). Each is the batch's `Progress` (`agentmap.batch.results`): told the counts, then each row
once it is recorded."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmap._cli_api import RowResult

__all__ = ["BarProgress", "LineProgress"]


class LineProgress:
    """A line on stderr every few seconds, and nothing more (stderr is not a terminal)."""

    def __init__(self, every: float = 5.0) -> None:
        self._every = every
        self._done = self._failed = self._total = 0
        self._started = self._last = time.monotonic()

    def start(self, total: int, skipped: int) -> None:
        self._total = total - skipped
        if skipped:
            sys.stderr.write(f"batch: {skipped} of {total} rows already done; running {self._total}\n")

    def advance(self, result: RowResult) -> None:
        self._done += 1
        self._failed += not result.success
        now = time.monotonic()
        if now - self._last >= self._every:
            self._last = now
            rate = self._done / max(now - self._started, 1e-9)
            sys.stderr.write(f"batch: {self._done}/{self._total} rows, {self._failed} failed, {rate:.1f} rows/s\n")

    def stop(self) -> None:
        sys.stderr.flush()


class BarProgress:
    """A rich progress bar on stderr: rows done, failed, rows/s, ETA.

    The ETA is the rows left at the batch's own rate so far (rows done / time since the first row started), not
    rich's estimate from the last few updates, which rows finishing together (a batch of concurrent rows) send
    far too high: `ETA 0:00:03` with 368 of 400 rows left at 4 rows/s.

    Args:
        clock: Seconds, monotonic (`time.monotonic`; a test gives its own).
        console: Where the bar is drawn (stderr by default).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._failed = 0
        self._cost: float | None = None
        self._clock = clock
        self._progress = Progress(
            TextColumn("batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed[/]"),
            TextColumn("{task.fields[rate]} rows/s"),
            TextColumn("{task.fields[cost]}"),
            TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            console=console or Console(stderr=True),
            transient=False,
            get_time=clock,
        )
        self._task: Any = None
        self._started = clock()

    def start(self, total: int, skipped: int) -> None:
        self._task = self._progress.add_task("rows", total=total - skipped, failed=0, rate="-", cost="", eta="-:--:--")
        self._started = self._clock()
        self._progress.start()

    def advance(self, result: RowResult) -> None:
        from agentmap.cli.render import money

        self._failed += not result.success
        if result.cost is not None:
            self._cost = (self._cost or 0.0) + result.cost
        task = self._progress.tasks[0]
        done = task.completed + 1
        rate = done / max(self._clock() - self._started, 1e-9)
        left = max((task.total or 0) - done, 0)
        cost = money(self._cost) if self._cost is not None else ""
        eta = _clock_time(left / rate)
        self._progress.update(self._task, advance=1, failed=self._failed, rate=f"{rate:.1f}", cost=cost, eta=eta)

    def stop(self) -> None:
        self._progress.stop()


def _clock_time(seconds: float) -> str:
    """`H:MM:SS`, as rich writes elapsed time."""
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
