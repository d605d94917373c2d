"""`agentmap serve` over loopback against `app.invoke` in process, on graphs/hello_world.csv.

The server runs as the real command in a subprocess (`agentmap serve`, access logs on, sent to /dev/null);
the client is LangGraph's own `langgraph-sdk`. Measured in one run, alternating:

* latency: one `runs.wait` at a time (sync client) vs one `app.invoke` in this process; the p50 overhead is
  the difference of the medians (target <= 5 ms);
* load: 200 concurrent `runs.wait` (async client): on threads (SQLite checkpoints,
  `durability="exit"`: one checkpoint per run, and LangGraph's default `async`: one a step) and stateless; every run
  must come back with the right greeting and every thread must record one successful run (target >= 300
  runs/s); the baselines are 200 `app.invoke` in a row in process, without and with a SQLite checkpoint.

The client and the server share the machine, so the CPU time each spends per run (during the 200 waits
only) is printed too: on 2 cores, the sum bounds the rate at about 2000 / (client + server ms) runs/s.

Run: `python bench/serve.py [--rounds 3] [--concurrent 200]`. Both sides get warm imports and GC as usual.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client, get_sync_client

import agentmap
from agentmap.server._graphs import open_checkpointer

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "graphs" / "hello_world.csv"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    command = [sys.executable, "-m", "agentmap", "serve", str(GRAPH), "--port", str(port)]
    command += ["--checkpoint", str(folder / "runs.db")]
    proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stats(values: list[float]) -> str:
    return f"min {min(values):8.2f}  median {statistics.median(values):8.2f}  max {max(values):8.2f}"


def latency(url: str, app: Any, samples: int) -> tuple[list[float], list[float]]:
    """Alternating single calls: (HTTP runs.wait ms, in-process invoke ms)."""
    http_ms: list[float] = []
    local_ms: list[float] = []
    with get_sync_client(url=url, api_key=None) as client:
        for _ in range(10):  # warm both
            client.runs.wait(None, "HelloWorld", input={"name": "warm"})
            app.invoke({"name": "warm"})
        for i in range(samples):
            start = time.perf_counter()
            result = client.runs.wait(None, "HelloWorld", input={"name": f"n{i}"})
            http_ms.append((time.perf_counter() - start) * 1000)
            assert result["greeting"] == f"Hello, n{i}!", result
            start = time.perf_counter()
            app.invoke({"name": f"n{i}"})
            local_ms.append((time.perf_counter() - start) * 1000)
    return http_ms, local_ms


async def load(
    url: str, concurrent: int, pid: int, *, threads: bool, durability: str | None = None
) -> tuple[float, int, float, float]:
    """`concurrent` runs.wait at once; returns (seconds, failed or lost runs, client and server CPU ms per run)."""
    client = get_client(url=url, api_key=None, timeout=120)
    ids: list[str | None] = [None] * concurrent
    if threads:
        ids = [(await client.threads.create())["thread_id"] for _ in range(concurrent)]

    async def one(i: int) -> bool:
        try:
            options = {"durability": durability} if durability else {}
            result = await client.runs.wait(ids[i], "HelloWorld", input={"name": f"p{i}"}, **options)
        except Exception as exc:  # a failed run is counted, not raised
            print(f"  run {i} failed: {exc}", file=sys.stderr)
            return False
        return isinstance(result, dict) and result.get("greeting") == f"Hello, p{i}!"

    start, client_cpu, server_cpu = time.perf_counter(), time.process_time(), cpu_seconds(pid)
    ok = await asyncio.gather(*(one(i) for i in range(concurrent)))
    seconds = time.perf_counter() - start
    client_ms = (time.process_time() - client_cpu) * 1000 / concurrent
    server_ms = (cpu_seconds(pid) - server_cpu) * 1000 / concurrent
    bad = ok.count(False)
    if threads:  # nothing lost: every thread holds exactly one successful run
        for tid in ids:
            assert tid is not None
            runs = await client.runs.list(tid)
            bad += 0 if [r["status"] for r in runs] == ["success"] else 1
    await client.aclose()
    return seconds, bad, client_ms, server_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()

    app = agentmap.compile(GRAPH)
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp))
        try:
            http_ms, local_ms = latency(url, app, args.samples)
            overhead = statistics.median(http_ms) - statistics.median(local_ms)
            print(f"latency, {args.samples} sequential calls (ms):")
            print(f"  runs.wait over HTTP   {stats(http_ms)}")
            print(f"  app.invoke in process {stats(local_ms)}")
            ok_latency = overhead <= 5.0
            print(f"  p50 overhead {overhead:.2f} ms (target <= 5 ms) {'OK' if ok_latency else 'MISSED'}")

            # exit: one checkpoint per run; async (LangGraph's default): one a step, written while the next runs
            modes = {"threads, async": (True, "async"), "threads, exit": (True, "exit"), "stateless": (False, None)}
            local = ("in-process invoke", "in-process, SQLite", "in-process, exit")
            rates: dict[str, list[float]] = {mode: [] for mode in (*modes, *local)}
            # the server's own saver settings (WAL, synchronous=NORMAL), so the baseline has the same advantage
            saver = open_checkpointer(str(Path(tmp) / "local.db"))
            saved = agentmap.compile(GRAPH, checkpointer=saver)
            server_ms: dict[str, list[float]] = {mode: [] for mode in modes}
            client_ms: dict[str, list[float]] = {mode: [] for mode in modes}
            failures = 0
            for _ in range(args.rounds):
                for mode, (threads, durability) in modes.items():
                    seconds, bad, on_client, on_server = asyncio.run(
                        load(url, args.concurrent, proc.pid, threads=threads, durability=durability)
                    )
                    server_ms[mode].append(on_server)
                    client_ms[mode].append(on_client)
                    rates[mode].append(args.concurrent / seconds)
                    failures += bad
                start = time.perf_counter()
                for i in range(args.concurrent):
                    app.invoke({"name": f"p{i}"})
                rates["in-process invoke"].append(args.concurrent / (time.perf_counter() - start))
                start = time.perf_counter()
                for i in range(args.concurrent):  # the same work as a threaded run: a SQLite thread per run
                    saved.invoke({"name": f"p{i}"}, {"configurable": {"thread_id": f"{time.time()}-{i}"}})
                rates["in-process, SQLite"].append(args.concurrent / (time.perf_counter() - start))
                start = time.perf_counter()
                for i in range(args.concurrent):  # one checkpoint per run, as durability="exit"
                    config = {"configurable": {"thread_id": f"x{time.time()}-{i}"}}
                    saved.invoke({"name": f"p{i}"}, config, durability="exit")  # type: ignore[arg-type]
                rates["in-process, exit"].append(args.concurrent / (time.perf_counter() - start))
            print(f"load, {args.concurrent} concurrent runs.wait x {args.rounds} rounds (runs/s):")
            for mode, values in rates.items():
                print(f"  {mode:<18} {stats(values)}")
            print("CPU per run during the waits (ms): server | client (the SDK) | the rate both allow on the cores")
            for mode, values in server_ms.items():
                both = statistics.median(values) + statistics.median(client_ms[mode])
                print(f"  {mode:<18} server {stats(values)} | client {stats(client_ms[mode])}")
                print(f"  {'':<18} -> at most {(os.cpu_count() or 1) * 1000 / both:.0f} runs/s on idle cores")
            print(f"machine load average: {Path('/proc/loadavg').read_text().split()[0]} on {os.cpu_count()} cores")
            baselines = {"threads, async": "in-process, SQLite", "threads, exit": "in-process, exit"}
            for mode in modes:
                rate = statistics.median(rates[mode])
                base = baselines.get(mode, "in-process invoke")
                print(
                    f"  {mode}: median {rate:.0f} runs/s, {rate / statistics.median(rates[base]):.2f}x {base} "
                    f"(target >= 300 runs/s) {'OK' if rate >= 300 else 'MISSED'}"
                )
            print(f"  failed or lost runs: {failures} (target 0) {'OK' if failures == 0 else 'MISSED'}")
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    os.environ.pop("LANGGRAPH_API_KEY", None)
    raise SystemExit(main())
