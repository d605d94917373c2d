"""Assistant versions through LangGraph's own client: a served file edited while its threads wait becomes a new
version of its assistant (reloaded by `POST /assistants/reload` or `--reload`, no restart), each waiting thread
finishes on the revision it started on, new threads take the new one, `get_versions` lists them and
`set_latest` chooses the one new threads take."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from durable_graphs import PURCHASE_A as A
from durable_graphs import PURCHASE_A_NODES as NODES_A
from durable_graphs import PURCHASE_B as B
from server_helpers import approved, paused_purchase, serving
from timing import until

sdk = pytest.importorskip("langgraph_sdk")
from auth_helpers import client as user_client  # noqa: E402
from auth_helpers import project  # noqa: E402
from langgraph_sdk.errors import NotFoundError  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture
def approval(tmp_path: Path) -> Path:
    path = tmp_path / "approval.csv"
    path.write_text(A, encoding="utf-8")
    return path


@pytest.fixture
def client(approval: Path) -> Iterator[Any]:
    with serving(approval, checkpoint=str(approval.parent / "runs.db")) as url, sdk.get_sync_client(url=url) as c:
        yield c


def _reload(client: Any) -> dict[str, Any]:
    done: dict[str, Any] = client.http.post("/assistants/reload", json={})
    return done


def test_a_waiting_thread_finishes_on_its_version_and_new_threads_take_the_reloaded_file(
    client: Any, approval: Path
) -> None:
    first = client.assistants.get("Purchase")
    assert first["version"] == 1 and len(first["metadata"]["revision"]) == 64
    waiting = [paused_purchase(client, f"item {i}") for i in range(3)]

    approval.write_text(B, encoding="utf-8")
    (done,) = _reload(client)["assistants"]
    assert done["changed"] is True and done["version"] == 2 and done["revision"] != first["metadata"]["revision"]
    versions = client.assistants.get_versions("Purchase")
    assert [v["version"] for v in versions] == [2, 1]
    assert versions[1]["metadata"]["revision"] == first["metadata"]["revision"]
    assert client.assistants.get_versions("Purchase", metadata={"revision": done["revision"]})[0]["version"] == 2
    latest = client.assistants.get("Purchase")
    assert latest["version"] == 2 and "cost_center" in latest["metadata"]["input_keys"]
    assert "Approval" in {n["id"] for n in client.assistants.get_graph("Purchase")["nodes"]}

    for i, thread in enumerate(waiting):  # each finishes on revision A, whose nodes the file no longer has
        assert client.threads.get_state(thread)["next"] == ["Review"]
        values, ran = approved(client, thread)
        assert values["report"] == f"Purchase of item {i} approved: True"
        assert values["note"] == f"Told the team about item {i}"
        assert ran <= NODES_A and "Report" in ran, ran
        (run,) = [r for r in client.runs.list(thread) if r["status"] == "success"]
        assert run["metadata"]["assistant_version"] == 1
        assert client.threads.get(thread)["metadata"]["assistant_version"] == 1

    fresh = client.threads.create()["thread_id"]  # a new thread takes B
    paused = client.runs.wait(fresh, "Purchase", input={"request": "a desk", "cost_center": "Facilities"})
    assert [i["value"]["node"] for i in paused["__interrupt__"]] == ["Approval"]
    assert client.threads.get(fresh)["metadata"]["assistant_version"] == 2
    assert client.runs.list(fresh)[0]["metadata"]["assistant_version"] == 2
    final = client.runs.wait(fresh, "Purchase", command={"resume": "yes"})
    assert final["report"] == "Purchase of a desk for Facilities approved: True" and "note" not in final

    stateless = client.runs.wait(None, "Purchase", input={"request": "a pen", "cost_center": "IT"})
    assert stateless["errors"][0].startswith("Error in Approval:")  # B's node (a run without a thread cannot pause)
    (again,) = _reload(client)["assistants"]  # nothing changed: no new version
    assert again["changed"] is False and again["version"] == 2
    assert [v["version"] for v in client.assistants.get_versions("Purchase")] == [2, 1]


def test_set_latest_chooses_the_version_new_threads_take_and_a_restart_keeps_it(approval: Path) -> None:
    database = str(approval.parent / "runs.db")
    with serving(approval, checkpoint=database) as url, sdk.get_sync_client(url=url) as client:
        approval.write_text(B, encoding="utf-8")
        _reload(client)
        on_b = client.threads.create()["thread_id"]
        client.runs.wait(on_b, "Purchase", input={"request": "a desk", "cost_center": "F"})

        chosen = client.assistants.set_latest("Purchase", 1)  # back to A, though the file holds B
        assert chosen["version"] == 1 and "cost_center" not in chosen["metadata"]["input_keys"]
        assert client.assistants.get("Purchase")["version"] == 1
        paused_purchase(client, "a lamp")  # a new thread takes A again
        final = client.runs.wait(on_b, "Purchase", command={"resume": "yes"})  # the thread of B stays on B
        assert final["report"] == "Purchase of a desk for F approved: True"

        with pytest.raises(NotFoundError) as unknown:
            client.assistants.set_latest("Purchase", 9)
        body = unknown.value.response.json()
        assert body["code"] == "version-not-found" and "has no version 9" in body["message"]
        assert "its versions: 2, 1" in body["hint"]
        assert client.assistants.get("Purchase")["version"] == 1

    with serving(approval, checkpoint=database) as url, sdk.get_sync_client(url=url) as client:
        assert client.assistants.get("Purchase")["version"] == 1  # a restart serving B does not undo the choice
        assert [v["version"] for v in client.assistants.get_versions("Purchase")] == [2, 1]


def test_a_file_that_no_longer_compiles_is_not_reloaded_and_the_server_goes_on(client: Any, approval: Path) -> None:
    thread = paused_purchase(client, "a chair")
    approval.write_text(A.replace(",Notify\n", ",Notfy\n"), encoding="utf-8")  # an edge to no node
    with pytest.raises(httpx.HTTPStatusError) as refused:
        _reload(client)
    answer = refused.value.response
    assert answer.status_code == 422
    assert "assistant 'Purchase' was not reloaded" in answer.json()["message"]
    assert "approval.csv does not compile" in answer.json()["message"]
    assert "the server goes on with the version it had" in answer.json()["hint"]
    assert client.assistants.get("Purchase")["version"] == 1
    values, _ = approved(client, thread)
    assert values["note"] == "Told the team about a chair"


def test_serve_reload_makes_a_changed_file_or_prompt_a_new_version(tmp_path: Path) -> None:
    (tmp_path / "ask.txt").write_text("Approve {request}?", encoding="utf-8")
    path = tmp_path / "approval.csv"
    path.write_text(A.replace("Approve the purchase of {request}?", "file:ask.txt"), encoding="utf-8")
    with (
        serving(path, checkpoint=str(tmp_path / "runs.db"), reload=0.05) as url,
        sdk.get_sync_client(url=url) as client,
    ):
        thread = paused_purchase(client, "a bike")
        (tmp_path / "ask.txt").write_text("Do we buy {request}?", encoding="utf-8")  # a prompt file the file names
        until(lambda: client.assistants.get("Purchase")["version"] == 2, 20, "the changed prompt was not reloaded")
        fresh = client.threads.create()["thread_id"]
        asked = client.runs.wait(fresh, "Purchase", input={"request": "a car"})
        assert asked["__interrupt__"][0]["value"]["question"] == "Do we buy a car?"
        state = client.threads.get_state(thread)  # the waiting thread's question is as its revision worded it
        assert state["interrupts"][0]["value"]["question"] == "Approve a bike?"

        path.write_text(B, encoding="utf-8")
        until(lambda: client.assistants.get("Purchase")["version"] == 3, 20, "the changed file was not reloaded")
        values, ran = approved(client, thread)
        assert values["note"] == "Told the team about a bike" and ran <= NODES_A


@pytest.mark.parametrize(
    ("damage", "code", "said"),
    [
        (
            "UPDATE agentmap_revision_files SET content = replace(content, 'Notify', 'Notifx')",
            "corrupt-checkpoint",
            "approval.csv does not match its SHA-256",
        ),
        ("DELETE FROM agentmap_revisions", "unknown-revision", "holds no revision"),
    ],
)
def test_a_thread_whose_stored_revision_is_damaged_or_gone_is_refused_and_keeps_waiting(
    approval: Path, damage: str, code: str, said: str
) -> None:
    database = approval.parent / "runs.db"
    with serving(approval, checkpoint=str(database)) as url, sdk.get_sync_client(url=url) as client:
        thread = paused_purchase(client, "a sofa")
    approval.write_text(B, encoding="utf-8")  # this server compiles A only from the database
    with sqlite3.connect(database) as conn:
        conn.execute(damage)
    with serving(approval, checkpoint=str(database)) as url, sdk.get_sync_client(url=url) as client:
        with pytest.raises(httpx.HTTPStatusError) as refused:
            client.runs.wait(thread, "Purchase", command={"resume": "yes"})
        body = refused.value.response.json()
        assert refused.value.response.status_code == 422 and body["code"] == code, body
        assert said in body["message"] and thread in body["message"], body
        assert body["hint"]
        assert client.threads.get(thread)["status"] == "interrupted"  # nothing ran, nothing lost
        assert [t["thread_id"] for t in client.threads.search()] == [thread]  # still listed
        assert [r["status"] for r in client.runs.list(thread)] == ["interrupted"]
        with pytest.raises(httpx.HTTPStatusError) as unread:  # its state is read by its revision's graph only
            client.threads.get_state(thread)
        assert unread.value.response.json()["code"] == code
    with sqlite3.connect(database) as conn:  # the database restored (here: the revision written again)
        conn.execute("DELETE FROM agentmap_revisions")
        conn.execute("DELETE FROM agentmap_revision_files")
    approval.write_text(A, encoding="utf-8")
    with serving(approval, checkpoint=str(database)) as url, sdk.get_sync_client(url=url) as client:
        values, _ = approved(client, thread)
        assert values["note"] == "Told the team about a sofa"


def test_a_run_naming_a_version_runs_it_and_a_fork_goes_on_at_it_only_when_that_is_safe(
    client: Any, approval: Path
) -> None:
    waiting = paused_purchase(client, "a shelf")
    done = client.threads.create()["thread_id"]
    client.runs.wait(done, "Purchase", input={"request": "a mug"}, durability="sync")
    client.runs.wait(done, "Purchase", command={"resume": "yes"}, durability="sync")
    approval.write_text(A.replace("Told the team about", "Wrote to the team about"), encoding="utf-8")
    assert _reload(client)["assistants"][0]["version"] == 2

    on_one = client.threads.create()["thread_id"]  # a new thread runs the version named, not the latest
    pinned = {"configurable": {"assistant_version": 1}}
    client.runs.wait(on_one, "Purchase", input={"request": "a rug"}, config=pinned)
    assert client.threads.get(on_one)["metadata"]["assistant_version"] == 1
    final = client.runs.wait(on_one, "Purchase", command={"resume": "yes"})
    assert final["note"] == "Told the team about a rug"

    history = client.threads.get_history(done, limit=20)  # a fork of a finished thread, at the latest version
    before_report = next(h for h in history if h["next"] == ["Report"])["checkpoint"]["checkpoint_id"]
    latest = {"configurable": {"assistant_version": "latest"}}
    forked = client.runs.wait(done, "Purchase", input=None, checkpoint_id=before_report, config=latest)
    assert forked["note"] == "Wrote to the team about a mug", forked
    (run, *_) = client.runs.list(done)
    assert run["metadata"]["assistant_version"] == 2

    with pytest.raises(httpx.HTTPStatusError) as answered:  # a question is answered by the version that asked it
        client.runs.wait(waiting, "Purchase", command={"resume": "yes"}, config=latest)
    assert answered.value.response.status_code == 409 and answered.value.response.json()["code"] == "unsafe-move"
    assert client.threads.get_state(waiting)["next"] == ["Review"]


def test_a_fork_at_a_version_its_thread_cannot_go_on_at_is_refused_with_the_map_that_would_move_it(
    client: Any, approval: Path
) -> None:
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "Purchase", input={"request": "a lamp"}, durability="sync")
    client.runs.wait(thread, "Purchase", command={"resume": "yes"}, durability="sync")
    approval.write_text(B, encoding="utf-8")
    _reload(client)
    at_report = next(h for h in client.threads.get_history(thread, limit=20) if h["next"] == ["Report"])
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.runs.wait(
            thread,
            "Purchase",
            input=None,
            checkpoint_id=at_report["checkpoint"]["checkpoint_id"],
            config={"configurable": {"assistant_version": 2}},
        )
    body = refused.value.response.json()
    assert refused.value.response.status_code == 409 and body["code"] == "needs-migration", body
    assert "'cost_center'" in body["message"] and "default,cost_center,VALUE" in body["hint"]
    assert [r["status"] for r in client.runs.list(thread)] == ["success", "interrupted"]  # nothing ran


@pytest.mark.parametrize(
    ("version", "status", "code", "said"),
    [(7, 404, "version-not-found", "has no version 7"), ("two", 422, "bad-request", "'two' is no version")],
)
def test_a_run_naming_a_version_the_assistant_lacks_is_refused_naming_the_field(
    client: Any, version: object, status: int, code: str, said: str
) -> None:
    thread = client.threads.create()["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.runs.wait(
            thread, "Purchase", input={"request": "a pen"}, config={"configurable": {"assistant_version": version}}
        )
    body = refused.value.response.json()
    assert refused.value.response.status_code == status and body["code"] == code, body
    assert body["message"].startswith("config.configurable.assistant_version: ") and said in body["message"]
    assert client.runs.list(thread) == []


ADMINS = """
from langgraph_sdk import Auth

auth = Auth()


@auth.authenticate
async def who(headers):
    return {"identity": headers[b"x-user"].decode()}


@auth.on.assistants.update
async def admins_only(ctx, value):
    return ctx.user.identity == "admin"
"""


def test_with_users_choosing_a_version_or_reloading_is_for_those_the_update_handler_lets(tmp_path: Path) -> None:
    flow, auth = project(tmp_path / "p", ADMINS, A)
    with serving(flow, checkpoint=str(tmp_path / "runs.db"), auth=auth) as url:
        admin, bob = user_client(url, {"X-User": "admin"}), user_client(url, {"X-User": "bob"})
        flow.write_text(B, encoding="utf-8")
        with pytest.raises(httpx.HTTPStatusError) as refused:
            bob.http.post("/assistants/reload", json={})
        assert refused.value.response.status_code == 403
        assert bob.assistants.get("Purchase")["version"] == 1  # nothing reloaded
        assert admin.http.post("/assistants/reload", json={})["assistants"][0]["version"] == 2
        assert [v["version"] for v in bob.assistants.get_versions("Purchase")] == [2, 1]  # reading is everyone's
        with pytest.raises(httpx.HTTPStatusError) as chosen:
            bob.assistants.set_latest("Purchase", 1)
        assert chosen.value.response.status_code == 403
        assert admin.assistants.set_latest("Purchase", 1)["version"] == 1
        assert bob.assistants.get("Purchase")["version"] == 1
