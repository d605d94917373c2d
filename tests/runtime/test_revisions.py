"""Revisions: a thread finishes on the revision it started on, whatever the file holds now; what a revision holds
and how it is stored; a moved thread; the bad inputs (a tampered revision, a Python file gone, an unknown id)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import durable_graphs
import pytest

import agentmap
from agentmap.errors import ConfigError, CorruptCheckpointError
from agentmap.runtime.migration import Migration
from agentmap.runtime.revisions import find_revision, load_revision, revisions

PG = [pytest.mark.postgres, pytest.mark.slow]

OLD = (
    durable_graphs.HEADER
    + "Review,Draft,tick,,,count,count,Review\n"
    + "Review,Review,approve,,,,decision,Publish\n"
    + "Review,Publish,tick,,,count,count,\n"
)
NEW = (  # Review renamed Check (the same row), Publish removed, Archive added reading a new input `channel`
    durable_graphs.HEADER
    + "Review,Draft,tick,,,count,count,Check\n"
    + "Review,Check,approve,,,,decision,Archive\n"
    + "Review,Archive,tick,,,count|channel,count,\n"
)


@pytest.fixture(autouse=True)
def side_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "side.txt"
    monkeypatch.setenv("TICK_FILE", str(path))
    return path


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=PG)])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    """A saver of each kind AgentMap ships: revisions live beside the checkpoints in each."""
    if request.param == "postgres":
        return agentmap.checkpointer(str(request.getfixturevalue("postgres_url")))
    return agentmap.checkpointer("memory" if request.param == "memory" else str(tmp_path / "runs.db"))


def _workflow(folder: Path, rows: str = OLD) -> Path:
    durable_graphs.counter(folder, 1, name="unused.csv")  # the custom agents (tick, approve)
    path = folder / "review.csv"
    path.write_text(rows, encoding="utf-8")
    return path


def _ran(side_file: Path) -> list[str]:
    return side_file.read_text(encoding="utf-8").split() if side_file.is_file() else []


def _paused(path: Path, saver: object, thread: str = "t1") -> agentmap.CompiledWorkflow:
    app = agentmap.compile(path, checkpointer=saver)
    paused = app.invoke({"count": 0}, {"configurable": {"thread_id": thread}})
    assert paused.interrupts
    return app


def test_a_thread_finishes_on_its_revision_after_an_edit_and_new_runs_take_the_edit(
    tmp_path: Path, saver: object, side_file: Path
) -> None:
    path = _workflow(tmp_path)
    _paused(path, saver)
    path.write_text(NEW, encoding="utf-8")  # a renamed node, a removed node, a new required key
    edited = agentmap.compile(path, checkpointer=saver)
    thread = edited.thread("t1")
    assert thread.behind() and thread.app.revision != edited.revision
    assert [n.name for n in thread.app.spec.nodes] == ["Draft", "Review", "Publish"]
    result = thread.resume("yes")
    assert result.success and result.state["count"] == 2 and result.state["decision"] == {"approved": True}
    assert _ran(side_file) == ["Draft", "Publish"]  # no node of the edit: its revision does not have them
    fresh = edited.invoke({"count": 0, "channel": "mail"}, {"configurable": {"thread_id": "t2"}})
    assert [i.value["node"] for i in fresh.interrupts] == ["Check"]  # a new thread runs the file as it is
    assert not edited.thread("t2").behind()


def test_a_revision_is_stored_once_per_distinct_content(tmp_path: Path, saver: object) -> None:
    path = _workflow(tmp_path)
    (tmp_path / "ask.txt").write_text("Publish it?", encoding="utf-8")
    path.write_text(OLD.replace("Review,Review,approve,,", "Review,Review,approve,file:ask.txt,"), encoding="utf-8")
    for thread in ("a", "b", "c"):
        _paused(path, saver, thread)
    path.write_text(path.read_text(encoding="utf-8") + "# a comment row\n", encoding="utf-8")
    _paused(path, saver, "d")
    kept = revisions(saver)
    assert len(kept) == 2  # three threads on the first revision, one on the second
    first, second = kept
    assert first.files["ask.txt"] == second.files["ask.txt"] and set(first.files) == {"review.csv", "ask.txt"}
    assert first.code == second.code and "custom_agents/durable_agents.py" in first.code
    assert find_revision(saver, first.id[:6]) == first


def _options(config: Path, checkpoint: Path) -> agentmap.CompileOptions:
    from agentmap.config import load_settings

    return agentmap.CompileOptions.from_settings(load_settings(config)).but(checkpointer=str(checkpoint))


def test_a_prompt_file_and_the_configuration_are_part_of_the_revision(tmp_path: Path) -> None:
    path = _workflow(tmp_path, durable_graphs.HEADER + "G,Ask,approve,,,,decision,Greet\n")
    path.write_text(path.read_text(encoding="utf-8") + "G,Greet,template,file:prompt.txt,,name,greeting,\n")
    (tmp_path / "prompt.txt").write_text("Hello, {name}!", encoding="utf-8")
    config = tmp_path / "agentmap.yaml"
    config.write_text("execution:\n  success_policy: all_nodes\n", encoding="utf-8")
    app = agentmap.compile(path, options=_options(config, tmp_path / "r.db"))
    assert app.revision is not None and app.revision.config == "agentmap.yaml"
    assert set(app.revision.files) == {"review.csv", "prompt.txt", "agentmap.yaml"}
    assert app.invoke({"name": "Ada"}, {"configurable": {"thread_id": "g"}}).interrupts
    (tmp_path / "prompt.txt").write_text("Goodbye, {name}.", encoding="utf-8")
    config.write_text("execution:\n  success_policy: final_node\n", encoding="utf-8")
    edited = agentmap.compile(path, options=_options(config, tmp_path / "r.db"))
    assert edited.revision is not None and edited.revision.id != app.revision.id
    thread = edited.thread("g")
    assert thread.app.options.success_policy == "all_nodes"  # the stored configuration's settings
    assert thread.resume("yes").state["greeting"] == "Hello, Ada!"  # the stored prompt file
    assert edited.invoke({"name": "Bo"}, {"configurable": {"thread_id": "h"}}).interrupts
    assert edited.thread("h").resume("yes").state["greeting"] == "Goodbye, Bo."


ROUTED = (
    "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge,Success_Next,Failure_Next\n"
    "R,Ask,approve,,decision,,func:route,\n"
    "R,Yes,tick,count,count,,,\n"
    "R,No,tick,count,count,,,\n"
)
ROUTER = "def route(state, success_target=None, failure_target=None):\n    return {}\n"


def _routed(folder: Path, saver: object) -> Path:
    path = _workflow(folder, ROUTED)
    (folder / "functions").mkdir()
    (folder / "functions" / "route.py").write_text(ROUTER.replace("{}", '"Yes"'), encoding="utf-8")
    _paused(path, saver)
    return path


def test_a_changed_python_file_is_named_when_the_thread_resumes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, side_file: Path
) -> None:
    saver = agentmap.checkpointer(str(tmp_path / "runs.db"))
    path = _routed(tmp_path, saver)
    router = tmp_path / "functions" / "route.py"
    from agentmap._sources import sha256

    then = sha256(router.read_bytes())
    router.write_text(ROUTER.replace("{}", '"No"') + "# edited\n", encoding="utf-8")
    now = sha256(router.read_bytes())
    with caplog.at_level(logging.WARNING, logger="agentmap.runtime"):
        thread = agentmap.compile(path, checkpointer=saver).thread("t1")
        assert thread.app.code_changes[0].to_dict() == {"file": "functions/route.py", "recorded": then, "now": now}
    warned = [r.getMessage() for r in caplog.records if "route.py" in r.getMessage()]
    assert warned and then in warned[0] and now in warned[0] and "thread 't1'" in warned[0]


def test_a_revision_whose_python_file_is_gone_is_refused_naming_it(tmp_path: Path, side_file: Path) -> None:
    saver = agentmap.checkpointer(str(tmp_path / "runs.db"))
    path = _routed(tmp_path, saver)
    (tmp_path / "functions" / "route.py").unlink()
    path.write_text(ROUTED.replace("func:route", "Yes"), encoding="utf-8")  # the file moved on without it
    thread = agentmap.compile(path, checkpointer=saver).thread("t1")
    with pytest.raises(ConfigError) as refused:
        thread.resume("yes")
    assert refused.value.code == "revision-unloadable"
    assert "route.py" in refused.value.message and "is gone" in refused.value.message
    assert "sha256" in str(refused.value.hint) and "--latest" in str(refused.value.hint)
    assert _ran(side_file) == []  # nothing ran
    assert saver.get_tuple({"configurable": {"thread_id": "t1"}}) is not None  # nothing lost


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=PG)])
def durable(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A checkpoint string whose database a test can tamper with: SQLite and PostgreSQL."""
    return str(request.getfixturevalue("postgres_url")) if request.param == "postgres" else str(tmp_path / "runs.db")


def _sql(target: str, statement: str) -> list[tuple[Any, ...]]:
    """Run `statement` on the database of checkpoint `target` (as someone with access to it could)."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as pg, pg.cursor() as cur:
            cur.execute(statement.encode())
            return list(cur.fetchall()) if cur.description else []
    with sqlite3.connect(target) as conn:
        return list(conn.execute(statement).fetchall())


def test_a_stored_file_that_does_not_match_its_digest_is_corrupt_checkpoint(
    tmp_path: Path, durable: str, side_file: Path
) -> None:
    path = _workflow(tmp_path)
    _paused(path, agentmap.checkpointer(durable))
    changed = (
        "convert_to(replace(convert_from(content, 'UTF8'), 'Publish', 'Publisx'), 'UTF8')"
        if durable.startswith("postgresql://")
        else "replace(content, 'Publish', 'Publisx')"
    )
    _sql(durable, f"UPDATE agentmap_revision_files SET content = {changed}")
    path.write_text(NEW, encoding="utf-8")
    thread = agentmap.compile(path, checkpointer=agentmap.checkpointer(durable)).thread("t1")
    with pytest.raises(CorruptCheckpointError) as damaged:
        thread.resume("yes")
    assert "review.csv does not match its SHA-256" in damaged.value.message
    assert _ran(side_file) == ["Draft"]  # only the run before the edit


def test_a_revision_record_changed_after_it_was_written_is_corrupt_checkpoint(tmp_path: Path, durable: str) -> None:
    _paused(_workflow(tmp_path), agentmap.checkpointer(durable))
    _sql(durable, "UPDATE agentmap_revisions SET manifest = replace(manifest, 'review.csv', 'other.csv')")
    ((revision,),) = _sql(durable, "SELECT revision_id FROM agentmap_revisions")
    with pytest.raises(CorruptCheckpointError) as damaged:
        load_revision(agentmap.checkpointer(durable), revision)
    assert "does not match its id" in damaged.value.message


def test_an_unknown_revision_id_is_refused(tmp_path: Path, durable: str) -> None:
    saver = agentmap.checkpointer(durable)
    _paused(_workflow(tmp_path), saver)
    for text in ("ffffff", "ab"):  # unknown; too short to name one
        with pytest.raises(ConfigError) as unknown:
            find_revision(saver, text)
        assert unknown.value.code == "unknown-revision" and text in unknown.value.message
    _sql(durable, "DELETE FROM agentmap_revisions")
    (tmp_path / "review.csv").write_text(NEW, encoding="utf-8")
    with pytest.raises(ConfigError) as gone:
        agentmap.compile(tmp_path / "review.csv", checkpointer=saver).thread("t1").resume("yes")
    assert gone.value.code == "unknown-revision"


def test_a_moved_thread_runs_the_new_revision_keeps_its_history_and_says_where_it_came_from(
    tmp_path: Path, saver: object, side_file: Path
) -> None:
    path = _workflow(tmp_path)
    old = _paused(path, saver).revision
    path.write_text(NEW, encoding="utf-8")
    edited = agentmap.compile(path, checkpointer=saver)
    thread = edited.thread("t1")
    verdict = thread.plan_move()
    assert verdict.verdict == "needs-migration"
    assert verdict.lines == ("node,Review,Check", "default,channel,VALUE")
    with pytest.raises(ConfigError) as refused:
        thread.move()
    assert refused.value.code == "needs-migration" and "node,Review,Check" in str(refused.value.hint)
    migration = Migration(nodes={"Review": "Check"}, defaults={"channel": "mail"})
    assert thread.plan_move(migration=migration).verdict == "safe"
    moved = thread.move(migration=migration)
    assert [q.value["node"] for q in moved.questions()] == ["Check"]  # asked again, as the new revision asks
    result = moved.resume("yes")
    assert result.success and result.state["channel"] == "mail" and result.state["count"] == 2
    assert _ran(side_file) == ["Draft", "Archive"]
    history = moved.history()
    record: dict[str, Any] = next(
        dict(s.metadata or {}) for s in history if "agentmap_moved_from" in (s.metadata or {})
    )
    assert old is not None and record["agentmap_moved_from"] == old.id
    assert record["agentmap_migration"] == ["node,Review,Check", 'default,channel,"mail"']
    assert len(history) > 4 and not moved.behind()


def test_moving_where_the_node_is_gone_or_asks_nothing_is_unsafe(tmp_path: Path) -> None:
    saver = agentmap.checkpointer(str(tmp_path / "runs.db"))
    path = _workflow(tmp_path)
    _paused(path, saver)
    path.write_text(OLD.replace("Review,Review,approve,,,,decision,Publish\n", ""), encoding="utf-8")
    path.write_text(path.read_text(encoding="utf-8").replace(",Review\n", ",Publish\n", 1), encoding="utf-8")
    gone = agentmap.compile(path, checkpointer=saver).thread("t1").plan_move()
    assert gone.verdict == "unsafe" and "node 'Review', where it waits, is not in the new revision" in gone.reasons[0]
    path.write_text(OLD.replace("Review,Review,approve,", "Review,Review,tick,"), encoding="utf-8")
    silent = agentmap.compile(path, checkpointer=saver).thread("t1")
    assert "does not ask" in silent.plan_move().reasons[0]
    with pytest.raises(ConfigError) as refused:
        silent.move()
    assert refused.value.code == "unsafe-move"
    assert silent.app.revision is not None
    assert silent.status() == "paused" and silent.revision() == silent.app.revision.id  # nothing moved


def test_a_migration_map_naming_what_does_not_exist_is_refused_located(tmp_path: Path) -> None:
    saver = agentmap.checkpointer(str(tmp_path / "runs.db"))
    path = _workflow(tmp_path)
    _paused(path, saver)
    path.write_text(NEW, encoding="utf-8")
    thread = agentmap.compile(path, checkpointer=saver).thread("t1")
    from agentmap.runtime.migration import read_migration

    cases = {
        "kind,old,new\nnode,Reveiw,Check\n": ("node 'Reveiw' is not in the thread's revision", 2, "old", "Review"),
        "kind,old,new\nnode,Review,Chekc\n": ("node 'Chekc' is not in the new revision", 2, "new", "Check"),
        "kind,old,new\nnode,Review,Check\nkey,cuont,count\n": ("state key 'cuont'", 3, "old", "count"),
        "kind,old,new\nnode,Review,Check\ndefault,chanel,x\n": ("state key 'chanel'", 3, "old", "channel"),
    }
    for text, (message, row, column, guess) in cases.items():
        (tmp_path / "map.csv").write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError) as bad:
            thread.move(migration=read_migration(tmp_path / "map.csv"))
        assert bad.value.code == "bad-migration" and message in bad.value.message, text
        location = bad.value.location
        assert location is not None and (location.row, location.column) == (row, column), text
        assert f"did you mean {guess!r}" in str(bad.value.hint), text
    for text in ("old,new\nReview,Check\n", "kind,old,new\nrename,Review,Check\n", "kind,old,new\nnode,Review,\n"):
        (tmp_path / "map.csv").write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError) as malformed:
            read_migration(tmp_path / "map.csv")
        assert malformed.value.code == "bad-migration" and malformed.value.location is not None
    (tmp_path / "map.yaml").write_text("nodes: {Review: Check}\ndefaults: {channel: 3}\n", encoding="utf-8")
    yaml_map = read_migration(tmp_path / "map.yaml")
    assert (dict(yaml_map.nodes), dict(yaml_map.defaults)) == ({"Review": "Check"}, {"channel": 3})
    assert thread.plan_move(migration=yaml_map).verdict == "safe"
    assert thread.status() == "paused" and thread.behind()  # nothing moved


def test_a_thread_saved_before_revisions_resumes_on_its_file_and_moves_with_latest(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    path = _workflow(tmp_path)
    _paused(path, agentmap.checkpointer(str(db)))
    with sqlite3.connect(db) as conn:  # as a thread of an AgentMap that did not record revisions
        conn.execute("UPDATE checkpoints SET metadata = json_remove(metadata, '$.agentmap_revision')")
        conn.execute("DELETE FROM agentmap_revisions")
    from agentmap.runtime.durable import open_thread

    saver = agentmap.checkpointer(str(db))
    assert open_thread(saver, "t1").revision() is None
    path.write_text(OLD + "# a comment row\n", encoding="utf-8")
    with pytest.raises(ConfigError) as changed:
        open_thread(saver, "t1")
    assert changed.value.code == "workflow-changed" and "--latest" in str(changed.value.hint)
    moved = open_thread(saver, "t1", latest=True)
    assert moved.app.revision is not None and moved.revision() == moved.app.revision.id
    assert moved.resume("yes").success


def test_a_thread_moved_with_defaults_alone_goes_on_at_the_node_it_waited_at(tmp_path: Path, side_file: Path) -> None:
    saver = agentmap.checkpointer(str(tmp_path / "runs.db"))
    path = _workflow(tmp_path)
    _paused(path, saver)
    path.write_text(OLD.replace("Publish,tick,,,count,count", "Publish,tick,,,count|channel,count"), encoding="utf-8")
    thread = agentmap.compile(path, checkpointer=saver).thread("t1")
    assert thread.plan_move().lines == ("default,channel,VALUE",)
    moved = thread.move(migration=Migration(defaults={"channel": "mail"}))
    assert [q.value["node"] for q in moved.questions()] == ["Review"]  # waiting where it was, not finished
    result = moved.resume("yes")
    assert result.success and result.state["channel"] == "mail" and _ran(side_file) == ["Draft", "Publish"]


def test_a_subgraph_file_is_part_of_the_revision_and_runs_as_stored(tmp_path: Path) -> None:
    path = _workflow(tmp_path, durable_graphs.HEADER + "Main,Ask,approve,,,,decision,Sub\n")
    path.write_text(path.read_text(encoding="utf-8") + "Main,Sub,graph,child.csv::Child,,name,greeting,\n")
    child = tmp_path / "child.csv"
    child.write_text(durable_graphs.HEADER + 'Child,Greet,template,"Hello, {name}!",,name,greeting,\n')
    saver = agentmap.checkpointer(str(tmp_path / "runs.db"))
    app = agentmap.compile(path, checkpointer=saver, state_keys=["name"])
    assert app.revision is not None and set(app.revision.files) == {"review.csv", "child.csv"}
    assert app.invoke({"name": "Ada"}, {"configurable": {"thread_id": "t1"}}).interrupts
    child.write_text(durable_graphs.HEADER + 'Child,Greet,template,"Bye, {name}.",,name,greeting,\n')
    result = agentmap.compile(path, checkpointer=saver, state_keys=["name"]).thread("t1").resume("yes")
    assert "Hello, Ada!" in str(result.state["greeting"])  # the child as the revision stored it


def test_a_workbooks_other_sheets_are_part_of_its_revision(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    durable_graphs.counter(tmp_path, 1, name="unused.csv")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Review"
    for row in OLD.splitlines():
        sheet.append(row.split(","))
    book.create_sheet("Notes").append(["a note about the workflow"])
    path = tmp_path / "review.xlsx"
    book.save(path)
    saver = agentmap.checkpointer(str(tmp_path / "runs.db"))
    first = _paused(path, saver).revision
    book["Notes"].append(["another note"])  # only the other sheet changes
    book.save(path)
    edited = agentmap.compile(path, checkpointer=saver)
    assert first is not None and edited.revision is not None and edited.revision.id != first.id
    thread = edited.thread("t1")
    assert thread.behind() and thread.resume("yes").success


def _moves(saver: Any, thread: str) -> list[str]:
    listed = saver.list({"configurable": {"thread_id": thread}})
    return [c.checkpoint["id"] for c in listed if "agentmap_moved_from" in (c.metadata or {})]


def test_two_resumes_moving_one_thread_at_once_move_it_once(tmp_path: Path) -> None:
    import threading

    db = str(tmp_path / "runs.db")
    path = _workflow(tmp_path)
    _paused(path, agentmap.checkpointer(db))
    path.write_text(NEW, encoding="utf-8")
    migration = Migration(nodes={"Review": "Check"}, defaults={"channel": "mail"})
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def move() -> None:
        thread = agentmap.compile(path, checkpointer=agentmap.checkpointer(db)).thread("t1")
        start.wait()
        try:
            thread.move(migration=migration)
            outcomes.append("moved")
        except ConfigError as err:
            outcomes.append(err.code)

    workers = [threading.Thread(target=move) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(outcomes) in (["moved", "thread-busy"], ["moved", "moved"])  # the second found it moved
    assert len(_moves(agentmap.checkpointer(db), "t1")) == 1


def test_a_resume_whose_thread_is_moved_between_its_reads_finds_it_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of two resumes in the other window (CI's loaded run found it): the late one has read the thread's
    latest checkpoint on the old revision, then the other moves it, then the late one reads its state. Read with
    the old revision's graph, the moved checkpoint has no node left to run: the late one said the thread had
    finished (`nothing-to-resume`). It finds the thread moved instead."""
    db = str(tmp_path / "runs.db")
    path = _workflow(tmp_path)
    _paused(path, agentmap.checkpointer(db))
    path.write_text(NEW, encoding="utf-8")
    migration = Migration(nodes={"Review": "Check"}, defaults={"channel": "mail"})
    saver = agentmap.checkpointer(db)
    late = agentmap.compile(path, checkpointer=saver).thread("t1")
    late.snapshot()  # its graph is the old revision's
    read = saver.get_tuple
    other: list[Any] = []  # the other resume's thread

    def then_moved_by_another(config: Any) -> Any:
        found = read(config)
        if not other:  # the late resume's first read: the other resume moves the thread right after it
            other.append(agentmap.compile(path, checkpointer=agentmap.checkpointer(db)).thread("t1"))
            other[0].move(migration=migration)
        return found

    monkeypatch.setattr(saver, "get_tuple", then_moved_by_another)
    on_it = late.move(migration=migration)
    assert len(_moves(agentmap.checkpointer(db), "t1")) == 1
    assert on_it.app.revision is not None and on_it.app.revision.id == other[0].asked.revision.id
    assert on_it.snapshot().next == ("Check",)


def test_a_resume_that_read_the_thread_before_another_moved_it_does_not_move_it_again(tmp_path: Path) -> None:
    """The race of two resumes, made to happen in order: the late one read the thread on its old revision, then
    the other moved it; the late one finds it on the new revision and moves nothing (before: a second move, its map
    applied to a thread already moved)."""
    db = str(tmp_path / "runs.db")
    path = _workflow(tmp_path)
    _paused(path, agentmap.checkpointer(db))
    path.write_text(NEW, encoding="utf-8")
    migration = Migration(nodes={"Review": "Check"}, defaults={"channel": "mail"})
    late = agentmap.compile(path, checkpointer=agentmap.checkpointer(db)).thread("t1")
    late.snapshot()  # it has read the thread: its graph is the old revision's
    to = agentmap.compile(path, checkpointer=agentmap.checkpointer(db))
    to.thread("t1").move(migration=migration)
    on_it = late.move(migration=migration)
    assert len(_moves(agentmap.checkpointer(db), "t1")) == 1
    assert on_it.app.revision is not None and to.revision is not None
    assert on_it.app.revision.id == to.revision.id  # it goes on at the new one


def test_a_move_claimed_by_a_resume_that_died_goes_on(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    from agentmap.runtime.answers import claim_answers

    saver = agentmap.checkpointer(str(tmp_path / "runs.db"))
    path = _workflow(tmp_path)
    _paused(path, saver)
    path.write_text(NEW, encoding="utf-8")
    saved = saver.get_tuple({"configurable": {"thread_id": "t1"}})
    config = {"configurable": {**saved.config["configurable"], "checkpoint_ns": "agentmap:move"}}
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    claim_answers(saver, config, {"move": "x"}, "t1", f"{socket.gethostname()}:{dead.stdout.strip()}:a")
    thread = agentmap.compile(path, checkpointer=saver).thread("t1")
    moved = thread.move(migration=Migration(nodes={"Review": "Check"}, defaults={"channel": "mail"}))
    assert moved.resume("yes").success
