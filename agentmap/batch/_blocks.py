"""Lines appended to a file in blocks, each row's line on disk a bounded time after it came (`BlockWriter`).

Writing and syncing a line for every finished row of a batch costs a write and a sync per row; a block of rows
costs one of each. What a block holds back is bounded: the lines waiting are written once `rows` of them wait, or
when a line comes `seconds` or more after the last write, or, when no line comes, by a watcher thread `seconds`
after the first of them came, and at once by `close()`. Each line goes with an item (the row's result) that is
handed back only once the line is on disk: whoever reports a row as done reports only what is written.
"""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path
from typing import Generic, TypeVar

__all__ = ["BLOCK_ROWS", "BLOCK_SECONDS", "BlockWriter"]

BLOCK_ROWS = 256
"""Lines written at once at most (rows a block holds back)."""

BLOCK_SECONDS = 0.2
"""How long a line waits at most before it is written."""

T = TypeVar("T")


class BlockWriter(Generic[T]):
    """Appends lines to `path` in blocks, each written, flushed and synced (`os.fsync`) as one.

    `rows` and `seconds` bound a block (default: `BLOCK_ROWS`, `BLOCK_SECONDS` as they are when it is made; 0 seconds
    writes every line as it comes). `add` and `close` are called from one thread (the batch's); a watcher thread,
    started with the first line that has to wait, writes a block no later line came to write.
    """

    def __init__(self, path: Path, *, rows: int | None = None, seconds: float | None = None) -> None:
        self.path = path
        self._rows = BLOCK_ROWS if rows is None else rows
        self._seconds = BLOCK_SECONDS if seconds is None else seconds
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._lines: list[bytes] = []
        self._waiting: list[T] = []
        self._written: list[T] = []
        self._first = 0.0  # when the first waiting line came
        self._last = -float("inf")  # when the last block was written
        self._file: io.BufferedWriter | None = None
        self._watcher: threading.Thread | None = None
        self._closed = False
        self._failure: BaseException | None = None

    def add(self, line: bytes, item: T) -> list[T]:
        """Append `line` (with its newline); returns the items whose lines are on disk now, not handed back before.

        Raises:
            OSError: A block could not be written (here or by the watcher).
        """
        with self._lock:
            self._raise_failure()
            now = time.monotonic()
            if not self._lines:
                self._first = now
            self._lines.append(line)
            self._waiting.append(item)
            if len(self._lines) >= self._rows or now - self._last >= self._seconds:
                self._write(now)
            elif len(self._lines) == 1:
                self._remind()
            written, self._written = self._written, []
        return written

    def close(self) -> list[T]:
        """Write what waits and stop the watcher; returns the items not handed back before. Closing twice is fine.

        Raises:
            OSError: A block could not be written.
        """
        with self._lock:
            self._closed = True
            self._wake.notify()
            if self._lines and self._failure is None:
                self._write(time.monotonic())
            written, self._written = self._written, []
        if self._watcher is not None:
            self._watcher.join()
            self._watcher = None
        if self._file is not None:
            self._file.close()
            self._file = None
        self._raise_failure()
        return written

    def _remind(self) -> None:
        """Have the watcher write the block that just started, should no later line come to write it."""
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="agentmap-batch-blocks", daemon=True)
            self._watcher.start()
        else:
            self._wake.notify()

    def _watch(self) -> None:
        with self._lock:
            while not self._closed:
                left = self._first + self._seconds - time.monotonic() if self._lines else None
                if left is None or left > 0:
                    self._wake.wait(left)
                    continue
                try:
                    self._write(time.monotonic())
                except BaseException as exc:  # handed to the batch's thread at its next add or close
                    self._failure = exc
                    return

    def _write(self, now: float) -> None:
        """Write the waiting lines as one block (with the lock held)."""
        if self._file is None:
            self._file = self.path.open("ab")
        self._file.write(b"".join(self._lines))
        self._file.flush()
        os.fsync(self._file.fileno())
        # Forgotten only once written: a Ctrl-C before this line has them written again by `close` (a line twice
        # in the file is harmless, its last copy wins), never lost.
        self._lines = []
        self._written.extend(self._waiting)
        self._waiting = []
        self._last = now

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
