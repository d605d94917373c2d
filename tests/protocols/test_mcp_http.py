"""`/mcp` on `agentmap serve` through the official MCP client over streamable HTTP: the server a real process,
its tools listed and called, bad calls, a pause answered by elicitation and by the `resume` tool (after a
restart too), and the API key."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import httpx
import pytest
import served
from components import clean_env
from timing import deadline, scaled

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, types  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
_QUOTE = {"schema": {"qty": "integer", "item": {"type": "string", "enum": ["tea", "cake"]}}}
FLOWS = f"""\
GraphName,Node,AgentType,Prompt,Description,Context,Input_Fields,Output_Field,Edge
Quote,Price,template,{{qty}} x {{item}},Prices the order,"{json.dumps(_QUOTE).replace('"', '""')}",item|qty,quote,
Publish,Review,human,Publish {{draft}}?,Asks to approve,"{{""interaction_type"": ""approval""}}",draft,approved,Done
Publish,Done,echo,,,,approved|draft,result,
"""
KEY = "k3y-for-tests"


class Served(served.Served):
    """`agentmap serve hello_world.csv flows.csv` (or `targets`) as a real process on a free port (the API key in
    its environment, with `env`)."""

    def __init__(self, folder: Path, *extra: str, targets: tuple[str, ...] = (), env: Mapping[str, str] = {}) -> None:
        environ = clean_env()
        environ.update({"MCP_TEST_KEY": KEY, **env})
        targets = targets or (str(ROOT / "graphs" / "hello_world.csv"), "flows.csv")
        super().__init__(*targets, *extra, cwd=folder, env=environ)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        super().stop(sig)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    (tmp_path / "flows.csv").write_text(FLOWS, encoding="utf-8")
    started: list[Served] = []

    def serve(*extra: str, checkpoint: str = str(tmp_path / "runs.db"), **options: Any) -> Served:
        started.append(Served(tmp_path, "--checkpoint", checkpoint, *extra, **options).start())
        return started[-1]

    yield serve
    for server in started:
        server.stop(signal.SIGKILL)
        assert server.proc is not None
        log = server.proc.communicate(scaled(5))[1]
        assert "Traceback" not in log, log[-3000:]  # clients that come and go leave no error in the log


@asynccontextmanager
async def connected(
    url: str, *, elicit: Any = None, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """A client session with the server's `/mcp` over streamable HTTP."""
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write, timedelta(seconds=60), elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        yield session


def _text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_tools_are_listed_called_and_bad_calls_are_json_rpc_errors(project: Callable[..., Served]) -> None:
    server = project()
    async with connected(server.url) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"HelloWorld", "Quote", "Publish", "resume"}
        assert tools["Quote"].inputSchema["properties"]["qty"] == {"type": "integer"}
        steps: list[str | None] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(message)

        result = await session.call_tool("HelloWorld", {"name": "Ada"}, progress_callback=on_progress)
        assert not result.isError, _text(result)
        assert result.structuredContent is not None
        assert result.structuredContent["greeting"] == "Hello, Ada!"
        assert result.structuredContent["graph_success"] is True
        assert steps == ["Greet finished", "Finish finished"]
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("Quote", {"qty": 2}, "tool 'Quote': missing required argument 'item' (required: item, qty)"),
            ("Quote", {"qty": "two", "item": "tea"}, "tool 'Quote': argument 'qty': 'two' is not of type 'integer'"),
        ]
        for name, arguments, message in cases:
            with pytest.raises(McpError) as caught:
                await session.call_tool(name, arguments)
            assert caught.value.error.code == types.INVALID_PARAMS
            assert caught.value.error.message.startswith(message), caught.value.error.message
            assert "Traceback" not in caught.value.error.message


async def test_a_pause_is_answered_through_elicitation(project: Callable[..., Served]) -> None:
    server = project()
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approved": True})

    async with connected(server.url, elicit=elicit) as session:
        result = await session.call_tool("Publish", {"draft": "the post"})
        assert not result.isError, _text(result)
        assert result.structuredContent is not None
        assert result.structuredContent["result"] == {"approved": True, "draft": "the post"}
    [first] = asked
    assert isinstance(first, types.ElicitRequestFormParams)
    assert first.message == "Publish the post?"
    assert first.requestedSchema["properties"]["approved"]["type"] == "boolean"


async def test_an_elicited_no_rejects_and_maybe_is_asked_again(project: Callable[..., Served]) -> None:
    server = project()
    answers = ["no", "maybe", "maybe", "maybe"]
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approved": answers.pop(0)})

    async with connected(server.url, elicit=elicit) as session:
        rejected = await session.call_tool("Publish", {"draft": "the post"})
        assert not rejected.isError, _text(rejected)
        assert rejected.structuredContent is not None
        assert rejected.structuredContent["result"] == {"approved": False, "draft": "the post"}
        refused = await session.call_tool("Publish", {"draft": "another"})
        assert refused.isError and "stays paused" in _text(refused), _text(refused)
        assert refused.structuredContent is not None
        thread_id = refused.structuredContent["thread_id"]
    assert answers == [] and all("'maybe' is neither yes nor no" in m for m in asked[2:])
    state = httpx.get(f"{server.url}/threads/{thread_id}/state").json()  # the run is still paused on its question
    assert [i["value"]["node"] for t in state["tasks"] for i in t["interrupts"]] == ["Review"]


async def test_a_pause_is_answered_through_the_resume_tool_after_a_restart(project: Callable[..., Served]) -> None:
    server = project()
    async with connected(server.url) as session:  # a client without elicitation
        paused = await session.call_tool("Publish", {"draft": "the post"})
        assert paused.structuredContent is not None, _text(paused)
        assert paused.structuredContent.get("status") == "paused", (_text(paused), paused.structuredContent)
        thread_id = paused.structuredContent["thread_id"]
        assert f'"thread_id": "{thread_id}"' in _text(paused)
        server.stop()  # SIGTERM while the client is connected, its event stream open: a clean stop
    assert server.proc is not None
    log = server.proc.communicate(scaled(5))[1]
    assert "MCP clients use /mcp (streamable HTTP): tools HelloWorld, Quote, Publish, resume" in log
    assert "Application shutdown complete" in log
    assert "ERROR" not in log and "Traceback" not in log, log[-3000:]

    again = project()  # the same --checkpoint file
    async with connected(again.url) as session:
        done = await session.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
        assert not done.isError, _text(done)
        assert done.structuredContent is not None
        assert done.structuredContent["result"] == {"approved": True, "draft": "the post"}
        with pytest.raises(McpError) as finished:
            await session.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
        assert finished.value.error.data == {"code": "nothing-to-resume", "hint": ANY}
        assert finished.value.error.message.startswith(f"thread {thread_id!r} has no paused run to resume")


async def test_a_cancelled_call_stops_the_run_after_its_step(project: Callable[..., Served], tmp_path: Path) -> None:
    import durable_graphs

    ticks = tmp_path / "ticks.txt"
    (tmp_path / "count").mkdir()
    counter = durable_graphs.counter(tmp_path / "count", nodes=4)
    server = project(targets=(str(counter),), env={"TICK_FILE": str(ticks), "TICK_SLEEP": "0.4"})
    async with connected(server.url) as session:
        cancelled: list[str | None] = []

        async def cancel_after_the_first_node(progress: float, total: float | None, message: str | None) -> None:
            if not cancelled:  # the first call is request 1 (initialize was 0)
                cancelled.append(message)
                notice = types.CancelledNotification(params=types.CancelledNotificationParams(requestId=1))
                await session.send_notification(types.ClientNotification(notice))

        with pytest.raises(McpError, match="cancelled"):
            await session.call_tool("Count", {}, progress_callback=cancel_after_the_first_node)
        assert cancelled == ["N01 finished"]
        again = await session.call_tool("Count", {})  # a whole run, longer than what the first had left
        assert again.structuredContent is not None and again.structuredContent["count"] == 4
    done = ticks.read_text(encoding="utf-8").split()
    assert done[-4:] == ["N01", "N02", "N03", "N04"]
    assert done[:-4] in (["N01"], ["N01", "N02"])  # the step under way when the cancel came ends; no more


async def test_without_the_api_key_mcp_is_refused(project: Callable[..., Served]) -> None:
    server = project("--api-key-env", "MCP_TEST_KEY")  # the key asked on loopback too, once it is set
    refused = httpx.post(f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "ping"}, timeout=scaled(10))
    assert refused.status_code == 401
    assert refused.json()["code"] == "unauthorized"
    with pytest.RaisesGroup(pytest.RaisesExc(httpx.HTTPStatusError, match="401 Unauthorized"), flatten_subgroups=True):
        async with connected(server.url) as session:  # the client's transport reports the refusal
            await session.list_tools()
    async with connected(server.url, headers={"X-Api-Key": KEY}) as session:
        assert "HelloWorld" in {t.name for t in (await session.list_tools()).tools}


async def test_a_paused_call_is_a_thread_the_langgraph_sdk_sees_and_answers(project: Callable[..., Served]) -> None:
    from langgraph_sdk import get_client

    server = project()
    async with connected(server.url) as session:
        paused = await session.call_tool("Publish", {"draft": "the post"})
        assert paused.structuredContent is not None
        thread_id = paused.structuredContent["thread_id"]
    client = get_client(url=server.url, api_key=None)
    thread = await client.threads.get(thread_id)
    assert (thread["metadata"] or {})["graph_id"] == "Publish"
    assert thread["status"] == "interrupted"  # the call was a run of the server's queue, listed with its thread
    (run,) = await client.runs.list(thread_id)
    assert (run["metadata"] or {})["source"] == "mcp", run
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["Review"]
    assert state["tasks"][0]["interrupts"][0]["value"]["question"] == "Publish the post?"
    final = await client.runs.wait(thread_id, "Publish", command={"resume": "yes"})
    assert isinstance(final, dict) and final["result"] == {"approved": True, "draft": "the post"}


def test_mcp_says_why_it_offers_no_tools_while_the_rest_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmap.server import ServeConfig, background

    ask = tmp_path / "ask.csv"  # its only graph reads the terminal: no tool to offer
    ask.write_text("GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nAsk,Q,input,Name?,,name\n", "utf-8")
    with background(ServeConfig(targets=(str(ask),), checkpoint="memory")) as url:
        refused = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "ping"}, timeout=scaled(10))
        assert refused.status_code == 404
        assert refused.json()["code"] == "no-workflow"
        assert refused.json()["message"].startswith("/mcp offers no tools: no graph to offer as an MCP tool")
        assert httpx.get(f"{url}/assistants/Ask", timeout=scaled(10)).status_code == 200
    monkeypatch.setitem(sys.modules, "mcp.server.streamable_http_manager", None)  # the SDK not installed
    with background(ServeConfig(targets=(str(ROOT / "graphs" / "hello_world.csv"),), checkpoint="memory")) as url:
        missing = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "ping"}, timeout=scaled(10))
        assert missing.status_code == 404
        assert missing.json()["code"] == "missing-extra"
        assert 'pip install "agentmap[mcp-server]"' in missing.json()["hint"]


async def test_a_pause_on_one_replica_is_answered_on_another(project: Callable[..., Served], postgres_url: str) -> None:
    first, second = project(checkpoint=postgres_url), project(checkpoint=postgres_url)
    async with connected(first.url) as session:
        paused = await session.call_tool("Publish", {"draft": "the post"})
        assert paused.structuredContent is not None, _text(paused)
        assert paused.structuredContent.get("status") == "paused", (_text(paused), paused.structuredContent)
        thread_id = paused.structuredContent["thread_id"]
    async with connected(second.url) as session:
        done = await session.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
        assert not done.isError, _text(done)
        assert done.structuredContent is not None
        assert done.structuredContent["result"] == {"approved": True, "draft": "the post"}


def test_a_web_page_of_an_origin_not_allowed_is_refused() -> None:
    from agentmap.server import ServeConfig, background

    hello = str(ROOT / "graphs" / "hello_world.csv")
    opening = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    config = ServeConfig(targets=(hello,), checkpoint="memory", cors_origins=("http://localhost:6274",))
    with background(config) as url:
        refused = httpx.post(f"{url}/mcp", json=opening, headers={**accept, "Origin": "http://evil.example"})
        assert refused.status_code == 403
        assert refused.json()["code"] == "forbidden-origin"
        assert "--cors-origin" in refused.json()["hint"] and refused.json()["request_id"]
        allowed = httpx.post(f"{url}/mcp", json=opening, headers={**accept, "Origin": "http://localhost:6274"})
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "http://localhost:6274"
        assert "mcp-session-id" in allowed.headers["access-control-expose-headers"].lower()  # a page reads it
        assert httpx.post(f"{url}/mcp", json=opening, headers=accept).status_code == 200  # no page: no Origin


async def test_a_pause_answered_after_the_file_changed_finishes_on_the_revision_it_started_on(
    project: Callable[..., Served], tmp_path: Path
) -> None:
    server = project()
    async with connected(server.url) as session:
        paused = await session.call_tool("Publish", {"draft": "the post"})
        assert paused.structuredContent is not None, _text(paused)
        thread_id = paused.structuredContent["thread_id"]
    server.stop()
    edited = FLOWS.replace("approved,Done\n", "approved,Announce\n").replace(
        "Publish,Done,echo,,,,approved|draft,result,", "Publish,Announce,template,Out now: {draft},,,draft,result,"
    )
    (tmp_path / "flows.csv").write_text(edited, encoding="utf-8")  # Done replaced by Announce while the run waits

    again = project()
    async with connected(again.url) as session:
        done = await session.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
        assert not done.isError, _text(done)
        assert done.structuredContent is not None
        assert done.structuredContent["result"] == {"approved": True, "draft": "the post"}  # Done ran, not Announce
        fresh = await session.call_tool("Publish", {"draft": "a note"})
        assert fresh.structuredContent is not None
        new = await session.call_tool("resume", {"thread_id": fresh.structuredContent["thread_id"], "answer": "yes"})
        assert new.structuredContent is not None and new.structuredContent["result"] == "Out now: a note"


async def test_every_request_is_logged_once_after_an_mcp_session(tmp_path: Path) -> None:
    """The MCP SDK's `logging.debug` when a client's stream closes installs a root handler (`basicConfig`): the
    server's request lines, which also went up to the root logger, were printed twice from then on. A fresh
    interpreter: a process forked from the test's fork server starts with that server's logging, not its own."""
    (tmp_path / "flows.csv").write_text(FLOWS, encoding="utf-8")
    port = served.free_port()
    command = [sys.executable, "-m", "agentmap", "serve", str(ROOT / "graphs" / "hello_world.csv"), "flows.csv"]
    with open(tmp_path / "server.err", "w+", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [*command, "--port", str(port), "--checkpoint", "memory"], cwd=tmp_path, env=clean_env(), stderr=err
        )
        url = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient() as client:
                await _answering(client, f"{url}/ok", proc)
                async with connected(url) as session:
                    result = await session.call_tool("HelloWorld", {"name": "Ada"})
                    assert not result.isError, _text(result)
                for _ in range(5):  # requests after the session's end
                    assert (await client.get(f"{url}/ok")).status_code == 200
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(scaled(30))
        err.seek(0)
        log = err.read()
    lines = [line for line in log.splitlines() if "request_id=" in line]
    assert sum(" GET /ok 200 " in line for line in lines) >= 6, log[-3000:]
    ids = [line.split("request_id=")[1].split()[0] for line in lines]
    assert len(ids) == len(set(ids)), log[-3000:]  # each request's line once


async def _answering(client: httpx.AsyncClient, url: str, proc: subprocess.Popen[bytes]) -> None:
    """Wait (with a deadline) until `url` answers 200, failing early if the server process ended."""
    give_up = deadline(60)
    while time.monotonic() < give_up:
        assert proc.poll() is None, "the server exited"
        try:
            if (await client.get(url)).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError(f"{url} did not answer within the deadline")
