"""A run sent to a busy thread with multitask_strategy `interrupt` or `rollback` (langgraph-sdk, real server)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from server_helpers import make_project, serving
from timing import deadline, scaled

sdk = pytest.importorskip("langgraph_sdk")
from langgraph_sdk.errors import NotFoundError  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = make_project(tmp_path_factory.mktemp("multitask"))
    # A lease far longer than any test: a join that waited for the queue's next look (a third of it) would hang
    with serving(folder, checkpoint=str(folder / "runs.db"), lease=300.0) as url, sdk.get_sync_client(url=url) as c:
        yield c


def _until_a_step_is_saved(client: Any, thread_id: str) -> None:
    give_up = deadline(30)
    while "first" not in (client.threads.get_state(thread_id)["values"] or {}):
        assert time.monotonic() < give_up, "the first run never saved a step"
        time.sleep(0.02)


def test_interrupt_stops_the_running_run_after_its_step_and_runs_the_new_one(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    old = client.runs.create(tid, "Slow", input={"topic": "old"})
    _until_a_step_is_saved(client, tid)
    new = client.runs.create(tid, "Slow", input={"topic": "new"}, multitask_strategy="interrupt")
    assert client.runs.join(tid, new["run_id"])["third"] == "rested"
    stopped = client.runs.get(tid, old["run_id"])
    assert stopped["status"] == "interrupted" and "multitask_strategy='interrupt'" in stopped["cancel_reason"]
    assert client.runs.get(tid, new["run_id"])["status"] == "success"
    assert client.threads.get_state(tid)["values"]["topic"] == "new"


def test_rollback_deletes_the_running_run_and_leaves_its_steps_off_the_thread(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    done = client.runs.wait(tid, "HelloWorld", input={"name": "Ada"})  # an earlier run that stays
    assert done["greeting"] == "Hello, Ada!"
    before = client.threads.get_state(tid)["checkpoint"]["checkpoint_id"]
    tid2 = client.threads.create()["thread_id"]
    old = client.runs.create(tid2, "Slow", input={"topic": "old"})
    _until_a_step_is_saved(client, tid2)
    new = client.runs.create(tid2, "Slow", input={"topic": "new"}, multitask_strategy="rollback")
    assert client.runs.join(tid2, new["run_id"])["topic"] == "new"
    with pytest.raises(NotFoundError):
        client.runs.get(tid2, old["run_id"])  # deleted
    assert [r["run_id"] for r in client.runs.list(tid2)] == [new["run_id"]]
    history = client.threads.get_history(tid2, limit=100)
    assert {h["metadata"].get("run_id") for h in history} == {new["run_id"]}  # nothing of the old run is left
    assert client.threads.get_state(tid)["checkpoint"]["checkpoint_id"] == before  # other threads untouched


def test_rollback_of_a_later_run_starts_from_the_checkpoint_before_it(client: Any) -> None:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "Slow", input={"topic": "kept"})
    old = client.runs.create(tid, "Slow", input={"topic": "old"})
    give_up = deadline(30)
    while client.threads.get_state(tid)["values"]["topic"] != "old":
        assert time.monotonic() < give_up
        time.sleep(0.02)
    new = client.runs.create(tid, "Slow", multitask_strategy="rollback")  # no input: from where the thread was
    client.runs.join(tid, new["run_id"])
    assert client.threads.get_state(tid)["values"]["topic"] == "kept"  # the old run's input is undone
    with pytest.raises(NotFoundError):
        client.runs.get(tid, old["run_id"])


def test_interrupt_sent_to_another_replica_stops_the_run_where_it_runs(tmp_path: Any, postgres_url: str) -> None:
    folder = make_project(tmp_path / "flows")
    gate = tmp_path / "gate"  # the old run's second step lasts until the test opens it: no race with the interrupt
    (folder / "gated.csv").write_text(
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge\n"
        f'Gated,First,NapAgent,"{{""seconds"": 0.05}}",topic,first,Second\n'
        f'Gated,Second,GateAgent,"{{""gate"": ""{gate.as_posix()}""}}",first,second,Third\n'
        "Gated,Third,NapAgent,,second,third,\n",
        encoding="utf-8",
    )
    with (
        serving(folder, checkpoint=postgres_url) as a,
        serving(folder, checkpoint=postgres_url) as b,
        sdk.get_sync_client(url=a) as on_a,
        sdk.get_sync_client(url=b) as on_b,
    ):
        tid = on_a.threads.create()["thread_id"]
        # Streamed, the old run executes on A, the replica that took the request (a created one goes to either)
        chunks = on_a.runs.stream(tid, "Gated", input={"topic": "old"}, stream_mode="values")
        old = next(iter(chunks)).data  # the metadata event names the run
        streamed = threading.Thread(target=lambda: list(chunks), daemon=True)
        streamed.start()
        _until_a_step_is_saved(on_a, tid)
        new = on_b.runs.create(tid, "Gated", input={"topic": "new"}, multitask_strategy="interrupt")
        give_up = deadline(30)
        while not on_a.runs.get(tid, old["run_id"])["cancel_reason"]:  # replica A has heard of it
            assert time.monotonic() < give_up, "the replica running the old run never heard of the interrupt"
            time.sleep(0.02)
        gate.touch()
        assert on_b.runs.join(tid, new["run_id"])["topic"] == "new"
        assert on_a.runs.get(tid, old["run_id"])["status"] == "interrupted"
        streamed.join(scaled(30))
        old_keys = {
            k
            for h in on_a.threads.get_history(tid, limit=100)
            if h["metadata"].get("run_id") == old["run_id"]
            for k in h["values"]
        }
        assert "second" in old_keys and "third" not in old_keys  # the step in flight ended; the next never ran
