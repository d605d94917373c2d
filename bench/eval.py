"""Benchmark the evaluation pipeline; prints ratios measured in this run.

1. `eval run` of 100 single-turn scenarios against an agent that waits 50 ms: `--concurrency 10` must be at
   least 7x faster than `--concurrency 1`.
2. `eval score` of 10,000 logs must take at most 3x the time of merely reading the files.

Run: `.venv/bin/python bench/eval.py`
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agentmap.contracts.conversation import ConversationLog, RunMetadata, Turn
from agentmap.interface.eval_runner import run_eval
from agentmap.interface.evaluate import score_logs
from agentmap.interface.logs import format_log
from agentmap.interface.manifest import Manifest, ManifestEntry, write_manifest
from agentmap.interface.scenarios import Scenario, ScenarioTurn


async def _waiting_agent(prompt: str, **_: Any) -> str:
    await asyncio.sleep(0.05)
    return f"Answer to {prompt}"


def bench_run(folder: Path) -> float:
    scenarios = [Scenario(name=f"s{i}", turns=(ScenarioTurn(turn=1, message=f"question {i}"),)) for i in range(100)]
    times = {}
    for concurrency in (1, 10):
        started = time.perf_counter()
        summary = asyncio.run(
            run_eval(scenarios, _waiting_agent, folder / f"c{concurrency}", concurrency=concurrency, progress=False)
        )
        times[concurrency] = time.perf_counter() - started
        assert len(summary.outcomes) == 100
    ratio = times[1] / times[10]
    print(
        f"eval run, 100 scenarios x 50 ms: concurrency 1 {times[1]:.2f}s, concurrency 10 {times[10]:.2f}s "
        f"-> {ratio:.1f}x faster (target >= 7x) {'OK' if ratio >= 7 else 'MISSED'}"
    )
    return ratio


def bench_score(folder: Path, count: int = 10_000) -> float:
    start = datetime(2025, 1, 1)
    scenarios: dict[str, Scenario] = {}
    entries = []
    for i in range(count):
        name = f"s{i % 500}"
        scenarios.setdefault(
            name,
            Scenario(
                name=name,
                turns=(
                    ScenarioTurn(turn=1, message="Hello", must_include=("hello",)),
                    ScenarioTurn(turn=2, message="Can you help?", must_not_include=("error",)),
                ),
            ),
        )
        stamp = start + timedelta(seconds=i)
        turns = (
            Turn(role="user", timestamp=stamp, text="Hello"),
            Turn(role="assistant", timestamp=stamp, text="Hello! How can I help you today?"),
            Turn(role="user", timestamp=stamp, text="Can you help?"),
            Turn(
                role="assistant",
                timestamp=stamp,
                text="Yes.\nHere is a longer reply over\nseveral lines, with ünïcode ✓."
                if i % 7
                else "I'm sorry, but I can't help with that.",
            ),
        )
        meta = RunMetadata(
            session_id=f"b{i:05d}", mode="synthetic", scenario=name, max_turns=2, stop_reason="completed"
        )
        log = f"b{i:05d}.log"
        (folder / log).write_text(format_log(ConversationLog(metadata=meta, turns=turns)), encoding="utf-8")
        entries.append(ManifestEntry(log=log, scenario=name, run=i // 500 + 1))
    write_manifest(folder, Manifest(runs=entries, scenarios=scenarios))

    def read_only() -> None:
        for name in sorted(e.name for e in os.scandir(folder) if e.name.endswith(".log")):
            with open(folder / name, encoding="utf-8-sig") as handle:
                handle.read()

    read_only()  # warm the page cache for both measurements
    reads, scores = [], []
    for _ in range(5):  # interleaved, best of five: the machine is shared
        reads.append(_timed(read_only))
        scores.append(_timed(lambda: score_logs(folder)))
    best_read, best_score = min(reads), min(scores)
    report = score_logs(folder)
    assert len(report.runs) == count
    ratio = best_score / best_read
    print(
        f"eval score, {count} logs: reading {best_read:.2f}s, scoring {best_score:.2f}s "
        f"-> {ratio:.2f}x reading (target <= 3x) {'OK' if ratio <= 3 else 'MISSED'}"
    )
    return ratio


def _timed(work: Any) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main() -> None:
    """Run both benchmarks in a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bench_run(root / "run")
        (root / "score").mkdir()
        bench_score(root / "score")


if __name__ == "__main__":
    main()
