"""`CompiledWorkflow.thread`: one saved thread, its status and questions, the one answer rule, continuing,
forking and making way for a new run."""

from __future__ import annotations

from pathlib import Path

import durable_graphs
import pytest

import agentmap
from agentmap.agents.questions import AnswerError
from agentmap.errors import ConfigError


def _two_questions(tmp_path: Path) -> tuple[agentmap.CompiledWorkflow, list[str]]:
    durable_graphs.counter(tmp_path, 1)  # the custom agents
    path = tmp_path / "two.csv"
    path.write_text(
        "GraphName,Node,AgentType,Input_Fields,Output_Field,Edge\n"
        "Two,Start,tick,count,count,A|B\nTwo,A,approve,,a,\nTwo,B,approve,,b,\n",
        encoding="utf-8",
    )
    app = agentmap.compile(path, checkpointer=str(tmp_path / "runs.db"))
    paused = app.invoke({"count": 0}, {"configurable": {"thread_id": "two"}})
    return app, [i.id for i in paused.interrupts]


def test_a_thread_tells_its_status_questions_and_history(tmp_path: Path) -> None:
    app, ids = _two_questions(tmp_path)
    thread = app.thread("two")
    assert thread.exists() and thread.status() == "paused"
    assert sorted(q.id for q in thread.questions()) == sorted(ids)
    assert len(thread.history()) >= 2
    with pytest.raises(ConfigError) as unknown:
        app.thread("nobody").status()
    assert unknown.value.code == "unknown-thread"


@pytest.mark.parametrize("partial", [True, False])
def test_a_partial_or_extra_answer_is_refused_naming_what_is_missing_or_not_waiting(
    tmp_path: Path, partial: bool
) -> None:
    app, ids = _two_questions(tmp_path)
    answer = {ids[0]: "yes"} if partial else {ids[0]: "yes", ids[1]: "no", "other": "yes"}
    with pytest.raises(ConfigError) as refused:
        app.resume("two", answer)
    assert refused.value.code == "ambiguous-resume"
    named = f"no answer for {ids[1]}" if partial else "other is not waiting"
    assert named in refused.value.message and ids[0] in (refused.value.hint or "")
    assert app.thread("two").status() == "paused"  # nothing was claimed
    done = app.thread("two").resume({ids[0]: "yes", ids[1]: "no"})
    assert {done.state["a"]["approved"], done.state["b"]["approved"]} == {True, False}


def test_one_question_takes_its_answer_as_given_or_by_interrupt_id(tmp_path: Path) -> None:
    app = agentmap.compile(durable_graphs.approval(tmp_path), checkpointer=str(tmp_path / "runs.db"))
    for thread_id, by_id in (("plain", False), ("by-id", True)):
        paused = app.invoke({"count": 0}, {"configurable": {"thread_id": thread_id}})
        answer = {paused.interrupts[0].id: "yes"} if by_id else "yes"
        assert app.thread(thread_id).resume(answer).state["decision"]["approved"] is True
    with pytest.raises(AnswerError):
        app.invoke({"count": 0}, {"configurable": {"thread_id": "bad"}})
        app.thread("bad").resume("perhaps")


def test_make_way_refuses_an_unfinished_thread_unless_restarted(tmp_path: Path) -> None:
    app = agentmap.compile(durable_graphs.approval(tmp_path), checkpointer=str(tmp_path / "runs.db"))
    app.invoke({"count": 0}, {"configurable": {"thread_id": "t"}})
    with pytest.raises(ConfigError) as refused:
        app.thread("t").make_way(restart=False, resume_hint="agentmap resume t")
    assert refused.value.code == "thread-unfinished" and "agentmap resume t" in (refused.value.hint or "")
    app.thread("t").make_way(restart=True, resume_hint="")
    assert not app.thread("t").exists()
    app.thread("t").make_way(restart=False, resume_hint="")  # nothing saved: nothing to refuse


def test_a_fork_continues_from_an_earlier_checkpoint_and_an_unknown_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICK_FILE", str(tmp_path / "ticks.txt"))
    app = agentmap.compile(durable_graphs.counter(tmp_path, 3), checkpointer=str(tmp_path / "runs.db"))
    app.invoke({"count": 0}, {"configurable": {"thread_id": "c"}})
    thread = app.thread("c")
    first_step = next(s for s in thread.history() if s.next == ("N02",))
    forked = thread.fork(first_step.config["configurable"]["checkpoint_id"])
    assert forked.resume().state["count"] == 3
    assert (tmp_path / "ticks.txt").read_text(encoding="utf-8").split() == ["N01", "N02", "N03", "N02", "N03"]
    with pytest.raises(ConfigError) as unknown:
        thread.fork("no-such-checkpoint")
    assert unknown.value.code == "unknown-thread"


def test_a_workflow_without_a_checkpointer_has_no_threads(tmp_path: Path) -> None:
    app = agentmap.compile(durable_graphs.counter(tmp_path, 1))
    with pytest.raises(ConfigError) as refused:
        app.thread("t")
    assert refused.value.code == "usage"
