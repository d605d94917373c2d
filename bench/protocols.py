"""The agent protocols on graphs/hello_world.csv, each against the way it is measured by, paired in one run.

* MCP: `agentmap mcp` over stdio against `app.invoke` in process. The server runs as the real command in a
  subprocess (started by the official `mcp` client's `stdio_client`); the client is the SDK's `ClientSession`.
  Alternating: one `tools/call` of HelloWorld at a time vs one `app.invoke` in this process.
* A2A: `message/send` against `runs.wait` on the same `agentmap serve` (a subprocess, `--checkpoint` a SQLite
  file). Alternating: one message of a new context (a new thread and task) through the official `a2a-sdk`
  client vs one `runs.wait` on a new thread (`if_not_exists="create"`) through `langgraph-sdk`.

The p50 overhead is the difference of the medians (target <= 5 ms for both).

Run: `python bench/protocols.py [--calls 300] [--only mcp|a2a]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

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


async def measure_a2a(url: str, calls: int) -> tuple[list[float], list[float]]:
    """Milliseconds per A2A `message/send` and per `runs.wait` on the same server, alternating."""
    import httpx
    from a2a.client import ClientConfig, create_client
    from a2a.helpers import get_data_parts, new_text_part
    from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest
    from langgraph_sdk import get_client

    graphs = get_client(url=url)
    a2a_ms: list[float] = []
    wait_ms: list[float] = []

    async def send(client: Any) -> None:
        message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[new_text_part("Ada")])
        async for event in client.send_message(SendMessageRequest(message=message)):
            assert get_data_parts(event.task.artifacts[0].parts)[0]["greeting"] == "Hello, Ada!"

    async def wait() -> None:
        thread = str(uuid.uuid4())
        result = await graphs.runs.wait(thread, "HelloWorld", input={"name": "Ada"}, if_not_exists="create")
        assert isinstance(result, dict) and result["greeting"] == "Hello, Ada!"

    async with httpx.AsyncClient() as http:
        client = await create_client(f"{url}/a2a/HelloWorld", ClientConfig(httpx_client=http, streaming=False))
        for _ in range(20):  # warm both sides
            await send(client)
            await wait()
        for _ in range(calls):
            start = time.perf_counter()
            await send(client)
            a2a_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            await wait()
            wait_ms.append((time.perf_counter() - start) * 1000)
    return a2a_ms, wait_ms


def _line(label: str, values: list[float]) -> str:
    return f"{label:16} min {min(values):7.2f}  p50 {statistics.median(values):7.2f}  max {max(values):7.2f} ms"


def _compare(label: str, measured: list[float], base_label: str, base: list[float]) -> None:
    print(_line(label, measured))
    print(_line(base_label, base))
    print(f"overhead p50 {statistics.median(measured) - statistics.median(base):.2f} ms (target <= 5 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--only", choices=["mcp", "a2a"])
    args = parser.parse_args()
    if args.only != "a2a":
        mcp_ms, invoke_ms = asyncio.run(measure(args.calls))
        _compare("MCP tools/call", mcp_ms, "app.invoke", invoke_ms)
    if args.only != "mcp":
        sys.path.insert(0, str(Path(__file__).parent))
        from serve import start_server

        with tempfile.TemporaryDirectory() as folder:
            proc, url = start_server(Path(folder))
            try:
                a2a_ms, wait_ms = asyncio.run(measure_a2a(url, args.calls))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
        _compare("A2A message/send", a2a_ms, "runs.wait", wait_ms)


if __name__ == "__main__":
    main()
