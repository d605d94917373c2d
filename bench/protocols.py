"""`agentmap mcp` over stdio against `app.invoke` in process, on graphs/hello_world.csv.

The server runs as the real command in a subprocess (`agentmap mcp`, started by the official `mcp` client's
`stdio_client`); the client is the SDK's `ClientSession`. Measured in one run, alternating: one `tools/call` of
HelloWorld at a time vs one `app.invoke` in this process; the p50 overhead is the difference of the medians
(target <= 5 ms).

Run: `python bench/protocols.py [--calls 300]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import agentmap

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "graphs" / "hello_world.csv"


async def measure(calls: int) -> tuple[list[float], list[float]]:
    """Milliseconds per MCP tool call and per `app.invoke`, alternating."""
    app = agentmap.compile(GRAPH)
    command = ["-m", "agentmap", "mcp", str(GRAPH)]
    params = StdioServerParameters(command=sys.executable, args=command, env=dict(os.environ))
    mcp_ms: list[float] = []
    invoke_ms: list[float] = []
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(20):  # warm both sides
                await session.call_tool("HelloWorld", {"name": "Ada"})
                app.invoke({"name": "Ada"})
            for _ in range(calls):
                start = time.perf_counter()
                result = await session.call_tool("HelloWorld", {"name": "Ada"})
                mcp_ms.append((time.perf_counter() - start) * 1000)
                assert result.structuredContent and result.structuredContent["greeting"] == "Hello, Ada!"
                start = time.perf_counter()
                app.invoke({"name": "Ada"})
                invoke_ms.append((time.perf_counter() - start) * 1000)
    return mcp_ms, invoke_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    mcp_ms, invoke_ms = asyncio.run(measure(args.calls))
    mcp_p50, invoke_p50 = statistics.median(mcp_ms), statistics.median(invoke_ms)
    print(f"MCP tools/call  p50 {mcp_p50:.2f} ms  p90 {statistics.quantiles(mcp_ms, n=10)[-1]:.2f} ms")
    print(f"app.invoke      p50 {invoke_p50:.2f} ms  p90 {statistics.quantiles(invoke_ms, n=10)[-1]:.2f} ms")
    print(f"overhead p50 {mcp_p50 - invoke_p50:.2f} ms (target <= 5 ms)")


if __name__ == "__main__":
    main()
