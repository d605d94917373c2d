"""`agentmap serve --quota` (429 with Retry-After, per identity) and `--audit` (who did what, when, from where;
no input unless asked), with LangGraph's tutorial auth file and langgraph-sdk."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from auth_helpers import ALICE, BOB, PRIVATE, client, project
from server_helpers import serving, steps_project
from timing import until

from agentmap.server._quota import Quota

pytest.importorskip("langgraph_sdk")

GATED = '''
import time
from pathlib import Path

from agentmap import BaseAgent


class GateAgent(BaseAgent):
    """Waits (a minute at most) until the file named by the input `gate` exists."""

    def process(self, inputs):
        gate, deadline = Path(inputs["gate"]), time.monotonic() + 60
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return "opened"
'''

GRAPHS = """
GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field
agent,Reply,echo,,,messages,reply
gated,Wait,GateAgent,,,gate,done
Ask,Question,input,What is your name?,"{""interrupt"": true}",,name
"""


def _quota_refusal(call: Any) -> httpx.Response:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    response: httpx.Response = refused.value.response
    assert response.status_code == 429 and response.json()["code"] == "quota-exceeded", response.text
    return response


def test_runs_per_period_are_counted_per_identity(tmp_path: Path) -> None:
    graph, auth = project(tmp_path, PRIVATE)
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), auth=auth, quota=Quota.parse("runs=2/min")) as url:
        alice, bob = client(url, ALICE), client(url, BOB)
        thread = alice.threads.create()["thread_id"]
        for _ in range(2):
            alice.runs.wait(thread, "agent", input={"messages": ["hi"]})
        refused = _quota_refusal(lambda: alice.runs.wait(None, "agent", input={"messages": ["one more"]}))
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert "user 'user1' started 2 runs in the last minute" in refused.json()["message"]
        assert len(alice.runs.list(thread)) == 2  # the refused run was never recorded
        assert bob.runs.wait(None, "agent", input={"messages": ["bob's first"]})["reply"]  # another identity


def test_runs_at_once_are_counted_until_they_end(tmp_path: Path) -> None:
    folder = steps_project(tmp_path, GATED, GRAPHS)
    (folder / "auth.py").write_text(PRIVATE, encoding="utf-8")
    quota = Quota.parse("concurrent=1")
    with serving(
        folder / "steps.csv", checkpoint=str(tmp_path / "runs.db"), auth=f"{folder}/auth.py:auth", quota=quota
    ) as url:
        alice = client(url, ALICE)
        first, second = alice.threads.create()["thread_id"], alice.threads.create()["thread_id"]
        gate = tmp_path / "gate"
        run = alice.runs.create(first, "gated", input={"gate": str(gate)})
        refused = _quota_refusal(lambda: alice.runs.create(second, "gated", input={"gate": str(gate)}))
        assert refused.headers["retry-after"] == "1" and "1 runs pending or running" in refused.json()["message"]
        assert client(url, BOB).runs.wait(None, "agent", input={"messages": ["bob"]})  # not counted against bob
        gate.touch()
        assert alice.runs.join(first, run["run_id"])["done"] == "opened"
        assert alice.runs.wait(second, "gated", input={"gate": str(gate)})["done"] == "opened"


def test_without_users_the_quota_is_the_servers(tmp_path: Path) -> None:
    graph, _ = project(tmp_path, PRIVATE)
    with serving(graph, checkpoint=str(tmp_path / "runs.db"), quota=Quota.parse("runs=1/h")) as url:
        anyone = client(url)
        anyone.runs.wait(None, "agent", input={"messages": ["first"]})
        refused = _quota_refusal(lambda: client(url, BOB).runs.wait(None, "agent", input={"messages": ["second"]}))
        assert "this server started 1 runs in the last hour" in refused.json()["message"]


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("runs=10", "'runs=10'"),
        ("runs=5/fortnight", "'runs=5/fortnight'"),
        ("concurrent=many", "'concurrent=many'"),
        ("", "sets no quota"),
    ],
)
def test_a_quota_that_is_no_quota_is_a_usage_error(text: str, wrong: str) -> None:
    from agentmap.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        Quota.parse(text)
    assert (
        refused.value.code == "usage" and wrong in refused.value.message and "runs=N/PERIOD" in str(refused.value.hint)
    )


def _audited(url: str, tmp_path: Path) -> tuple[str, str]:
    """Alice makes a thread, runs it, answers its pause, cancels a run and deletes the thread; Bob tries to read
    it; the ids of the thread and of the cancelled run."""
    alice, bob = client(url, ALICE), client(url, BOB)
    thread = alice.threads.create()["thread_id"]
    alice.runs.wait(thread, "Ask", input={})
    alice.runs.wait(thread, "Ask", command={"resume": "secret answer"})
    with pytest.raises(httpx.HTTPStatusError):
        bob.threads.get(thread)
    gate = tmp_path / "gate"
    other = alice.threads.create()["thread_id"]
    run = alice.runs.create(other, "gated", input={"gate": str(gate)})
    alice.runs.cancel(other, run["run_id"])  # it stops once its step ends: when the gate opens
    gate.touch()
    alice.runs.join(other, run["run_id"])
    alice.threads.delete(thread)
    return thread, run["run_id"]


def _entries(path: Path, count: int) -> list[dict[str, Any]]:
    until(lambda: path.exists() and len(path.read_text().splitlines()) >= count, 10, f"{count} audit entries")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_audit_log_says_who_did_what_to_which_thread_from_where(tmp_path: Path) -> None:
    folder = steps_project(tmp_path, GATED, GRAPHS)
    (folder / "auth.py").write_text(PRIVATE, encoding="utf-8")
    log = tmp_path / "audit.jsonl"
    with serving(
        folder / "steps.csv", checkpoint=str(tmp_path / "runs.db"), auth=f"{folder}/auth.py:auth", audit=str(log)
    ) as url:
        thread, cancelled = _audited(url, tmp_path)
    entries = _entries(log, 8)
    mine = [
        (e["identity"], e["event"], e.get("thread_id"), e["status"]) for e in entries if e.get("thread_id") == thread
    ]
    assert ("user1", "created", thread, 200) in mine
    assert ("user1", "started", thread, 200) in mine
    assert ("user1", "answered", thread, 200) in mine
    assert ("user2", "read", thread, 404) in mine  # bob asked, and found nothing
    assert ("user1", "deleted", thread, 204) in mine
    cancel = [e for e in entries if e["event"] == "cancelled"]
    assert cancel and cancel[0]["run_id"] == cancelled and cancel[0]["identity"] == "user1"
    assert all(e["address"] == "127.0.0.1" and e["via"] == "http" and e["request_id"] for e in entries)
    assert "secret answer" not in log.read_text() and not any("content" in e for e in entries)


def test_the_audit_table_is_every_replicas_and_keeps_inputs_when_asked(tmp_path: Path) -> None:
    folder = steps_project(tmp_path, GATED, GRAPHS)
    (folder / "auth.py").write_text(PRIVATE, encoding="utf-8")
    database = tmp_path / "runs.db"
    options: dict[str, Any] = {"auth": f"{folder}/auth.py:auth", "audit": "table", "audit_content": True}
    with serving(folder / "steps.csv", checkpoint=str(database), **options) as url:
        thread, _ = _audited(url, tmp_path)

        def read() -> list[dict[str, Any]]:
            with sqlite3.connect(database) as conn:
                return [json.loads(r[0]) for r in conn.execute("SELECT entry FROM agentmap_audit ORDER BY at")]

        until(lambda: any(e["event"] == "deleted" for e in read()), 10, "the audit table's last entry")
    answered = [e for e in read() if e["event"] == "answered"]
    assert answered[0]["content"] == {"command": {"resume": "secret answer"}} and answered[0]["thread_id"] == thread
