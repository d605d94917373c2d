"""The cost of tracing and drawing, against the same run untraced, measured in one process.

* a 100-node chain invoked with `tracing="file:..."` vs the same chain compiled without tracing (target: at
  most 1.3x for the median invoke); spans are written by OpenTelemetry's batch processor on its own thread,
  so a second figure adds the final flush to all traced runs (every span on disk) and compares the totals;
* drawing the 100-node graph as SVG (reported, no target);
* a batch of `--rows` rows of the hello-world graph (thread executor) with `tracing="file:..."` vs without
  (reported, no target); the traced batch includes its final flush, so every span is on disk.

Traced and untraced runs alternate, both after a warm-up, with the garbage collector in the same state;
each figure prints min/median/max over the rounds. Run: `python bench/observe.py [--repeat N]`.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from core import write_chain

import agentmap
from agentmap.observe import draw_graph


def main() -> int:
    """Print the ratios; exit 1 if tracing costs more than its target."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15, help="rounds (each: one traced and one untraced run)")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--rows", type=int, default=200, help="rows of the traced and untraced batches")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        csv = Path(folder) / "chain.csv"
        write_chain(csv, args.nodes)
        plain = agentmap.compile(csv)
        traced = agentmap.compile(csv, tracing=f"file:{Path(folder) / 'spans.jsonl'}")
        state = {"k0": "x"}
        for app in (plain, traced):
            app.invoke(state)  # warm both
        gc.collect()
        times: dict[str, list[float]] = {"plain": [], "traced": []}
        for round_ in range(args.repeat):
            order = [("plain", plain), ("traced", traced)]
            for name, app in order if round_ % 2 == 0 else reversed(order):
                started = time.perf_counter()
                app.invoke(state)
                times[name].append(time.perf_counter() - started)
        started = time.perf_counter()
        for observer in traced.observers:
            observer.flush()  # type: ignore[attr-defined]
        flushing = time.perf_counter() - started
        lines = (Path(folder) / "spans.jsonl").read_text(encoding="utf-8").count("\n")
        started = time.perf_counter()
        svg = draw_graph(plain)
        drawing = time.perf_counter() - started

    def show(name: str) -> str:
        values = times[name]
        low, mid, high = (v * 1000 for v in (min(values), statistics.median(values), max(values)))
        return f"min {low:7.2f}  median {mid:7.2f}  max {high:7.2f} ms"

    ratio = statistics.median(times["traced"]) / statistics.median(times["plain"])
    ok = ratio <= 1.3
    print(f"{args.nodes}-node invoke, untraced              {show('plain')}")
    print(f"{args.nodes}-node invoke, --trace file: ({lines} spans) {show('traced')}")
    print(f"ratio traced/untraced (median) {ratio:5.2f}x  target <= 1.30x  {'ok' if ok else 'MISSED'}")
    amortised = (sum(times["traced"]) + flushing) / sum(times["plain"])
    print(f"all traced runs plus the final flush / all untraced runs (every span written): {amortised:5.2f}x")
    print(f"drawing the {args.nodes}-node graph as SVG: {drawing * 1000:.0f} ms ({len(svg) // 1024} KiB)")
    batch_ratio(max(3, args.repeat // 3), args.rows)
    return 0 if ok else 1


def batch_ratio(repeat: int, rows: int) -> None:
    """A traced batch against the same batch untraced, alternating, after a warm-up of each."""
    hello = Path(__file__).resolve().parents[1] / "graphs" / "hello_world.csv"
    table = [{"name": f"n{i}"} for i in range(rows)]
    times: dict[str, list[float]] = {"plain": [], "traced": []}
    with tempfile.TemporaryDirectory() as folder:
        options = {"plain": {}, "traced": {"tracing": f"file:{Path(folder) / 'batch.jsonl'}"}}
        for name in options:
            agentmap.batch(hello, table[:10], **options[name])  # type: ignore[arg-type]
        for round_ in range(repeat):
            order = ["plain", "traced"] if round_ % 2 == 0 else ["traced", "plain"]
            for name in order:
                started = time.perf_counter()
                agentmap.batch(hello, table, **options[name])  # type: ignore[arg-type]
                times[name].append(time.perf_counter() - started)
    for name in ("plain", "traced"):
        values = [rows / t for t in times[name]]
        low, mid, high = min(values), statistics.median(values), max(values)
        print(f"batch of {rows} rows, {name:6}  rows/s: min {low:7.0f}  median {mid:7.0f}  max {high:7.0f}")
    ratio = statistics.median(times["traced"]) / statistics.median(times["plain"])
    print(f"batch time traced/untraced (median of {repeat}) {ratio:5.2f}x (no target)")


if __name__ == "__main__":
    sys.exit(main())
