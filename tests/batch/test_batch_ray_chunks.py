"""Ray chunks grow to about a quarter second of work, so short rows do not pay a Ray task each few rows."""

from __future__ import annotations

from agentmap.batch._ray import _ChunkSizer
from agentmap.batch.rows import RowResult


def _finished(sizer: _ChunkSizer, seconds: float, count: int) -> None:
    list(sizer.watch(iter([RowResult(1, "1-a", {}, True, duration_s=seconds)] * count)))


def test_short_rows_get_bigger_chunks_and_slow_rows_keep_the_chunk_size() -> None:
    short = _ChunkSizer(8)
    assert short.size == 8  # before any row finished: --chunk-size
    _finished(short, 0.001, 16)
    assert short.size == 250
    _finished(short, 0.00001, 10_000)
    assert short.size == 1024  # never more
    slow = _ChunkSizer(8)
    _finished(slow, 1.5, 8)
    assert slow.size == 8  # never fewer than --chunk-size
