"""Replicas whose PostgreSQL goes away for 10 s and comes back: no accepted run is lost or run twice."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from server_helpers import make_project, serving
from timing import deadline, scaled

sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.slow


def _eventually(check: Callable[[], Any], seconds: float) -> Any:
    """`check()`'s value once it returns without a connection error (the database may still be coming back)."""
    give_up = deadline(seconds)
    while True:
        try:
            return check()
        except Exception:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.2)


def _ended(client: Any, thread_id: str) -> list[dict[str, Any]]:
    """The thread's runs once none is pending or running (raises until then, for `_eventually`)."""
    listed: list[dict[str, Any]] = client.runs.list(thread_id)
    if any(r["status"] in ("pending", "running") for r in listed):
        raise AssertionError(f"still running: {listed}")
    return listed


def _diagnosis(client: Any, threads: list[str]) -> str:
    """Every thread's runs and checkpoints (step, writer run, next nodes, value keys): what a failure shows."""
    lines = []
    for thread_id in threads:
        runs = [(r["run_id"], r["status"]) for r in client.runs.list(thread_id)]
        lines.append(f"thread {thread_id}: runs {runs}")
        for state in client.threads.get_history(thread_id, limit=20):
            meta = state.get("metadata") or {}
            lines.append(
                f"  step {meta.get('step')} run {meta.get('run_id')} source {meta.get('source')} "
                f"next {state.get('next')} values {sorted(state.get('values') or {})}"
            )
    return "\n".join(lines)


def test_runs_accepted_before_a_ten_second_outage_each_finish_once(
    tmp_path: Path, postgres_with_outage: tuple[str, Callable[[float], None]]
) -> None:
    url, outage = postgres_with_outage
    folder = make_project(tmp_path / "flows")
    with (
        serving(folder, checkpoint=url, lease=3.0) as a,
        serving(folder, checkpoint=url, lease=3.0) as b,
        sdk.get_sync_client(url=a, timeout=scaled(30)) as on_a,
        sdk.get_sync_client(url=b, timeout=scaled(30)) as on_b,
    ):
        threads = [on_a.threads.create()["thread_id"] for _ in range(4)]
        runs = [on_a.runs.create(t, "Slow", input={"topic": t}) for t in threads]
        outage(10.0)  # while the runs execute: every connection of both replicas is cut for 10 s
        for thread_id, run in zip(threads, runs, strict=True):
            values = _eventually(functools.partial(on_b.runs.join, thread_id, run["run_id"]), 90)
            listed = _eventually(functools.partial(_ended, on_a, thread_id), 60)  # a replica may still be writing it
            ended = [(r["run_id"], r["status"]) for r in listed]
            if values.get("third") != "rested" or ended != [(run["run_id"], "success")]:  # once, not twice
                pytest.fail(f"run {run['run_id']} ended {ended} with {values}\n{_diagnosis(on_a, threads)}")


def _streamed_keys(client: Any, thread_id: str, run_id: str) -> list[str]:
    """The keys of the last `values` event that `runs.join_stream` sends for the run."""
    values = [part.data for part in client.runs.join_stream(thread_id, run_id) if part.event == "values"]
    return sorted(values[-1]) if values else []


@contextmanager
def _naps_running(
    tmp_path: Path, postgres_url: str, naps: Sequence[tuple[str, float]], **create: Any
) -> Iterator[tuple[Any, Any, str, str]]:
    """Two replicas on `postgres_url` serving a chain of `NapAgent` nodes (name, seconds), and a run of it created
    on the first and running: the clients of both, the thread and the run."""
    folder = make_project(tmp_path / "flows")
    names = [name for name, _ in naps]
    (folder / "naps.csv").write_text(
        "GraphName,Node,AgentType,Context,Input_Fields,Output_Field,Edge\n"
        + "".join(
            f'Naps,{name},NapAgent,"{{""seconds"": {seconds}}}",{given},{name.lower()},{then}\n'
            for (name, seconds), given, then in zip(
                naps, ["topic", *(n.lower() for n in names[:-1])], [*names[1:], ""], strict=True
            )
        ),
        encoding="utf-8",
    )
    with (
        serving(folder, checkpoint=postgres_url, lease=3.0) as a,
        serving(folder, checkpoint=postgres_url, lease=3.0) as b,
        sdk.get_sync_client(url=a, timeout=scaled(60)) as on_a,
        sdk.get_sync_client(url=b, timeout=scaled(60)) as on_b,
    ):
        thread_id = on_a.threads.create()["thread_id"]
        run_id = on_a.runs.create(thread_id, "Naps", input={"topic": "t"}, **create)["run_id"]
        give_up = deadline(30)
        while on_a.runs.get(thread_id, run_id)["status"] != "running":
            assert time.monotonic() < give_up, "the run never started"
            time.sleep(0.05)
        yield on_a, on_b, thread_id, run_id


def test_a_run_whose_lease_is_taken_over_mid_run_is_joined_with_all_its_steps_on_both_replicas(
    tmp_path: Path, postgres_url: str
) -> None:
    """The replica that loses a run's lease stops it after its step; `runs.join` there must answer the end the
    replica continuing it writes, not the steps done before the handover, and `join_stream` there must go on
    with the continuation's events."""
    import psycopg

    with _naps_running(tmp_path, postgres_url, (("First", 1.0), ("Second", 1.0), ("Third", 1.0))) as (
        on_a,
        on_b,
        thread_id,
        run_id,
    ):
        with ThreadPoolExecutor(4) as pool:  # both replicas follow it; one of them executes it
            joins = [pool.submit(c.runs.join, thread_id, run_id) for c in (on_a, on_b)]
            streams = [pool.submit(_streamed_keys, c, thread_id, run_id) for c in (on_a, on_b)]
            time.sleep(0.3)  # the joins are waiting (a join that comes late only reads the record)
            with psycopg.connect(postgres_url, autocommit=True) as conn:  # its lease is lost to a gone replica
                conn.execute(
                    "UPDATE agentmap_runs SET owner = 'elsewhere:1:gone', lease_until = 0 WHERE run_id = %s",
                    (run_id,),
                )
            joined = [j.result(timeout=scaled(60)) for j in joins]
            streamed = [s.result(timeout=scaled(60)) for s in streams]
        listed = _eventually(functools.partial(_ended, on_a, thread_id), 60)
        ended = [(r["run_id"], r["status"]) for r in listed]
        wrong = any(v.get("third") != "rested" for v in joined) or any("third" not in k for k in streamed)
        if wrong or ended != [(run_id, "success")]:
            pytest.fail(
                f"run {run_id} ended {ended}; joined {joined}; streamed {streamed}\n{_diagnosis(on_a, [thread_id])}"
            )


def _streamed(client: Any, thread_id: str, run_id: str) -> list[tuple[str, Any]]:
    """Every event `runs.join_stream` sends for the run (all its stream modes)."""
    return [(part.event, part.data) for part in client.runs.join_stream(thread_id, run_id)]


def _stored_events(url: str, run_id: str) -> list[tuple[str, Any]]:
    """The run's events as the run store holds them, in their order."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT event, data FROM agentmap_run_events WHERE run_id = %s ORDER BY seq", (run_id,)
        ).fetchall()
    return [(event, json.loads(data)) for event, data in rows]


def test_streams_that_follow_a_run_across_a_handover_get_every_event_of_both_replicas_once(
    tmp_path: Path, postgres_url: str
) -> None:
    """The lease is taken away while the first step runs: the replica continuing the run writes its first events
    while the stopped one still writes the step's. Both replicas' events stay in the store, and a stream on
    either replica, following the run from before the handover to its end, gets each of them once: in the
    store's order on the replica that did not run it, its own ones first on the replica that was stopped."""
    import psycopg

    naps = (("First", 4.0), ("Second", 2.0))  # First is still running when the run moves
    with _naps_running(tmp_path, postgres_url, naps, stream_mode=["values", "updates"]) as (
        on_a,
        on_b,
        thread_id,
        run_id,
    ):
        with ThreadPoolExecutor(4) as pool:
            streams = [pool.submit(_streamed, c, thread_id, run_id) for c in (on_a, on_b)]
            give_up = deadline(30)
            while not _stored_events(postgres_url, run_id):  # B follows it through the store: it has begun
                assert time.monotonic() < give_up, "no event of the run reached the store"
                time.sleep(0.05)
            # Its lease is lost to a replica that dies holding it for 5 s more: A hears of it (its heartbeat beats
            # every second) before any replica may claim the run. With the lease run out at once, A's own claim
            # could come first and keep the run going here, with no handover to follow.
            with psycopg.connect(postgres_url, autocommit=True) as conn:
                conn.execute(
                    "UPDATE agentmap_runs SET owner = 'elsewhere:1:gone', lease_until = %s WHERE run_id = %s",
                    (time.time() + 5, run_id),
                )
            give_up = deadline(60)
            while sum(e == "metadata" for e, _ in _stored_events(postgres_url, run_id)) < 2:
                assert time.monotonic() < give_up, "no replica continued the run"
                time.sleep(0.05)
            # joined once it continues: on the replica that continues it, the earlier attempt's come first
            later = [pool.submit(_streamed, c, thread_id, run_id) for c in (on_a, on_b)]
            on_a_stream, on_b_stream, *joined_later = [s.result(timeout=scaled(90)) for s in streams + later]
        _eventually(functools.partial(_ended, on_a, thread_id), 60)
        stored = _stored_events(postgres_url, run_id)
        attempts = [data["attempt"] for event, data in stored if event == "metadata"]
        assert len(attempts) > 1, f"not handed over: {stored}"
        key = repr  # events compared whole, in any order: the stopped replica sends its own first
        named = [("A", on_a_stream), ("B", on_b_stream), ("A later", joined_later[0]), ("B later", joined_later[1])]
        for name, streamed in named:
            assert sorted(streamed, key=key) == sorted(stored, key=key), f"on {name}:\n{streamed}\nstored:\n{stored}"
        assert stored in (on_a_stream, on_b_stream)  # the replica that did not run it: in the store's order
