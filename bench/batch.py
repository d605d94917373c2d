"""Batch speed and memory, each figure a ratio of two measurements taken in the same run, alternating.

1. thread executor, 2,000 rows through a 5-node deterministic chain: rows/s against LangGraph's own
   `graph.batch` on the equivalent hand-built graph (target >= 0.95x); batch fuses the chain into one LangGraph
   step by default, so the same ratio without fusion is printed beside it.
2. process executor on a CPU-bound graph (`--cpu-rows`, default 1,000): rows/s with 2 workers against 1 worker
   (target >= 1.7x); beside it, what two busy processes do against one on this machine at that moment (the
   ceiling: others share the cores).
3. Ray on a local 2-CPU cluster against the process executor with 2 workers (target >= 0.7x), `--ray-rows`
   CPU-bound rows (default 1,000, about 2 s of work per worker on idle cores). Ray is started once before timing, and
   both sides are warmed by a first small batch (its seconds are printed: the cold start-up): the process
   executor's workers then fork from a server with LangGraph imported and compile the workflow, Ray's
   long-lived workers have it compiled already.
4. peak memory (max RSS of a fresh `agentmap batch` process) of a big CSV batch against a 1,000-row one
   (target <= 1.5x); the big one is `--rows` rows (default 20,000; the issue's figure is 100,000).
5. the batch's own cost: process CPU time (`time.process_time()`, not wall time: the command's threads, its
   reading, recording and writing all count) of `agentmap batch chain.csv -i rows.csv -o out.csv`, 2,000 rows
   through the 5-node chain, against a plain loop of `graph.invoke` over the same rows read from the same CSV
   file (target <= 0.6x, issue 42). The command runs in this process (`agentmap.cli.main`), so neither side pays
   imports; it keeps its own collector settings (off while it starts, then `gc.freeze()` and on), and both loops
   get the same. Three loops: LangGraph's hand-built 5-node graph (the raw loop the target is against; the batch
   fuses the chain into one step, which the raw graph cannot), and the same workflow compiled as the batch
   compiles it (fused), driven by `graph.invoke` of its LangGraph graph and by `CompiledWorkflow.invoke` (what
   each row's run is: its tracker, its run hooks, its `RunResult`). The batch's own work a row is its excess
   over the last loop; that loop's over the one before is the run's. Each is printed in microseconds a row,
   per round and from the least CPU of each side over the rounds (this machine's noise comes in bursts that
   slow one side of a round: the least is the steadier figure), and so is the target's ratio. A fourth loop
   says where the rest of a row goes: one LangGraph step over the fused workflow's own state schema (its
   three run keys included), a plain function doing the chain's copies. What the fused workflow's
   `graph.invoke` costs over it is the five agents' own work (their tracking, their hooks); what it costs
   itself is LangGraph's for a one-step run.

Each figure prints min/median/max of the per-round ratios. The machine is shared: defaults are small
(`--repeat 3`); raise them for steadier figures.
Run: `python bench/batch.py [--repeat N] [--rows N] [--skip-ray] [--only 15]`.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gc
import io
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from core import write_chain, yardstick_build  # bench/core.py: the same 5-node chain and its hand-built twin

import agentmap
from agentmap.cli import main as cli_main

CPU_AGENT = '''
from agentmap import BaseAgent


class BurnAgent(BaseAgent):
    """CPU-bound work: about 10 ms of arithmetic per row."""

    def process(self, inputs):
        total = 0
        for i in range(int(inputs.get("n") or 0)):
            total += i * i % 7
        return total
'''


def timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def show(label: str, ratios: list[float], target: str) -> None:
    low, mid, high = min(ratios), statistics.median(ratios), max(ratios)
    print(f"{label:<62} ratio min {low:5.2f}x  median {mid:5.2f}x  max {high:5.2f}x  (target {target})", flush=True)


def seconds(label: str, pairs: list[tuple[float, float]]) -> None:
    print(f"   (seconds per batch, {label}: {', '.join(f'{a:.2f}/{b:.2f}' for a, b in pairs)})", flush=True)


def thread_vs_langgraph(folder: Path, repeat: int) -> None:
    path = folder / "chain.csv"
    write_chain(path, 5)
    rows = [{"k0": f"row {i}"} for i in range(2000)]
    graph = yardstick_build(5)
    ours = lambda: agentmap.batch(path, rows, concurrency=8)  # noqa: E731
    base = lambda: graph.batch(rows)  # noqa: E731
    unfused = lambda: agentmap.batch(path, rows, concurrency=8, fuse=False)  # noqa: E731
    ours(), unfused(), base()  # warm imports and caches on both sides
    ratios, plain = [], []
    for _ in range(repeat):
        ratios.append(timed(base) / timed(ours))  # rows/s ours / rows/s yardstick
        plain.append(timed(base) / timed(unfused))
    show("1. thread executor vs LangGraph graph.batch, 2,000 rows", ratios, ">= 0.95x")
    show("   the same without chain fusion (batch fuses by default)", plain, "for comparison")


def cpu_flow(folder: Path) -> Path:
    (folder / "custom_agents").mkdir(exist_ok=True)
    (folder / "custom_agents" / "burn.py").write_text(textwrap.dedent(CPU_AGENT), encoding="utf-8")
    path = folder / "burn.csv"
    path.write_text("GraphName,Node,AgentType,Input_Fields,Output_Field\nBurn,Burn,burn,n,total\n", encoding="utf-8")
    return path


def _spin(n: int) -> float:
    start = time.perf_counter()
    total = 0
    for i in range(n):
        total += i * i % 7
    return time.perf_counter() - start


def machine_scaling(pool: ProcessPoolExecutor, n: int = 3_000_000) -> float:
    """How much more work two busy processes do than one, right now (others share the cores)."""
    alone = pool.submit(_spin, n).result()
    start = time.perf_counter()
    list(pool.map(_spin, [n, n]))
    return 2 * alone / (time.perf_counter() - start)


def processes(folder: Path, repeat: int, rows: int) -> None:
    path = cpu_flow(folder)
    data = [{"n": 60_000} for _ in range(rows)]
    one = lambda: agentmap.batch(path, data, executor="process", workers=1, chunk_size=8)  # noqa: E731
    two = lambda: agentmap.batch(path, data, executor="process", workers=2, chunk_size=8)  # noqa: E731
    agentmap.batch(path, data[:4], executor="process", workers=2)  # start the forkserver before timing
    pairs, ceiling = [], []
    with ProcessPoolExecutor(2) as pool:
        for _ in range(repeat):
            pairs.append((timed(one), timed(two)))
            ceiling.append(machine_scaling(pool))
    show(f"2. process executor, 2 workers vs 1, {rows} CPU-bound rows", [a / b for a, b in pairs], ">= 1.7x")
    seconds("1 worker/2 workers", pairs)
    show("   the machine meanwhile: 2 busy processes vs 1 (the ceiling)", ceiling, "2.00x on 2 idle cores")


def ray_vs_processes(folder: Path, repeat: int, rows: int) -> None:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    path = cpu_flow(folder)
    data = [{"n": 60_000} for _ in range(rows)]
    on_ray = lambda: agentmap.batch(path, data, executor="ray", workers=2, chunk_size=8)  # noqa: E731
    local = lambda: agentmap.batch(path, data, executor="process", workers=2, chunk_size=8)  # noqa: E731
    # warm both sides (the process executor's forkserver; Ray's workers, which keep the compiled workflow), and
    # show what that first, cold start-up costs each
    cold = [timed(lambda e=e: agentmap.batch(path, data[:4], executor=e, workers=2)) for e in ("process", "ray")]
    pairs = [(timed(local), timed(on_ray)) for _ in range(repeat)]
    ray.shutdown()
    show(
        f"3. ray (local, 2 CPUs) vs process executor with 2 workers, {rows} rows", [a / b for a, b in pairs], ">= 0.7x"
    )
    seconds("process/ray", pairs)
    print(f"   (cold start-up, a first 4-row batch, process/ray: {cold[0]:.2f}/{cold[1]:.2f} s)", flush=True)


def peak_rss(folder: Path, rows: int) -> int:
    """Max RSS (KiB) of a fresh `agentmap batch` process over `rows` rows."""
    table = folder / f"rows{rows}.csv"
    with table.open("w", encoding="utf-8") as handle:
        handle.write("k0\n")
        for i in range(rows):
            handle.write(f"row number {i}\n")
    code = (
        "import resource, sys; from agentmap.cli import main; "
        f"main(['batch', {str(folder / 'chain.csv')!r}, '-i', {str(table)!r}, '-o', {str(folder / 'out.csv')!r}]); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    (folder / "out.csv").unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    with (folder / "out.csv").open(encoding="utf-8") as handle:
        assert sum(1 for _ in handle) == rows + 1, "the batch did not write every row"
    return int(done.stdout.split()[-1])


def memory(folder: Path, repeat: int, rows: int) -> None:
    write_chain(folder / "chain.csv", 5)
    pairs = [(peak_rss(folder, rows), peak_rss(folder, 1000)) for _ in range(max(1, repeat // 2))]
    show(f"4. peak memory, {rows:,}-row CSV batch vs 1,000 rows", [big / small for big, small in pairs], "<= 1.5x")
    print(f"   (max RSS in MiB, big/small: {', '.join(f'{b / 1024:.0f}/{s / 1024:.0f}' for b, s in pairs)})")


def cpu_seconds(fn: Callable[[], Any]) -> float:
    """The CPU time of this process (every thread, user and system) that `fn()` takes."""
    gc.collect()
    start = time.process_time()
    fn()
    return time.process_time() - start


def collected_as_the_command(fn: Callable[[], Any]) -> Callable[[], None]:
    """`fn` run with the collector as `agentmap batch` runs its rows: what was built before frozen, then on."""

    def run() -> None:
        was_enabled = gc.isenabled()
        gc.disable()
        gc.freeze()
        gc.enable()
        try:
            fn()
        finally:
            gc.unfreeze()
            if not was_enabled:
                gc.disable()

    return run


def one_step_build(schema: Any, n: int) -> Any:
    """A LangGraph graph of one step over `schema` whose node makes the chain's update in one function: what
    the fused workflow's step costs LangGraph, without the agents."""
    from langgraph.graph import END, START, StateGraph

    def chain(state: dict[str, Any]) -> dict[str, Any]:
        update: dict[str, Any] = {"last_action_success": True}
        value = state["k0"]
        for i in range(n):
            value = update[f"k{i + 1}"] = {f"k{i}": value}
        return update

    builder = StateGraph(schema)
    builder.add_node("n0", chain)
    builder.add_edge(START, "n0")
    builder.add_edge("n0", END)
    return builder.compile()


def batch_cpu_vs_loop(folder: Path, repeat: int, rows: int = 2000) -> None:
    chain = write_chain(folder / "chain.csv", 5)
    table = folder / "cpu_rows.csv"
    table.write_text("k0\n" + "".join(f"row {i}\n" for i in range(rows)), encoding="utf-8")
    out = folder / "cpu_out.csv"
    app = agentmap.compile(chain, fuse=True)
    raw, same, step = yardstick_build(5), app.graph, one_step_build(app.graph.builder.state_schema, 5)

    def read() -> list[dict[str, str]]:
        with table.open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))

    def command() -> None:
        out.unlink(missing_ok=True)  # else the command finds a finished batch and runs nothing
        with contextlib.redirect_stderr(io.StringIO()):
            code = cli_main(["batch", str(chain), "--input", str(table), "--output", str(out)])
        assert code == 0, f"agentmap batch exited {code}"

    sides = {
        "batch": command,
        "raw": collected_as_the_command(lambda: [raw.invoke(row) for row in read()]),
        "same": collected_as_the_command(lambda: [same.invoke(row) for row in read()]),
        "step": collected_as_the_command(lambda: [step.invoke(row) for row in read()]),
        "app": collected_as_the_command(lambda: [app.invoke(row) for row in read()]),
    }
    for side in sides.values():  # warm imports and caches on every side
        side()
    with out.open(encoding="utf-8") as handle:
        assert sum(1 for _ in handle) == rows + 1, "the batch did not write every row"
    seconds: list[dict[str, float]] = []
    for round_ in range(repeat):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))  # alternate who goes first
        seconds.append({name: cpu_seconds(sides[name]) for name in order})
    show(
        f"5. agentmap batch CPU vs a raw loop of graph.invoke, {rows:,} rows",
        [s["batch"] / s["raw"] for s in seconds],
        "<= 0.6x",
    )
    least = {name: min(s[name] for s in seconds) for name in sides}
    print(f"   (the least CPU of each side over the rounds, batch/raw loop: {least['batch'] / least['raw']:.2f}x)")
    show("   vs a loop of graph.invoke of the same fused workflow", [s["batch"] / s["same"] for s in seconds], "none")
    print(f"   (one LangGraph step over the same state, a loop: {least['step'] / rows * 1e6:.0f} us a row, the least)")
    shares = (
        ("the batch's own", "batch", "app"),
        ("CompiledWorkflow.invoke's own", "app", "same"),
        ("the five agents' own", "same", "step"),
    )
    for label, more, less in shares:
        own = sorted((s[more] - s[less]) / rows * 1e6 for s in seconds)
        least_own = (least[more] - least[less]) / rows * 1e6
        print(
            f"   ({label} CPU a row, min/median/max: {own[0]:.0f}/{statistics.median(own):.0f}/{own[-1]:.0f} us; "
            f"from the least of each side: {least_own:.0f} us)"
        )
    print(
        "   (CPU seconds, batch/raw loop/same-workflow loop/its CompiledWorkflow.invoke loop/one-step loop: "
        + ", ".join(f"{s['batch']:.2f}/{s['raw']:.2f}/{s['same']:.2f}/{s['app']:.2f}/{s['step']:.2f}" for s in seconds)
        + ")",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=20_000, help="rows of the big memory batch")
    parser.add_argument("--cpu-rows", type=int, default=1000, help="rows of the CPU-bound batches of figure 2")
    parser.add_argument("--ray-rows", type=int, default=1000, help="rows of the CPU-bound batches of figure 3")
    parser.add_argument("--only", default="12345", help="which figures to measure, e.g. 23 (default: all five)")
    parser.add_argument("--skip-ray", action="store_true", help="leave out figure 3")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "1" in args.only:
            thread_vs_langgraph(folder, args.repeat)
        if "2" in args.only:
            processes(folder, args.repeat, args.cpu_rows)
        if "3" in args.only and not args.skip_ray:
            ray_vs_processes(folder, args.repeat, args.ray_rows)
        if "4" in args.only:
            memory(folder, args.repeat, args.rows)
        if "5" in args.only:
            batch_cpu_vs_loop(folder, args.repeat)


if __name__ == "__main__":
    main()
