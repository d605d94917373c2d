"""`agentmap mcp FILE|FOLDER` over stdio: the graphs' MCP server (`mcp.py`) on stdin/stdout with the `mcp` SDK.

stdin is read on the event loop when it is a pipe or socket; while the server runs, anything else written to
stdout (a node's print) goes to stderr, so it cannot break the JSON-RPC stream.

```python
from agentmap.protocols.mcp_stdio import serve_stdio

serve_stdio(["graphs/"], checkpoint="runs.db")   # what `agentmap mcp graphs/ --checkpoint runs.db` does
```
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.protocols.mcp import McpGraphs, _sdk_missing, build_server

if TYPE_CHECKING:
    from agentmap.runtime.options import CompileOptions

__all__ = ["serve_stdio"]


def serve_stdio(
    targets: Sequence[str | Path], *, checkpoint: str = "memory", options: CompileOptions | None = None
) -> None:
    """Compile every graph of `targets` (with `options`) and serve them over stdin/stdout until the client closes
    the pipe.

    Raises:
        ConfigError: The `mcp` SDK is missing, or a bad `checkpoint`.
        WorkflowFileError: A target does not exist, or holds no graph.
    """
    try:
        import anyio
        from mcp.server.stdio import stdio_server
    except ImportError:
        raise _sdk_missing() from None
    from agentmap.server._graphs import Assistants, open_checkpointer

    graphs = McpGraphs(Assistants.load(targets, open_checkpointer(checkpoint), options=options))
    server = build_server(graphs)

    async def main(stdout: int) -> None:
        async with _stdin() as stdin, stdio_server(stdin, _Out(stdout)) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())

    with _protocol_stdout() as stdout:
        anyio.run(main, stdout)


class _In:
    """Lines of stdin read on the event loop: no thread per message, as the SDK's file wrapper would use."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> _In:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Out:
    """The protocol's stdout: a message written straight to the pipe (a large one from a thread, as it may wait
    for the client to read)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        if len(data) > 16384:
            import anyio

            await anyio.to_thread.run_sync(self._write, data)
        else:
            self._write(data)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    async def flush(self) -> None:
        """Nothing buffered."""


@asynccontextmanager
async def _stdin() -> AsyncIterator[Any]:
    """stdin as `_In` when it is a pipe or socket (what an MCP client gives), else None: the SDK's own reader."""
    mode = os.fstat(0).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):  # a file or /dev/null: the event loop cannot wait on it
        yield None
        return
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26, loop=loop)  # a message is one line: allow large ones
    blocking = os.get_blocking(0)
    pipe = os.fdopen(os.dup(0), "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    try:
        yield _In(reader)
    finally:
        transport.close()  # closes `pipe`
        os.set_blocking(0, blocking)  # the open file is shared with descriptor 0: as it was


@contextmanager
def _protocol_stdout() -> Iterator[int]:
    """The protocol's own stdout descriptor; while it is open, anything else written to stdout (a node's print)
    goes to stderr, so it cannot break the JSON-RPC stream. Restored at the end."""
    sys.stdout.flush()
    saved = os.dup(1)
    protocol = os.dup(1)
    os.dup2(2, 1)
    try:
        yield protocol
    finally:
        os.close(protocol)
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
