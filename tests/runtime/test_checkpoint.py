"""Checkpointers AgentMap ships (memory, SQLite, Postgres): one conformance suite, the allow-list serializer,
and resuming threads through the Python API (sync and async)."""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import durable_graphs
import ormsgpack
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

import agentmap
from agentmap.agents.journal_entries import journal_entries
from agentmap.agents.questions import AnswerError
from agentmap.errors import ConfigError
from agentmap.runtime.checkpoint import CorruptCheckpointError, UnsafeCheckpointError

PG = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=PG)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A checkpoint string of each kind AgentMap ships."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return "memory" if request.param == "memory" else str(tmp_path / "runs.db")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=PG)])
def durable(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A checkpoint string that outlives the process: SQLite and Postgres."""
    return str(request.getfixturevalue("postgres_url")) if request.param == "postgres" else str(tmp_path / "runs.db")


@pytest.fixture(autouse=True)
def side_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "side.txt"
    monkeypatch.setenv("TICK_FILE", str(path))
    return path


def _checkpoint(n: int) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["id"] = str(uuid.uuid6()) if hasattr(uuid, "uuid6") else _uuid6()
    checkpoint["channel_values"] = {"count": n, "note": {"when": n}}
    checkpoint["channel_versions"] = {"count": n + 1, "note": n + 1}
    return dict(checkpoint)


def _uuid6() -> str:
    from langgraph.checkpoint.base.id import uuid6

    return str(uuid6())


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


# -- conformance ---------------------------------------------------------------------------------


def test_every_checkpointer_puts_gets_lists_and_keeps_history(target: str) -> None:
    saver = agentmap.checkpointer(target)
    config: Any = _config("t1")
    assert saver.get_tuple(config) is None
    for n in range(3):
        checkpoint = _checkpoint(n)
        config = saver.put(config, checkpoint, {"step": n, "source": "loop"}, {"count": n + 1, "note": n + 1})
    saver.put_writes(config, [("count", 99)], task_id="task-1")
    saver.put(_config("t2"), _checkpoint(7), {"step": 0, "source": "input"}, {"count": 8, "note": 8})

    latest = saver.get_tuple(_config("t1"))
    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"count": 2, "note": {"when": 2}}
    assert latest.metadata["step"] == 2
    assert [w[1:] for w in latest.pending_writes or []] == [("count", 99)]
    history = list(saver.list(_config("t1")))
    assert [h.metadata["step"] for h in history] == [2, 1, 0]  # newest first
    assert history[1].config["configurable"]["checkpoint_id"] == latest.parent_config["configurable"]["checkpoint_id"]
    assert len(list(saver.list(_config("t1"), limit=1))) == 1
    assert {h.config["configurable"]["thread_id"] for h in saver.list(None)} == {"t1", "t2"}
    saver.delete_thread("t1")
    assert saver.get_tuple(_config("t1")) is None and saver.get_tuple(_config("t2")) is not None


def test_the_same_saver_serves_async_calls(target: str) -> None:
    saver = agentmap.checkpointer(target)

    async def scenario() -> list[int]:
        config = await saver.aput(_config("a"), _checkpoint(1), {"step": 1}, {"count": 2, "note": 2})
        await saver.aput_writes(config, [("count", 5)], task_id="x")
        assert (await saver.aget_tuple(_config("a"))).checkpoint["channel_values"]["count"] == 1
        return [t.metadata["step"] async for t in saver.alist(_config("a"))]

    assert asyncio.run(scenario()) == [1]


def test_async_checkpointer_keeps_the_call_journal_as_checkpointer_does(durable: str, charge: Path) -> None:
    """From async code, the saver keeps what AgentMap keeps beside checkpoints: a tool call is journaled."""
    thread = f"a-{uuid.uuid4().hex}"

    async def scenario() -> tuple[str, Any, list[Any]]:
        async with agentmap.async_checkpointer(durable) as saver:
            app = agentmap.compile(charge, checkpointer=saver)
            result = await app.ainvoke({"amount": 3}, {"configurable": {"thread_id": thread}})
            return type(saver).__name__, result.state["result"], journal_entries(saver, thread)

    name, result, calls = asyncio.run(scenario())
    assert name == type(agentmap.checkpointer(durable)).__name__  # the saver checkpointer makes, opened from async
    assert result == "charged 3"
    assert [(c.node, c.kind, c.name, c.status) for c in calls] == [("Charge", "tool", "charge_card", "finished")]


def test_a_saver_that_keeps_no_journal_is_named_once_in_the_log(
    charge: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """LangGraph's async-only SQLite saver keeps no call journal: the log says so once, not silently."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from agentmap.agents import journal

    monkeypatch.setattr(journal, "_UNJOURNALED", set())

    async def scenario() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(charge.parent / "native.db")) as saver:
            app = agentmap.compile(charge, checkpointer=saver)
            for thread in ("one", "two"):
                await app.ainvoke({"amount": 1}, {"configurable": {"thread_id": thread}})

    with caplog.at_level(logging.WARNING, logger="agentmap.journal"):
        asyncio.run(scenario())
    said = [r.getMessage() for r in caplog.records if "not journaled" in r.getMessage()]
    assert len(said) == 1 and "AsyncSqliteSaver" in said[0] and "agentmap.checkpointer" in said[0], said


def test_a_bad_checkpoint_string_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"the folder .*missing does not exist"):
        agentmap.checkpointer(str(tmp_path / "missing" / "runs.db"))
    with pytest.raises(ConfigError, match="cannot open the Postgres checkpoint") as caught:
        agentmap.checkpointer("postgresql://ada:secret@/nowhere?host=/nonexistent&port=1")
    assert "secret" not in str(caught.value)
    with pytest.raises(ConfigError, match="unknown checkpointer"):
        agentmap.compile(durable_graphs.counter(tmp_path, 2), checkpointer="mongodb://x")


# -- the allow-list serializer -------------------------------------------------------------------


class _Evil:
    """Stands for an object whose checkpoint entry names os.system."""


def _tamper(target: str, thread: str, marker: Path) -> None:
    """Write a new latest checkpoint whose `count` is a constructor call of os.system."""

    def evil(obj: Any) -> Any:
        if isinstance(obj, _Evil):
            return ormsgpack.Ext(1, ormsgpack.packb(("os", "system", [f"touch {marker}"])))
        raise TypeError

    class Forger(JsonPlusSerializer):
        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            return "msgpack", ormsgpack.packb(obj, default=evil, option=ormsgpack.OPT_NON_STR_KEYS)

    saver = agentmap.checkpointer(target)
    latest = saver.get_tuple(_config(thread))
    assert latest is not None
    saver.serde = Forger()  # writes a record without a checksum, as one written before checksums
    checkpoint = dict(latest.checkpoint)
    checkpoint["id"] = _uuid6()
    checkpoint["channel_values"] = {**checkpoint["channel_values"], "count": _Evil()}
    versions = dict(checkpoint["channel_versions"])
    saver.put(latest.config, checkpoint, dict(latest.metadata), versions)


def test_a_tampered_checkpoint_is_refused_never_constructed(durable: str, tmp_path: Path) -> None:
    app = agentmap.compile(durable_graphs.counter(tmp_path, 3), checkpointer=durable, interrupt_before=["N03"])
    app.invoke({"count": 0}, {"configurable": {"thread_id": "t"}})
    marker = tmp_path / "pwned"
    _tamper(durable, "t", marker)
    with pytest.raises(UnsafeCheckpointError, match=r"a constructor of os\.system") as caught:
        app.resume("t")
    assert caught.value.code == "unsafe-checkpoint" and caught.value.exit_code == 2
    assert not marker.exists()


class _Damaging:
    """A serializer whose records do not match their checksums (a bit flipped after sealing)."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, raw = self.real.dumps_typed(obj)
        return kind, raw[:-1] + bytes([raw[-1] ^ 0x01])

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.real.loads_typed(data)


def test_a_damaged_record_is_named_and_the_thread_goes_on_from_the_last_good_checkpoint(
    durable: str, tmp_path: Path
) -> None:
    app = agentmap.compile(durable_graphs.counter(tmp_path, 4), checkpointer=durable, interrupt_before=["N03"])
    app.invoke({"count": 0}, {"configurable": {"thread_id": "t"}})
    saver = agentmap.checkpointer(durable)
    latest = saver.get_tuple(_config("t"))
    assert latest is not None
    saver.serde = _Damaging(saver.serde)
    saver.put_writes(latest.config, [("count", 99)], task_id="damaged")  # a pending write, damaged on its way
    with pytest.raises(CorruptCheckpointError) as caught:
        app.resume("t")
    error = caught.value
    assert error.code == "corrupt-checkpoint" and error.exit_code == 2
    step = latest.metadata["step"]
    assert f"thread 't': checkpoint {latest.config['configurable']['checkpoint_id']} (step {step})" in error.message
    good = re.search(r"--from-checkpoint (\S+)", error.hint or "")
    assert good and f"(step {step - 1})" in (error.hint or ""), error.hint
    again = app.resume("t", checkpoint_id=good.group(1))  # N02 runs again from the good state, as it did
    assert again.state["count"] == 2 and app.graph.get_state({"configurable": {"thread_id": "t"}}).next == ("N03",)
    assert app.resume("t").state["count"] == 4  # and the thread goes on as if nothing had happened


def test_pickled_values_are_refused() -> None:
    serde = agentmap.checkpointer("memory").serde
    with pytest.raises(UnsafeCheckpointError, match="a pickled value"):
        serde.loads_typed(("pickle", b"cos\nsystem\n."))
    assert serde.loads_typed(serde.dumps_typed({"when": {1, 2}})) == {"when": {1, 2}}  # safe types still load


# -- resuming through the Python API -------------------------------------------------------------


def test_invoke_none_continues_a_stopped_thread_and_nothing_runs_twice(durable: str, tmp_path: Path) -> None:
    path = durable_graphs.counter(tmp_path, 5)
    config: Any = {"configurable": {"thread_id": "c"}}
    first = agentmap.compile(path, checkpointer=durable, interrupt_before=["N04"])
    assert first.invoke({"count": 0}, config).state["count"] == 3
    assert [t.status for t in agentmap.threads(durable)] == ["interrupted"]  # stopped, not running
    app = agentmap.compile(path, checkpointer=durable)
    result = app.invoke(None, config)
    assert result.state["count"] == 5 and result.success
    ran_now = [e.name for e in result.summary if not e.metadata.get("before_resume")]
    assert ran_now == ["N04", "N05"]
    assert [e.name for e in result.summary] == ["N01", "N02", "N03", "N04", "N05"]  # the whole run
    assert (tmp_path / "side.txt").read_text().split() == ["N01", "N02", "N03", "N04", "N05"]
    (info,) = agentmap.threads(durable)
    assert (info.thread_id, info.graph, info.status, info.workflow) == ("c", "Count", "done", str(path.resolve()))


def test_resume_checks_the_answer_before_running(durable: str, tmp_path: Path) -> None:
    app = agentmap.compile(durable_graphs.approval(tmp_path), checkpointer=durable)
    paused = app.invoke({"count": 0}, {"configurable": {"thread_id": "r"}})
    assert paused.interrupts[0].value["interaction"] == "approval"
    with pytest.raises(AnswerError, match="neither yes nor no"):
        app.resume("r", "maybe")
    assert [t.status for t in agentmap.threads(durable)] == ["paused"]  # still waiting
    with pytest.raises(ConfigError, match="no thread 'nope'"):
        app.resume("nope", "yes")
    done = app.resume("r", "approve")
    assert done.state["decision"] == {"approved": True} and done.state["count"] == 2
    with pytest.raises(ConfigError, match="has finished") as caught:
        app.resume("r", "yes")
    assert caught.value.code == "nothing-to-resume"


def test_an_answer_is_taken_once_and_a_resume_without_one_continues_with_it(target: str, tmp_path: Path) -> None:
    from agentmap.runtime.answers import claim_answers

    app = agentmap.compile(durable_graphs.approval(tmp_path), checkpointer=target)
    app.invoke({"count": 0}, {"configurable": {"thread_id": "t"}})
    snapshot = app.graph.get_state({"configurable": {"thread_id": "t"}})
    # a resume that claimed its answer and died before the run went on
    claim_answers(app.graph.checkpointer, snapshot.config, {snapshot.interrupts[0].id: {"approved": False}}, "t")
    with pytest.raises(ConfigError) as caught:
        app.resume("t", "approve")
    assert caught.value.code == "already-answered" and '{"approved": false} was taken' in caught.value.message
    done = app.resume("t")
    assert done.state["decision"] == {"approved": False}


def test_async_runs_and_resumes_on_a_checkpoint_string(durable: str, tmp_path: Path) -> None:
    app = agentmap.compile(durable_graphs.approval(tmp_path), checkpointer=durable)

    async def scenario() -> Any:
        paused = await app.ainvoke({"count": 0}, {"configurable": {"thread_id": "a"}})
        assert paused.interrupts
        return await app.aresume("a", {"approved": False, "note": "later"})

    result = asyncio.run(scenario())
    assert result.state["decision"] == {"approved": False, "note": "later"}


def test_a_null_answer_resumes_a_question_that_takes_anything(tmp_path: Path) -> None:
    path = tmp_path / "ask.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Context,Output_Field,Edge\n"
        'Ask,Name,input,Name?,"{""interrupt"": true}",name,\n',
        encoding="utf-8",
    )
    app = agentmap.compile(path, checkpointer="memory")
    assert app.invoke({}, {"configurable": {"thread_id": "n"}}).interrupts
    result = app.resume("n", None)
    assert result.state.get("name") is None and not result.interrupts and result.success


def test_resume_needs_a_checkpointer(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="without a checkpointer"):
        agentmap.compile(durable_graphs.counter(tmp_path, 1)).resume("t")


def test_sqlite_file_passes_integrity_check(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    agentmap.compile(durable_graphs.counter(tmp_path, 3), checkpointer=str(db)).invoke(
        {"count": 0}, {"configurable": {"thread_id": "i"}}
    )
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_two_paused_branches_are_answered_by_interrupt_id(tmp_path: Path) -> None:
    durable_graphs.counter(tmp_path, 1)  # the custom agents
    path = tmp_path / "two.csv"
    path.write_text(
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\n"
        "Two,Start,tick,count,count,A|B\nTwo,A,approve,,a,\nTwo,B,approve,,b,\n",
        encoding="utf-8",
    )
    app = agentmap.compile(path, checkpointer="memory")
    paused = app.invoke({"count": 0}, {"configurable": {"thread_id": "two"}})
    ids = [i.id for i in paused.interrupts]
    assert len(ids) == 2
    with pytest.raises(ConfigError, match="has 2 questions waiting; answer each by its interrupt id"):
        app.resume("two", "yes")
    with pytest.raises(AnswerError):
        app.resume("two", {ids[0]: "yes", ids[1]: "perhaps"})
    done = app.resume("two", {ids[0]: "yes", ids[1]: "no"})
    assert {done.state["a"]["approved"], done.state["b"]["approved"]} == {True, False}


def test_a_stop_event_ends_the_run_after_the_running_step_and_resume_finishes_it(
    durable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    monkeypatch.setenv("TICK_SLEEP", "0.02")
    app = agentmap.compile(durable_graphs.counter(tmp_path, 6), checkpointer=durable)
    stop = threading.Event()

    def stop_at_the_second_node() -> None:
        while len((tmp_path / "side.txt").read_text().split() if (tmp_path / "side.txt").exists() else []) < 2:
            time.sleep(0.001)
        stop.set()

    watcher = threading.Thread(target=stop_at_the_second_node)
    watcher.start()
    stopped = app.invoke({"count": 0}, {"configurable": {"thread_id": "e"}}, stop=stop)
    watcher.join()
    assert stopped.stopped and stopped.to_dict()["stopped"] is True
    assert stopped.state["count"] == 2  # the running node finished, and nothing after it started
    assert [t.status for t in agentmap.threads(durable)] == ["interrupted"]
    done = app.resume("e")
    assert done.state["count"] == 6 and not done.stopped
    assert (tmp_path / "side.txt").read_text().split() == [f"N{i:02d}" for i in range(1, 7)]
