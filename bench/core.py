"""Core speed and memory against a hand-written LangGraph yardstick, measured in one run.

The yardstick is a `StateGraph` of N nodes, each a function copying one field, on the same LangGraph. Each
figure times AgentMap and the yardstick in alternation (pairs), so a busy machine slows both sides alike,
and prints the ratio (ours / yardstick) as min / median / max over the pairs next to its target. Both sides
run with the same garbage-collector settings (collected before each timing, enabled during it).

Run: `python bench/core.py [--pairs N]`.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

import agentmap


def write_chain(path: Path, n: int) -> Path:
    rows = ["GraphName,Node,AgentType,Input_Fields,Output_Field,Edge"]
    for i in range(n):
        nxt = f"n{i + 1}" if i + 1 < n else ""
        rows.append(f"Chain,n{i},echo,k{i},k{i + 1},{nxt}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def yardstick_build(n: int) -> Any:
    state = TypedDict("State", {f"k{i}": Any for i in range(n + 1)}, total=False)  # type: ignore[operator]
    builder = StateGraph(state)

    def copier(i: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
        src, dst = f"k{i}", f"k{i + 1}"

        def node(s: dict[str, Any]) -> dict[str, Any]:
            return {dst: {src: s[src]}}  # what an echo node writes: its inputs as a dict

        return node

    for i in range(n):
        builder.add_node(f"n{i}", copier(i))
        builder.add_edge(START if i == 0 else f"n{i - 1}", f"n{i}")
    builder.add_edge(f"n{n - 1}", END)
    return builder.compile()


def timed(fn: Callable[[], Any], inner: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def pairs(ours: Callable[[], Any], base: Callable[[], Any], n: int, inner: int = 1) -> list[float]:
    """Ratios ours/base of `n` alternating timings (after one warm-up of each)."""
    ours()
    base()
    ratios = []
    for i in range(n):
        if i % 2:  # alternate which side goes first
            b, o = timed(base, inner), timed(ours, inner)
        else:
            o, b = timed(ours, inner), timed(base, inner)
        ratios.append(o / b)
    return ratios


def report(label: str, ratios: list[float], target: float | None, *, at_least: bool = False) -> bool:
    median = statistics.median(ratios)
    figures = f"{label:<62} {min(ratios):5.2f} / {median:5.2f} / {max(ratios):5.2f}x  "
    if target is None:
        print(figures + "(no target)")
        return True
    ok = median >= target if at_least else median <= target
    sign = ">=" if at_least else "<="
    print(figures + f"(target {sign} {target}x) {'OK' if ok else 'MISSED'}")
    return ok


def peak(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    fn()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=7, help="alternating pairs per figure (default 7)")
    n = parser.parse_args().pairs
    tmp = Path(tempfile.mkdtemp())
    chain10, chain100, chain1000 = (write_chain(tmp / f"chain{k}.csv", k) for k in (10, 100, 1000))
    print(f"ratio ours / yardstick, min / median / max of {n} alternating pairs")
    ok = True

    ours_app, fused_app, base_app = (
        agentmap.compile(chain100),
        agentmap.compile(chain100, fuse=True),
        yardstick_build(100),
    )
    ok &= report(
        "invoke a compiled 100-node echo chain",
        pairs(lambda: ours_app.invoke({"k0": 1}), lambda: base_app.invoke({"k0": 1}), n, 5),
        1.05,
    )
    ok &= report(
        "fused invoke of the 100-node chain vs unfused raw",
        pairs(lambda: fused_app.invoke({"k0": 1}), lambda: base_app.invoke({"k0": 1}), n, 5),
        0.5,
    )

    fused_1000, base_1000 = agentmap.compile(chain1000, fuse=True), yardstick_build(1000)
    ok &= report(
        "fused invoke of a 1,000-node chain vs raw",
        pairs(lambda: fused_1000.invoke({"k0": 1}), lambda: base_1000.invoke({"k0": 1}), max(3, n // 2)),
        0.2,
    )

    ok &= report(
        "compile 10 nodes (load+validate+build) vs raw build",
        pairs(lambda: agentmap.compile(chain10), lambda: yardstick_build(10), n, 20),
        1.5,
    )
    ok &= report(
        "agentmap.run 100 nodes vs build+compile+invoke",
        pairs(lambda: agentmap.run(chain100, {"k0": 1}), lambda: yardstick_build(100).invoke({"k0": 1}), n),
        1.3,
    )
    ok &= report(
        "load+validate+compile 1,000 nodes vs build+compile",
        pairs(lambda: agentmap.compile(chain1000), lambda: yardstick_build(1000), max(3, n // 2)),
        1.3,
    )

    chain5, base5 = write_chain(tmp / "chain5.csv", 5), yardstick_build(5)
    app5, fused5 = agentmap.compile(chain5), agentmap.compile(chain5, fuse=True)
    rows = [{"k0": i} for i in range(2000)]
    # throughput ratios: raw time / ours, so higher is better
    ratios = [1 / r for r in pairs(lambda: app5.batch(rows), lambda: base5.batch(rows), max(3, n // 2))]
    ok &= report("app.batch 2,000 rows, 5 nodes: rows/s vs raw graph.batch", ratios, 1.0, at_least=True)
    ratios = [1 / r for r in pairs(lambda: fused5.batch(rows), lambda: base5.batch(rows), max(3, n // 2))]
    ok &= report("fused app.batch 2,000 rows: rows/s vs raw graph.batch", ratios, 2.0, at_least=True)
    # app.batch runs the rows of a workflow that only computes one after another (threads would only take turns
    # on the interpreter lock); a raw LangGraph user could write that loop too, so it is shown as well (no target)
    loop = lambda: [base5.invoke(row) for row in rows]  # noqa: E731
    ratios = [1 / r for r in pairs(lambda: app5.batch(rows), loop, max(3, n // 2))]
    report("  app.batch vs a raw loop of graph.invoke", ratios, None)
    ratios = [1 / r for r in pairs(lambda: fused5.batch(rows), loop, max(3, n // 2))]
    report("  fused app.batch vs a raw loop of graph.invoke", ratios, None)

    mine = peak(lambda: agentmap.compile(chain1000).invoke({"k0": 1}))
    theirs = peak(lambda: yardstick_build(1000).invoke({"k0": 1}))
    ok &= report("peak memory of a 1,000-node run", [mine / theirs], 1.15)

    probe = (
        "import sys, agentmap; agentmap.compile; heavy = ('pandas', 'fastapi', 'openai', 'anthropic', "
        "'langchain_openai'); print(','.join(m for m in heavy if m in sys.modules))"
    )
    leaked = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    print(f"{'import agentmap imports no pandas/FastAPI/provider':<62} {'OK' if not leaked else 'MISSED: ' + leaked}")
    ok &= not leaked
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
