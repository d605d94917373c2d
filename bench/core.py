"""Core speed and memory against a hand-written LangGraph yardstick, measured in one run.

The yardstick is a `StateGraph` of N nodes, each a function copying one field, on the same LangGraph.
Prints each ratio (ours / yardstick) next to its target. Run: `python bench/core.py`.
"""

from __future__ import annotations

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


def write_chain(path: Path, n: int) -> None:
    rows = ["GraphName,Node,AgentType,Input_Fields,Output_Field,Edge"]
    for i in range(n):
        nxt = f"n{i + 1}" if i + 1 < n else ""
        rows.append(f"Chain,n{i},echo,k{i},k{i + 1},{nxt}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def yardstick_build(n: int) -> Any:
    state = TypedDict("State", {f"k{i}": Any for i in range(n + 1)}, total=False)  # type: ignore[operator]
    builder = StateGraph(state)

    def copier(i: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
        src, dst = f"k{i}", f"k{i + 1}"

        def node(s: dict[str, Any]) -> dict[str, Any]:
            return {dst: s[src]}

        return node

    for i in range(n):
        builder.add_node(f"n{i}", copier(i))
        builder.add_edge(START if i == 0 else f"n{i - 1}", f"n{i}")
    builder.add_edge(f"n{n - 1}", END)
    return builder.compile()


def best(fn: Callable[[], Any], repeat: int) -> float:
    """Median of `repeat` timings (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    fn()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def report(label: str, ours: float, base: float, target: float, unit: str = "s") -> bool:
    ratio = ours / base
    ok = ratio <= target
    print(
        f"{label:<58} ours {ours:9.4f}{unit}  yardstick {base:9.4f}{unit}  ratio {ratio:5.2f}x "
        f"(target <= {target}x) {'OK' if ok else 'MISSED'}"
    )
    return ok


def main() -> int:
    tmp = Path(tempfile.mkdtemp())
    chain100, chain1000 = tmp / "chain100.csv", tmp / "chain1000.csv"
    write_chain(chain100, 100)
    write_chain(chain1000, 1000)
    ok = True

    ours_app = agentmap.compile(chain100)
    base_app = yardstick_build(100)
    ours = best(lambda: ours_app.invoke({"k0": 1}), 30)
    base = best(lambda: base_app.invoke({"k0": 1}), 30)
    ok &= report("invoke a compiled 100-node echo chain", ours, base, 1.1)

    ours = best(lambda: agentmap.run(chain100, {"k0": 1}), 15)
    base = best(lambda: yardstick_build(100).invoke({"k0": 1}), 15)
    ok &= report("agentmap.run 100 nodes vs build+compile+invoke", ours, base, 1.3)

    ours = best(lambda: agentmap.compile(chain1000), 5)
    base = best(lambda: yardstick_build(1000), 5)
    ok &= report("load+validate+compile 1,000 nodes vs build+compile", ours, base, 1.3)

    mine = peak(lambda: agentmap.compile(chain1000).invoke({"k0": 1}))
    theirs = peak(lambda: yardstick_build(1000).invoke({"k0": 1}))
    ok &= report("peak memory of a 1,000-node run (MB)", mine / 1e6, theirs / 1e6, 1.15, unit="MB")

    probe = (
        "import sys, agentmap; agentmap.compile; heavy = ('pandas', 'fastapi', 'openai', 'anthropic', "
        "'langchain_openai'); print(','.join(m for m in heavy if m in sys.modules))"
    )
    leaked = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    print(f"{'import agentmap imports no pandas/FastAPI/provider':<58} {'OK' if not leaked else 'MISSED: ' + leaked}")
    ok &= not leaked
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
