"""Three `agentmap serve` processes on one database while the workflow is edited under waiting threads: every
paused thread finishes on the revision it started on, whichever replica answers it (also one whose file is the
new revision and that never served the old one, which it reads from the database), and new threads take the new
revision on every replica (also one whose file is still the old revision). Driven by langgraph-sdk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_helpers import Replica

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

APPROVE = '"{""interaction_type"": ""approval""}"'
HEADER = "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Edge\n"
A = HEADER + (
    f"Purchase,Review,human,Approve the purchase of {{request}}?,{APPROVE},request,approved,Report\n"
    "Purchase,Report,template,Purchase of {request} approved: {approved},,request|approved,report,Notify\n"
    "Purchase,Notify,template,Told the team about {request},,request,note,\n"
)
B = HEADER + (  # Review renamed Approval, Notify removed, Report reads a new input no node writes
    f"Purchase,Approval,human,Approve the purchase of {{request}}?,{APPROVE},request,approved,Report\n"
    "Purchase,Report,template,Purchase of {request} for {cost_center} approved: {approved},,"
    "request|approved|cost_center,report,\n"
)
NODES_A = {"Review", "Report", "Notify"}
THREADS = 12


def _folder(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "steps.csv").write_text(text, encoding="utf-8")
    return folder


def _answered(client: Any, thread: str) -> tuple[dict[str, Any], set[str]]:
    parts = list(client.runs.stream(thread, "Purchase", command={"resume": "yes"}, stream_mode=["values", "nodes"]))
    ran = {p.data["node"] for p in parts if p.event == "nodes" and p.data["status"] == "succeeded"}
    return [p.data for p in parts if p.event == "values"][-1], ran


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_threads_waiting_on_three_replicas_finish_on_their_revision_after_an_edit(
    tmp_path: Path, replicas: list[Replica], database: str, request: pytest.FixtureRequest
) -> None:
    checkpoint = str(tmp_path / "runs.db") if database == "sqlite" else request.getfixturevalue("postgres_url")
    first = Replica(_folder(tmp_path, "one", A), checkpoint)
    second = Replica(_folder(tmp_path, "two", A), checkpoint)  # its file stays revision A throughout
    replicas.extend([first.start(), second.start()])
    clients = [sdk.get_sync_client(url=r.url, api_key=None) for r in (first, second)]
    waiting = []
    for i in range(THREADS):
        client = clients[i % 2]
        thread = client.threads.create()["thread_id"]
        paused = client.runs.wait(thread, "Purchase", input={"request": f"item {i}"})
        assert [q["value"]["node"] for q in paused["__interrupt__"]] == ["Review"], paused
        waiting.append(thread)

    (first.cwd / "steps.csv").write_text(B, encoding="utf-8")  # saved with B, then reloaded: version 2
    (done,) = clients[0].http.post("/assistants/reload", json={})["assistants"]
    assert done["changed"] and done["version"] == 2
    third = Replica(_folder(tmp_path, "three", B), checkpoint)  # started on B: it never compiled A from a file
    replicas.append(third.start())
    clients.append(sdk.get_sync_client(url=third.url, api_key=None))

    for i, thread in enumerate(waiting):  # each answered on another replica than the one that started it
        client = clients[(i + 1) % 3]
        values, ran = _answered(client, thread)
        assert values["report"] == f"Purchase of item {i} approved: True", values
        assert values["note"] == f"Told the team about item {i}"
        assert ran <= NODES_A and {"Report", "Notify"} <= ran, ran  # never a node revision A does not have
        assert client.threads.get(thread)["status"] == "idle"

    for n, client in enumerate(clients):  # new threads take B on every replica, whatever its file holds
        assert client.assistants.get("Purchase")["version"] == 2
        assert [v["version"] for v in client.assistants.get_versions("Purchase")] == [2, 1]
        thread = client.threads.create()["thread_id"]
        paused = client.runs.wait(thread, "Purchase", input={"request": f"desk {n}", "cost_center": "Facilities"})
        assert [q["value"]["node"] for q in paused["__interrupt__"]] == ["Approval"], paused
        assert client.runs.list(thread)[0]["metadata"]["assistant_version"] == 2
        final = clients[(n + 1) % 3].runs.wait(thread, "Purchase", command={"resume": "yes"})
        assert final["report"] == f"Purchase of desk {n} for Facilities approved: True" and "note" not in final
