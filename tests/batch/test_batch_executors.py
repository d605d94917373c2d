"""The async and process executors give the same results as the thread executor."""

from __future__ import annotations

from pathlib import Path

import pytest
from batch_helpers import shout_flow, words

import agentmap
from agentmap.batch import BatchResult

ROWS = words("a", "b", "boom", "d", "e", "f", "g")


def comparable(result: BatchResult) -> list[tuple[object, ...]]:
    """Everything about the rows but their timings."""
    return [(r.row, r.id, r.inputs, r.outputs, r.success, r.error, r.failed_nodes) for r in result.rows]


def test_async_matches_thread(tmp_path: Path) -> None:
    flow = shout_flow(tmp_path)
    threads = agentmap.batch(flow, ROWS, concurrency=3)
    assert comparable(agentmap.batch(flow, ROWS, executor="async", concurrency=3)) == comparable(threads)
    assert (threads.successes, threads.failures) == (6, 1)


@pytest.mark.slow
def test_process_matches_thread(tmp_path: Path) -> None:
    flow = shout_flow(tmp_path)
    threads = agentmap.batch(flow, ROWS)
    processes = agentmap.batch(flow, ROWS, executor="process", workers=2, chunk_size=2)
    assert comparable(processes) == comparable(threads)
