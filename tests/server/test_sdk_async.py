"""LangGraph's async client against the real server, and a paused run resumed after the server restarts."""

from __future__ import annotations

from pathlib import Path

import pytest
from server_helpers import make_project, serving

sdk = pytest.importorskip("langgraph_sdk")
from langgraph_sdk.errors import ConflictError, NotFoundError  # noqa: E402

pytestmark = pytest.mark.slow


async def test_async_client_calls(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "p")
    with serving(folder, checkpoint=str(tmp_path / "runs.db"), durability="async") as url:  # a checkpoint a step
        client = sdk.get_client(url=url, api_key=None)
        graphs = sorted(a["graph_id"] for a in await client.assistants.search())
        assert graphs == ["Ask", "HelloWorld", "Review", "Slow"]
        hello = await client.assistants.get("HelloWorld")
        assert (await client.assistants.get_graph(hello["assistant_id"]))["nodes"]
        assert (await client.assistants.get_schemas(hello["assistant_id"]))["graph_id"] == "HelloWorld"
        thread = await client.threads.create()
        tid = thread["thread_id"]
        assert (await client.runs.wait(tid, hello["assistant_id"], input={"name": "Ada"}))["greeting"] == "Hello, Ada!"
        parts = [
            p
            async for p in client.runs.stream(
                tid, "HelloWorld", input={"name": "Bo"}, stream_mode=["updates", "values"]
            )
        ]
        assert parts[0].event == "metadata" and [p.event for p in parts].count("updates") == 2
        assert parts[-1].event == "values" and parts[-1].data["greeting"] == "Hello, Bo!"
        run = await client.runs.create(tid, "HelloWorld", input={"name": "Cy"})
        assert (await client.runs.join(tid, run["run_id"]))["greeting"] == "Hello, Cy!"
        assert len(await client.runs.list(tid)) == 3
        assert (await client.threads.get_state(tid))["values"]["greeting"] == "Hello, Cy!"
        assert len(await client.threads.get_history(tid, limit=100)) >= 9
        assert tid in [t["thread_id"] for t in await client.threads.search(status="idle", limit=100)]
        stateless = [p async for p in client.runs.stream(None, "HelloWorld", input={"name": "S"})]
        assert stateless[-1].data["greeting"] == "Hello, S!"
        assert (await client.runs.wait(None, "HelloWorld", input={"name": "W"}))["greeting"] == "Hello, W!"
        with pytest.raises(ConflictError, match="runs graph 'HelloWorld', not 'Slow'"):
            await client.runs.create(tid, "Slow", input={"topic": "x"})
        other = (await client.threads.create())["thread_id"]
        slow = await client.runs.create(other, "Slow", input={"topic": "x"}, multitask_strategy="enqueue")
        await client.runs.cancel(other, slow["run_id"], wait=True)
        assert (await client.runs.get(other, slow["run_id"]))["status"] == "interrupted"
        await client.threads.delete(tid)
        with pytest.raises(NotFoundError):
            await client.threads.get(tid)
        await client.aclose()


async def test_paused_run_resumes_after_a_restart(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "p")
    database = str(tmp_path / ".agentmap" / "runs.db")
    with serving(folder, checkpoint=database) as url:
        client = sdk.get_client(url=url, api_key=None)
        tid = (await client.threads.create())["thread_id"]
        paused = await client.runs.wait(tid, "Review", input={"topic": "owls"})
        assert paused["__interrupt__"][0]["value"]["interaction"] == "approval"
        await client.aclose()
    with serving(folder, checkpoint=database) as url:  # a new server on the same file
        client = sdk.get_client(url=url, api_key=None)
        thread = await client.threads.get(tid)
        assert thread["status"] == "interrupted" and thread["values"]["draft"] == "Draft about owls"
        assert [r["status"] for r in await client.runs.list(tid)] == ["interrupted"]
        done = await client.runs.wait(tid, "Review", command={"resume": {"approved": False, "note": "too short"}})
        assert done["approved"] is False and "__interrupt__" not in done
        assert (await client.threads.get(tid))["status"] == "idle"
        await client.aclose()
