"""A client no one here wrote, in another language: the MCP Inspector's CLI mode (Node) against `/mcp` of the real
server, with the server's API key."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import npm_apps
import pytest
from timing import scaled

pytest.importorskip("mcp")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
KEY = "k3y-for-tests"


@pytest.fixture(scope="session")
def inspector() -> Path:
    """The folder to run the Inspector's CLI from (its pinned packages installed by `npm ci`)."""
    folder = npm_apps.built(npm_apps.INSPECTOR)
    # its CLI finds its own package.json relative to the working folder: run it from its build folder
    return folder / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build"


def _inspect(build: Path, url: str, *args: str, key: str | None = KEY) -> subprocess.CompletedProcess[str]:
    header = ["--header", f"X-Api-Key: {key}"] if key else []
    command = ["node", "cli.js", "--cli", f"{url}/mcp", "--transport", "http", *header, *args]
    return subprocess.run(command, cwd=build, capture_output=True, text=True, timeout=scaled(120))


def test_the_mcp_inspector_lists_and_calls_the_tools(inspector: Path) -> None:
    from agentmap.server import ServeConfig, background

    config = ServeConfig(targets=(str(ROOT / "graphs" / "hello_world.csv"),), checkpoint="memory", api_key=KEY)
    with background(config) as url:
        listed = _inspect(inspector, url, "--method", "tools/list")
        call = ("--method", "tools/call", "--tool-name", "HelloWorld")
        called = _inspect(inspector, url, *call, "--tool-arg", "name=Ada")
        bad = _inspect(inspector, url, *call)
        refused = _inspect(inspector, url, "--method", "tools/list", key=None)
    assert listed.returncode == 0, listed.stderr
    [tool] = json.loads(listed.stdout)["tools"]
    assert tool["name"] == "HelloWorld" and tool["inputSchema"]["required"] == ["name"]
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["isError"] is False and result["structuredContent"]["greeting"] == "Hello, Ada!"
    assert bad.returncode != 0
    assert "MCP error -32602: tool 'HelloWorld': missing required argument 'name'" in bad.stdout + bad.stderr
    assert refused.returncode != 0
    assert '"code": "unauthorized"' in refused.stdout + refused.stderr  # the server's JSON error, shown as sent
