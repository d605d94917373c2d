"""Two users on three `agentmap serve --auth` replicas of one PostgreSQL database: every route (threads, runs,
crons, the store, `/mcp`, `/a2a`, `/agui`) used by one user on one replica and tried by the other on the others
reads and writes nothing of the first user's; and a quota counted by every replica together."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from auth_helpers import client, token_users
from server_helpers import Replica, steps_project
from timing import scaled

pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

AUTH = token_users({"alice-token": "alice", "bob-token": "bob"}, graphs_open=True, own_store=True)

GRAPHS = """
GraphName,Node,AgentType,Prompt,Description,Context,Input_Fields,Output_Field,Edge
Publish,Review,human,Publish {draft}?,Asks to approve,"{""interaction_type"": ""approval""}",draft,approved,Done
Publish,Done,echo,,,,approved|draft,result,
agent,Reply,echo,,,,messages,reply,
"""

ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}


def _start(folder: Path, url: str, count: int, *extra: str) -> list[Replica]:
    started = [Replica(folder, url, "--auth", f"{folder}/auth.py:auth", *extra) for _ in range(count)]
    for replica in started:
        replica.spawn()
    return [replica.wait_up(120) for replica in started]


def _refused(call: Callable[[], Any]) -> int:
    """The status a langgraph-sdk call was refused with (it must be refused)."""
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    status: int = refused.value.response.status_code
    return status


def _tried(bob: Any, thread: str, run_id: str, kept: str, cron_id: str) -> dict[str, int]:
    """What each route answered the other user who tried it on `thread` (paused), its run, the thread `kept` of a
    stateless run and the cron."""
    return {
        "threads.get": _refused(lambda: bob.threads.get(thread)),
        "threads.get_state": _refused(lambda: bob.threads.get_state(thread)),
        "threads.update_state": _refused(lambda: bob.threads.update_state(thread, {"draft": "bob's"})),
        "threads.get_history": _refused(lambda: bob.threads.get_history(thread)),
        "threads.delete": _refused(lambda: bob.threads.delete(thread)),
        "runs.create": _refused(lambda: bob.runs.create(thread, "Publish", command={"resume": "yes"})),
        "runs.wait": _refused(lambda: bob.runs.wait(thread, "Publish", input={"draft": "bob's"})),
        "runs.list": _refused(lambda: bob.runs.list(thread)),
        "runs.get": _refused(lambda: bob.runs.get(thread, run_id)),
        "runs.cancel": _refused(lambda: bob.runs.cancel(thread, run_id)),
        "runs.join": _refused(lambda: bob.runs.join(thread, run_id)),
        "interrupt": _refused(
            lambda: bob.runs.create(thread, "Publish", input={"draft": "b"}, multitask_strategy="interrupt")
        ),
        "kept thread": _refused(lambda: bob.threads.get(kept)),
        "crons.update": _refused(lambda: bob.crons.update(cron_id, schedule="* * * * *")),
        "crons.delete": _refused(lambda: bob.crons.delete(cron_id)),
        "crons.create_for_thread": _refused(
            lambda: bob.crons.create_for_thread(thread, "Publish", schedule="* * * * *", input={"draft": "b"})
        ),
    }


def _rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return list(conn.execute(sql).fetchall())


def _agui(url: str, headers: dict[str, str], sent: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    with httpx.stream("POST", f"{url}/agui/Publish", json=sent, headers=headers, timeout=scaled(60)) as response:
        response.read()
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    return response.status_code, events


def _agui_body(thread: str, run: str, **fields: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": [], **fields}


async def _mcp_resume(url: str, headers: dict[str, str], thread_id: str) -> str:
    """What `/mcp`'s resume tool answers the user of `headers` for `thread_id` (its error's message)."""
    from datetime import timedelta

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.exceptions import McpError

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write, timedelta(seconds=60)) as session,
    ):
        await session.initialize()
        with pytest.raises(McpError) as refused:
            await session.call_tool("resume", {"thread_id": thread_id, "answer": "yes"})
        return str(refused.value.error.message)


async def _a2a_task(url: str, headers: dict[str, str], task_id: str | None) -> Any:
    """With `task_id`: the A2A task as the user of `headers` gets it (an A2AError when not found); without: a new
    task of the user (paused on its question)."""
    from a2a.client import ClientConfig, create_client
    from a2a.helpers import new_text_part
    from a2a.types.a2a_pb2 import GetTaskRequest, Message, Role, SendMessageRequest

    async with httpx.AsyncClient(headers=headers, timeout=scaled(60)) as http:
        agent = await create_client(f"{url}/a2a/Publish", ClientConfig(httpx_client=http, streaming=False))
        if task_id is not None:
            return await agent.get_task(GetTaskRequest(id=task_id))
        sent = Message(role=Role.ROLE_USER, message_id=f"m{time.monotonic_ns()}", parts=[new_text_part("a2a post")])
        return [e async for e in agent.send_message(SendMessageRequest(message=sent))][-1].task


async def test_two_users_on_three_replicas_never_reach_each_others(
    tmp_path: Path, postgres_url: str, replicas: list[Replica]
) -> None:
    pytest.importorskip("mcp")
    pytest.importorskip("a2a")
    pytest.importorskip("ag_ui")
    from a2a.utils.errors import A2AError

    folder = steps_project(tmp_path, "", GRAPHS)
    (folder / "auth.py").write_text(AUTH, encoding="utf-8")
    replicas += _start(folder, postgres_url, 3)
    urls = [r.url for r in replicas]
    alice = client(urls[0], ALICE)
    bobs = [client(u, BOB) for u in urls[1:]]

    # alice's resources, all made on the first replica
    thread = alice.threads.create(metadata={"topic": "mine"})["thread_id"]
    run = alice.runs.create(thread, "Publish", input={"draft": "alice's post"})
    alice.runs.join(thread, run["run_id"])
    paused = alice.threads.get_state(thread)
    assert paused["next"] == ["Review"]
    history = len(alice.threads.get_history(thread, limit=100))
    kept = alice.runs.create(None, "agent", input={"messages": ["hi"]}, on_completion="keep")
    alice.runs.join(kept["thread_id"], kept["run_id"])
    cron = alice.crons.create_for_thread(thread, "Publish", schedule="0 0 1 1 *", input={"draft": "yearly"})
    alice.store.put_item(["notes"], "k", {"text": "alice's"})
    agui_thread = "agui-of-alice"
    status, events = _agui(urls[0], ALICE, _agui_body(agui_thread, "r1", state={"draft": "x"}))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events[-2:]
    mcp_thread = thread  # the MCP resume tool is tried on alice's paused thread
    a2a_task = await _a2a_task(urls[0], ALICE, None)

    # bob, on the other replicas, tries each route on them
    for n, bob in enumerate(bobs):
        url = urls[n + 1]
        tried = _tried(bob, thread, run["run_id"], kept["thread_id"], cron["cron_id"])
        assert set(tried.values()) == {404}, tried
        streamed = httpx.post(
            f"{url}/threads/{thread}/runs/stream",
            json={"assistant_id": "Publish", "command": {"resume": "yes"}},
            headers=BOB,
            timeout=scaled(60),
        )
        assert streamed.status_code == 404
        assert thread not in [t["thread_id"] for t in bob.threads.search(limit=100)]
        assert bob.crons.search() == [] and bob.crons.count() == 0
        assert bob.store.get_item(["notes"], "k") is None
        assert bob.store.search_items(["notes"])["items"] == []
        assert ["alice", "notes"] not in bob.store.list_namespaces()["namespaces"]
        assert "unknown thread" in await _mcp_resume(url, BOB, mcp_thread)
        with pytest.raises(A2AError):
            await _a2a_task(url, BOB, a2a_task.id)
        assert _agui(url, BOB, _agui_body(thread, "b1", state={"draft": "bob's"}))[0] == 404
        answer = {"command": {"resume": "yes"}}
        assert _agui(url, BOB, _agui_body(thread, "b2", forwardedProps=answer))[0] == 404
        assert _agui(url, BOB, _agui_body(agui_thread, "b3", state={"draft": "b"}))[0] == 404

    # nothing of alice's moved: her thread waits as it did, with its history, cron and item; every run on her
    # threads is hers, and bob's own work went into threads of his
    assert alice.threads.get_state(thread)["values"] == paused["values"]
    assert len(alice.threads.get_history(thread, limit=100)) == history
    assert [c["cron_id"] for c in alice.crons.search()] == [cron["cron_id"]]
    item = alice.store.get_item(["notes"], "k")
    assert item is not None and item["value"] == {"text": "alice's"}
    owners = _rows(
        postgres_url,
        "SELECT r.user_id, t.metadata::jsonb ->> 'owner' FROM agentmap_runs r "
        "JOIN agentmap_threads t ON t.thread_id = r.thread_id",
    )
    assert owners and all(user == owner for user, owner in owners), owners
    assert {user for user, _ in owners} == {"alice"}  # bob started no run on any thread
    finished = alice.runs.wait(thread, "Publish", command={"resume": "yes"})
    assert finished["result"] == {"approved": True, "draft": "alice's post"}


def test_a_quota_is_counted_by_every_replica_together(
    tmp_path: Path, postgres_url: str, replicas: list[Replica]
) -> None:
    folder = steps_project(tmp_path, "", GRAPHS)
    (folder / "auth.py").write_text(AUTH, encoding="utf-8")
    replicas += _start(folder, postgres_url, 2, "--quota", "runs=3/min")
    alices = [client(r.url, ALICE) for r in replicas]
    for n in range(3):  # three runs, on alternating replicas
        alices[n % 2].runs.wait(None, "agent", input={"messages": [f"run {n}"]})
    for alice in alices:  # a fourth, on either replica: over the quota they count together
        with pytest.raises(httpx.HTTPStatusError) as refused:
            alice.runs.wait(None, "agent", input={"messages": ["one more"]})
        response = refused.value.response
        assert response.status_code == 429 and response.json()["code"] == "quota-exceeded"
        assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert client(replicas[1].url, BOB).runs.wait(None, "agent", input={"messages": ["bob's"]})["reply"]
