"""Durable runs: what saving every step costs, and how fast `agentmap resume` starts, against baselines.

* Per-step cost with the SQLite default (sync durability): `agentmap.compile(path, checkpointer="runs.db")`
  and `app.invoke(..., durability="sync")` vs the same compiled graph run by LangGraph itself
  (`app.graph.invoke`) on LangGraph's own `SqliteSaver` with its default serializer (target: at most 1.2x).
* `agentmap resume THREAD` vs `agentmap run FILE --thread ID` of the same graph, as whole processes: the
  resumed thread stopped before its first node, so both run every node (target: at most 1.1x).

Both sides take turns, with the same GC settings and warm imports; figures are ratios of paired
measurements, min/median/max. Run: `python bench/durable.py [--repeat N] [--nodes N]`.
"""

from __future__ import annotations

import argparse
import gc
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"


def _chain(folder: Path, nodes: int) -> Path:
    rows = [f"Chain,N{i:02d},echo,,text,text,{f'N{i + 1:02d}' if i < nodes else ''}\n" for i in range(1, nodes + 1)]
    path = folder / "chain.csv"
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return path


def _spread(ratios: list[float]) -> str:
    return f"min {min(ratios):.2f}x  median {statistics.median(ratios):.2f}x  max {max(ratios):.2f}x"


def per_step(folder: Path, nodes: int, repeat: int) -> list[float]:
    """Ratios (AgentMap / LangGraph) of the time per step of one run on a SQLite file, sync durability."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    import agentmap

    path = _chain(folder, nodes)
    ours = agentmap.compile(path, checkpointer=str(folder / "ours.db"))
    theirs = agentmap.compile(
        path, checkpointer=SqliteSaver(sqlite3.connect(folder / "theirs.db", check_same_thread=False))
    )
    state = {"text": "hello"}

    def run_ours(n: int) -> float:
        started = time.perf_counter()
        ours.invoke(state, {"configurable": {"thread_id": f"o{n}"}}, durability="sync")
        return (time.perf_counter() - started) / nodes

    def run_theirs(n: int) -> float:
        started = time.perf_counter()
        theirs.graph.invoke(state, {"configurable": {"thread_id": f"t{n}"}}, durability="sync")
        return (time.perf_counter() - started) / nodes

    for n in range(3):  # warm both: imports, tables, caches
        run_ours(-n - 1), run_theirs(-n - 1)
    gc.collect()
    ratios = []
    for n in range(repeat):
        if n % 2:  # take turns going first
            b = run_theirs(n)
            a = run_ours(n)
        else:
            a = run_ours(n)
            b = run_theirs(n)
        ratios.append(a / b)
    return ratios


def startup(folder: Path, nodes: int, repeat: int) -> list[float]:
    """Ratios (resume / run) of whole-process wall times."""
    import agentmap

    path = _chain(folder, nodes)
    db = folder / "cli.db"
    stopped = agentmap.compile(path, checkpointer=str(db), interrupt_before=["N01"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMAP_")}
    env["AGENTMAP_CHECKPOINT"] = str(db)

    def timed(args: list[str]) -> float:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "agentmap", *args, "--json"],
            cwd=folder,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return time.perf_counter() - started

    ratios = []
    for n in range(-1, repeat):  # round -1 warms the file system cache
        stopped.invoke({"text": "hello"}, {"configurable": {"thread_id": f"r{n}"}})
        if n % 2 == 0:
            resume, run = (
                timed(["resume", f"r{n}"]),
                timed(["run", str(path), "--thread", f"n{n}", "--state", '{"text": "hello"}']),
            )
        else:
            run, resume = (
                timed(["run", str(path), "--thread", f"n{n}", "--state", '{"text": "hello"}']),
                timed(["resume", f"r{n}"]),
            )
        if n >= 0:
            ratios.append(resume / run)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--nodes", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        steps = per_step(folder, args.nodes, max(args.repeat * 3, 9))
        print(
            f"per-step cost, SQLite sync, {args.nodes} nodes: AgentMap / LangGraph SqliteSaver  {_spread(steps)}"
            "  (target <= 1.2x)"
        )
        starts = startup(folder, 3, args.repeat)
        print(f"process time, 3 nodes: agentmap resume / agentmap run  {_spread(starts)}  (target <= 1.1x)")


if __name__ == "__main__":
    main()
