"""MCP servers as tool sources: a real FastMCP server over stdio and over streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from timing import deadline, scaled

import agentmap
from agentmap.agents.base import AgentEnvironment
from agentmap.agents.tool_sources import build_tool_executor, check_tool_config
from agentmap.agents.tools import LocalToolExecutor
from agentmap.errors import ConfigError
from agentmap.llm.mcp import check_source, load_source_tools, mcp_connection, mcp_sessions

SERVER = Path(__file__).with_name("mcp_task_server.py")
ALLOWED = {"mcp": {"allowed_commands": ["python server.py notes.json", "python server.py"]}}
"""The settings that let a workflow start the test server (a CSV alone may not start a command)."""


@pytest.fixture
def flow_dir(tmp_path: Path) -> Path:
    """A workflow folder holding a copy of the test server, as a user's project would."""
    shutil.copy(SERVER, tmp_path / "server.py")
    return tmp_path


@pytest.fixture(scope="module")
def stdio_executor(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalToolExecutor, Path]:
    base = tmp_path_factory.mktemp("mcp")
    shutil.copy(SERVER, base / "server.py")
    context = {"tool_source": "mcp:stdio:python server.py notes.json"}
    executor = asyncio.run(build_tool_executor(context, AgentEnvironment(base_dir=base, settings=ALLOWED)))
    return executor, base / "notes.json"


def test_tools_are_listed_with_their_schemas(stdio_executor: tuple[LocalToolExecutor, Path]) -> None:
    executor, _ = stdio_executor
    assert executor.get_available_tools() == ["add_numbers", "save_note", "list_notes", "explode", "slow", "server_pid"]
    [schema] = [s["function"] for s in executor.get_tool_schemas() if s["function"]["name"] == "add_numbers"]
    assert schema["description"] == "Add two integers."
    assert schema["parameters"]["required"] == ["a", "b"]


async def test_calls_return_plain_data_and_state_persists(stdio_executor: tuple[LocalToolExecutor, Path]) -> None:
    executor, notes = stdio_executor
    assert (await executor.execute("add_numbers", {"a": 2, "b": 40}, "u")).data == 42
    saved = await executor.execute("save_note", {"title": "milk"}, "u")
    assert saved.success and saved.data["title"] == "milk"
    listed = await executor.execute("list_notes", {}, "u")
    assert [n["title"] for n in listed.data] == [n["title"] for n in json.loads(notes.read_text())]
    assert "milk" in [n["title"] for n in listed.data]


async def test_server_errors_bad_arguments_and_timeouts_are_results(
    stdio_executor: tuple[LocalToolExecutor, Path],
) -> None:
    executor, _ = stdio_executor
    failed = await executor.execute("explode", {"reason": "kaboom"}, "u")
    assert (failed.success, failed.error_code) == (False, "execution_error")
    assert "exploded: kaboom" in (failed.error or "")
    bad = await executor.execute("add_numbers", {"a": "two", "b": 1}, "u")
    assert bad.error_code == "invalid_arguments"
    assert "a: expected integer, got str" in (bad.error or "")


async def test_a_call_that_overruns_times_out(stdio_executor: tuple[LocalToolExecutor, Path]) -> None:
    executor, _ = stdio_executor
    async with mcp_sessions():
        assert (await executor.execute("server_pid", {}, "u")).success  # the server is up: time the call alone
        quick = LocalToolExecutor([executor.get_tool("slow")], timeout=0.5)  # type: ignore[list-item]
        slow = await quick.execute("slow", {"seconds": 30}, "u")
    assert slow.error_code == "timeout"
    assert slow.error == "tool 'slow' did not finish within 0.5 seconds"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_calls_in_a_sessions_block_share_one_server(stdio_executor: tuple[LocalToolExecutor, Path]) -> None:
    executor, _ = stdio_executor
    apart = [(await executor.execute("server_pid", {}, "u")).data for _ in range(2)]
    assert apart[0] != apart[1]  # one process per call
    async with mcp_sessions():
        together = [(await executor.execute("server_pid", {}, "u")).data for _ in range(3)]
        both = await asyncio.gather(*(executor.execute("server_pid", {}, "u") for _ in range(2)))
        assert len({*together, *(r.data for r in both)}) == 1
        assert _alive(together[0])
    assert not _alive(together[0])  # the block's end stopped the server


async def test_a_sessions_block_reopens_a_server_that_failed(flow_dir: Path) -> None:
    executor = await build_tool_executor(
        {"tool_source": "mcp:stdio:python server.py notes.json"}, AgentEnvironment(base_dir=flow_dir, settings=ALLOWED)
    )
    (flow_dir / "server.py").rename(flow_dir / "gone.py")  # the next session cannot start
    async with mcp_sessions():
        failed = await executor.execute("add_numbers", {"a": 1, "b": 1}, "u")
        assert failed.success is False and failed.error_code in ("execution_error", "network")
        (flow_dir / "gone.py").rename(flow_dir / "server.py")
        assert (await executor.execute("add_numbers", {"a": 1, "b": 1}, "u")).data == 2


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("mcp:http://127.0.0.1:9/mcp", {"transport": "streamable_http", "url": "http://127.0.0.1:9/mcp"}),
        ("https://tools.example/mcp", {"transport": "streamable_http", "url": "https://tools.example/mcp"}),
        ("mcp:sse:http://127.0.0.1:9/sse", {"transport": "sse", "url": "http://127.0.0.1:9/sse"}),
        (
            "mcp:stdio:node srv.js --flag 'a b'",
            {"transport": "stdio", "command": "node", "args": ["srv.js", "--flag", "a b"]},
        ),
        ("mcp:python server.py", {"transport": "stdio", "command": sys.executable, "args": ["server.py"]}),
    ],
)
def test_source_syntax(source: str, expected: dict[str, object], tmp_path: Path) -> None:
    connection = mcp_connection(source, base_dir=tmp_path)
    assert {k: connection[k] for k in expected} == expected
    if expected["transport"] == "stdio":
        assert connection["cwd"] == str(tmp_path)


def test_problems_seen_before_starting_a_server(flow_dir: Path) -> None:
    assert check_source("mcp:stdio:python server.py", base_dir=flow_dir) == []
    assert check_source("mcp:stdio:python missing.py", base_dir=flow_dir) == [
        f"MCP source 'mcp:stdio:python missing.py': script 'missing.py' does not exist in {flow_dir}"
    ]
    assert check_source("mcp:stdio:no-such-binary-xyz", base_dir=flow_dir) == [
        "MCP source 'mcp:stdio:no-such-binary-xyz': command 'no-such-binary-xyz' is not found on PATH"
    ]
    assert "names no server" in check_source("mcp:", base_dir=flow_dir)[0]
    assert "write mcp:sse:http://host:port/sse" in check_source("mcp:sse:ftp://x", base_dir=flow_dir)[0]
    environment = AgentEnvironment(base_dir=flow_dir)
    assert check_tool_config({"tool_source": "mcp:stdio:python missing.py"}, environment)


async def test_a_server_that_dies_is_a_clear_error(flow_dir: Path) -> None:
    (flow_dir / "crash.py").write_text("raise SystemExit('no server today')\n")
    with pytest.raises(ConfigError, match=r"MCP source 'mcp:stdio:python crash\.py' could not be listed"):
        await asyncio.wait_for(load_source_tools("mcp:stdio:python crash.py", base_dir=flow_dir), scaled(30))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(flow_dir: Path) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "server.py", "notes.json", "--http", str(port)],
        cwd=flow_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        give_up = deadline(20)
        while time.monotonic() < give_up:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=scaled(10))


async def test_streamable_http_server(http_server: str, flow_dir: Path) -> None:
    context = {"tool_source": f"mcp:{http_server}", "available_tools": ["add_numbers", "explode"]}
    executor = await build_tool_executor(context, AgentEnvironment(base_dir=flow_dir))
    assert executor.get_available_tools() == ["add_numbers", "explode"]
    assert (await executor.execute("add_numbers", {"a": 1, "b": 1}, "u")).data == 2
    assert (await executor.execute("explode", {"reason": "x"}, "u")).error_code == "execution_error"


def test_mcp_tools_in_a_csv_workflow(flow_dir: Path) -> None:
    source = "mcp:stdio:python server.py notes.json"
    (flow_dir / "notes.csv").write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next,Failure_Next,"
        "Tool_Source,Available_Tools\n"
        f"notes,Ask,offline,You keep notes.,,request,reply,Sum,Oops,{source},save_note|list_notes\n"
        f'notes,Sum,tool,,"{{""tool"": ""add_numbers""}}",a|b,total,,Oops,{source},\n'
        "notes,Oops,echo,,,errors,problem,,,,\n"
    )
    app = agentmap.compile(flow_dir / "notes.csv", settings=ALLOWED)
    result = app.invoke({"request": 'save a note "call the bank"', "a": 20, "b": 22})
    assert result.success, result.state
    assert result.state["total"] == 42
    assert result.state["reply"].startswith("Done: save note returned")
    assert [n["title"] for n in json.loads((flow_dir / "notes.json").read_text())] == ["call the bank"]


def test_an_llm_node_keeps_one_server_for_its_tool_loop(flow_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from openai_stub import OpenAIStub, text, tool_calls

    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
    with OpenAIStub() as stub:
        stub.script(tool_calls(("server_pid", {}), ("server_pid", {})), tool_calls(("server_pid", {})), text("ok"))
        context = json.dumps({"model": "gpt-stub", "base_url": stub.base_url, "max_retries": 0}).replace('"', '""')
        (flow_dir / "pids.csv").write_text(
            "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Tool_Source\n"
            f'g,Ask,openai,Use tools.,"{context}",q,answer,mcp:stdio:python server.py\n'
        )
        result = agentmap.compile(flow_dir / "pids.csv", settings=ALLOWED).invoke({"q": "pids?"})
        assert result.success and result.state["answer"] == "ok", result.state
        tool_results = [m["content"] for r in stub.requests for m in r["messages"] if m["role"] == "tool"]
    # 2 calls in the first reply, then the same 2 resent plus 1 more in the third request: one process.
    assert len(tool_results) == 5 and len(set(tool_results)) == 1
    assert not _alive(int(tool_results[0]))


NOTEBOOK = """
import asyncio, io, sys
from pathlib import Path
sys.stderr = io.StringIO()  # a notebook's stderr: a stream object with no file behind it
import mcp.client.stdio  # the SDK takes the stderr of this moment as its servers' stderr
from agentmap.agents.base import AgentEnvironment
from agentmap.agents.tool_sources import build_tool_executor

async def main():
    settings = {"mcp": {"allowed_commands": ["python server.py"]}}
    environment = AgentEnvironment(base_dir=Path.cwd(), settings=settings)
    executor = await build_tool_executor({"tool_source": "mcp:stdio:python server.py"}, environment)
    result = await executor.execute("add_numbers", {"a": 2, "b": 40}, "u")
    sys.__stdout__.write(f"{executor.get_available_tools()[0]} {result.success} {result.data}\\n")

asyncio.run(main())
"""


def test_a_stdio_server_starts_where_stderr_is_no_file(flow_dir: Path) -> None:
    """In a notebook `sys.stderr` is the kernel's stream object; the MCP SDK's default would hand it to the server
    process as its stderr, which needs a file (`UnsupportedOperation: fileno`). The server starts all the same."""
    done = subprocess.run(
        [sys.executable, "-c", NOTEBOOK], cwd=flow_dir, capture_output=True, text=True, timeout=scaled(60)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "add_numbers True 42", done.stdout + done.stderr
