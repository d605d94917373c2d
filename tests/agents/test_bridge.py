"""The sync/async bridge: one background loop for every call, the caller's context variables kept."""

from __future__ import annotations

import asyncio
import contextvars
import threading

from agentmap.agents._bridge import run_sync

_WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


async def _seen() -> tuple[str, int]:
    await asyncio.sleep(0)
    return _WHO.get(), id(asyncio.get_running_loop())


def test_the_coroutine_sees_the_callers_context_on_one_shared_loop() -> None:
    _WHO.set("main")
    first = run_sync(_seen())
    seen: list[tuple[str, int]] = []

    def other() -> None:
        _WHO.set("worker")
        seen.append(run_sync(_seen()))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert first[0] == "main" and seen[0][0] == "worker"
    assert first[1] == seen[0][1]  # the same loop, so per-loop client pools survive between calls


def test_it_works_while_the_calling_thread_runs_a_loop() -> None:
    async def inside() -> str:
        return run_sync(_seen())[0]  # a notebook cell calling a sync API

    _WHO.set("notebook")
    assert asyncio.run(inside()) == "notebook"
