"""`/mcp` and `/a2a` of `agentmap serve --auth`: a tool call and an A2A task are runs of their caller, on the
caller's threads; the other user can neither answer, read nor reuse them (the official `mcp` and `a2a-sdk`
clients, LangGraph's tutorial auth file)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from auth_helpers import ALICE, BOB, PRIVATE, client, project
from server_helpers import serving
from timing import scaled

pytestmark = pytest.mark.slow

FLOWS = """
GraphName,Node,AgentType,Prompt,Description,Context,Input_Fields,Output_Field,Edge
Publish,Review,human,Publish {draft}?,Asks to approve,"{""interaction_type"": ""approval""}",draft,approved,Done
Publish,Done,echo,,,,approved|draft,result,
"""


@asynccontextmanager
async def mcp_session(url: str, headers: dict[str, str]) -> AsyncIterator[tuple[Any, Any]]:
    """An MCP client session with `/mcp` as the user of `headers`, and the session's id."""
    pytest.importorskip("mcp")
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, session_id),
        ClientSession(read, write, timedelta(seconds=60)) as session,
    ):
        await session.initialize()
        yield session, session_id


async def test_an_mcp_pause_is_answered_by_its_caller_alone(tmp_path: Path) -> None:
    from mcp.shared.exceptions import McpError

    graph, auth = project(tmp_path, PRIVATE, FLOWS)
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        assert httpx.post(f"{url}/mcp", json={}).status_code == 401  # the tutorial's handler: no token, no call
        async with mcp_session(url, ALICE) as (alice, alice_session):
            paused = await alice.call_tool("Publish", {"draft": "the post"})
            assert paused.structuredContent is not None and paused.structuredContent["status"] == "paused"
            thread_id = paused.structuredContent["thread_id"]
            assert client(url, ALICE).threads.get(thread_id)["metadata"]["owner"] == "user1"
            with pytest.raises(httpx.HTTPStatusError):
                client(url, BOB).threads.get(thread_id)
            taken = httpx.post(  # bob in alice's session: refused before the SDK reads the message
                f"{url}/mcp",
                json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
                headers={
                    **BOB,
                    "Mcp-Session-Id": str(alice_session()),
                    "Accept": "application/json, text/event-stream",
                },
            )
            assert taken.status_code == 403 and taken.json()["code"] == "forbidden"
            async with mcp_session(url, BOB) as (bob, _):
                with pytest.raises(McpError) as unknown:
                    await bob.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
                assert f"unknown thread {thread_id!r}" in unknown.value.error.message
            done = await alice.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
            assert not done.isError and done.structuredContent is not None
            assert done.structuredContent["result"] == {"approved": True, "draft": "the post"}


async def test_an_a2a_task_is_its_callers(tmp_path: Path) -> None:
    pytest.importorskip("a2a")
    from a2a.client import ClientConfig, create_client
    from a2a.helpers import new_text_part
    from a2a.types.a2a_pb2 import GetTaskRequest, Message, Role, SendMessageRequest, TaskState
    from a2a.utils.errors import A2AError

    @asynccontextmanager
    async def agent(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
        async with httpx.AsyncClient(headers=headers, timeout=scaled(30)) as http:
            yield await create_client(f"{url}/a2a/Publish", ClientConfig(httpx_client=http, streaming=False))

    def message(text: str, task: Any = None) -> SendMessageRequest:
        sent = Message(role=Role.ROLE_USER, message_id=f"m{time.monotonic_ns()}", parts=[new_text_part(text)])
        if task is not None:
            sent.task_id, sent.context_id = task.id, task.context_id
        return SendMessageRequest(message=sent)

    # the tutorial's handler filters assistants by owner too (as LangGraph's server does), and the served ones have
    # none: every user may read them, so their agent cards are found
    readable = PRIVATE + "\n\n@auth.on.assistants.read\nasync def anyone_reads(ctx, value):\n    return True\n"
    graph, auth = project(tmp_path, readable, FLOWS)
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        assert httpx.get(f"{url}/a2a/Publish/.well-known/agent-card.json").status_code == 401
        async with agent(url, ALICE) as alice, agent(url, BOB) as bob:
            task = [e async for e in alice.send_message(message("the post"))][-1].task
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert (await alice.get_task(GetTaskRequest(id=task.id))).id == task.id
            with pytest.raises(A2AError):  # not found: another user's task
                await bob.get_task(GetTaskRequest(id=task.id))
            with pytest.raises(A2AError):  # bob cannot answer it either
                [e async for e in bob.send_message(message("yes", task))]
            assert client(url, ALICE).threads.get(task.context_id)["metadata"]["owner"] == "user1"
            with pytest.raises(httpx.HTTPStatusError):
                client(url, BOB).threads.get(task.context_id)
            answered = [e async for e in alice.send_message(message("yes", task))][-1].task
            assert answered.status.state == TaskState.TASK_STATE_COMPLETED
