"""What a safe `csv_writer` append costs against a plain, unsafe append, measured in one run.

Ours: `CSVWriterAgent.run` appending one row to a file of N rows (read, rewrite to a temporary file,
fsync, rename, under the file's lock). Baselines: `open(path, "a")` + `csv.writer.writerow` of the same row
(no lock, a crash can tear the line), without and with an fsync. Both alternate on warm imports with GC off; prints
min/median/max per append and the ratio of medians. Run: `python bench/storage.py [repeats]`.
"""

from __future__ import annotations

import csv
import gc
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentmap.agents.base import AgentEnvironment
from agentmap.runtime.tracking import ExecutionTracker
from agentmap.storage import CSVWriterAgent

ROW = {"id": "x", "name": "Ada", "city": "London"}


def _seed(path: Path, rows: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(ROW)
        writer.writerows([str(i), f"name{i}", "Paris"] for i in range(rows))


def _ours(folder: Path) -> Callable[[], None]:
    agent = CSVWriterAgent("W", "ours.csv", {"input_fields": list(ROW)}, logging.getLogger("bench"), ExecutionTracker())
    agent.environment = AgentEnvironment(base_dir=folder)
    return lambda: agent.run(dict(ROW)) and None


def _baseline(folder: Path, durable: bool) -> Callable[[], None]:
    path = folder / "data" / ("synced.csv" if durable else "plain.csv")

    def append() -> None:
        with path.open("a", newline="", encoding="utf-8") as out:
            csv.writer(out).writerow(ROW.values())
            if durable:
                out.flush()
                os.fsync(out.fileno())

    return append


def main(repeats: int) -> None:
    gc.disable()
    for rows in (100, 10_000):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            _seed(folder / "data" / "ours.csv", rows)
            _seed(folder / "data" / "plain.csv", rows)
            _seed(folder / "data" / "synced.csv", rows)
            fns = {"ours": _ours(folder), "baseline": _baseline(folder, False), "fsynced": _baseline(folder, True)}
            times: dict[str, list[float]] = {name: [] for name in fns}
            for fn in fns.values():
                fn()  # warm
            for _ in range(repeats):
                for name, fn in fns.items():  # alternate
                    start = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - start)
        for name, values in times.items():
            print(
                f"{rows:>6} rows  {name:<8} min {min(values) * 1e3:8.3f} ms  "
                f"median {statistics.median(values) * 1e3:8.3f} ms  max {max(values) * 1e3:8.3f} ms"
            )
        for base in ("baseline", "fsynced"):
            ratio = statistics.median(times["ours"]) / statistics.median(times[base])
            print(f"{rows:>6} rows  ratio ours/{base} (median): {ratio:.1f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
