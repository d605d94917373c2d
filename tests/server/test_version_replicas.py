"""Three `agentmap serve` processes on one database while the workflow is edited under waiting threads: every
paused thread finishes on the revision it started on, whichever replica answers it (also one whose file is the
new revision and that never served the old one, which it reads from the database), and new threads take the new
revision on every replica (also one whose file is still the old revision). Driven by langgraph-sdk."""

from __future__ import annotations

from pathlib import Path

import pytest
from durable_graphs import PURCHASE_A as A
from durable_graphs import PURCHASE_A_NODES as NODES_A
from durable_graphs import PURCHASE_B as B
from server_helpers import Replica, approved, paused_purchase

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow

THREADS = 12


def _folder(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "steps.csv").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_threads_waiting_on_three_replicas_finish_on_their_revision_after_an_edit(
    tmp_path: Path, replicas: list[Replica], database: str, request: pytest.FixtureRequest
) -> None:
    checkpoint = str(tmp_path / "runs.db") if database == "sqlite" else request.getfixturevalue("postgres_url")
    first = Replica(_folder(tmp_path, "one", A), checkpoint)
    second = Replica(_folder(tmp_path, "two", A), checkpoint)  # its file stays revision A throughout
    replicas.extend([first.start(), second.start()])
    clients = [sdk.get_sync_client(url=r.url, api_key=None) for r in (first, second)]
    waiting = [paused_purchase(clients[i % 2], f"item {i}") for i in range(THREADS)]

    (first.cwd / "steps.csv").write_text(B, encoding="utf-8")  # saved with B, then reloaded: version 2
    (done,) = clients[0].http.post("/assistants/reload", json={})["assistants"]
    assert done["changed"] and done["version"] == 2
    third = Replica(_folder(tmp_path, "three", B), checkpoint)  # started on B: it never compiled A from a file
    replicas.append(third.start())
    clients.append(sdk.get_sync_client(url=third.url, api_key=None))

    for i, thread in enumerate(waiting):  # each answered on another replica than the one that started it
        client = clients[(i + 1) % 3]
        values, ran = approved(client, thread)
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
