"""The call journal's stores (`JournalRows`): the same contract held by the rows of an in-memory saver, of a SQLite
file and of a PostgreSQL database, each reached through `rows_of(saver)` for a saver `agentmap.checkpointer`
makes."""

from __future__ import annotations

import gc
import sqlite3
import uuid
import weakref
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

import agentmap
from agentmap.agents._journal_rows import CallKey, JournalRow, MemoryRows, PostgresRows, SqliteRows, rows_of
from agentmap.agents.journal_entries import journal_entries

PG = [pytest.mark.postgres, pytest.mark.slow]
STORES = {"memory": MemoryRows, "sqlite": SqliteRows, "postgres": PostgresRows}


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=PG)])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The checkpoint string of a new store of `kind`."""
    if kind == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return "memory" if kind == "memory" else str(tmp_path / "runs.db")


@pytest.fixture
def saver(target: str) -> Any:
    return agentmap.checkpointer(target)


def _key(thread: str = "t", step: int = 1, node: str = "Pay", task: str = "task-1", index: int = 0) -> CallKey:
    return CallKey(thread, "", step, node, task, index)


def _row(key: CallKey, status: str = "finished", at: float = 100.0, response: str | None = '"ok"') -> JournalRow:
    finished = None if status == "started" else at + 0.5
    duration = None if status == "started" else 500.0
    return JournalRow(key, "tool", "charge_card", "d" * 64, status, response, at, finished, duration)


def test_rows_of_picks_the_store_of_the_savers_kind_once(kind: str, saver: Any) -> None:
    rows = rows_of(saver)
    assert type(rows) is STORES[kind]
    assert rows_of(saver) is rows  # the same store for as long as the saver lives


def test_no_saver_or_a_saver_of_another_kind_has_no_rows() -> None:
    assert rows_of(None) is None
    assert rows_of(object()) is None  # an async-only saver, say (tests/runtime/test_checkpoint.py runs one)


def test_an_entry_put_is_read_back_as_written(saver: Any) -> None:
    rows = rows_of(saver)
    assert rows is not None
    started = _row(_key(), "started", response=None)
    rows.put(started)
    assert rows.get(_key()) == started
    assert rows.get(_key(index=1)) is None
    assert rows.get(_key(thread="other")) is None


def test_a_finished_entry_takes_the_place_of_the_started_one(saver: Any) -> None:
    rows = rows_of(saver)
    assert rows is not None
    rows.put(_row(_key(), "started", response=None))
    finished = _row(_key(), "finished", at=101.0, response='"charged 3"')
    rows.put(finished)
    assert rows.get(_key()) == finished
    assert rows.entries("t") == [(finished, 0)]


def test_entries_lists_a_threads_calls_oldest_first_with_their_replays(saver: Any) -> None:
    rows = rows_of(saver)
    assert rows is not None
    second = _row(_key(step=2, node="Ship", task="task-2"), at=200.0)
    first = [_row(_key(index=i), at=100.0) for i in (1, 0)]  # started together: by call index
    elsewhere = _row(_key(thread="u"), at=50.0)
    for row in (second, *first, elsewhere):
        rows.put(row)
    rows.replayed(second.key, 300.0)
    rows.replayed(second.key, 301.0)
    assert rows.entries("t") == [(first[1], 0), (first[0], 0), (second, 2)]
    assert rows.entries("u") == [(elsewhere, 0)]
    assert rows.entries("nobody") == []


def test_answers_settle_only_entries_still_queued_with_their_request_all_at_once(saver: Any) -> None:
    rows = rows_of(saver)
    assert rows is not None
    for index in range(3):
        rows.put(_row(_key(index=index), "queued", at=100.0 + index, response='"request"'))
    rows.put(_row(_key(index=3), "finished", at=103.0, response='"made meanwhile"'))
    answers = [_row(_key(index=i), "finished", at=200.0, response=f'"answer {i}"') for i in range(4)]
    other_request = JournalRow(_key(index=2), "tool", "charge_card", "e" * 64, "finished", '"x"', 200.0, 200.5, 0.0)
    written = rows.settle_queued([answers[0], answers[1], other_request, answers[3]])
    assert written == [True, True, False, False]
    for index in (0, 1):  # answered, keeping when the call was queued
        found = rows.get(_key(index=index))
        assert found is not None
        assert (found.status, found.response, found.started_at) == ("finished", f'"answer {index}"', 100.0 + index)
    assert rows.get(_key(index=2)) == _row(_key(index=2), "queued", at=102.0, response='"request"')
    assert rows.get(_key(index=3)) == _row(_key(index=3), "finished", at=103.0, response='"made meanwhile"')
    assert rows.settle_queued([answers[0]]) == [False]  # answered once: a second answer is not written
    assert rows.settle_queued([]) == []


def test_saved_says_whether_a_checkpoint_is_in_the_store(saver: Any) -> None:
    rows = rows_of(saver)
    assert rows is not None
    checkpoint = empty_checkpoint()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved = saver.put(config, checkpoint, {"step": 0, "source": "input"}, {})
    assert saved["configurable"]["checkpoint_id"] == checkpoint["id"]
    assert rows.saved(("t", "", checkpoint["id"])) is True
    assert rows.saved(("t", "", str(uuid.uuid4()))) is False
    assert rows.saved(("other", "", checkpoint["id"])) is False


def test_a_tasks_entries_are_counted_where_they_can_be_changed(kind: str, saver: Any) -> None:
    """A database's rows can be changed or deleted behind the journal's back: `task_rows` finds a task's entries
    and how many it wrote (an entry written again is counted once); the process's memory has nothing to check."""
    rows = rows_of(saver)
    assert rows is not None
    written = [_row(_key(index=i)) for i in range(3)]
    for row in written:
        rows.put(row)
    rows.put(written[0])  # written again: the same entry
    rows.put(_row(_key(task="task-9", node="Other", step=5)))
    found = rows.task_rows(_key(index=3))
    if kind == "memory":
        assert (found.rows, found.written) == ((), None)
        return
    assert (sorted(found.rows, key=lambda r: r.key.call_index), found.written) == (written, 3)
    # an entry whose task id was changed on disk is still found by the rest of its key
    _sql(saver, "UPDATE agentmap_journal SET task_id = 'forged' WHERE call_index = 1")
    assert sorted(r.key.task_id for r in rows.task_rows(_key()).rows) == ["forged", "task-1", "task-1"]
    _sql(saver, "DELETE FROM agentmap_journal WHERE call_index = 2")
    found = rows.task_rows(_key())
    assert (len(found.rows), found.written) == (2, 3)


def test_a_task_with_no_entries_has_none(kind: str, saver: Any) -> None:
    rows = rows_of(saver)
    assert rows is not None
    found = rows.task_rows(_key())
    assert found.rows == () and found.written is None


def test_a_journaled_run_sets_nothing_on_its_saver(saver: Any, charge: Path) -> None:
    """LangGraph's saver (or a user's) is left as it was: what AgentMap keeps for it (the in-memory journal, which
    tables were made) is kept beside it, not set on it."""
    before = set(vars(saver))
    app = agentmap.compile(charge, checkpointer=saver)
    assert app.invoke({"amount": 3}, {"configurable": {"thread_id": "t"}}).state["result"] == "charged 3"
    assert [(e.node, e.name, e.status) for e in journal_entries(saver, "t")] == [("Charge", "charge_card", "finished")]
    assert set(vars(saver)) == before


def test_a_saver_dropped_takes_its_rows_along(kind: str, target: str) -> None:
    saver = agentmap.checkpointer(target)
    rows = rows_of(saver)
    assert rows is not None
    rows.put(_row(_key()))
    gone = weakref.ref(rows)
    if kind == "sqlite":
        saver.conn.close()
    del saver, rows
    gc.collect()
    assert gone() is None


def test_each_in_memory_saver_keeps_its_own_journal() -> None:
    one, other = agentmap.checkpointer("memory"), agentmap.checkpointer("memory")
    first = rows_of(one)
    assert first is not None
    first.put(_row(_key()))
    second = rows_of(other)
    assert second is not None and second.get(_key()) is None


def _sql(saver: Any, statement: str) -> None:
    """Change the journal's table as a person editing the database would."""
    if isinstance(getattr(saver, "conn", None), sqlite3.Connection):
        with saver.lock:
            saver.conn.execute(statement)
            saver.conn.commit()
        return
    with saver.conn.connection() as conn:
        conn.execute(statement)
