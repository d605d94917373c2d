"""What a command changes for the whole process, put back when it ends: the garbage collector, signal handlers, logging.

Commands run in-process (the tests run many per process, a notebook may run one), so each change here is a
context manager that restores what it found.
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["collect_from_here", "collector_off", "loggers_kept", "signal_handlers"]

_LOGGERS = ("agentmap", "agentmap.server")
"""The loggers commands configure (`--debug`, the log level setting, `batch` and `serve`)."""


@contextmanager
def loggers_kept() -> Iterator[None]:
    """AgentMap's loggers as they were (level, handlers, propagation) once the command ends."""
    saved = [
        (logger, logger.level, list(logger.handlers), logger.propagate) for logger in map(logging.getLogger, _LOGGERS)
    ]
    try:
        yield
    finally:
        for logger, level, handlers, propagate in saved:
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate = propagate


@contextmanager
def collector_off(*, exiting: bool = False) -> Iterator[None]:
    """The garbage collector off while the command starts; afterwards as it was, and nothing left frozen.

    Start-up (imports, reading and compiling the workflow) allocates many long-lived objects and no garbage
    worth collecting; with the collector on, it scans LangGraph's large heap again and again. `exiting`: the
    process ends with the command, so what start-up froze stays frozen (unfrozen, the interpreter's last
    collection would scan it all once more: about a third of `agentmap run`'s time above LangGraph's).
    """
    was_enabled = gc.isenabled()
    was_frozen = gc.get_freeze_count()
    gc.disable()
    try:
        yield
    finally:
        if not was_frozen and not exiting:
            gc.unfreeze()
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def collect_from_here() -> None:
    """Keep what start-up built out of the collections to come (`gc.freeze`) and turn the collector on.

    Inside `collector_off` (every command is, through `agentmap.cli.main`), which puts both back.
    """
    gc.freeze()
    gc.enable()


@contextmanager
def signal_handlers(handlers: Mapping[int, Any]) -> Iterator[None]:
    """Install `handlers` (signal number -> handler) while the block runs, then the ones found before.

    Only the main thread may set handlers: elsewhere (a command run from a worker thread) nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = [(signum, signal.getsignal(signum)) for signum in handlers]
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, previous in saved:
            if previous is not None:
                signal.signal(signum, previous)
