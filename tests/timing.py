"""Deadlines that scale with the machine: a test waits longer on a busy or slow machine instead of failing.

Every deadline a test sets (how long to wait for a process, a server, a condition) goes through `scaled`: the
seconds it would take on an idle machine, times `factor()`. The factor is `AGENTMAP_TEST_TIME_FACTOR` when set
(say `3` on a slow CI runner), else how busy the machine is now: its one-minute load average per core, at least
1 and at most 10. A deadline only bounds how long a test waits for something that should happen; a test never
asserts how long something took.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["deadline", "factor", "scaled", "until"]

T = TypeVar("T")

_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def factor() -> float:
    """How much longer than on an idle machine a wait may take now (1 to 10)."""
    given = os.environ.get("AGENTMAP_TEST_TIME_FACTOR", "").strip()
    if given:
        return max(1.0, float(given))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return min(10.0, max(1.0, load / _CORES))


def scaled(seconds: float) -> float:
    """`seconds` of an idle machine, on this machine now."""
    return seconds * factor()


def deadline(seconds: float) -> float:
    """The `time.monotonic()` by which something that takes `seconds` on an idle machine must have happened."""
    return time.monotonic() + scaled(seconds)


def until(condition: Callable[[], T | None], timeout: float, message: str, *, every: float = 0.02) -> T:
    """Wait until `condition()` gives something true and return it; fail with `message` when it has not after
    `timeout` seconds (scaled)."""
    end = deadline(timeout)
    while not (found := condition()):
        if time.monotonic() > end:
            raise AssertionError(f"{message} (waited {scaled(timeout):.0f} s)")
        time.sleep(every)
    return found
