"""What a batch changes in its own process while it runs, and puts back: `os._exit`, the resource tracker's start.

Both are process-wide, so each is a `_Swap`: replaced while at least one batch needs it, put back after the last.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

__all__ = ["ProcessExit", "exits_stop_the_batch", "quiet_resource_tracker"]


class ProcessExit(BaseException):
    """Raised instead of ending the process when a row's code calls `os._exit` during an in-process batch."""

    def __init__(self, status: int) -> None:
        super().__init__(f"os._exit({status})")
        self.status = status
        self.row: int | None = None


_ABSENT = object()


class _Swap:
    """Attributes replaced while at least one batch needs them, and put back after the last (batches may overlap)."""

    def __init__(self, replacements: Callable[[], list[tuple[Any, str, Any]]]) -> None:
        self._replacements = replacements  # (object, attribute, value), built at first use
        self._saved: list[tuple[Any, str, Any]] = []
        self._users = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with self._lock:
            if not self._users:
                replacements = self._replacements()
                self._saved = [(owner, name, vars(owner).get(name, _ABSENT)) for owner, name, _ in replacements]
                for owner, name, value in replacements:
                    setattr(owner, name, value)
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if not self._users:
                    for owner, name, value in self._saved:
                        if value is _ABSENT:
                            delattr(owner, name)
                        else:
                            setattr(owner, name, value)


def _exit_in_a_row(status: int) -> NoReturn:
    raise ProcessExit(status)


exits_stop_the_batch = _Swap(lambda: [(os, "_exit", _exit_in_a_row)])
"""While rows run in this process, `os._exit` raises `ProcessExit` in the thread that calls it.

A row that ended the process would end the command with the code it chose and no word, its journal unclosed.
Raised instead, it stops the batch the way a dead worker process stops a process batch.
"""


def _quiet_tracker_start() -> list[tuple[Any, str, Any]]:
    """multiprocessing's resource tracker started (and restarted) with stderr on /dev/null.

    The tracker writes only its own bookkeeping on the stderr it inherits: a warning about leaked semaphores when
    the batch's process was killed (on the user's terminal, after the command has gone), and a raw KeyError
    traceback for each semaphore the pool releases when the tracker itself was killed and started again mid-batch.
    Nothing there is the user's to act on: the pool unlinks its semaphores itself. Only the moment of a start has
    stderr redirected (a few milliseconds).
    """
    from multiprocessing import resource_tracker

    tracker: Any = resource_tracker._resource_tracker
    start = type(tracker).ensure_running

    def ensure_running() -> None:
        fd = getattr(tracker, "_fd", None)
        if fd is not None and tracker._check_alive():
            return
        saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 2)
            start(tracker)  # also warns, on that stderr, when it restarts a dead tracker
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(null)

    # Its register and unregister call the tracker's method; the fork server calls the module's bound copy.
    return [(tracker, "ensure_running", ensure_running), (resource_tracker, "ensure_running", ensure_running)]


quiet_resource_tracker = _Swap(_quiet_tracker_start)
