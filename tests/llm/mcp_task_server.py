"""A small MCP server over stdio for the tests: arithmetic, a note store and a failing tool.

Started by the tests as `mcp:stdio:python mcp_task_server.py [notes.json]`, or as a streamable HTTP
server on 127.0.0.1 with `python mcp_task_server.py notes.json --http PORT`. Notes are kept in the file
named by the first argument (default `notes.json` in the working folder) so calls in separate sessions
see each other's writes.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from mcp.server.fastmcp import FastMCP

HTTP_PORT = int(sys.argv[sys.argv.index("--http") + 1]) if "--http" in sys.argv else 0
server = FastMCP("agentmap-test", log_level="WARNING", host="127.0.0.1", port=HTTP_PORT or 8000)
NOTES = Path(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--http" else "notes.json")


@server.tool()
def add_numbers(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def save_note(title: str, body: str = "") -> dict[str, object]:
    """Save a note with a title and an optional body."""
    notes = json.loads(NOTES.read_text()) if NOTES.exists() else []
    note = {"id": len(notes) + 1, "title": title, "body": body}
    notes.append(note)
    NOTES.write_text(json.dumps(notes))
    return note


@server.tool()
def list_notes() -> list[dict[str, object]]:
    """List the saved notes."""
    return json.loads(NOTES.read_text()) if NOTES.exists() else []


@server.tool()
def explode(reason: str) -> str:
    """Always fail with the given reason."""
    raise ValueError(f"exploded: {reason}")


@server.tool()
def slow(seconds: float) -> str:
    """Sleep for the given number of seconds."""
    time.sleep(seconds)
    return "woke up"


@server.tool()
def server_pid() -> int:
    """The id of this server's process (tests check which calls share a session)."""
    return os.getpid()


if __name__ == "__main__":
    server.run("streamable-http" if HTTP_PORT else "stdio")
