"""`interrupt_before` / `interrupt_after` through LangGraph's own client against the real server: the run stops
at the named node, the thread says so, a run without input continues it, across a restart too."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from server_helpers import GRAPHS, make_project, serving

sdk = pytest.importorskip("langgraph_sdk")
from fastapi.testclient import TestClient  # noqa: E402

from agentmap import CompileOptions  # noqa: E402
from agentmap.server import ServeConfig, create_app  # noqa: E402

pytestmark = pytest.mark.slow


def test_a_run_stops_before_a_node_and_continues_without_input(tmp_path: Path) -> None:
    database = str(tmp_path / "runs.db")
    with serving(GRAPHS / "hello_world.csv", checkpoint=database) as url, sdk.get_sync_client(url=url) as client:
        tid = client.threads.create()["thread_id"]
        stopped = client.runs.wait(tid, "HelloWorld", input={"name": "Ada"}, interrupt_before=["Finish"])
        assert stopped["greeting"] == "Hello, Ada!" and "message" not in stopped  # Finish has not run
        assert client.threads.get(tid)["status"] == "interrupted"
        assert client.threads.get_state(tid)["next"] == ["Finish"]
        assert [r["status"] for r in client.runs.list(tid)] == ["interrupted"]
        done = client.runs.wait(tid, "HelloWorld", input=None)
        assert done["message"].startswith("Done.") and done["greeting"] == "Hello, Ada!"
        assert client.threads.get(tid)["status"] == "idle" and client.threads.get_state(tid)["next"] == []
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.runs.wait(tid, "HelloWorld", input={"name": "B"}, interrupt_after=["Greeet"])
        assert caught.value.response.status_code == 422
        assert "no node of graph 'HelloWorld'; did you mean 'Greet'?" in caught.value.response.json()["message"]


async def test_a_run_stopped_after_a_node_continues_after_a_restart(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "p")
    database = str(tmp_path / "runs.db")
    with serving(folder / "hello.csv", checkpoint=database) as url:
        client = sdk.get_client(url=url, api_key=None)
        tid = (await client.threads.create())["thread_id"]
        events = [
            p
            async for p in client.runs.stream(
                tid,
                "HelloWorld",
                input={"name": "Bo"},
                interrupt_after=["Greet"],
                stream_mode=["updates", "nodes"],
                durability="exit",
            )
        ]
        assert [list(p.data) for p in events if p.event == "updates"] == [["Greet"], ["__interrupt__"]]
        assert [p.data["paused"] for p in events if p.event == "nodes/summary"] == [True]
        await client.aclose()
    with serving(folder / "hello.csv", checkpoint=database) as url:  # the pause was written before the response
        client = sdk.get_client(url=url, api_key=None)
        assert (await client.threads.get(tid))["status"] == "interrupted"
        assert (await client.threads.get_state(tid))["next"] == ["Finish"]
        done = await client.runs.wait(tid, "HelloWorld")
        assert done["message"] == "Done.\n\ngreeting: Hello, Bo!"
        await client.aclose()


def test_a_fused_node_cannot_be_a_breakpoint() -> None:
    config = ServeConfig(
        targets=(str(GRAPHS / "hello_world.csv"),), checkpoint="memory", compile_options=CompileOptions(fuse=True)
    )
    with TestClient(create_app(config)) as api:
        tid = api.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "HelloWorld", "input": {"name": "A"}, "interrupt_before": ["Finish"]}
        refused = api.post(f"/threads/{tid}/runs/wait", json=body)
        assert refused.status_code == 422 and "runs inside a fused chain" in refused.json()["message"]
        assert "without chain fusion" in refused.json()["hint"]
