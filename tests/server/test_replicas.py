"""`agentmap serve` as real processes: a run accepted is recorded, survives kill -9 (one machine, SQLite) and is
finished by another replica when its own dies (PostgreSQL); `reject` holds across replicas. Driven by
langgraph-sdk, as a user's client would."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from server_helpers import Replica, holding, steps_project
from timing import deadline, scaled, until

sdk = pytest.importorskip("langgraph_sdk")
from langgraph_sdk.errors import ConflictError  # noqa: E402

pytestmark = pytest.mark.slow

_AGENT = '''
import os
import time

from agentmap import BaseAgent


class StepAgent(BaseAgent):
    """Appends `start NODE` and `end NODE` to steps.log around a wait (an LLM call would wait as long)."""

    def process(self, inputs):
        with open("steps.log", "a") as log:
            log.write(f"start {self.name}\\n")
        slow = os.path.exists("step_seconds")  # a test makes later steps slower by writing this file
        time.sleep(float(open("step_seconds").read() if slow else os.environ.get("STEP_SECONDS", "0.4")))
        with open("steps.log", "a") as log:
            log.write(f"end {self.name}\\n")
        return self.name
'''

_GRAPH = """
GraphName,Node,AgentType,Input_Fields,Output_Field,Edge
Steps,One,StepAgent,topic,one,Two
Steps,Two,StepAgent,one,two,Three
Steps,Three,StepAgent,two,three,Four
Steps,Four,StepAgent,three,four,
Ask,First,StepAgent,topic,first,Second
Ask,Second,StepAgent,first,second,Check
Ask,Check,human,second,approved,
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return steps_project(tmp_path, _AGENT, _GRAPH)


def replica(folder: Path, checkpoint: str, *extra: str, step_seconds: float = 0.25) -> Replica:
    """A replica whose steps each wait `step_seconds`."""
    return Replica(folder, checkpoint, *extra, env={"STEP_SECONDS": str(step_seconds)})


def _steps(folder: Path) -> list[str]:
    path = folder / "steps.log"
    return path.read_text().splitlines() if path.exists() else []


def _ends(folder: Path) -> Counter[str]:
    return Counter(line.split()[1] for line in _steps(folder) if line.startswith("end "))


def test_a_run_accepted_survives_kill_9_and_finishes_after_a_restart(project: Path, replicas: list[Replica]) -> None:
    server = replica(project, "runs.db")
    replicas.append(server.start())
    client = sdk.get_sync_client(url=server.url, api_key=None)
    thread = client.threads.create()
    run = client.runs.create(thread["thread_id"], "Steps", input={"topic": "t"})
    assert client.runs.get(thread["thread_id"], run["run_id"])["status"] in ("pending", "running")
    until(lambda: "start Three" in _steps(project), 60, "the run never reached its third step")
    server.kill()
    ends = _ends(project)

    server.start()  # the same machine, the same file: the dead server's run is taken over at once
    assert client.runs.get(thread["thread_id"], run["run_id"])["status"] in ("pending", "running", "success")
    result = client.runs.join(thread["thread_id"], run["run_id"])
    assert result["four"] == "Four" and result["one"] == "One"
    assert client.runs.get(thread["thread_id"], run["run_id"])["status"] == "success"
    assert [r["run_id"] for r in client.runs.list(thread["thread_id"])] == [run["run_id"]]
    after = _ends(project)
    for node in ("One", "Two"):  # checkpointed before the kill: not run again
        assert after[node] == ends[node] == 1, _steps(project)
    assert after["Three"] >= 1 and after["Four"] == 1
    assert client.threads.get(thread["thread_id"])["status"] == "idle"


def test_an_mcp_tool_call_killed_mid_run_is_finished_after_a_restart(project: Path, replicas: list[Replica]) -> None:
    pytest.importorskip("mcp")
    import asyncio
    import contextlib

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    server = replica(project, "runs.db")
    replicas.append(server.start())

    async def call() -> None:
        async with (
            streamable_http_client(f"{server.url}/mcp") as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("Ask", {"topic": "t"})

    def calling() -> None:
        with contextlib.suppress(BaseException):  # the server dies under the call
            asyncio.run(call())

    threading.Thread(target=calling, daemon=True).start()
    until(lambda: "start Second" in _steps(project), 60, "the tool call's run never reached its second step")
    server.kill()

    server.start()  # the run the MCP call had the queue accept is taken over: its thread ends paused
    client = sdk.get_sync_client(url=server.url, api_key=None)
    (thread,) = client.threads.search(metadata={"graph_id": "Ask"})
    (run,) = client.runs.list(thread["thread_id"])
    client.runs.join(thread["thread_id"], run["run_id"])
    assert client.threads.get(thread["thread_id"])["status"] == "interrupted"
    assert _ends(project)["First"] == 1 and _ends(project)["Second"] >= 1, _steps(project)


@pytest.mark.postgres
def test_a_dead_replicas_run_is_finished_by_another_and_reject_holds_across_replicas(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    a = replica(project, postgres_url, "--lease", "2s")
    b = replica(project, postgres_url, "--lease", "2s")
    replicas.extend([a.start(), b.start()])
    on_a = sdk.get_sync_client(url=a.url, api_key=None)
    on_b = sdk.get_sync_client(url=b.url, api_key=None)
    thread = on_a.threads.create()
    tid = thread["thread_id"]
    assert on_b.threads.get(tid)["thread_id"] == tid  # one set of threads

    first = on_a.runs.stream(tid, "Steps", input={"topic": "t"}, stream_mode="updates")
    next(iter(first))  # the run is accepted and held by A (its client streams from A)
    with pytest.raises(ConflictError):
        on_b.runs.create(tid, "Steps", input={"topic": "u"}, multitask_strategy="reject")
    until(lambda: "start Two" in _steps(project), 60, "the run never reached its second step")
    runs = on_b.runs.list(tid)
    assert [r["status"] for r in runs] == ["running"]
    a.kill()
    killed_at = time.monotonic()

    queued = on_b.runs.create(tid, "Steps", input={"topic": "second"})  # enqueue: after the first, anywhere

    result = on_b.runs.join(tid, runs[0]["run_id"])  # B takes the run over once A's lease has run out
    assert result["four"] == "Four"
    assert time.monotonic() - killed_at < 2 + 30  # the lease, and the rest of the run on a loaded machine
    assert on_b.runs.get(tid, runs[0]["run_id"])["status"] == "success"
    assert on_b.runs.join(tid, queued["run_id"])["one"] == "One"
    steps = _steps(project)
    assert steps.index("end Four") < len(steps) - steps[::-1].index("start One") - 1  # the second ran after
    assert _ends(project)["One"] == 2  # once per run: the first run's did not run again


@pytest.mark.postgres
def test_replicas_start_together_and_a_stopped_replica_hands_its_run_over_at_once(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    together = [replica(project, postgres_url, "--grace", "0s") for _ in range(3)]
    replicas.extend(together)
    for server in together:  # all at once, on an empty database: the schema setup takes turns
        server.spawn()
    for server in together:
        server.wait_up()
    client = sdk.get_sync_client(url=together[0].url, api_key=None)
    tid = client.threads.create()["thread_id"]
    # Steps of 1 s: on a loaded machine, 0.25 s steps once let the run end before the SIGTERM came (no handover)
    (project / "step_seconds").write_text("1", encoding="utf-8")
    run = client.runs.create(tid, "Steps", input={"topic": "t"}, stream_mode="updates")
    until(lambda: "start Two" in _steps(project), 60, "the run never reached its second step")
    holder = holding(postgres_url, run["run_id"], together)
    other = next(r for r in together if r is not holder)
    followed: list[Any] = []
    follower = threading.Thread(target=_follow, args=(other.url, tid, run["run_id"], followed))
    follower.start()  # on a replica that does not run it: the events come through PostgreSQL
    until(lambda: followed, 30, "no event reached the follower on another replica")
    holder.kill(signal.SIGTERM)  # a deploy: --grace 0s, so the run stops after its step and is handed over
    stopped_at = time.monotonic()
    on_other = sdk.get_sync_client(url=other.url, api_key=None)
    assert on_other.runs.join(tid, run["run_id"])["four"] == "Four"
    assert time.monotonic() - stopped_at < 25  # well before the 30 s lease would have run out
    assert on_other.runs.get(tid, run["run_id"])["status"] == "success"
    assert _ends(project)["One"] == 1 and _ends(project)["Four"] == 1
    follower.join(scaled(30))
    nodes = [next(iter(p.data)) for p in followed if p.event == "updates"]
    assert [n for i, n in enumerate(nodes) if i == 0 or nodes[i - 1] != n] == ["One", "Two", "Three", "Four"]
    assert [p.data["attempt"] for p in followed if p.event == "metadata"] == [1, 2]  # taken over once

    # Slow enough that it cannot end before the cancel reaches the replica running it, however loaded the machine
    # (at 0.25 s a step, one CI run saw it finish first).
    (project / "step_seconds").write_text("3", encoding="utf-8")
    second = on_other.runs.create(tid, "Steps", input={"topic": "u"})
    until(lambda: _ends(project)["One"] == 2, 60, "the second run never finished its first step")
    elsewhere = next(r for r in together if r is not holder and r is not other)
    on_third = sdk.get_sync_client(url=elsewhere.url, api_key=None)
    assert on_third.runs.cancel(tid, second["run_id"], wait=True) in ({}, None)  # stops wherever it runs
    assert on_other.runs.get(tid, second["run_id"])["status"] == "interrupted"
    assert _ends(project)["Four"] == 1


def _follow(url: str, thread_id: str, run_id: str, into: list[Any]) -> None:
    client = sdk.get_sync_client(url=url, api_key=None)
    for part in client.runs.join_stream(thread_id, run_id, stream_mode="updates"):
        into.append(part)


def test_runs_streamed_one_after_another_never_wait_for_the_queue_to_look_again(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    # A run streamed from a replica is kept for it. Two ways it once waited for ever (under load, about one
    # trial in three): the heartbeat renewed the run's lease just as the dispatcher claimed it, and the claim,
    # skipping the held row, looked again only a third of a lease later (here 200 s); and the dispatcher,
    # woken by the database's notice of the new run, claimed and executed a copy rebuilt from its record before
    # the stream's own run object was known, so the stream followed a run that never ran.
    server = replica(project, postgres_url, "--lease", "600s", step_seconds=0.01)
    replicas.append(server.start())
    client = sdk.get_sync_client(url=server.url, api_key=None)
    counts: list[int] = []
    failures: list[BaseException] = []
    odd: list[Any] = []  # the events of a stream that did not carry four updates, to say what it carried

    def stream_runs() -> None:
        try:
            for i in range(8):
                tid = client.threads.create()["thread_id"]
                parts = list(client.runs.stream(tid, "Steps", input={"topic": f"t{i}"}, stream_mode="updates"))
                counts.append([p.event for p in parts].count("updates"))
                if counts[-1] != 4:
                    odd.append([(p.event, p.data) for p in parts])
        except BaseException as exc:  # reported by the test's thread
            failures.append(exc)

    streaming = threading.Thread(target=stream_runs, daemon=True)  # ended with the server if it hangs
    streaming.start()
    streaming.join(scaled(60))
    assert not failures, failures
    assert counts == [4] * 8, f"runs streamed so far: {counts} (the next one waits for the queue's next look?) {odd}"


@pytest.mark.postgres
def test_a_run_taken_over_calls_the_webhook_it_was_accepted_with(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    from server_helpers import Receiver

    receiver = Receiver()
    fast = ("--lease", "2s", "--webhook-timeout", "3s")  # a dead replica's try is made again after 2 + 3 s
    a = replica(project, postgres_url, *fast, "--webhook-host", "127.0.0.1")
    b = replica(project, postgres_url, *fast)  # allows no webhook host: it calls the one recorded
    replicas.extend([a.start(), b.start()])
    on_a = sdk.get_sync_client(url=a.url, api_key=None)
    on_b = sdk.get_sync_client(url=b.url, api_key=None)
    tid = on_a.threads.create()["thread_id"]
    first = on_a.runs.stream(tid, "Steps", input={"topic": "t"}, webhook=f"{receiver.url}/taken", stream_mode="updates")
    next(iter(first))  # accepted and held by A
    until(lambda: "start Two" in _steps(project), 60, "the run never reached its second step")
    run_id = on_b.runs.list(tid)[0]["run_id"]
    a.kill()
    assert on_b.runs.join(tid, run_id)["four"] == "Four"  # B continues it once A's lease has run out
    [(_, body)] = receiver.deliveries("/taken", 1)
    assert body["run_id"] == run_id and body["status"] == "success" and body["values"]["four"] == "Four"

    # A replica dies in the middle of a delivery: another one makes the next try (when it is due is in the store).
    # A runs alone, so the first try is A's (B might have claimed it first), and B starts once A is gone.
    b.kill()
    replicas.append(a.start())
    receiver.held.add("/dies")  # the first try gets no answer before A is gone
    on_a = sdk.get_sync_client(url=a.url, api_key=None)
    assert on_a.runs.wait(tid, "Steps", input={"topic": "u"}, webhook=f"{receiver.url}/dies")["four"] == "Four"
    receiver.deliveries("/dies", 1)
    a.kill()
    receiver.release.set()
    replicas.append(b.start())
    (first, sent), (second, again) = receiver.deliveries("/dies", 2, within=60)
    assert first["X-AgentMap-Delivery"] == second["X-AgentMap-Delivery"] == sent["run_id"] == again["run_id"]
    assert again["status"] == "success"
    receiver.http.shutdown()


@pytest.mark.postgres
def test_a_step_starts_once_the_step_before_is_saved_so_a_kill_runs_again_only_the_step_in_flight(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    # Under load a step's checkpoint can take longer to write than the next steps take to run: the kill trials
    # once found two finished steps of a run unsaved, and the replica continuing it ran both again. Here the
    # saves wait on a lock on LangGraph's checkpoint tables (reads do not), and the replica is killed while
    # they wait: its saves never reach the database.
    import psycopg

    server = replica(project, postgres_url, "--lease", "2s", step_seconds=0.05)
    replicas.append(server.start())
    client = sdk.get_sync_client(url=server.url, api_key=None)
    tid = client.threads.create()["thread_id"]
    with psycopg.connect(postgres_url, autocommit=True) as held:
        held.execute("BEGIN")
        held.execute("LOCK TABLE checkpoints, checkpoint_writes IN EXCLUSIVE MODE")
        run = client.runs.create(tid, "Steps", input={"topic": "t"})
        waiting = (
            "SELECT 1 FROM pg_locks WHERE NOT granted AND relation IN ('checkpoints'::regclass, "
            "'checkpoint_writes'::regclass) "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        until(lambda: held.execute(waiting).fetchone(), 60, "the run never tried to save a checkpoint")
        give_up = deadline(2)  # the time of many steps: the run must not go on unsaved
        while "end Two" not in _steps(project) and time.monotonic() < give_up:
            time.sleep(0.05)
        server.kill()
        ended = _ends(project)
        held.execute(  # the dead replica's saves that still wait for the lock die with it
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        held.execute("COMMIT")

    server.start()  # the same machine: the dead replica's run is taken over at once
    assert client.runs.join(tid, run["run_id"])["four"] == "Four"
    assert client.runs.get(tid, run["run_id"])["status"] == "success"
    again = [node for node, count in _ends(project).items() if count > 1 and ended[node]]
    assert len(again) <= 1, _steps(project)  # only the step whose save was in flight at the kill


@pytest.mark.postgres
def test_a_replica_that_cannot_renew_a_runs_lease_starts_no_step_once_it_may_have_run_out(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    # The kill trials under load once found a run's finished steps run again. A replica whose heartbeat cannot
    # renew a lease (late under load, or the database slow) must not start the run's next step once the lease may
    # have run out: another replica may have claimed the run and be running that step. Here the run's row is
    # held, so the renewal waits (and no other claim could take it); the replica stops the run before its next
    # step and hands it back, and whoever claims it next continues it without running a finished step again.
    server = replica(project, postgres_url, "--lease", "2s")
    replicas.append(server.start())
    (project / "step_seconds").write_text("1.5", encoding="utf-8")  # the lease runs out during the second step
    client = sdk.get_sync_client(url=server.url, api_key=None)
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "Steps", input={"topic": "t"})
    _handed_back_before_its_next_step(project, postgres_url, run["run_id"])
    assert client.runs.join(tid, run["run_id"])["four"] == "Four"
    assert client.runs.get(tid, run["run_id"])["status"] == "success"
    assert _ends(project) == Counter({"One": 1, "Two": 1, "Three": 1, "Four": 1}), _steps(project)


def _handed_back_before_its_next_step(project: Path, postgres_url: str, run_id: str) -> None:
    """Hold the run's row once its first step started, so the replica's lease renewal waits: the replica stops the
    run before its next step and hands it back to the queue (asserted), then let the row go."""
    import psycopg

    # the heartbeat's renewal waits for the row, and so may the run's events (their key refers to it); the replica
    # handing the run back is the statement that waits to clear the row's owner (`RunRows.release`)
    handing_back = (
        "SELECT count(*) > 0 AS yes FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query LIKE '%SET owner = NULL, lease_until = 0,%'"
    )
    # asked on a connection of its own: a transaction sees one snapshot of the server's activity. Only this test's
    # database: the server is the test run's, and another test's replica handing its run back is not this one's
    # (seen, the row was let go early, the lease renewed, and the run never handed back)
    with psycopg.connect(postgres_url, autocommit=True) as held, psycopg.connect(postgres_url, autocommit=True) as ask:
        until(lambda: "start One" in _steps(project), 60, "the run never started")
        held.execute("BEGIN")
        held.execute("SELECT 1 FROM agentmap_runs WHERE run_id = %s FOR UPDATE", (run_id,))
        until(
            lambda: ask.execute(handing_back).fetchone() == (True,) or "start Three" in _steps(project),
            60,
            "the replica neither handed the run back nor went on",
        )
        assert "start Three" not in _steps(project)  # no step started after the lease may have run out
        held.execute("COMMIT")


@pytest.mark.postgres
def test_an_mcp_call_whose_run_is_handed_back_mid_way_gets_the_runs_real_end(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    # The MCP client waits on the replica that accepted its call; the run is handed back to the queue before its
    # next step (its lease may have run out) and run again: the call answers with the run's end, not with the
    # steps the replica had done before it stopped (it did, before RunManager.outcome).
    pytest.importorskip("mcp")
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    server = replica(project, postgres_url, "--lease", "2s")
    replicas.append(server.start())
    (project / "step_seconds").write_text("1.5", encoding="utf-8")  # the lease runs out during the second step
    answered: list[Any] = []

    async def call() -> None:
        async with (
            streamable_http_client(f"{server.url}/mcp") as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            answered.append(await session.call_tool("Steps", {"topic": "t"}))

    calling = threading.Thread(target=lambda: asyncio.run(call()), daemon=True)
    calling.start()
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:  # the call's run (it may have no thread)
        (run_id,) = until(lambda: conn.execute("SELECT run_id FROM agentmap_runs").fetchone(), 60, "no run accepted")
    _handed_back_before_its_next_step(project, postgres_url, run_id)
    calling.join(scaled(120))
    (result,) = answered
    assert not result.isError and (result.structuredContent or {}).get("four") == "Four", (result, _steps(project))
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # kept for the call until it read the end, then gone
        assert conn.execute("SELECT count(*) FROM agentmap_runs").fetchone() == (0,)
    # a graph that cannot pause runs without a thread, so without checkpoints: handed back, it starts again
    assert _ends(project) == Counter({"One": 2, "Two": 2, "Three": 1, "Four": 1}), _steps(project)


class _ClockAhead(Replica):
    """A replica whose clock is an hour ahead of the others' (`time.time()`): a machine whose clock is off."""

    def spawn(self) -> None:
        import forked

        args = ["serve", *self.args, "--port", str(self.port)]
        code = (
            "import time\nfrom agentmap.cli import main\n_real = time.time\n"
            f"time.time = lambda: _real() + 3600\nmain({args!r})"
        )
        self.proc = forked.start_python(code, cwd=self.cwd, env=self.env)


@pytest.mark.postgres
def test_a_replica_whose_clock_is_ahead_never_claims_a_run_whose_lease_has_not_run_out(
    project: Path, replicas: list[Replica], postgres_url: str
) -> None:
    # Leases are times of the database's clock: a replica whose own clock is an hour ahead once found every
    # other replica's lease run out and took their runs while they ran them.
    import psycopg

    a = replica(project, postgres_url, "--lease", "30s")
    replicas.append(a.start())
    (project / "step_seconds").write_text("1", encoding="utf-8")  # the run still runs when the other is up
    on_a = sdk.get_sync_client(url=a.url, api_key=None)
    tid = on_a.threads.create()["thread_id"]
    run = on_a.runs.create(tid, "Steps", input={"topic": "t"})
    until(lambda: "start One" in _steps(project), 60, "the run never started")
    replicas.append(_ClockAhead(project, postgres_url, "--lease", "30s").start())  # claims at once when it is up
    assert on_a.runs.join(tid, run["run_id"])["four"] == "Four"
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SELECT attempt FROM agentmap_runs WHERE run_id = %s", (run["run_id"],)).fetchone()
    assert row == (1,)  # never taken over
    assert _ends(project) == Counter({"One": 1, "Two": 1, "Three": 1, "Four": 1}), _steps(project)
