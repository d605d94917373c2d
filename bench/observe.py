"""The cost of tracing and drawing, against the same run untraced, measured in one process.

* a 100-node chain invoked with `tracing="file:..."` vs the same chain compiled without tracing (target: at
  most 1.3x for the median invoke); spans are written by OpenTelemetry's batch processor on its own thread,
  so a second figure adds the final flush to all traced runs (every span on disk) and compares the totals;
* drawing the 100-node graph as SVG (reported, no target).

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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
