"""A2A on `agentmap serve` through the official `a2a-sdk` client against the real server: the agent card, a task
sent to its end, streamed, paused and answered (also after a restart), looked up, cancelled, and refused."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import forked
import httpx
import pytest
from components import clean_env
from server_helpers import GRAPHS, make_project, serving
from timing import deadline, scaled

pytest.importorskip("a2a")
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError, InvalidParamsError, TaskNotFoundError

pytestmark = pytest.mark.slow


@asynccontextmanager
async def agent(url: str, graph: str, *, streaming: bool = False, key: str | None = None) -> AsyncIterator[Any]:
    """The SDK's client of one served graph, made from its agent card."""
    headers = {"X-Api-Key": key} if key else {}
    async with httpx.AsyncClient(headers=headers, timeout=scaled(30)) as http:
        client = await create_client(f"{url}/a2a/{graph}", ClientConfig(httpx_client=http, streaming=streaming))
        yield client


def message(*parts: Part, task: Task | None = None) -> SendMessageRequest:
    msg = Message(role=Role.ROLE_USER, message_id=f"m{time.monotonic_ns()}", parts=list(parts))
    if task is not None:
        msg.task_id, msg.context_id = task.id, task.context_id
    return SendMessageRequest(message=msg)


async def send(client: Any, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


async def task_of(client: Any, request: SendMessageRequest) -> Task:
    events = await send(client, request)
    task: Task = events[-1].task
    return task


async def test_the_card_lists_the_graph_as_a_skill_and_a_message_runs_it(tmp_path: Path) -> None:
    with serving(make_project(tmp_path / "p"), checkpoint=str(tmp_path / "runs.db")) as url:
        card = httpx.get(f"{url}/a2a/HelloWorld/.well-known/agent-card.json").json()
        assert card["name"] == "HelloWorld"
        assert "Greets the person" in card["description"]
        assert card["skills"][0]["id"] == "HelloWorld"
        assert "'name'" in card["skills"][0]["description"]  # the single input key, sent as text
        assert card["supportedInterfaces"][0]["url"] == f"{url}/a2a/HelloWorld"
        async with agent(url, "HelloWorld") as client:
            task = await task_of(client, message(new_text_part("Ada")))
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            (artifact,) = task.artifacts
            assert get_data_parts(artifact.parts)[0]["greeting"] == "Hello, Ada!"
            assert get_text_parts(artifact.parts)[0].startswith("Done.")  # the output field of the last node
            again = await client.get_task(GetTaskRequest(id=task.id))
            assert again.status.state == TaskState.TASK_STATE_COMPLETED
            assert again.context_id == task.context_id
        # the context is the thread: the langgraph API sees the run's state on it
        state = httpx.get(f"{url}/threads/{task.context_id}/state").json()
        assert state["values"]["greeting"] == "Hello, Ada!"


async def test_a_streamed_message_reports_each_node(tmp_path: Path) -> None:
    with serving(make_project(tmp_path / "p"), checkpoint=str(tmp_path / "runs.db")) as url:
        async with agent(url, "HelloWorld", streaming=True) as client:
            events = await send(client, message(new_data_part({"name": "Bo"})))
    updates = [get_text_parts(e.status_update.status.message.parts) for e in events if e.HasField("status_update")]
    assert ["node Greet succeeded"] in updates
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def test_a_pause_is_input_required_and_the_next_message_answers_it(tmp_path: Path) -> None:
    with serving(make_project(tmp_path / "p"), checkpoint=str(tmp_path / "runs.db")) as url:
        async with agent(url, "Review") as client:
            task = await task_of(client, message(new_text_part("tea")))
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert get_text_parts(task.status.message.parts) == ["Publish this draft?"]
            assert get_data_parts(task.status.message.parts)[0]["interaction"] == "approval"
            with pytest.raises(InvalidParamsError, match="approval"):
                await send(client, message(new_text_part("maybe"), task=task))
            still = await client.get_task(GetTaskRequest(id=task.id))
            assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED  # a bad answer leaves it paused
            done = await task_of(client, message(new_text_part("yes"), task=task))
            with pytest.raises(A2AError, match="terminal"):  # one answer per pause: the task has ended
                await send(client, message(new_text_part("no"), task=task))
    assert done.id == task.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_data_parts(done.artifacts[0].parts)[0]["approved"] is True


async def test_an_answer_is_read_by_the_one_answer_rule_never_coerced(tmp_path: Path) -> None:
    with serving(make_project(tmp_path / "p"), checkpoint=str(tmp_path / "runs.db")) as url:
        async with agent(url, "Review") as client:
            task = await task_of(client, message(new_text_part("tea")))
            with pytest.raises(InvalidParamsError) as caught:
                await send(client, message(new_data_part({"approved": "maybe"}), task=task))
            refusal = "message.parts: node 'Approve' asks for an approval; \"approved\": 'maybe' is neither yes nor no"
            assert refusal in str(caught.value)
            still = await client.get_task(GetTaskRequest(id=task.id))
            assert still.status.state == TaskState.TASK_STATE_INPUT_REQUIRED  # asked again: the task waits
            done = await task_of(client, message(new_data_part({"approved": "no"}), task=task))
            assert done.status.state == TaskState.TASK_STATE_COMPLETED
            assert get_data_parts(done.artifacts[0].parts)[0]["approved"] is False  # "no" is a rejection
            other = await task_of(client, message(new_text_part("tea")))
            done = await task_of(client, message(new_text_part("false"), task=other))
            assert get_data_parts(done.artifacts[0].parts)[0]["approved"] is False


@contextmanager
def serve_process(folder: Path, database: Path) -> Iterator[str]:
    """`agentmap serve` as a real process on a free port; killed (SIGKILL) when the block ends."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = clean_env()
    proc = forked.start("serve", folder, "--port", str(port), "--checkpoint", database, cwd=folder, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        give_up = deadline(60)
        while True:
            assert proc.poll() is None, f"the server exited: {proc.communicate(scaled(5))[1][-2000:]}"
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < give_up, "the server did not start"
            time.sleep(0.05)
        yield url
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(scaled(60))


async def test_two_answers_sent_at_once_resume_the_pause_once(tmp_path: Path) -> None:
    with serving(make_project(tmp_path / "p"), checkpoint=str(tmp_path / "runs.db")) as url:
        async with agent(url, "Review") as client:
            task = await task_of(client, message(new_text_part("tea")))

            async def answer(text: str) -> Task | A2AError:
                try:
                    return await task_of(client, message(new_text_part(text), task=task))
                except A2AError as err:  # the task had ended when it arrived
                    return err

            replies = await asyncio.gather(answer("yes"), answer("no"))
        runs = httpx.get(f"{url}/threads/{task.context_id}/runs").json()
    assert len(runs) == 2  # the first message's run and one resume: the later answer started nothing
    ended = [r for r in replies if isinstance(r, Task)]
    assert ended and all(t.status.state == TaskState.TASK_STATE_COMPLETED for t in ended)


async def test_a_pause_is_answered_after_the_server_is_killed_and_started_again(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    database = tmp_path / "runs.sqlite"
    with serve_process(project, database) as url:
        async with agent(url, "Review") as client:
            task = await task_of(client, message(new_text_part("cake")))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    with serve_process(project, database) as url:
        async with agent(url, "Review") as client:
            assert (await client.get_task(GetTaskRequest(id=task.id))).status.state == task.status.state
            done = await task_of(client, message(new_data_part({"approved": False}), task=task))
            assert (await client.get_task(GetTaskRequest(id=task.id))).status.state == TaskState.TASK_STATE_COMPLETED
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_data_parts(done.artifacts[0].parts)[0]["approved"] is False


async def test_a_run_that_fails_is_a_failed_task_with_the_error(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    (project / "broken.csv").write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\nBroken,Fail,failure,out of tea,topic,outcome\n",
        encoding="utf-8",
    )
    with serving(project, checkpoint=str(tmp_path / "runs.db")) as url:
        async with agent(url, "Broken") as client:
            task = await task_of(client, message(new_text_part("tea")))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    (text,) = get_text_parts(task.status.message.parts)
    assert text.startswith("graph 'Broken' failed: ")
    assert get_data_parts(task.artifacts[0].parts)[0]["topic"] == "tea"  # the state it ended with


async def test_a_running_task_is_cancelled(tmp_path: Path) -> None:
    with serving(make_project(tmp_path / "p"), checkpoint=str(tmp_path / "runs.db")) as url:
        async with agent(url, "Slow") as client:
            request = message(new_text_part("t"))
            request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
            task = await task_of(client, request)
            assert task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
            cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            assert (await client.get_task(GetTaskRequest(id=task.id))).status.state == TaskState.TASK_STATE_CANCELED
        runs = httpx.get(f"{url}/threads/{task.context_id}/runs").json()
        assert [r["status"] for r in runs] == ["interrupted"]  # stopped after its step, not run to the end
        state = httpx.get(f"{url}/threads/{task.context_id}/state").json()
        assert "third" not in state["values"]


async def test_unknown_tasks_and_bad_input_are_a2a_errors(tmp_path: Path) -> None:
    with serving(make_project(tmp_path / "p"), checkpoint=str(tmp_path / "runs.db")) as url:
        async with agent(url, "HelloWorld") as client:
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="no-such-task"))
            with pytest.raises(InvalidParamsError, match="missing required argument 'name'"):
                await send(client, message(new_data_part({"nam": "Ada"})))
            with pytest.raises(InvalidParamsError, match="no argument 'nam'"):
                await send(client, message(new_data_part({"name": "Ada", "nam": "Ada"})))
        async with agent(url, "Review") as client:
            with pytest.raises(InvalidParamsError, match="'topic'"):
                await send(client, message(new_data_part({"topic": 3})))  # declared as text: a number is refused
            bad_context = message(new_text_part("Ada"))
            bad_context.message.context_id = "a thread/with a slash"
            with pytest.raises(InvalidParamsError, match="contextId"):
                await send(client, bad_context)
        # the A2A 0.3 method names, from a client that is not the SDK
        sent = {"role": "user", "messageId": "x", "parts": [{"kind": "data", "data": {"nam": 1}}]}
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": sent}}
        error = httpx.post(f"{url}/a2a/HelloWorld", json=body).json()["error"]
        assert error["code"] == -32602
        assert "'name'" in error["message"]
        sent["parts"] = [{"kind": "text", "text": "Cy"}]
        result = httpx.post(f"{url}/a2a/HelloWorld", json=body).json()["result"]
        assert result["status"]["state"] == "completed"
        body["method"] = "message/stream"
        with httpx.stream("POST", f"{url}/a2a/HelloWorld", json=body) as streamed:
            lines = [line for line in streamed.iter_lines() if line.startswith("data: ")]
        events = [json.loads(line[6:])["result"] for line in lines]
        kinds = ["task", "status-update", "status-update", "artifact-update", "status-update"]  # a node each, the end
        assert [e["kind"] for e in events] == kinds
        assert events[-1]["final"] and events[-1]["status"]["state"] == "completed"
        assert httpx.get(f"{url}/a2a/Nope/.well-known/agent-card.json").status_code == 404


async def test_without_the_api_key_a2a_is_refused(tmp_path: Path) -> None:
    with serving(make_project(tmp_path / "p"), checkpoint=str(tmp_path / "runs.db"), api_key="s3cret") as url:
        assert httpx.get(f"{url}/a2a/HelloWorld/.well-known/agent-card.json").status_code == 401
        refused = httpx.post(f"{url}/a2a/HelloWorld", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"})
        assert refused.status_code == 401
        async with agent(url, "HelloWorld", key="s3cret") as client:
            task = await task_of(client, message(new_text_part("Di")))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED


def test_without_the_sdk_a2a_answers_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from agentmap.server import ServeConfig, create_app

    monkeypatch.setitem(sys.modules, "a2a", None)  # as if a2a-sdk were not installed
    app = create_app(ServeConfig(targets=(str(GRAPHS / "hello_world.csv"),), checkpoint="memory"))
    with TestClient(app) as client:
        answer = client.post("/a2a/HelloWorld", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"})
        assert client.get("/ok").status_code == 200  # the rest of the server works
    assert answer.status_code == 501
    assert answer.json()["code"] == "not-supported" and "agentmap[a2a]" in answer.json()["hint"]


async def test_a_pause_is_answered_on_the_revision_it_started_on_after_the_file_changed(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    database = str(tmp_path / "runs.db")
    with serving(project, checkpoint=database) as url:
        async with agent(url, "Review") as client:
            task = await task_of(client, message(new_text_part("tea")))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    edited = (  # Approve renamed Approval, and a node after it
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
        "Review,Draft,template,Draft about {topic},topic,draft,Approval\n"
        "Review,Approval,ReviewAgent,,draft,approved,Publish\n"
        "Review,Publish,template,Published {draft},draft,published,\n"
    )
    (project / "review.csv").write_text(edited, encoding="utf-8")
    with serving(project, checkpoint=database) as url:
        async with agent(url, "Review") as client:
            done = await task_of(client, message(new_text_part("yes"), task=task))
            fresh = await task_of(client, message(new_text_part("cake")))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED, done.status
    answered = get_data_parts(done.artifacts[0].parts)[0]
    assert answered["approved"] is True and "published" not in answered  # the graph it started on, to its end
    assert fresh.status.state == TaskState.TASK_STATE_INPUT_REQUIRED  # a new context takes the file as it is
    assert get_data_parts(fresh.status.message.parts)[0]["node"] == "Approval"
