"""LangGraph's own sync client (`langgraph-sdk`) against the real server: every call the server offers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import GRAPHS, make_project, serving
from timing import deadline, scaled, until

sdk = pytest.importorskip("langgraph_sdk")
from langgraph_sdk.errors import AuthenticationError, ConflictError, NotFoundError  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = make_project(tmp_path_factory.mktemp("served"))
    with serving(folder, GRAPHS / "llm_offline.csv", checkpoint=str(folder / "runs.db")) as address:
        yield address


@pytest.fixture
def client(url: str) -> Any:
    with sdk.get_sync_client(url=url, api_key=None) as c:
        yield c


def test_assistants_search_get_graph_and_schemas(client: Any) -> None:
    found = {a["graph_id"]: a for a in client.assistants.search(limit=100)}
    assert set(found) == {"Ask", "HelloWorld", "Review", "Slow", "LLMOfflineDemo"}
    hello = found["HelloWorld"]
    assert client.assistants.get(hello["assistant_id"])["graph_id"] == "HelloWorld"
    assert client.assistants.get("HelloWorld")["assistant_id"] == hello["assistant_id"]  # the graph id works too
    assert client.assistants.search(graph_id="Review")[0]["graph_id"] == "Review"
    drawn = client.assistants.get_graph(hello["assistant_id"])
    assert {"Greet", "Finish"} <= {n["id"] for n in drawn["nodes"]}
    assert {"source": "Greet", "target": "Finish"} in [{k: e[k] for k in ("source", "target")} for e in drawn["edges"]]
    schemas = client.assistants.get_schemas("HelloWorld")
    assert "name" in schemas["input_schema"]["properties"]
    assert hello["metadata"]["input_keys"] == ["name"]


def test_unknown_assistant_is_a_404_naming_the_graphs(client: Any) -> None:
    with pytest.raises(NotFoundError) as caught:
        client.assistants.get("Nope")
    assert "no assistant 'Nope'" in str(caught.value)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["code"] == "assistant-not-found"
    assert "HelloWorld" in body["hint"]


def test_wait_then_thread_state_history_search_and_runs(client: Any) -> None:
    thread = client.threads.create(metadata={"owner": "ada"})
    tid = thread["thread_id"]
    result = client.runs.wait(tid, "HelloWorld", input={"name": "Ada"}, durability="async")  # a checkpoint a step
    assert result["greeting"] == "Hello, Ada!" and result["graph_success"] is True
    got = client.threads.get(tid)
    assert got["status"] == "idle" and got["values"]["greeting"] == "Hello, Ada!"
    assert got["metadata"]["owner"] == "ada" and got["metadata"]["graph_id"] == "HelloWorld"
    state = client.threads.get_state(tid)
    assert state["values"]["message"].startswith("Done.") and state["next"] == []
    assert state["checkpoint"]["thread_id"] == tid
    history = client.threads.get_history(tid, limit=3)
    assert len(history) == 3 and history[0]["checkpoint"] == state["checkpoint"]  # newest first
    older = client.threads.get_state(tid, checkpoint_id=history[-1]["checkpoint"]["checkpoint_id"])
    assert older["values"] != state["values"]
    assert tid in [t["thread_id"] for t in client.threads.search(metadata={"owner": "ada"})]
    assert client.threads.search(metadata={"owner": "nobody"}) == []
    runs = client.runs.list(tid)
    assert [r["status"] for r in runs] == ["success"]
    assert client.runs.get(tid, runs[0]["run_id"])["assistant_id"] == got["metadata"]["assistant_id"]


def test_stream_updates_values_and_node_events(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    created: list[Any] = []
    parts = list(
        client.runs.stream(
            tid,
            "HelloWorld",
            input={"name": "Grace"},
            stream_mode=["updates", "values", "nodes"],
            on_run_created=created.append,
        )
    )
    events = [p.event for p in parts]
    assert events[0] == "metadata" and parts[0].data["run_id"] == created[0]["run_id"]
    updates = [p.data for p in parts if p.event == "updates"]
    assert [next(iter(u)) for u in updates] == ["Greet", "Finish"]
    assert [p.data for p in parts if p.event == "values"][-1]["greeting"] == "Hello, Grace!"
    nodes = [(p.data["node"], p.data["status"]) for p in parts if p.event == "nodes"]
    assert nodes == [("Greet", "running"), ("Greet", "succeeded"), ("Finish", "running"), ("Finish", "succeeded")]
    summary = next(p.data for p in parts if p.event == "nodes/summary")
    assert summary["success"] is True and [s["name"] for s in summary["summary"]] == ["Greet", "Finish"]


def test_a_resumed_runs_node_events_start_with_the_nodes_of_its_earlier_steps(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "HelloWorld", input={"name": "Grace"}, interrupt_before=["Finish"])
    parts = list(client.runs.stream(tid, "HelloWorld", input=None, stream_mode=["nodes"]))
    nodes = [(p.data["node"], p.data["status"]) for p in parts if p.event == "nodes"]
    assert nodes == [("Greet", "succeeded"), ("Finish", "running"), ("Finish", "succeeded")]
    summary = next(p.data for p in parts if p.event == "nodes/summary")
    assert [(s["name"], s.get("metadata", {}).get("before_resume")) for s in summary["summary"]] == [
        ("Greet", True),
        ("Finish", None),
    ]


def test_stream_custom_and_messages_modes(client: Any) -> None:
    parts = list(client.runs.stream(None, "Review", input={"topic": "owls"}, stream_mode="custom"))
    assert [p.data for p in parts if p.event == "custom"] == [{"reviewing": "Draft about owls"}]
    request = {"request": "please title case hello world"}
    parts = list(client.runs.stream(None, "LLMOfflineDemo", input=request, stream_mode=["messages-tuple", "messages"]))
    tuples = [p.data for p in parts if p.event == "messages"]
    assert tuples and tuples[-1][0]["content"] == "Done: title case returned Hello World."
    assert tuples[-1][1]["langgraph_node"] == "Assistant"
    complete = [p.data[0] for p in parts if p.event == "messages/complete"]
    assert complete[-1]["content"] == tuples[-1][0]["content"]
    assert any(p.event == "messages/metadata" for p in parts)


def test_interrupt_then_resume_checks_the_answer(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    paused = client.runs.wait(tid, "Review", input={"topic": "owls"})
    asked = paused["__interrupt__"][0]["value"]
    assert asked["question"] == "Publish this draft?" and asked["interaction"] == "approval"
    thread = client.threads.get(tid)
    assert thread["status"] == "interrupted" and next(iter(thread["interrupts"].values()))[0]["value"] == asked
    assert client.threads.get_state(tid)["next"] == ["Approve"]
    with pytest.raises(httpx.HTTPStatusError) as caught:
        client.runs.wait(tid, "Review", command={"resume": "maybe"})
    assert caught.value.response.status_code == 422
    body = caught.value.response.json()
    assert body["code"] == "bad-answer" and "approve" in body["hint"]
    assert client.threads.get(tid)["status"] == "interrupted"  # the refused answer left the run paused
    done = client.runs.wait(tid, "Review", command={"resume": "approve"})
    assert done["approved"] is True and "__interrupt__" not in done
    assert client.threads.get(tid)["status"] == "idle"


def test_a_resume_answer_is_read_by_the_one_answer_rule_never_coerced(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "Review", input={"topic": "owls"})
    with pytest.raises(httpx.HTTPStatusError) as caught:
        client.runs.wait(tid, "Review", command={"resume": {"approved": "maybe"}})
    assert caught.value.response.status_code == 422
    body = caught.value.response.json()
    assert body["code"] == "bad-answer"
    assert body["message"].startswith(
        "command.resume: node 'Approve' asks for an approval; \"approved\": 'maybe' is neither yes nor no"
    ), body
    assert client.threads.get(tid)["status"] == "interrupted"  # the refused answer left the run paused
    done = client.runs.wait(tid, "Review", command={"resume": {"approved": "no", "note": "not now"}})
    assert done["approved"] is False  # the same word as on the command line: a rejection


def test_an_agent_inbox_answer_with_an_empty_input_resumes_as_agent_chat_ui_sends_it(client: Any, url: str) -> None:
    info = httpx.get(f"{url}/info")
    assert info.status_code == 200 and info.json()["flags"]["assistants"] is True  # what the UI asks first
    tid = client.threads.create()["thread_id"]
    asked = client.runs.wait(tid, "Review", input={"topic": "owls"})["__interrupt__"][0]["value"]
    assert asked["description"] == "Publish this draft?" and asked["config"]["allow_accept"] is True
    both = {"assistant_id": "Review", "input": {"topic": "cats"}, "command": {"resume": "yes"}}
    refused = httpx.post(f"{url}/threads/{tid}/runs/wait", json=both)
    assert refused.status_code == 422 and "give input or command, not both" in refused.json()["message"]
    maybe = {"assistant_id": "Review", "input": {}, "command": {"resume": [{"type": "response", "args": "maybe"}]}}
    refused = httpx.post(f"{url}/threads/{tid}/runs/wait", json=maybe)
    assert refused.status_code == 422 and refused.json()["code"] == "bad-answer"
    accept = {"assistant_id": "Review", "input": {}, "command": {"resume": [{"type": "accept", "args": None}]}}
    done = httpx.post(f"{url}/threads/{tid}/runs/wait", json=accept, timeout=scaled(30))
    assert done.status_code == 200 and done.json()["approved"] is True


def test_a_chat_in_messages_grows_by_each_turn_and_a_value_that_is_no_message_is_refused(tmp_path: Path) -> None:
    chat = "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field\n"
    chat += 'Chat,Talk,llm,Be brief.,"{""model"": ""offline"", ""memory_key"": ""messages""}",messages,reply|messages\n'
    (tmp_path / "chat.csv").write_text(chat, encoding="utf-8")
    with serving(tmp_path / "chat.csv", checkpoint=str(tmp_path / "runs.db")) as address:
        with sdk.get_sync_client(url=address, api_key=None) as client:
            tid = client.threads.create()["thread_id"]
            for text in ("please title case hello world", "please reverse text abc"):
                done = client.runs.wait(tid, "Chat", input={"messages": [{"type": "human", "content": text}]})
            assert [(m["type"], m["content"]) for m in done["messages"]] == [
                ("human", "please title case hello world"),
                ("ai", "[offline] please title case hello world"),
                ("human", "please reverse text abc"),
                ("ai", "[offline] please reverse text abc"),
            ]
        bad = httpx.post(f"{address}/runs/wait", json={"assistant_id": "Chat", "input": {"messages": 5}})
    assert bad.status_code == 422 and bad.json()["code"] == "bad-input"
    assert bad.json()["message"].startswith("input.messages holds chat messages, and 5 is not a list of them")


def test_a_second_answer_to_one_pause_is_refused_with_the_answer_taken(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "project")
    gate = tmp_path / "open"
    (folder / "hold.csv").write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
        'Hold,Question,input,Go?,"{""interrupt"": true}",,answer,Rest\n'
        f'Hold,Rest,GateAgent,,"{{""gate"": ""{gate.as_posix()}""}}",answer,rested,\n',  # waits until the test opens it
        encoding="utf-8",
    )
    with (
        serving(folder / "hold.csv", checkpoint=str(folder / "runs.db")) as address,
        sdk.get_sync_client(url=address, api_key=None) as client,
    ):
        tid = client.threads.create()["thread_id"]
        client.runs.wait(tid, "Hold", input={})
        first = client.runs.create(tid, "Hold", command={"resume": "yes"})
        refusals = [_refusal(client, tid)]  # at once: the first answer queued, being applied, or applied
        give_up = deadline(30)
        while client.threads.get_state(tid)["next"] != ["Rest"]:  # the first answer has moved the run on
            assert time.monotonic() < give_up, "the first answer's run never reached Rest"
            time.sleep(0.02)
        refusals.append(_refusal(client, tid))
        for body in refusals:
            assert body["code"] == "already-answered", body
            assert '"yes" was taken' in body["message"] and '"no"' in body["message"]
        gate.touch()
        assert client.runs.join(tid, first["run_id"])["answer"] == "yes"


def test_a_second_answer_meeting_the_first_applied_but_its_step_unsaved_is_refused_as_answered(tmp_path: Path) -> None:
    """The moment between the answered node's results being saved and the next checkpoint (a server killed
    there leaves the thread so): the thread shows no pause, but it is not finished, so a second answer is
    `already-answered`, not `nothing-to-resume`."""
    import sqlite3

    folder = make_project(tmp_path / "project")
    (folder / "hold.csv").write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
        'Hold,Question,input,Go?,"{""interrupt"": true}",,answer,Rest\n'
        "Hold,Rest,echo,,,answer,rested,\n",
        encoding="utf-8",
    )
    with (
        serving(folder / "hold.csv", checkpoint=str(folder / "runs.db")) as address,
        sdk.get_sync_client(url=address, api_key=None) as client,
    ):
        tid = client.threads.create()["thread_id"]
        client.runs.wait(tid, "Hold", input={})
        assert "rested" in client.runs.wait(tid, "Hold", command={"resume": "yes"})
        with sqlite3.connect(folder / "runs.db") as db:  # back to the moment before the next step was saved
            (paused,) = db.execute(
                "SELECT checkpoint_id FROM writes WHERE thread_id = ? AND channel = '__interrupt__'", (tid,)
            ).fetchone()
            for table in ("checkpoints", "writes"):
                db.execute(f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id > ?", (tid, paused))
            # and the thread's head as the database's triggers would have kept it, had the rows never been written
            # (rows deleted behind its back are a damaged store: corrupt-checkpoint)
            db.execute(
                "UPDATE agentmap_heads SET checkpoint_id = ?, writes_of = ?, "
                "checkpoints = (SELECT count(*) FROM checkpoints WHERE thread_id = ?), "
                "writes = (SELECT count(*) FROM writes WHERE thread_id = ? AND checkpoint_id = ?) WHERE thread_id = ?",
                (paused, paused, tid, tid, paused, tid),
            )
        state = client.threads.get_state(tid)
        assert state["next"] == [] and state["tasks"] and not state["interrupts"], state
        body = _refusal(client, tid)
        assert body["code"] == "already-answered" and '"yes" was taken' in body["message"], body


def _refusal(client: Any, thread_id: str) -> dict[str, Any]:
    """The body of the 409 refusing a second answer ("no") to the thread's pause."""
    with pytest.raises(ConflictError) as caught:
        client.runs.create(thread_id, "Hold", command={"resume": "no"})
    body = caught.value.body
    assert isinstance(body, dict), body
    return body


def test_input_node_pauses_and_resumes(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    paused = client.runs.wait(tid, "Ask", input={})
    assert paused["__interrupt__"][0]["value"]["question"] == "What is your name?"
    assert client.runs.wait(tid, "Ask", command={"resume": "Zed"})["greeting"] == "Hello, Zed!"
    with pytest.raises(ConflictError, match="no paused run"):
        client.runs.create(tid, "Ask", command={"resume": "again"})


def test_create_join_cancel_and_join_stream(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "Slow", input={"topic": "t"}, stream_mode=["values", "nodes"])
    assert run["status"] in ("pending", "running")
    with pytest.raises(ConflictError, match="in progress"):
        client.runs.create(tid, "Slow", input={"topic": "t"}, multitask_strategy="reject")
    parts = list(client.runs.join_stream(tid, run["run_id"]))
    assert [p.data["node"] for p in parts if p.event == "nodes" and p.data["status"] == "succeeded"] == [
        "First",
        "Second",
        "Third",
    ]
    assert client.runs.join(tid, run["run_id"])["third"] == "rested"
    assert client.runs.get(tid, run["run_id"])["status"] == "success"

    second = client.runs.create(tid, "Slow", input={"topic": "t"})
    until(lambda: client.runs.get(tid, second["run_id"])["status"] != "pending", 30, "the second run never started")
    client.runs.cancel(tid, second["run_id"], wait=True)
    cancelled = client.runs.get(tid, second["run_id"])
    assert cancelled["status"] == "interrupted" and cancelled["cancel_reason"] == "cancelled by the client"
    assert [r["status"] for r in client.runs.list(tid)] == ["interrupted", "success"]


def test_a_stream_whose_client_leaves_is_cancelled_when_asked(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    stream = client.runs.stream(tid, "Slow", input={"topic": "t"}, stream_mode="updates", on_disconnect="cancel")
    first = next(stream)
    assert first.event == "metadata"
    stream.close()  # the client goes away after the first event
    run_id = first.data["run_id"]
    give_up = deadline(10)
    while client.runs.get(tid, run_id)["status"] in ("pending", "running") and time.monotonic() < give_up:
        time.sleep(0.05)
    run = client.runs.get(tid, run_id)
    assert run["status"] == "interrupted" and run["cancel_reason"] == "the client disconnected"
    assert "third" not in client.threads.get_state(tid)["values"]


def test_stateless_wait_stream_and_batch(client: Any) -> None:
    assert client.runs.wait(None, "HelloWorld", input={"name": "X"})["greeting"] == "Hello, X!"
    values = [p.data for p in client.runs.stream(None, "HelloWorld", input={"name": "Y"}) if p.event == "values"]
    assert values[-1]["greeting"] == "Hello, Y!"
    runs = client.runs.create_batch([{"assistant_id": "HelloWorld", "input": {"name": n}} for n in ("A", "B", "C")])
    assert len(runs) == 3 and len({r["run_id"] for r in runs}) == 3


def test_bad_input_and_unsupported_features_are_clear(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as caught:
        client.runs.wait(tid, "HelloWorld", input={"nmae": "Ada"})
    body = caught.value.response.json()
    assert caught.value.response.status_code == 422 and body["code"] == "bad-input"
    assert "did you mean 'name'" in body["message"]
    assert "graph_id" not in client.threads.get(tid)["metadata"]  # a refused run does not bind the thread
    with pytest.raises(httpx.HTTPStatusError, match="422"):
        client.runs.wait(tid, "HelloWorld", input={"name": "A"}, after_seconds=5)
    with pytest.raises(Exception, match="stream mode 'events' is not supported"):
        list(client.runs.stream(tid, "HelloWorld", input={"name": "A"}, stream_mode="events"))
    with pytest.raises(NotFoundError, match="has no state yet"):
        client.threads.update_state(tid, {"name": "B"})
    with pytest.raises(NotFoundError, match="not supported"):
        client.threads.copy(tid)
    with pytest.raises(NotFoundError, match="no thread"):
        client.threads.get("missing")


def test_update_state_at_a_checkpoint_forks_the_run_with_the_changed_value(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "HelloWorld", input={"name": "Ada"}, durability="sync")
    before_finish = next(s for s in client.threads.get_history(tid, limit=100) if s["next"] == ["Finish"])
    made = client.threads.update_state(
        tid, {"greeting": "Hi, Bea!"}, checkpoint_id=before_finish["checkpoint"]["checkpoint_id"]
    )
    forked = made["checkpoint"]["checkpoint_id"]
    state = client.threads.get_state(tid, checkpoint_id=forked)
    assert state["next"] == ["Finish"] and state["values"]["greeting"] == "Hi, Bea!"  # what would have run next
    result = client.runs.wait(tid, "HelloWorld", input=None, checkpoint_id=forked)
    assert "Hi, Bea!" in result["message"]
    with pytest.raises(httpx.HTTPStatusError) as caught:
        client.threads.update_state(tid, {"greting": "x"})
    assert caught.value.response.status_code == 422 and "did you mean 'greeting'" in caught.value.response.text
    with pytest.raises(httpx.HTTPStatusError, match="Node Nowhere does not exist"):
        client.threads.update_state(tid, {"greeting": "x"}, as_node="Nowhere")


def test_a_run_without_input_from_an_earlier_checkpoint_goes_on_from_there(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "HelloWorld", input={"name": "Ada"}, durability="sync")
    before_finish = next(s for s in client.threads.get_history(tid, limit=100) if s["next"] == ["Finish"])
    forked_from = before_finish["checkpoint"]["checkpoint_id"]
    client.runs.wait(tid, "HelloWorld", input=None, checkpoint_id=forked_from, durability="sync")
    history = client.threads.get_history(tid, limit=100)
    by_id = {s["checkpoint"]["checkpoint_id"]: s for s in history}
    ran, step = [], history[0]  # the fork's branch, from its newest checkpoint back to where it forked
    while step["checkpoint"]["checkpoint_id"] != forked_from:
        ran.append(step["next"])
        step = by_id[step["parent_checkpoint"]["checkpoint_id"]]
    assert ran[0] == [] and all(nxt in ([], ["Finish"]) for nxt in ran), ran  # Finish ran from there; nothing before


def test_durability_exit_writes_one_checkpoint_per_run(client: Any) -> None:
    stepwise, once = client.threads.create()["thread_id"], client.threads.create()["thread_id"]
    client.runs.wait(stepwise, "HelloWorld", input={"name": "A"})  # async, the default: one checkpoint a step
    assert client.runs.wait(once, "HelloWorld", input={"name": "A"}, durability="exit")["greeting"] == "Hello, A!"
    assert len(client.threads.get_history(once, limit=100)) == 1
    assert len(client.threads.get_history(stepwise, limit=100)) > 1
    assert client.threads.get_state(once)["values"]["message"].startswith("Done.")


def test_a_failing_run_reports_its_error_and_marks_the_thread(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    with pytest.raises(Exception, match="NodeError: the run stopped after reaching the recursion limit"):
        client.runs.wait(tid, "HelloWorld", input={"name": "A"}, config={"recursion_limit": 1})
    assert client.threads.get(tid)["status"] == "error"
    assert client.runs.list(tid)[0]["status"] == "error"
    parts = list(client.runs.stream(tid, "HelloWorld", input={"name": "A"}, config={"recursion_limit": 1}))
    assert parts[-1].event == "error" and parts[-1].data["code"] == "recursion-limit"


def test_delete_thread(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "HelloWorld", input={"name": "Ada"})
    client.threads.delete(tid)
    with pytest.raises(NotFoundError):
        client.threads.get(tid)


def test_a_run_paused_by_the_command_line_is_answered_through_the_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentmap.cli.app import run_cli

    folder = make_project(tmp_path / "p")
    database = tmp_path / "runs.db"
    assert run_cli(["run", str(folder / "ask.csv"), "--checkpoint", str(database), "--thread", "cli-1", "--json"]) == 0
    assert '"paused": true' in capsys.readouterr().out
    with serving(folder / "ask.csv", checkpoint=str(database)) as url, sdk.get_sync_client(url=url) as client:
        client.threads.create(thread_id="cli-1", graph_id="Ask")  # adopt the thread: its checkpoints are there
        assert client.threads.get_state("cli-1")["interrupts"][0]["value"]["question"] == "What is your name?"
        assert client.runs.wait("cli-1", "Ask", command={"resume": "Ada"})["greeting"] == "Hello, Ada!"


def test_quiet_streams_send_heartbeats_the_client_skips(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "p")
    with serving(folder / "slow.csv", checkpoint="memory", heartbeat=0.1) as url:
        body = {"assistant_id": "Slow", "input": {"topic": "t"}, "stream_mode": "updates"}
        with httpx.stream("POST", f"{url}/runs/stream", json=body, timeout=scaled(30)) as response:
            text = response.read().decode()
        assert text.count(": heartbeat\n\n") >= 3 and text.count("event: updates") == 3
        with sdk.get_sync_client(url=url, api_key=None) as client:
            parts = list(client.runs.stream(None, "Slow", input={"topic": "t"}, stream_mode="updates"))
        assert [p.event for p in parts] == ["metadata", "updates", "updates", "updates"]


def test_api_key_on(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "p")
    with serving(folder / "hello.csv", checkpoint="memory", api_key="s3cret-key") as url:
        with sdk.get_sync_client(url=url, api_key="s3cret-key") as ok:
            assert ok.runs.wait(None, "HelloWorld", input={"name": "K"})["greeting"] == "Hello, K!"
        with sdk.get_sync_client(url=url, api_key=None) as anonymous, pytest.raises(AuthenticationError):
            anonymous.assistants.search()
        with sdk.get_sync_client(url=url, api_key="wrong") as wrong, pytest.raises(AuthenticationError):
            wrong.threads.create()
        assert httpx.get(f"{url}/health").json()["ok"] is True  # the health check needs no key


def test_two_paused_nodes_need_an_answer_each_by_interrupt_id(tmp_path: Path) -> None:
    """The runtime's answer rule: an answer for only some of the waiting questions is refused, nothing taken."""
    folder = make_project(tmp_path / "project")
    (folder / "two.csv").write_text(
        "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
        "Two,Start,echo,,,,started,A|B\n"
        'Two,A,input,First?,"{""interrupt"": true}",,a,\n'
        'Two,B,input,Second?,"{""interrupt"": true}",,b,\n',
        encoding="utf-8",
    )
    with (
        serving(folder / "two.csv", checkpoint=str(folder / "runs.db")) as address,
        sdk.get_sync_client(url=address, api_key=None) as client,
    ):
        tid = client.threads.create()["thread_id"]
        client.runs.wait(tid, "Two", input={})
        ids = [i["id"] for found in client.threads.get(tid)["interrupts"].values() for i in found]
        assert len(ids) == 2, ids
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.runs.wait(tid, "Two", command={"resume": {ids[0]: "one"}})
        body = caught.value.response.json()
        assert caught.value.response.status_code == 422 and body["code"] == "ambiguous-resume", body
        assert f"no answer for {ids[1]}" in body["message"]
        assert client.threads.get(tid)["status"] == "interrupted"  # nothing was taken
        done = client.runs.wait(tid, "Two", command={"resume": {ids[0]: "one", ids[1]: "two"}})
        assert {done["a"], done["b"]} == {"one", "two"}
