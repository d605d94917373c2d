"""`/agui/{assistant}` on `agentmap serve` against the real server, read as AG-UI server-sent events with httpx: a turn,
a thread shared with the LangGraph API, a pause and its answers (both channels), a question told again, refusals,
failures, a client that goes away, the guard's rules, and the extra missing."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import GRAPHS, make_project, serving
from timing import scaled, until

pytest.importorskip("ag_ui")

pytestmark = pytest.mark.slow

KEY = "k3y-for-agui-tests"
FAILS = """\
GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge
Fails,Start,template,go {x},x,y,Boom
Fails,Boom,failure,the disk is full,y,z,
"""
QUOTE = """\
GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge
Quote,Price,template,{qty} x {item},item|qty,quote,
"""


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module: the test project's graphs, the offline chat, two of its own; SQLite checkpoints."""
    folder = make_project(tmp_path_factory.mktemp("agui"))
    shutil.copy(GRAPHS / "llm_offline.csv", folder / "chat.csv")
    shutil.copytree(GRAPHS / "tools", folder / "tools")
    (folder / "fails.csv").write_text(FAILS, encoding="utf-8")
    (folder / "quote.csv").write_text(QUOTE, encoding="utf-8")
    with serving(folder, checkpoint=str(folder / "runs.db")) as served:
        yield served


def body(thread: str, text: str | None = None, **fields: Any) -> dict[str, Any]:
    """A `RunAgentInput`: the thread, a run id, the user's message (when `text`), and `fields` as given."""
    messages = [{"id": f"m-{thread}", "role": "user", "content": text}] if text is not None else []
    return {"threadId": thread, "runId": f"r-{thread}", "messages": messages, **fields}


def post(url: str, graph: str, sent: dict[str, Any], **options: Any) -> tuple[httpx.Response, list[dict[str, Any]]]:
    """POST `sent` to the graph's AG-UI endpoint; the response and the events it streamed."""
    with httpx.stream("POST", f"{url}/agui/{graph}", json=sent, timeout=scaled(60), **options) as response:
        response.read()
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    return response, events


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


def refusal(response: httpx.Response) -> tuple[int, str, str]:
    found = response.json()
    return response.status_code, found["code"], found["message"]


def test_a_turn_streams_steps_state_and_the_reply_on_the_servers_thread(url: str) -> None:
    response, events = post(url, "HelloWorld", body("turn-1", "Ada"))
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    assert kinds(events)[0] == "RUN_STARTED" and kinds(events)[-1] == "RUN_FINISHED"
    assert events[0]["threadId"] == "turn-1" and events[0]["runId"] == "r-turn-1"
    steps = [(e["type"], e["stepName"]) for e in events if e["type"].startswith("STEP_")]
    assert steps == [
        ("STEP_STARTED", "Greet"),
        ("STEP_FINISHED", "Greet"),
        ("STEP_STARTED", "Finish"),
        ("STEP_FINISHED", "Finish"),
    ]
    snapshots = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"]
    assert snapshots[-1]["greeting"] == "Hello, Ada!"
    assert texts(events) == ["Done.\n\ngreeting: Hello, Ada!"]  # the graph's reply: its last node's output
    assert events[-1]["result"]["greeting"] == "Hello, Ada!" and "outcome" not in events[-1]
    # the run is a run of the server, on the thread the LangGraph API sees
    run_id = events[0]["metadata"]["agentmap"]["run_id"]
    assert response.headers["content-location"] == f"/threads/turn-1/runs/{run_id}"
    record = httpx.get(f"{url}/threads/turn-1/runs/{run_id}").json()
    assert record["status"] == "success" and record["metadata"]["agui_run_id"] == "r-turn-1"
    assert httpx.get(f"{url}/threads/turn-1/state").json()["values"]["greeting"] == "Hello, Ada!"


def test_a_chat_keeps_its_memory_on_the_thread_across_turns(url: str) -> None:
    _, first = post(url, "LLMOfflineDemo", body("chat-1", "please title case hello world"))
    sent = body("chat-1", "please reverse text abc")
    sent["messages"] = [  # the whole conversation, as a client sends it, and the state it was sent back
        {"id": "u1", "role": "user", "content": "please title case hello world"},
        {"id": "a1", "role": "assistant", "content": texts(first)[0]},
        {"id": "u2", "role": "user", "content": "please reverse text abc"},
    ]
    sent["state"] = [e["snapshot"] for e in first if e["type"] == "STATE_SNAPSHOT"][-1]
    _, second = post(url, "LLMOfflineDemo", sent)
    reply = "Done: reverse text returned cba."
    assert texts(second) == [reply, f"{reply} (your request had 4 words)"]
    history = second[-1]["result"]["chat_history"]
    assert [m["content"] for m in history if m["role"] == "user"] == [
        "please title case hello world",
        "please reverse text abc",
    ]
    streamed = [e for e in second if e["type"] == "TEXT_MESSAGE_START"]
    assert streamed[0]["messageId"].startswith("lc_run--")  # the model's own message id, as it streamed


def test_a_pause_is_an_interrupt_and_the_legacy_channel_answers_it(url: str) -> None:
    _, paused = post(url, "Review", body("legacy-1", "tea"))
    assert kinds(paused)[-2:] == ["CUSTOM", "RUN_FINISHED"]
    assert paused[-2]["name"] == "on_interrupt"
    assert json.loads(paused[-2]["value"])["question"] == "Publish this draft?"
    assert "outcome" not in paused[-1]  # a client that declared no AG-UI version is told the old way only
    steps = [(e["type"], e["stepName"]) for e in paused if e["type"].startswith("STEP_")]
    assert steps[-2:] == [("STEP_STARTED", "Approve"), ("STEP_FINISHED", "Approve")]
    # text is read as typed text (`agentmap resume`'s rule): a word, or JSON when it starts like JSON
    _, answered = post(url, "Review", body("legacy-1", forwardedProps={"command": {"resume": "no"}}))
    assert answered[-1]["type"] == "RUN_FINISHED" and answered[-1]["result"]["approved"] is False
    post(url, "Review", body("legacy-2", "cake"))
    _, answered = post(url, "Review", body("legacy-2", forwardedProps={"command": {"resume": '{"approved": true}'}}))
    assert answered[-1]["result"]["approved"] is True


def test_a_client_of_agui_1_is_told_the_interrupt_and_answers_by_its_id(url: str) -> None:
    _, paused = post(url, "Review", body("v1-1", "tea", protocolVersion="1.0"))
    assert paused[0]["protocolVersion"] == "1.0"
    (interrupt,) = paused[-1]["outcome"]["interrupts"]
    assert paused[-1]["outcome"]["type"] == "interrupt"
    assert interrupt["reason"] == "agentmap:approval" and interrupt["message"] == "Publish this draft?"
    assert interrupt["metadata"]["agentmap"]["question"]["interaction"] == "approval"
    answer = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": "yes"}}]
    _, answered = post(url, "Review", body("v1-1", resume=answer, protocolVersion="1.0"))
    assert answered[-1]["type"] == "RUN_FINISHED" and answered[-1]["result"]["approved"] is True
    assert "outcome" not in answered[-1]


def test_a_new_message_on_a_paused_thread_is_told_the_question_again(url: str) -> None:
    post(url, "Review", body("again-1", "tea"))
    runs = len(httpx.get(f"{url}/threads/again-1/runs").json())
    _, told = post(url, "Review", body("again-1", "hello?", protocolVersion="1.0"))
    assert kinds(told) == ["RUN_STARTED", "STATE_SNAPSHOT", "CUSTOM", "RUN_FINISHED"]
    assert told[1]["snapshot"]["draft"] == "Draft about tea"
    assert told[-1]["outcome"]["interrupts"][0]["message"] == "Publish this draft?"
    assert len(httpx.get(f"{url}/threads/again-1/runs").json()) == runs  # no run was made of the message
    assert httpx.get(f"{url}/threads/again-1/state").json()["interrupts"]  # still waiting


@pytest.mark.parametrize(
    ("answer", "status", "code", "says"),
    [
        ({"resume": [{"status": "resolved", "payload": "maybe"}]}, 422, "bad-answer", "resume[0].payload: node"),
        ({"resume": [{"status": "resolved", "payload": 1}]}, 422, "bad-answer", "1 is neither yes nor no"),
        ({"resume": [{"status": "resolved"}]}, 422, "bad-answer", "None is neither yes nor no"),
        ({"resume": [{"status": "cancelled"}]}, 422, "bad-answer", "resume[0].status: 'cancelled' gives no answer"),
        ({"resume": [{"interruptId": "nope", "status": "resolved", "payload": "yes"}]}, 422, "bad-answer", "'nope'"),
        (
            {"forwardedProps": {"command": {"resume": "maybe"}}},
            422,
            "bad-answer",
            "forwardedProps.command.resume: node 'Approve' asks for an approval",
        ),
        ({"forwardedProps": {"command": {"goto": "Draft"}}}, 422, "not-supported", "forwardedProps.command.goto"),
        ({"forwardedProps": {"command": "yes"}}, 422, "bad-request", "forwardedProps.command must be an object"),
        (
            {"resume": [{"status": "resolved", "payload": "yes"}], "forwardedProps": {"command": {"resume": "yes"}}},
            422,
            "bad-request",
            "answers twice",
        ),
    ],
)
def test_an_answer_that_does_not_fit_is_refused_and_the_thread_stays_paused(
    url: str, answer: dict[str, Any], status: int, code: str, says: str
) -> None:
    thread = f"refused-{abs(hash(json.dumps(answer)))}"
    _, paused = post(url, "Review", body(thread, "tea", protocolVersion="1.0"))
    interrupt_id = paused[-1]["outcome"]["interrupts"][0]["id"]
    for entry in answer.get("resume", ()):
        entry.setdefault("interruptId", interrupt_id)
    response, events = post(url, "Review", body(thread, **answer))
    assert events == []
    assert refusal(response)[:2] == (status, code)
    assert says in refusal(response)[2]
    state = httpx.get(f"{url}/threads/{thread}/state").json()
    assert [i["id"] for i in state["interrupts"]] == [interrupt_id] and "approved" not in state["values"]


def test_an_answer_to_a_thread_that_asks_nothing_is_refused(url: str) -> None:
    post(url, "HelloWorld", body("asks-nothing", "Ada"))
    response, _ = post(url, "HelloWorld", body("asks-nothing", forwardedProps={"command": {"resume": "yes"}}))
    assert refusal(response)[:2] == (409, "nothing-to-resume")


@pytest.mark.parametrize(
    ("graph", "sent", "status", "code", "says"),
    [
        ("NoSuchGraph", body("bad-1", "hi"), 404, "assistant-not-found", "no assistant 'NoSuchGraph'"),
        ("HelloWorld", {"threadId": "bad-2", "messages": []}, 422, "bad-request", "body.runId: Field required"),
        ("HelloWorld", {**body("bad-3"), "messages": "hi"}, 422, "bad-request", "body.messages"),
        ("HelloWorld", body("bad 4", "Ada"), 422, "bad-request", "threadId 'bad 4' is refused"),
        ("HelloWorld", body("bad-5", state=["Ada"]), 422, "bad-input", "state must be an object"),
        ("HelloWorld", body("bad-6"), 422, "bad-input", "missing required argument 'name'"),
        ("Quote", body("bad-7", "two teas"), 422, "bad-input", "takes 2 input keys (item, qty)"),
        ("Review", body("bad-8", state={"topic": 3}), 422, "bad-input", "argument 'topic'"),
    ],
)
def test_bad_requests_are_refused_naming_the_field(
    url: str, graph: str, sent: dict[str, Any], status: int, code: str, says: str
) -> None:
    response, events = post(url, graph, sent)
    assert events == []
    assert refusal(response)[:2] == (status, code)
    assert says in refusal(response)[2]


def test_a_part_of_a_message_that_is_not_text_is_refused(url: str) -> None:
    parts = [{"type": "text", "text": "Ada"}, {"type": "image", "source": {"type": "url", "value": "http://x/y.png"}}]
    message: dict[str, Any] = {"id": "m", "role": "user", "content": parts}
    sent = {"threadId": "parts-1", "runId": "r", "messages": [message]}
    response, _ = post(url, "HelloWorld", sent)
    assert refusal(response)[:2] == (422, "bad-input")
    assert "messages[0].content[1]: a 'image' part is not read" in refusal(response)[2]
    message["content"] = parts[:1]
    _, events = post(url, "HelloWorld", sent)
    assert events[-1]["result"]["greeting"] == "Hello, Ada!"


def test_a_graph_of_several_input_keys_takes_them_in_state_and_the_rest_of_state_is_not_input(url: str) -> None:
    echoed = {"item": "tea", "qty": "2", "quote": "an old quote", "errors": ["an old error"]}
    _, events = post(url, "Quote", body("quote-1", "ignored", state=echoed))
    assert events[-1]["result"]["quote"] == "2 x tea"
    assert events[-1]["result"]["errors"] == []  # the state sent back is not written to the thread


def test_failures_end_the_run_with_run_error(url: str) -> None:
    _, events = post(url, "Fails", body("fails-1", state={"x": "1"}))
    assert kinds(events)[-1] == "RUN_ERROR" and "RUN_FINISHED" not in kinds(events)
    assert "graph 'Fails' failed" in events[-1]["message"] and "the disk is full" in events[-1]["message"]


def test_a_client_that_goes_away_stops_the_run_after_its_step(url: str) -> None:
    with httpx.stream("POST", f"{url}/agui/Slow", json=body("gone-1", "x"), timeout=scaled(60)) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and json.loads(line[6:])["type"] == "STEP_STARTED":
                break  # the client goes away mid-run

    def ended() -> dict[str, Any] | None:
        runs = httpx.get(f"{url}/threads/gone-1/runs").json()
        return runs[0] if runs and runs[0]["status"] != "running" else None

    run = until(ended, 30, "the run did not stop")
    assert run["status"] == "interrupted" and run["cancel_reason"] == "the AG-UI client disconnected"
    assert "third" not in httpx.get(f"{url}/threads/gone-1/state").json()["values"]


def test_the_api_key_and_the_page_rules_cover_agui(tmp_path: Path) -> None:
    page = "http://127.0.0.1:9"
    with serving(GRAPHS / "hello_world.csv", checkpoint="memory", api_key=KEY, cors_origins=(page,)) as url:
        response, _ = post(url, "HelloWorld", body("key-1", "Ada"))
        assert refusal(response)[:2] == (401, "unauthorized")
        response, _ = post(url, "HelloWorld", body("key-1", "Ada"), headers={"X-Api-Key": "wrong", "Origin": page})
        assert refusal(response)[:2] == (401, "unauthorized")
        assert response.headers["access-control-allow-origin"] == page  # the page can tell a wrong key
        response, events = post(url, "HelloWorld", body("key-1", "Ada"), headers={"X-Api-Key": KEY, "Origin": page})
        assert events[-1]["type"] == "RUN_FINISHED" and response.headers["access-control-allow-origin"] == page
        other = {"X-Api-Key": KEY, "Origin": "http://elsewhere.example"}
        response, _ = post(url, "HelloWorld", body("key-2", "Ada"), headers=other)
        assert refusal(response)[:2] == (403, "forbidden-origin")
        plain = httpx.post(
            f"{url}/agui/HelloWorld",
            content=json.dumps(body("key-3", "Ada")),
            headers={"X-Api-Key": KEY, "Content-Type": "text/plain"},
        )
        assert refusal(plain)[:2] == (415, "not-json")


def test_without_the_agui_extra_the_endpoint_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ag_ui.core", None)  # the package cannot be imported
    with serving(GRAPHS / "hello_world.csv", checkpoint="memory") as url:
        response, _ = post(url, "HelloWorld", body("x", "Ada"))
        assert refusal(response)[:2] == (501, "missing-extra")
        assert response.json()["hint"] == 'pip install "agentmap[agui]" and restart agentmap serve'
        assert httpx.get(f"{url}/ok").json()["ok"] is True


def test_a_body_is_read_by_the_servers_one_reader(url: str) -> None:
    sent = {"Content-Type": "application/json"}
    not_json = httpx.post(f"{url}/agui/HelloWorld", content=b"{nope", headers=sent)
    assert refusal(not_json)[:2] == (400, "bad-request")
    lone = b'{"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": "\\ud800"}]}'
    surrogate = httpx.post(f"{url}/agui/HelloWorld", content=lone, headers=sent)
    assert refusal(surrogate)[:2] == (422, "bad-input") and "messages[0].content" in refusal(surrogate)[2]
    assert "/agui/{key}" in httpx.get(f"{url}/openapi.json").json()["paths"]


def test_a_pause_is_answered_on_the_revision_it_started_on_after_the_file_changed(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "p")
    with serving(folder, checkpoint=str(tmp_path / "runs.db")) as served:
        _, paused = post(served, "Review", body("edited-1", "tea", protocolVersion="1.0"))
        (interrupt,) = paused[-1]["outcome"]["interrupts"]
        (folder / "review.csv").write_text(  # Approve renamed Approval, and a node after it
            "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field,Edge\n"
            "Review,Draft,template,Draft about {topic},topic,draft,Approval\n"
            "Review,Approval,ReviewAgent,,draft,approved,Publish\n"
            "Review,Publish,template,Published {draft},draft,published,\n",
            encoding="utf-8",
        )
        assert httpx.post(f"{served}/assistants/reload", json={}).status_code == 200
        _, told = post(served, "Review", body("edited-1", "hello?", protocolVersion="1.0"))  # its question, again
        assert kinds(told) == ["RUN_STARTED", "STATE_SNAPSHOT", "CUSTOM", "RUN_FINISHED"], kinds(told)
        assert told[-1]["outcome"]["interrupts"][0]["id"] == interrupt["id"]
        answer = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": "yes"}}]
        _, answered = post(served, "Review", body("edited-1", resume=answer, protocolVersion="1.0"))
        assert answered[-1]["type"] == "RUN_FINISHED", answered[-1]
        assert answered[-1]["result"]["approved"] is True and "published" not in answered[-1]["result"]
        _, fresh = post(served, "Review", body("edited-2", "cake"))  # a new thread takes the file as it is
        steps = [e["stepName"] for e in fresh if e["type"] == "STEP_STARTED"]
        assert steps[-1] == "Approval", steps
