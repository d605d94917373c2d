"""MCP servers as tool sources, through langchain-mcp-adapters.

Tool_Source forms:

* `mcp:stdio:<command line>` (or just `mcp:<command line>`): the server is started with that command,
  in the workflow's folder; a leading `python`/`python3` is the interpreter AgentMap runs in, so
  `mcp:stdio:python server.py` works inside a virtual environment.
* `mcp:http://host:port/mcp` (or a bare `http(s)://` URL): a streamable HTTP server.
* `mcp:sse:http://host:port/sse`: a server-sent-events server.

Tools are listed once when the node is built. Each call opens a fresh session (for stdio, a fresh
server process), so no server outlives the call that needed it. A tool's result is its structured
content when the server sends one, else its text.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from agentmap.errors import ConfigError

__all__ = ["check_source", "load_source_tools", "mcp_connection"]

_PYTHON = {"python", "python3"}


def mcp_connection(source: str, *, base_dir: Path) -> dict[str, Any]:
    """Turn a Tool_Source into a langchain-mcp-adapters connection config.

    Raises:
        ConfigError: When the source is not one of the forms in the module docstring.
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
    try:
        argv = shlex.split(rest)
    except ValueError as exc:
        raise ConfigError(f"MCP source '{source}': cannot split the command line ({exc})") from None
    if not argv:
        raise ConfigError(
            f"MCP source '{source}' names no server: write mcp:stdio:<command> (e.g. mcp:stdio:python "
            "server.py) or mcp:http://host:port/mcp"
        )
    command = sys.executable if argv[0] in _PYTHON else argv[0]
    return {"transport": "stdio", "command": command, "args": argv[1:], "cwd": str(base_dir)}


def check_source(source: str, *, base_dir: Path) -> list[str]:
    """Problems with an MCP Tool_Source that can be seen without starting the server."""
    try:
        connection = mcp_connection(source, base_dir=base_dir)
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


async def load_source_tools(source: str, *, base_dir: Path) -> list[BaseTool]:
    """List an MCP server's tools as LangChain tools that return plain data.

    Raises:
        ConfigError: When langchain-mcp-adapters is missing or the server cannot be reached or started.
    """
    connection = mcp_connection(source, base_dir=base_dir)
    try:
        from langchain_mcp_adapters.client import MultiServerMCPClient
    except ImportError:
        raise ConfigError(
            f"MCP source '{source}' needs langchain-mcp-adapters: pip install \"agentmap[mcp]\"",
            code="missing-extra",
        ) from None
    client = MultiServerMCPClient({"server": connection}, handle_tool_errors=False)  # type: ignore[dict-item]
    try:
        tools: list[BaseTool] = await client.get_tools()
    except Exception as exc:
        raise ConfigError(
            f"MCP source '{source}' could not be listed: {_reason(exc)}", code="mcp-unavailable"
        ) from None
    return [_plain(tool) for tool in tools]


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)
    if inner:
        return _reason(inner[0])
    return f"{type(exc).__name__}: {exc}"


def _plain(tool: BaseTool) -> BaseTool:
    """Wrap an adapter tool so a call returns the result's data rather than content blocks."""

    async def call(**kwargs: Any) -> Any:
        message = await tool.ainvoke({"type": "tool_call", "name": tool.name, "args": kwargs, "id": "agentmap"})
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


def _text(content: Any) -> Any:
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if len(texts) == len(content):
            return "\n".join(texts)
    return content
