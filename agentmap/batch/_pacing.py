"""Whether a thread batch's rows gain from running on many threads: what the thread executor measures, and decides.

Rows that wait (on a model, a tool, the network, each other) overlap on threads. Rows that only compute do not:
the GIL runs one thread of Python at a time, and many threads taking turns at it cost more CPU than one thread
running the same rows in turn. So the thread executor (`_row_threads.RowThreads`) reads, over windows of wall time,
how busy the batch kept the cores and how many rows it finished (`Meter`, a `Window` per reading), and `Pacing`
says from each window whether rows run on one thread (`narrow`) or on up to `--concurrency` threads (wide).

Rows start on one thread (`RowThreads` makes its `Pacing` narrow where the `Meter` works: its first window tells
whether they wait), and go to one thread when the batch keeps about one core busy over the recent windows
(`COMPUTING`, the GIL's one core: rows compute).
They stay there while the batch keeps that core busy, or finishes rows about as fast as it did on every thread
(rows that wait on something more threads would not speed up, such as a database's one writer), and go back to
every thread when they run at once on more cores (`PARALLEL`), or finish slower than on every thread (`SLOWER`;
or too few rows finished there to tell, `KNOWN`), or none finishes in a window that left the core idle (a row
waits: on the network, on other rows).

Busy is the CPU time of the batch's threads, plus the time its row threads and its own thread were ready to run
but waited for a core (Linux's per-thread scheduler statistics): a machine loaded by other processes slows
computing rows without making them look like waiting ones. The batch's threads are this process's threads but
those that were there before the batch started (its own thread excepted): the threads running rows, and the
helpers their runs start (LangGraph saves a checkpointed run's steps from a thread of its own, started for each
run). A thread waiting for the GIL sleeps: rows taking turns at it keep about one thread running or ready to
run at any time, however loaded the machine. (Many threads waiting on the network or taking turns
at the GIL each wake now and then, and on a loaded machine wait for a core each time: waiting rows can look busy
on every thread; they are then tried on one thread, where their pace tells.) Where the statistics cannot be read
(not Linux, or a /proc that hides them) nothing is measured and rows stay on every thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "COMPUTING",
    "FIRST_PATIENCE",
    "KNOWN",
    "LASTING",
    "MOST_PATIENCE",
    "PARALLEL",
    "SLOWER",
    "WINDOW",
    "Meter",
    "Pacing",
    "Rate",
    "Window",
    "busy_seconds",
]

WINDOW = 0.2
"""Seconds of wall time a window lasts at least."""

COMPUTING = 0.85
"""The batch keeping at least this much of a core busy computes (taking turns at the GIL, on every thread)."""

PARALLEL = 1.3
"""The threads running rows (and the batch's own) using more than this many cores of CPU run at once (rows in code
that releases the GIL): more threads help."""

SLOWER = 0.9
"""Rows on one thread finishing at less than this share of the pace they had on every thread lose time there."""

KNOWN = 8
"""Rows (counted as `Rate` counts them) a pace on every thread rests on before rows on one thread are held to it."""

KEEP = 0.8
"""How much of the rows and seconds counted so far a pace keeps at each window (the recent windows weigh most)."""

FIRST_PATIENCE = 2.0
"""Seconds rows stay on every thread after one narrow stint that did not last (before rows are tried on one
thread again); doubled after each such stint, up to `MOST_PATIENCE`."""

MOST_PATIENCE = 60.0

LASTING = 5 * WINDOW
"""A narrow stint at least this long was right while it lasted: the rows changed, and the patience starts over."""


@dataclass(frozen=True)
class Window:
    """What the batch did over a stretch of wall time.

    Attributes:
        wall: Seconds the window lasted.
        ran: Seconds the batch's threads ran (their CPU time), summed over the threads.
        queued: Seconds its row threads and its own thread were ready to run but waited for a core, summed.
        rows: Rows finished within it.
        own: Of `ran`, the seconds its row threads and its own thread ran (None: all of it). Only those tell that
            rows run at once: a thread their runs start, or one the process started meanwhile for something else,
            may run beside them.
    """

    wall: float
    ran: float
    queued: float = 0.0
    rows: int = 0
    own: float | None = None

    @property
    def busy(self) -> float:
        """Seconds the batch's threads were busy: running, or ready to run and waiting for a core."""
        return self.ran + self.queued

    @property
    def running(self) -> float:
        """How many cores the threads running rows and the batch's own thread ran on, on average."""
        ran = self.ran if self.own is None else self.own
        return ran / self.wall if self.wall > 0 else 0.0


@dataclass
class Rate:
    """How much of something (rows finished, seconds a core was busy) a second of wall time saw over the recent
    windows (each window weighs `KEEP` times the next one)."""

    rows: float = 0.0
    wall: float = 0.0

    def add(self, rows: float, wall: float) -> None:
        """Count `rows` seen over `wall` seconds (a window)."""
        self.rows, self.wall = self.rows * KEEP + rows, self.wall * KEEP + wall

    @property
    def per_second(self) -> float:
        """What a second saw (0 before any window)."""
        return self.rows / self.wall if self.wall > 0 else 0.0


@dataclass
class Pacing:
    """Whether rows run on one thread, decided window after window (see the module's docstring); a narrow stint
    that did not last makes rows stay on every thread longer before the next.

    Attributes:
        narrow: Rows run on one thread.
        patience: Seconds rows stay on every thread before they may go to one thread again.
        since: When the current way began (on the clock `after` is given).
        wide: The pace of rows on every thread, over the last windows there.
        alone: The pace of rows on one thread, over the windows of this stint.
        busy: The cores the batch kept busy, over the recent windows since rows last went to every thread (what
            `COMPUTING` is held to). Not one window's: Linux counts a thread's wait for a core when the wait ends,
            so on a loaded machine a window ending while the one thread waits reads a core partly idle, and the
            next one more than a core. As rows go to one thread, what it counted stops at one core (threads
            waiting on the network, each waiting for a core as it wakes, can count more): a row waiting there
            shows within a window.
        cores: What `busy` read after the last window (for the log).
    """

    narrow: bool = False
    patience: float = 0.0
    since: float = 0.0
    wide: Rate = field(default_factory=Rate)
    alone: Rate = field(default_factory=Rate)
    busy: Rate = field(default_factory=Rate)
    cores: float = 0.0

    def after(self, window: Window, now: float) -> bool:
        """Whether rows run on one thread after `window`, which ended at `now`."""
        self.busy.add(window.busy, window.wall)
        self.cores = self.busy.per_second
        computing, parallel = self.cores >= COMPUTING, window.running >= PARALLEL
        if not self.narrow:
            self.wide.add(window.rows, window.wall)
            if computing and not parallel and now - self.since >= self.patience:
                self.narrow, self.since, self.alone = True, now, Rate()
                self.busy.rows = min(self.busy.rows, self.busy.wall)
            return self.narrow
        self.alone.add(window.rows, window.wall)
        known = self.wide.rows >= KNOWN  # else as slower
        slower = not known or self.alone.per_second < SLOWER * self.wide.per_second
        if parallel or (not computing and (window.rows == 0 or slower)):
            lasted = now - self.since >= LASTING
            self.patience = FIRST_PATIENCE if lasted else min(MOST_PATIENCE, max(FIRST_PATIENCE, 2 * self.patience))
            self.narrow, self.since, self.wide, self.busy = False, now, Rate(), Rate()
        return self.narrow


def busy_seconds(thread: int) -> tuple[float, float] | None:
    """Seconds the thread of this process with native id `thread` has run, and waited for a core, since it
    started (None: not readable here)."""
    try:
        with open(f"/proc/self/task/{thread}/schedstat", "rb") as handle:
            ran, queued, _ = handle.read().split()
        return int(ran) / 1e9, int(queued) / 1e9
    except (OSError, ValueError):
        return None


class Meter:
    """Reads, window after window, how busy the batch kept the cores; `working` is False where threads cannot be
    measured (then it reads nothing).

    Made in the batch's own thread as the batch starts: the process's other threads then are not the batch's.
    """

    def __init__(self, length: float = WINDOW) -> None:
        self.length = length
        own = threading.get_native_id()
        first = busy_seconds(own)
        self.working = first is not None
        self._seen: dict[int, tuple[float, float]] = {own: first} if first is not None else {}
        self._others: dict[int, float] = {}  # the threads that are not the batch's: CPU seconds they ran so far
        for thread in _threads() if first is not None else ():
            if thread != own and (busy := busy_seconds(thread)) is not None:
                self._others[thread] = busy[0]
        self._cpu = time.process_time()
        self.started = time.monotonic()

    def due(self, now: float) -> bool:
        """Whether the current window has lasted long enough to be read."""
        return self.working and now - self.started >= self.length

    def left(self, now: float) -> float | None:
        """Seconds until the current window may be read (None when nothing is measured)."""
        return max(0.0, self.started + self.length - now) if self.working else None

    def read(self, threads: Iterable[int], rows: int, now: float) -> Window | None:
        """The window ending `now`, in which `rows` rows finished; `threads` (native ids) are the batch's row
        threads and its own, whose waits for a core count (a thread not seen before started within the window). A
        new window starts. None, and nothing read from then on, when one of `threads` cannot be read."""
        cpu = time.process_time()
        ran = cpu - self._cpu
        for other, had in list(self._others.items()):
            busy = busy_seconds(other)
            if busy is None:  # ended
                del self._others[other]
                continue
            ran -= max(0.0, busy[0] - had)  # (a number the system gave again to a new thread: not below 0)
            self._others[other] = busy[0]
        own = queued = 0.0
        for thread in threads:
            busy = busy_seconds(thread)
            if busy is None:
                self.working = False
                return None
            before = self._seen.get(thread, (0.0, 0.0))
            own, queued = own + busy[0] - before[0], queued + busy[1] - before[1]
            self._seen[thread] = busy
        window = Window(now - self.started, max(0.0, ran), queued, rows, own)
        self._cpu, self.started = cpu, now
        return window


def _threads() -> list[int]:
    """The native ids of this process's threads (none where /proc cannot be read)."""
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except (OSError, ValueError):
        return []
