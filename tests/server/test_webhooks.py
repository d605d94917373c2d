"""Webhooks: a run's `webhook` URL gets the run when it ends or pauses, signed and retried; through langgraph-sdk
against the real server, with a receiver on 127.0.0.1 in the test."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Receiver, make_project, serving

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

SECRET = "a-long-random-key"

_PUBLISH = """GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next
Publish,Review,human,Publish this draft? {draft},"{""interaction_type"": ""approval""}",draft,approved,Done
Publish,Done,template,Approved: {approved},,approved,message,
"""


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.http.shutdown()


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = make_project(tmp_path_factory.mktemp("served"))
    (folder / "publish.csv").write_text(_PUBLISH, encoding="utf-8")
    config: dict[str, Any] = {"webhook_hosts": ("127.0.0.1",), "webhook_secret": SECRET}
    with serving(folder, checkpoint=str(folder / "runs.db"), **config) as address:
        yield address


@pytest.fixture
def client(url: str) -> Iterator[Any]:
    with sdk.get_sync_client(url=url, api_key=None) as c:
        yield c


def _signed(headers: dict[str, str], body: bytes) -> bool:
    stamp = headers["X-AgentMap-Timestamp"]
    expected = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers["X-AgentMap-Signature"], f"sha256={expected}")


def test_a_run_that_ends_is_posted_signed(client: Any, receiver: Receiver) -> None:
    tid = client.threads.create()["thread_id"]
    hook = f"{receiver.url}/ended"
    result = client.runs.wait(tid, "HelloWorld", input={"name": "Ada"}, webhook=hook)
    assert result["greeting"] == "Hello, Ada!"
    [(headers, body)] = receiver.deliveries("/ended", 1)
    raw = next(b for p, _, b in receiver.got if p == "/ended")
    assert _signed(headers, raw)
    assert abs(int(headers["X-AgentMap-Timestamp"]) - time.time()) < 300
    run = client.runs.list(tid)[0]
    assert body["run_id"] == run["run_id"] and body["thread_id"] == tid and body["status"] == "success"
    assert body["values"]["greeting"] == "Hello, Ada!" and body["kwargs"]["webhook"] == hook
    assert {k: body[k] for k in run if k != "updated_at"} == {k: v for k, v in run.items() if k != "updated_at"}


def test_a_receiver_that_does_not_answer_holds_up_no_run(client: Any, receiver: Receiver) -> None:
    receiver.held.add("/held")
    try:
        for name in ("Di", "Ed"):  # each run's answer comes while its delivery still waits for the receiver
            result = client.runs.wait(None, "HelloWorld", input={"name": name}, webhook=f"{receiver.url}/held")
            assert result["greeting"] == f"Hello, {name}!"
        assert not receiver.release.is_set()
        assert len(receiver.deliveries("/held", 2)) == 2
    finally:
        receiver.release.set()


def test_a_delivery_answered_500_is_tried_again(client: Any, receiver: Receiver) -> None:
    receiver.answers.append(500)
    client.runs.create(None, "HelloWorld", input={"name": "Bo"}, webhook=f"{receiver.url}/retried")
    first, second = receiver.deliveries("/retried", 2)
    assert first[0]["X-AgentMap-Delivery"] == second[0]["X-AgentMap-Delivery"]  # one delivery, tried twice
    assert {**first[1], "webhook_sent_at": 0} == {**second[1], "webhook_sent_at": 0}
    assert second[1]["values"]["greeting"] == "Hello, Bo!" and first[0]["X-AgentMap-Delivery"] == first[1]["run_id"]


def test_a_pause_on_a_human_node_is_posted_with_its_question_then_the_end(client: Any, receiver: Receiver) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.create(tid, "Publish", input={"draft": "Q3 notes"}, webhook=f"{receiver.url}/paused")
    [(_, paused)] = receiver.deliveries("/paused", 1)
    assert paused["status"] == "interrupted" and paused["thread_id"] == tid
    assert paused["interrupts"][0]["value"]["question"] == "Publish this draft? Q3 notes"
    assert paused["values"]["__interrupt__"] == paused["interrupts"]
    client.runs.wait(tid, "Publish", command={"resume": "yes"}, webhook=f"{receiver.url}/paused")
    _, (_, ended) = receiver.deliveries("/paused", 2)
    assert ended["status"] == "success" and ended["values"]["message"] == "Approved: True"


def test_a_cancelled_run_is_posted_with_its_reason(client: Any, receiver: Receiver) -> None:
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "Slow", input={"topic": "x"}, webhook=f"{receiver.url}/cancelled")
    client.runs.cancel(tid, run["run_id"], wait=True)
    [(_, body)] = receiver.deliveries("/cancelled", 1)
    assert body["status"] == "interrupted" and body["cancel_reason"] == "cancelled by the client"


def test_a_run_that_fails_is_posted_with_its_error(client: Any, receiver: Receiver) -> None:
    tid = client.threads.create()["thread_id"]
    hook = f"{receiver.url}/failed"
    client.runs.create(tid, "Slow", input={"topic": "x"}, config={"recursion_limit": 1}, webhook=hook)
    [(_, body)] = receiver.deliveries("/failed", 1)
    assert body["status"] == "error" and "values" not in body
    assert body["error"]["code"] == "recursion-limit", body["error"]


def test_a_webhook_on_a_host_not_allowed_is_refused(client: Any, url: str) -> None:
    import httpx

    tid = client.threads.create()["thread_id"]
    hints = []
    for hook in ("http://attacker.example/hook", "ftp://127.0.0.1/x", "not a url"):
        answer = httpx.post(
            f"{url}/threads/{tid}/runs/wait", json={"assistant_id": "HelloWorld", "input": {}, "webhook": hook}
        )
        assert answer.status_code == 422, answer.text
        assert answer.json()["code"] == "bad-request" and "webhook" in answer.json()["message"]
        hints.append(answer.json()["hint"])
    assert hints[0] == "start agentmap serve with --webhook-host attacker.example (allowed now: 127.0.0.1)"
    assert client.runs.list(tid) == []  # nothing was recorded or run


def test_the_runs_of_a_cron_post_to_its_webhook_and_a_host_not_allowed_is_refused_at_creation(
    client: Any, receiver: Receiver
) -> None:
    pytest.importorskip("croniter")
    from langgraph_sdk.errors import UnprocessableEntityError

    tid = client.threads.create()["thread_id"]
    with pytest.raises(UnprocessableEntityError, match="webhook"):
        client.crons.create_for_thread(tid, "HelloWorld", schedule="* * * * * *", webhook="http://attacker.example/h")
    assert client.crons.search(thread_id=tid) == []  # refused when made, not at each tick
    hook = f"{receiver.url}/ticked"
    cron = client.crons.create_for_thread(tid, "HelloWorld", schedule="* * * * * *", input={"name": "Cy"}, webhook=hook)
    try:
        [(headers, body)] = receiver.deliveries("/ticked", 1)
    finally:
        client.crons.delete(cron["cron_id"])
    raw = next(b for p, _, b in receiver.got if p == "/ticked")
    assert _signed(headers, raw) and body["thread_id"] == tid and body["status"] == "success"
    assert body["metadata"]["cron_id"] == cron["cron_id"] and body["values"]["greeting"] == "Hello, Cy!"


def test_a_server_allowing_no_host_refuses_every_webhook(tmp_path: Path) -> None:
    import httpx

    folder = make_project(tmp_path / "p")
    with serving(folder, checkpoint="memory") as address:
        body = {"assistant_id": "HelloWorld", "input": {"name": "D"}, "webhook": "http://127.0.0.1:9/x"}
        answer = httpx.post(f"{address}/runs/wait", json=body)
    assert answer.status_code == 422 and "no webhook host is allowed" in answer.json()["hint"]


def test_a_runs_file_of_an_older_server_gets_webhooks(tmp_path: Path, receiver: Receiver) -> None:
    import sqlite3

    folder = make_project(tmp_path / "p")
    database = tmp_path / "runs.db"
    with sqlite3.connect(database) as old:  # the run table as an earlier server made it
        old.execute(
            "CREATE TABLE agentmap_runs (run_id TEXT PRIMARY KEY, thread_id TEXT, assistant_id TEXT, created_at TEXT, "
            "updated_at TEXT, status TEXT, metadata TEXT, multitask_strategy TEXT, seq INTEGER, graph_id TEXT, "
            "request TEXT, owner TEXT, lease_until REAL DEFAULT 0, attempt INTEGER DEFAULT 0, result TEXT, "
            "cancel TEXT, stateless INTEGER DEFAULT 0)"
        )
    old.close()
    with serving(folder, checkpoint=str(database), webhook_hosts=("127.0.0.1",)) as address:
        with sdk.get_sync_client(url=address, api_key=None) as client:
            client.runs.wait(None, "HelloWorld", input={"name": "Flo"}, webhook=f"{receiver.url}/older")
        [(headers, body)] = receiver.deliveries("/older", 1)
    assert body["values"]["greeting"] == "Hello, Flo!" and "X-AgentMap-Signature" not in headers  # no secret
