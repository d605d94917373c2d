"""The run store's typed seams: the records it gives (runs, threads, crons), the one table of a run's moves that it
checks every move against (on SQLite and PostgreSQL: a move the table does not allow is refused and nothing of it
is written), and the type checker refusing a call to `finish` whose arguments are swapped."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmap.server._database import Where
from agentmap.server._records import CronRecord, Owner, RunRecord, ServerThreadStatus, Tick, now
from agentmap.server._run_states import (
    ENDED,
    MOVES,
    UNFINISHED,
    IllegalMove,
    RunStatus,
    check_move,
    moved_from,
)
from agentmap.server._store import Store, open_store

OWNER = Owner("replica-a:1:boot")
OTHER = Owner("replica-b:2:boot")
HOOK = "https://hooks.example/runs"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """The run store in memory (SQLite), or in a new PostgreSQL database."""
    opened = open_store("memory" if request.param == "sqlite" else str(request.getfixturevalue("postgres_url")))
    yield opened
    opened.close()


def _new_run(run_id: str = "run-1", thread_id: str = "thread-1") -> RunRecord:
    stamp = now()
    return RunRecord(
        run_id=run_id,
        thread_id=thread_id,
        assistant_id="assistant-1",
        created_at=stamp,
        updated_at=stamp,
        metadata={"team": "a"},
        multitask_strategy="enqueue",
        graph_id="Graph",
        request={"body": {"input": {"name": "Ada"}, "webhook": HOOK}, "thread_id": thread_id},
    )


def _claim(store: Store, owner: Owner = OWNER) -> list[RunRecord]:
    return store.runs.claim(owner=owner, lease=30.0, graphs=["Graph"], limit=10)


def test_a_run_is_read_as_a_typed_record_from_its_acceptance_to_its_end(store: Store) -> None:
    made = store.threads.create("thread-1", {"team": "a"})
    assert made is not None and made.status is ServerThreadStatus.IDLE and made.metadata == {"team": "a"}
    assert store.runs.accept(_new_run())
    waiting = store.runs.get("thread-1", "run-1")
    assert waiting is not None and waiting.status is RunStatus.PENDING and waiting.attempt == 0
    assert waiting.owner is None and waiting.webhook == HOOK

    (claimed,) = _claim(store)
    assert claimed.run_id == "run-1" and claimed.status is RunStatus.RUNNING and claimed.attempt == 1
    assert claimed.owner == OWNER and claimed.lease_until > 0 and claimed.request["body"]["input"] == {"name": "Ada"}
    thread = store.threads.get("thread-1")
    assert thread is not None and thread.status is ServerThreadStatus.BUSY

    assert store.runs.finish(
        run_id="run-1",
        owner=OWNER,
        status=RunStatus.SUCCESS,
        result={"greeting": "Hello, Ada!"},
        thread_status=ServerThreadStatus.IDLE,
        webhook=True,
        usage={"total_tokens": 3},
    )
    ended = store.runs.get(None, "run-1")
    assert ended is not None and ended.status is RunStatus.SUCCESS and ended.owner is None
    assert ended.result == {"greeting": "Hello, Ada!"} and ended.metadata == {"team": "a", "usage": {"total_tokens": 3}}
    assert ended.webhook_due is not None
    assert ended.public() == {  # what LangGraph's server shows of a run: no column of the queue
        "run_id": "run-1",
        "thread_id": "thread-1",
        "assistant_id": "assistant-1",
        "created_at": ended.created_at,
        "updated_at": ended.updated_at,
        "status": "success",
        "metadata": {"team": "a", "usage": {"total_tokens": 3}},
        "multitask_strategy": "enqueue",
        "cancel_reason": None,
        "kwargs": {"input": {"name": "Ada"}, "webhook": HOOK},
    }
    (delivery,) = store.deliveries.claim(hold=30.0, limit=5)
    assert delivery.run_id == "run-1" and delivery.webhook_tries == 0 and delivery.result == ended.result
    assert [r.run_id for r in store.runs.of_thread("thread-1")] == ["run-1"]
    assert not store.runs.finish(  # written once: the replica no longer holds it
        run_id="run-1", owner=OWNER, status=RunStatus.ERROR, result={}, thread_status=ServerThreadStatus.ERROR
    )


def test_a_move_the_table_does_not_allow_is_refused_and_nothing_of_it_is_written(store: Store) -> None:
    store.threads.create("thread-1", {})
    assert store.runs.accept(_new_run(), owner=OWNER)  # kept for OWNER: pending, with an owner

    with pytest.raises(IllegalMove, match="finish cannot move a run from pending to success"):
        store.runs.finish(
            run_id="run-1",
            owner=OWNER,
            status=RunStatus.SUCCESS,
            result={"x": 1},
            thread_status=ServerThreadStatus.IDLE,
            usage={"total_tokens": 3},
        )
    kept = store.runs.get(None, "run-1")
    assert kept is not None and (kept.status, kept.owner, kept.result, kept.metadata) == (
        RunStatus.PENDING,
        OWNER,
        None,
        {"team": "a"},
    )

    _claim(store)
    for wrong in (RunStatus.RUNNING, RunStatus.PENDING):  # `finish` ends a run; it never leaves one going
        with pytest.raises(IllegalMove, match=f"from running to {wrong}"):
            store.runs.finish(
                run_id="run-1", owner=OWNER, status=wrong, result={}, thread_status=ServerThreadStatus.IDLE
            )
    running = store.runs.get(None, "run-1")
    assert running is not None and (running.status, running.owner) == (RunStatus.RUNNING, OWNER)
    thread = store.threads.get("thread-1")
    assert thread is not None and thread.status is ServerThreadStatus.BUSY

    assert store.runs.finish(
        run_id="run-1", owner=OWNER, status=RunStatus.ERROR, result={}, thread_status=ServerThreadStatus.ERROR
    )
    assert not store.runs.request_cancel("run-1", "too late")  # nothing leaves an end
    ended = store.runs.get(None, "run-1")
    assert ended is not None and ended.status is RunStatus.ERROR


def test_a_run_cancelled_on_the_queue_ends_at_once_and_is_never_claimed(store: Store) -> None:
    assert store.runs.accept(_new_run())
    assert store.runs.request_cancel("run-1", "replaced by a newer run")
    record = store.runs.get(None, "run-1")
    assert record is not None and record.status is RunStatus.INTERRUPTED and record.cancel == "replaced by a newer run"
    assert _claim(store) == []


def test_a_run_handed_back_stays_running_and_the_next_claim_takes_it_again(store: Store) -> None:
    assert store.runs.accept(_new_run())
    _claim(store)
    store.runs.release(owner=OWNER, run_ids=["run-1"])
    (again,) = _claim(store, OTHER)  # running -> running: a move of `claim` in the table
    assert again.status is RunStatus.RUNNING and again.owner == OTHER and again.attempt == 2


def test_the_table_of_moves_reaches_every_status_and_nothing_leaves_an_end() -> None:
    reached: set[RunStatus] = set()
    frontier: list[RunStatus | None] = [None]
    while frontier:
        before = frontier.pop()
        for (source, after), _ in MOVES.items():
            if source == before and after not in reached:
                reached.add(after)
                frontier.append(after)
    assert reached == set(RunStatus)
    assert set(ENDED) | set(UNFINISHED) == set(RunStatus) and not set(ENDED) & set(UNFINISHED)
    assert not [move for move in MOVES if move[0] in ENDED]
    assert moved_from(RunStatus.RUNNING, "claim") == UNFINISHED
    assert moved_from(RunStatus.INTERRUPTED, "cancel") == (RunStatus.PENDING,)
    check_move(RunStatus.PENDING, RunStatus.RUNNING, "claim")
    with pytest.raises(IllegalMove, match="claim cannot move a run from success to running"):
        check_move(RunStatus.SUCCESS, RunStatus.RUNNING, "claim")
    with pytest.raises(IllegalMove, match=r"finish cannot move a run from pending to running \(it moves running"):
        check_move(RunStatus.PENDING, RunStatus.RUNNING, "finish")  # a move of the table, but not finish's


def test_threads_and_crons_are_typed_records(store: Store) -> None:
    store.threads.create("thread-1", {"team": "a"})
    store.threads.create("thread-2", {})
    assert [t.thread_id for t in store.threads.all(["thread-1"])] == ["thread-1"]
    assert store.threads.create("thread-1", {}) is None

    stamp = now()
    cron = CronRecord(
        cron_id="cron-1",
        assistant_id="assistant-1",
        thread_id="thread-1",
        schedule="* * * * *",
        end_time=None,
        next_run=100,
        payload={"assistant_id": "assistant-1", "input": {}},
        metadata={"team": "a"},
        enabled=True,
        on_run_completed=None,
        created_at=stamp,
        updated_at=stamp,
    )
    store.crons.create(cron)
    assert store.crons.get("cron-1") == cron and store.crons.all() == [cron]
    assert store.crons.update("cron-1", {"metadata": {"team": "b"}, "enabled": False})
    changed = store.crons.get("cron-1")
    assert changed is not None and changed.metadata == {"team": "b"} and changed.enabled is False
    assert store.crons.due(200) == []  # disabled
    store.crons.update("cron-1", {"enabled": True})
    assert [c.cron_id for c in store.crons.due(200)] == ["cron-1"] and store.crons.due(99) == []
    assert store.crons.skip_tick(Tick("cron-1", 100, 160))
    assert not store.crons.skip_tick(Tick("cron-1", 100, 160))  # taken once
    assert store.threads.delete("thread-1") and store.crons.all() == []  # a thread's crons go with it


def test_a_damaged_json_column_is_read_as_empty_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    store = open_store("memory")
    store.runs.accept(_new_run())
    with store.db.transaction() as tx:
        tx.count("UPDATE agentmap_runs SET metadata = ? WHERE run_id = ?", ("{not json", "run-1"))
    with caplog.at_level(logging.WARNING, logger="agentmap.server"):
        record = store.runs.get(None, "run-1")
    assert record is not None and record.metadata == {} and record.status is RunStatus.PENDING
    assert "run run-1: its metadata is not JSON" in caplog.text
    store.close()


def test_a_condition_is_added_to_a_query_with_its_arguments() -> None:
    assert Where().sql == "" and Where().args == ()
    where = Where().also("thread_id = ?", "t").also("status IN (?, ?)", "a", "b")
    assert where.sql == " WHERE thread_id = ? AND status IN (?, ?)" and where.args == ("t", "a", "b")


_WRONG_CALLS = """
from agentmap.server._records import Owner, ServerThreadStatus
from agentmap.server._run_queue import RunQueue
from agentmap.server._run_states import RunStatus
from agentmap.server._store_runs import RunRows


def end(runs: RunRows, owner: Owner, run_id: str) -> None:
    idle = ServerThreadStatus.IDLE
    runs.finish(run_id=run_id, owner=owner, status=RunStatus.SUCCESS, result={}, thread_status=idle)
    runs.finish(run_id=owner, owner=run_id, status=RunStatus.SUCCESS, result={}, thread_status=idle)  # ids
    runs.finish(run_id=run_id, owner=owner, status=idle, result={}, thread_status=RunStatus.SUCCESS)  # statuses
    runs.finish(owner, run_id, RunStatus.SUCCESS, {}, idle)  # positional


async def end_later(queue: RunQueue, run_id: str) -> None:
    me, end = queue.owner, queue.store.runs.finish
    await queue.call(end, run_id=me, owner=run_id, status=RunStatus.ERROR, result={}, thread_status=None)  # call
""".lstrip()
_EXPECTED = {
    "# ids": ['Argument "owner" to "finish" of "RunRows" has incompatible type "str"; expected "Owner"'],
    "# statuses": [
        'Argument "status" to "finish" of "RunRows" has incompatible type "ServerThreadStatus"; expected "RunStatus"',
        'Argument "thread_status" to "finish" of "RunRows" has incompatible type "RunStatus"; expected '
        '"ServerThreadStatus | None"',
    ],
    "# positional": ['Too many positional arguments for "finish" of "RunRows"'],
    "# call": ['Argument "owner" to "call" of "RunQueue" has incompatible type "str"; expected "Owner"'],
}
"""The errors the type checker must find on the snippet's lines that end with these comments (and no other)."""


def test_the_type_checker_refuses_a_call_to_finish_with_swapped_arguments(tmp_path: Path) -> None:
    """`finish` takes keywords only, a replica's name is an `Owner` and the thread's status another enum than the
    run's: a swapped pair is a type error, also through `RunQueue.call` (how the queue calls the store)."""
    from mypy import api

    import agentmap.server

    (tmp_path / "ends.py").write_text(_WRONG_CALLS, encoding="utf-8")
    server = Path(str(agentmap.server.__file__)).parent
    # the seam's modules and the calls alone (following the package's imports would type-check all of it)
    modules = ("_run_states", "_records", "_database", "_store", "_store_runs", "_run_queue")
    checked = [*(str(server / f"{name}.py") for name in modules), str(tmp_path / "ends.py")]
    out, _, status = api.run(["--strict", "--follow-imports=skip", "--cache-dir", str(tmp_path / "cache"), *checked])
    found = [line for line in out.splitlines() if "error:" in line]
    assert status == 1 and all(line.startswith(str(tmp_path / "ends.py:")) for line in found), out
    lines = _WRONG_CALLS.splitlines()
    for marker, messages in _EXPECTED.items():
        number = next(i for i, line in enumerate(lines, 1) if line.endswith(marker))
        on_line = [line for line in found if f"ends.py:{number}: error:" in line]
        for message in messages:
            assert any(message in line for line in on_line), f"line {number} ({marker}) lacks {message!r}:\n{out}"
    wrong_lines = {f"ends.py:{i}:" for i, line in enumerate(lines, 1) if line.endswith(tuple(_EXPECTED))}
    assert all(any(w in line for w in wrong_lines) for line in found), out  # the right call is no error
