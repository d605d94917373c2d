"""`agentmap mcp FILE|FOLDER` over stdio: the graphs' MCP server (`mcp.py`) on stdin/stdout with the `mcp` SDK.

stdin is read on the event loop when it is a pipe or socket, and each message is checked (`_jsonrpc.read_message`)
before the SDK reads it, so a message the SDK could not read is answered with a JSON-RPC error rather than never;
while the server runs, anything else written to stdout (a node's print) goes to stderr, so it cannot break the
JSON-RPC stream.

```python
from agentmap.protocols.mcp_stdio import serve_stdio

serve_stdio(["graphs/"], checkpoint="runs.db")   # what `agentmap mcp graphs/ --checkpoint runs.db` does
```
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from agentmap.protocols.mcp import McpGraphs, _sdk_missing, build_server

if TYPE_CHECKING:
    from agentmap.runtime.options import CompileOptions

__all__ = ["LINE_LIMIT", "serve_stdio"]

LINE_LIMIT = 1 << 26
"""The longest message read from stdin, in bytes (64 MiB): a longer one is answered with a parse error."""


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
        out = _Out(stdout)
        async with _stdin(out) as stdin, stdio_server(stdin, out) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())

    with _protocol_stdout() as stdout:
        anyio.run(main, stdout)


class _In:
    """Lines of stdin, each checked by `read_message` before the SDK reads it: a message it refuses is answered
    here (on `out`; a notification is not, a refused response of the client goes on as an error response) and never
    handed on, so every request that carries an id gets its one answer. A line over `LINE_LIMIT` is dropped whole."""

    def __init__(self, reader: asyncio.StreamReader, out: _Out) -> None:
        self.reader = reader
        self.out = out

    def __aiter__(self) -> _In:
        return self

    async def __anext__(self) -> str:
        from agentmap.protocols._jsonrpc import PARSE_ERROR, Refused, read_message

        while True:
            line, whole = await self._line()
            if not line:
                raise StopAsyncIteration
            if not line.strip():
                continue  # an empty line is no message
            try:
                if not whole:
                    raise Refused(PARSE_ERROR, f"a message longer than {LINE_LIMIT} bytes is not read")
                read_message(line, null_id=False)  # MCP: a request's id is never null
            except Refused as refused:
                if refused.kind == "response":
                    return json.dumps(refused.instead()) + "\n"
                if refused.kind == "notification":  # JSON-RPC answers none: said in the log only
                    logging.getLogger("agentmap.mcp").warning("a notification was not read: %s", refused.message)
                else:
                    await self.out.write(json.dumps(refused.answer()) + "\n")
                continue
            return line.decode("utf-8")

    async def _line(self) -> tuple[bytes, bool]:
        """The next line (b"" at the end) and whether it is whole: False for one over the limit, read past."""
        whole = True
        while True:
            try:
                return await self.reader.readuntil(b"\n"), whole
            except asyncio.IncompleteReadError as end:  # the last line, without its newline
                return end.partial, whole
            except asyncio.LimitOverrunError as over:  # over the limit: drop what is buffered, read on to its end
                whole = False
                await self.reader.readexactly(over.consumed)


class _Out:
    """The protocol's stdout: a message written straight to the pipe (a large one from a thread, as it may wait
    for the client to read), one at a time (the SDK's answers and `_In`'s refusals)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock: asyncio.Lock | None = None

    async def write(self, text: str) -> None:
        self.lock = self.lock or asyncio.Lock()
        data = text.encode("utf-8")
        async with self.lock:
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
async def _stdin(out: _Out) -> AsyncIterator[_In]:
    """stdin as `_In`: read on the event loop when it is a pipe or socket (what an MCP client gives), else (a file,
    /dev/null, a terminal) by a thread that hands the loop what it reads."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT, loop=loop)  # a message is one line: allow large ones
    mode = os.fstat(0).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):  # the event loop cannot wait on it
        threading.Thread(target=_pump, args=(loop, reader), name="agentmap-mcp-stdin", daemon=True).start()
        yield _In(reader, out)
        return
    blocking = os.get_blocking(0)
    pipe = os.fdopen(os.dup(0), "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    try:
        yield _In(reader, out)
    finally:
        transport.close()  # closes `pipe`
        os.set_blocking(0, blocking)  # the open file is shared with descriptor 0: as it was


def _pump(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    """stdin that is not a pipe, read in a thread into `reader` on `loop` (until the end, or the loop's)."""
    try:
        with os.fdopen(os.dup(0), "rb", buffering=0) as source:
            while chunk := source.read(1 << 16):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)
    except RuntimeError:  # the loop has closed: the server has stopped
        return


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
