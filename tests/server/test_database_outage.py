"""Replicas whose PostgreSQL goes away for 10 s and comes back: no accepted run is lost or run twice."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from server_helpers import make_project, serving

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow


def _eventually(check: Callable[[], Any], seconds: float) -> Any:
    """`check()`'s value once it returns without a connection error (the database may still be coming back)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return check()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _ended(client: Any, thread_id: str) -> list[dict[str, Any]]:
    """The thread's runs once none is pending or running (raises until then, for `_eventually`)."""
    listed: list[dict[str, Any]] = client.runs.list(thread_id)
    if any(r["status"] in ("pending", "running") for r in listed):
        raise AssertionError(f"still running: {listed}")
    return listed


def test_runs_accepted_before_a_ten_second_outage_each_finish_once(
    tmp_path: Path, postgres_with_outage: tuple[str, Callable[[float], None]]
) -> None:
    url, outage = postgres_with_outage
    folder = make_project(tmp_path / "flows")
    with (
        serving(folder, checkpoint=url, lease=3.0) as a,
        serving(folder, checkpoint=url, lease=3.0) as b,
        sdk.get_sync_client(url=a, timeout=30) as on_a,
        sdk.get_sync_client(url=b, timeout=30) as on_b,
    ):
        threads = [on_a.threads.create()["thread_id"] for _ in range(4)]
        runs = [on_a.runs.create(t, "Slow", input={"topic": t}) for t in threads]
        outage(10.0)  # while the runs execute: every connection of both replicas is cut for 10 s
        for thread_id, run in zip(threads, runs, strict=True):
            values = _eventually(functools.partial(on_b.runs.join, thread_id, run["run_id"]), 90)
            listed = _eventually(functools.partial(_ended, on_a, thread_id), 60)  # a replica may still be writing it
            assert values.get("third") == "rested", (values, listed)
            assert [(r["run_id"], r["status"]) for r in listed] == [(run["run_id"], "success")]  # once, not twice
