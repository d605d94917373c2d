"""MCP servers as tool sources, through langchain-mcp-adapters.

Tool_Source forms:

* `mcp:stdio:<command line>` (or just `mcp:<command line>`): the server is started with that command,
  in the workflow's folder; a leading `python`/`python3` is the interpreter AgentMap runs in, so
  `mcp:stdio:python server.py` works inside a virtual environment.
* `mcp:http://host:port/mcp` (or a bare `http(s)://` URL): a streamable HTTP server.
* `mcp:sse:http://host:port/sse`: a server-sent-events server.

Tools are listed once when the node is built. Outside `mcp_sessions()` each call opens a fresh session
(for stdio, a fresh server process, about half a second); inside it, calls reuse one session per server,
opened on the first call and closed when the block ends, so no server outlives the block that needed
it. An LLM node runs its tool loop inside such a block. A tool's result is its structured content when
the server sends one, else its text.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TextIO

from langchain_core.tools import BaseTool, StructuredTool

from agentmap.errors import ConfigError, ErrorCode

__all__ = ["check_source", "load_source_tools", "mcp_connection", "mcp_sessions"]

_PYTHON = {"python", "python3"}


def mcp_connection(source: str, *, base_dir: Path, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Turn a Tool_Source into a langchain-mcp-adapters connection config.

    Args:
        source: The Tool_Source.
        base_dir: The workflow's folder (a stdio server starts there).
        settings: The run's settings, when the source comes from a workflow file: a stdio command must then
            be the command of a server of `mcp.servers` (named as `mcp:NAME`) or be listed, as written, in
            `mcp.allowed_commands`. None (a caller's own code) allows any command.

    Raises:
        ConfigError: When the source is not one of the forms in the module docstring, or its command is not
            allowed.
    """
    text = source.strip()
    rest = text[4:].strip() if text.lower().startswith("mcp:") else text
    lowered = rest.lower()
    if lowered.startswith(("http://", "https://")):
        return {"transport": "streamable_http", "url": rest}
    if lowered.startswith("sse:"):
        url = rest[4:].strip()
        if not url.lower().startswith(("http://", "https://")):
            raise ConfigError(f"MCP source '{source}': write mcp:sse:http://host:port/sse")
        return {"transport": "sse", "url": url}
    if lowered.startswith("stdio:"):
        rest = rest[6:].strip()
    servers = _section(settings, "servers")
    configured = isinstance(servers, Mapping) and rest in servers
    if configured:
        rest = str(servers[rest])
    try:
        argv = shlex.split(rest)
    except ValueError as exc:
        raise ConfigError(f"MCP source '{source}': cannot split the command line ({exc})") from None
    if not argv:
        raise ConfigError(
            f"MCP source '{source}' names no server: write mcp:stdio:<command> (e.g. mcp:stdio:python "
            "server.py) or mcp:http://host:port/mcp"
        )
    if settings is not None and not configured:
        _check_allowed(source, argv, settings)
    command = sys.executable if argv[0] in _PYTHON else argv[0]
    return {"transport": "stdio", "command": command, "args": argv[1:], "cwd": str(base_dir)}


def _section(settings: Mapping[str, Any] | None, key: str) -> Any:
    mcp = (settings or {}).get("mcp")
    return mcp.get(key) if isinstance(mcp, Mapping) else None


def _check_allowed(source: str, argv: list[str], settings: Mapping[str, Any]) -> None:
    allowed = _section(settings, "allowed_commands") or []
    if isinstance(allowed, str):
        allowed = [allowed]
    for entry in allowed:
        try:
            if shlex.split(str(entry)) == argv:
                return
        except ValueError:
            continue
    line = shlex.join(argv)
    raise ConfigError(
        f"MCP source '{source}' would start the command `{line}`, which the configuration does not allow: "
        "a workflow file may start only the MCP servers the person running it allows. Add the exact command line "
        f'to mcp.allowed_commands (`mcp: {{allowed_commands: ["{line}"]}}` in agentmap.yaml), or define the '
        "server there (`mcp: {servers: {NAME: COMMAND}}`) and write mcp:NAME (see csv_specs/security.md)",
        code=ErrorCode.COMMAND_NOT_ALLOWED,
    )


def check_source(source: str, *, base_dir: Path, settings: Mapping[str, Any] | None = None) -> list[str]:
    """Problems with an MCP Tool_Source that can be seen without starting the server (`settings` as in
    `mcp_connection`)."""
    try:
        connection = mcp_connection(source, base_dir=base_dir, settings=settings)
    except ConfigError as exc:
        return [exc.message]
    problems: list[str] = []
    try:
        import langchain_mcp_adapters  # noqa: F401
    except ImportError:
        problems.append(f"MCP source '{source}' needs langchain-mcp-adapters: pip install \"agentmap[mcp]\"")
    if connection["transport"] == "stdio":
        command = connection["command"]
        if shutil.which(command) is None and not (base_dir / command).exists():
            problems.append(f"MCP source '{source}': command '{command}' is not found on PATH")
        scripts = [a for a in connection["args"] if a.endswith(".py")]
        problems.extend(
            f"MCP source '{source}': script '{s}' does not exist in {base_dir}"
            for s in scripts[:1]
            if not (base_dir / s).exists()
        )
    return problems


async def load_source_tools(
    source: str, *, base_dir: Path, settings: Mapping[str, Any] | None = None
) -> list[BaseTool]:
    """List an MCP server's tools as LangChain tools that return plain data (`settings` as in `mcp_connection`).

    Raises:
        ConfigError: When langchain-mcp-adapters is missing, the command is not allowed, or the server cannot
            be reached or started.
    """
    connection = mcp_connection(source, base_dir=base_dir, settings=settings)
    try:
        import langchain_mcp_adapters  # noqa: F401
    except ImportError:
        raise ConfigError(
            f"MCP source '{source}' needs langchain-mcp-adapters: pip install \"agentmap[mcp]\"",
            code=ErrorCode.MISSING_EXTRA,
        ) from None
    session = _Session(connection)
    try:
        tools = await session.tools()
    except Exception as exc:
        raise ConfigError(
            f"MCP source '{source}' could not be listed: {_reason(exc)}", code=ErrorCode.MCP_UNAVAILABLE
        ) from None
    finally:
        await session.close()
    return [_plain(tool, connection) for tool in tools.values()]


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)
    if inner:
        return _reason(inner[0])
    return f"{type(exc).__name__}: {exc}"


def _plain(tool: BaseTool, connection: dict[str, Any]) -> BaseTool:
    """Wrap an adapter tool so a call returns the result's data rather than content blocks."""

    async def call(**kwargs: Any) -> Any:
        async with mcp_sessions():  # the enclosing block's session, or outside one a session for this call alone
            pool = _POOL.get()
            assert pool is not None
            runner = await pool.tool(connection, tool.name)
            message = await runner.ainvoke({"type": "tool_call", "name": tool.name, "args": kwargs, "id": "agentmap"})
        artifact = getattr(message, "artifact", None)
        if isinstance(artifact, dict) and isinstance(artifact.get("structured_content"), dict):
            data = artifact["structured_content"]
            # FastMCP wraps a non-object return value as {"result": value}.
            return data["result"] if set(data) == {"result"} else data
        return _text(getattr(message, "content", message))

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema if tool.args_schema is not None else {"type": "object", "properties": {}},
        coroutine=call,
        metadata={**(tool.metadata or {}), "source": "mcp"},
    )


class _Session:
    """One open session, owned by its own task so that it is opened and closed in the same task."""

    def __init__(self, connection: dict[str, Any]) -> None:
        self._ready: asyncio.Future[dict[str, BaseTool]] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self.task = asyncio.create_task(self._own(connection))

    async def _own(self, connection: dict[str, Any]) -> None:
        from langchain_mcp_adapters.tools import load_mcp_tools

        try:
            async with _open(connection) as session:
                tools = await load_mcp_tools(session, handle_tool_errors=False)
                self._ready.set_result({t.name: t for t in tools})
                await self._stop.wait()
        except Exception as exc:  # reported to the callers waiting for the session; a later call reopens it
            if not self._ready.done():
                self._ready.set_exception(exc)

    async def tools(self) -> dict[str, BaseTool]:
        return await asyncio.shield(self._ready)

    async def close(self) -> None:
        self._stop.set()
        await asyncio.gather(self.task, return_exceptions=True)


@asynccontextmanager
async def _open(connection: dict[str, Any]) -> AsyncIterator[Any]:
    """An initialized MCP client session to the server of `connection`.

    A stdio server's stderr goes to `_errlog()`, named here: the MCP SDK's default is the `sys.stderr` of the
    moment it was imported, which in a notebook (or under a host that captured stderr then) is a stream with no
    file behind it, and the server could not be started (`UnsupportedOperation: fileno`).
    """
    if connection["transport"] != "stdio":
        from langchain_mcp_adapters.client import MultiServerMCPClient

        client = MultiServerMCPClient({"server": connection}, handle_tool_errors=False)  # type: ignore[dict-item]
        async with client.session("server") as session:
            yield session
        return
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(command=connection["command"], args=connection["args"], cwd=connection["cwd"])
    async with stdio_client(server, errlog=_errlog()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _errlog() -> TextIO:
    """Where a stdio server's stderr goes: this process's `sys.stderr` when a file is behind it, else the stderr the
    process started with (a notebook's `sys.stderr` is a stream object of the kernel)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
            continue
    raise ConfigError("an MCP stdio server needs a stderr file for its messages, and this process has none")


class _Pool:
    """The sessions of one `mcp_sessions()` block, one per server connection."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    async def tool(self, connection: dict[str, Any], name: str) -> BaseTool:
        key = json.dumps(connection, sort_keys=True, default=str)
        session = self._sessions.get(key)
        if session is None or session.task.done():  # first call, or the server went away
            session = self._sessions[key] = _Session(connection)
        tools = await session.tools()
        if name not in tools:
            raise RuntimeError(f"the MCP server no longer offers the tool '{name}'")
        return tools[name]

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self._sessions.values()))


_POOL: ContextVar[_Pool | None] = ContextVar("agentmap_mcp_sessions", default=None)


@asynccontextmanager
async def mcp_sessions() -> AsyncIterator[None]:
    """Within this block, MCP tool calls reuse one session per server instead of one per call.

    A session is opened by the first call to one of the server's tools and closed (for stdio, the
    server process ended) when the block ends, error or cancellation included. Nested blocks share
    the outer block's sessions.

    Example:
        >>> async with mcp_sessions():  # doctest: +SKIP
        ...     await executor.execute("add_task", {"title": "milk"}, "ada")
        ...     await executor.execute("list_tasks", {}, "ada")  # same server process
    """
    if _POOL.get() is not None:
        yield
        return
    pool = _Pool()
    token = _POOL.set(pool)
    try:
        yield
    finally:
        _POOL.reset(token)
        await asyncio.shield(pool.close())


def _text(content: Any) -> Any:
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if len(texts) == len(content):
            return "\n".join(texts)
    return content
