"""The thread executor: rows on up to `--concurrency` threads of the batch's process, fed from a queue, or on one
of them while that costs less (`_pacing.py`: rows that only compute take turns at the GIL).

Waking the batch's thread costs more than its work: it runs on the other core, so the GIL and every object a row
made cross between the cores each time (on a 2-core machine, the 5-node chain of `bench/batch.py` cost 5-15% more
CPU on one row thread woken for each row than in the batch's own thread). So while rows run on one thread, the
batch's thread takes their results when that thread has run every row handed out (up to `AHEAD` of them), when a
row raised, and at least every `HANDOVER` seconds (the rows finished before one that waits long do not wait with
it); while rows run on every thread, as each row ends.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import NamedTuple

from agentmap.agents.base import TRACE
from agentmap.batch._pacing import Meter, Pacing
from agentmap.batch._process_state import ProcessExit
from agentmap.batch.rows import Job, RowResult, RowRunner

__all__ = ["AHEAD", "HANDOVER", "RowThreads", "run_row", "threads"]

_logger = logging.getLogger("agentmap.batch")

AHEAD = 64
"""Rows handed out at once while rows run on one thread (on every thread: twice `--concurrency`)."""

HANDOVER = 0.05
"""Seconds at most between two looks of the batch's thread at the rows finished on one thread."""


class _Finished(NamedTuple):
    """A row's end on its thread: its result, or what its run raised."""

    result: RowResult | None
    failure: BaseException | None


def run_row(runner: RowRunner, job: Job) -> RowResult:
    """Run one row, naming it in the `ProcessExit` it may raise."""
    try:
        return runner.run(job)
    except ProcessExit as exited:
        exited.row = job[0]
        raise


def threads(runner: RowRunner, jobs: Iterator[Job], concurrency: int) -> Iterator[RowResult]:
    """Run `jobs` on up to `concurrency` threads (in the calling thread with 1); yield results as rows finish."""
    if concurrency == 1:
        for job in jobs:
            yield run_row(runner, job)
        return
    yield from RowThreads(runner, concurrency).results(jobs)


class RowThreads:
    """Up to `concurrency` threads taking rows from a queue and handing back their results in a deque, waking the
    batch's thread as the module's docstring says (a pool's `submit` made a future, a work item and a callback per
    row).

    Rows go to every thread while that helps, else to one (`_pacing.py`): rows that only compute take turns at
    the GIL, and many threads taking turns cost more CPU than one. The others wait, parked, until rows wait again.
    The batch's thread only hands out rows and takes results, so it sees a row that waits on one thread (on the
    network, or on other rows) within a window, and gives rows every thread again.
    """

    def __init__(self, runner: RowRunner, concurrency: int) -> None:
        self.runner, self.concurrency = runner, concurrency
        self._todo: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._finished: deque[_Finished] = deque()
        self._woken = threading.Event()  # set when the batch's thread is to look at `_finished`
        self._threads: list[threading.Thread] = []
        self._pending = 0
        self._finishing = 0  # rows taken since the window began
        self._first = 0  # rows the first thread finished (on one thread, the rows of its pace: not those others ran)
        self._first_seen = 0
        self._gate = threading.Condition()
        self._meter = Meter()  # made in the batch's thread, which reads it too
        # Rows start on one thread where the meter tells within a window that they wait (then they get every thread)
        self._pacing = Pacing(narrow=self._meter.working, since=time.monotonic())
        self._active = 1 if self._pacing.narrow else concurrency  # the threads that take rows: 0 to `_active - 1`

    def results(self, jobs: Iterator[Job]) -> Iterator[RowResult]:
        """Run `jobs`, at most `2 * concurrency` of them handed out at once (`AHEAD` on one thread); yield the results
        as rows finish."""
        try:
            for job in jobs:
                self._put(job)
                if self._pending >= (AHEAD if self._active == 1 else 2 * self.concurrency):
                    yield self._take()
            while self._pending:
                yield self._take()
        finally:
            self.stop(wait=not self._pending)

    def _put(self, job: Job) -> None:
        """Queue a row; a thread is started while fewer run than rows are in flight (at most those taking rows)."""
        self._todo.put(job)
        self._pending += 1
        if len(self._threads) < min(self._pending, self._active):
            self._start()

    def _start(self) -> None:
        thread = threading.Thread(
            target=self._work, args=(len(self._threads),), name=f"agentmap-batch_{len(self._threads)}"
        )
        thread.start()
        self._threads.append(thread)

    def _take(self) -> RowResult:
        """The next row to finish (what its run raised, such as a row's `os._exit`, is raised here)."""
        self._pending -= 1
        while not self._finished:  # a window with no row taken is read all the same
            self._woken.wait(self._patience())
            self._woken.clear()  # (a row's thread adds its row before it wakes this one: none is missed)
            self._pace()
        result, failure = self._finished.popleft()
        self._finishing += 1
        self._pace()
        if failure is not None:
            raise failure
        assert result is not None
        return result

    def _patience(self) -> float | None:
        """Seconds the batch's thread waits for a row's thread to wake it (None: until woken)."""
        left = self._meter.left(time.monotonic())
        if self._active > 1:
            return left
        return HANDOVER if left is None else min(left, HANDOVER)

    def _pace(self) -> None:
        """At the end of a window: rows on one thread or on every thread, as `Pacing` says from it."""
        now = time.monotonic()
        if not self._meter.due(now):
            return
        threads = [threading.get_native_id(), *(t.native_id for t in self._threads if t.native_id is not None)]
        first = self._first
        alone, self._first_seen = first - self._first_seen, first
        window = self._meter.read(threads, alone if self._active == 1 else self._finishing, now)
        self._finishing = 0
        if window is None:  # not measurable here: every thread, as they start
            self._widen()
            return
        narrow = self._pacing.after(window, now)
        change = narrow != (self._active == 1)
        level = logging.DEBUG if change else TRACE  # each change; every window at TRACE
        if _logger.isEnabledFor(level):
            way, threads_now = ("go to" if change else "stay on"), 1 if narrow else self.concurrency
            message = "batch: rows %s %d thread(s) (%.2f cores busy, %.2f running rows, %d rows in %.2f s)"
            cores = self._pacing.cores
            _logger.log(level, message, way, threads_now, cores, window.running, window.rows, window.wall)
        if narrow:
            self._active = 1
        else:
            self._widen()

    def _widen(self) -> None:
        """Every thread takes rows; those the rows handed out need are started."""
        if self._active == self.concurrency:
            return
        with self._gate:
            self._active = self.concurrency
            self._gate.notify_all()
        while len(self._threads) < min(self._pending + 1, self.concurrency):
            self._start()

    def stop(self, *, wait: bool) -> None:
        """Drop the rows not started (on Ctrl-C: rows running finish in the background, unrecorded) and end the
        threads once their row is done; `wait` for them."""
        with contextlib.suppress(queue.Empty):
            while True:
                self._todo.get_nowait()
        with self._gate:
            self._active = self.concurrency
            self._gate.notify_all()
        for _ in self._threads:
            self._todo.put(None)
        if wait:
            for thread in self._threads:
                thread.join()

    def _work(self, index: int) -> None:
        while True:
            if index >= self._active:  # rows go to fewer threads: wait until they go to this one again
                with self._gate:
                    self._gate.wait_for(lambda: index < self._active)
            if (job := self._todo.get()) is None:
                return
            try:
                finished = _Finished(run_row(self.runner, job), None)
            except BaseException as exc:  # handed to the batch's thread
                finished = _Finished(None, exc)
            self._finished.append(finished)
            if index == 0:
                self._first += 1
            if self._active > 1 or finished.failure is not None or self._todo.empty():
                self._woken.set()
