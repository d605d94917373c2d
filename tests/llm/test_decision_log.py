"""The SQLite decision log: writes, the PENDING-then-outcome update, reading back and rendering."""

from __future__ import annotations

import sqlite3
from datetime import date
from pathlib import Path

import pytest

from agentmap.cli.logs import render_logs
from agentmap.llm.decision_log import (
    DecisionLogService,
    SQLiteDecisionLog,
    configured_log_path,
    default_log_path,
)


async def write_decision(log: SQLiteDecisionLog, decision_id: str, **overrides: object) -> None:
    fields: dict[str, object] = {
        "decision_id": decision_id,
        "conversation_id": "conv-1",
        "user_id": "alice",
        "message": "add milk",
        "intent_type": "LLM_PROCESSING",
        "decision_type": "PENDING",
        "outcome_category": "PENDING",
        "duration_ms": 0,
    }
    fields.update(overrides)
    await log.write_decision_log(**fields)  # type: ignore[arg-type]


async def test_pending_row_is_updated_with_the_outcome(tmp_path: Path) -> None:
    with SQLiteDecisionLog(tmp_path / "logs" / "d.db") as log:
        assert isinstance(log, DecisionLogService)
        await write_decision(log, "d1")
        pending = log.get_decision("d1")
        assert pending is not None and pending.decision_type == "PENDING"

        await write_decision(
            log,
            "d1",
            intent_type="add_task",
            decision_type="INVOKE_TOOL",
            outcome_category="SUCCESS",
            duration_ms=12.5,
            response_text="Added.",
        )
        done = log.get_decision("d1")
        assert done is not None
        assert (done.intent_type, done.decision_type, done.outcome_category) == ("add_task", "INVOKE_TOOL", "SUCCESS")
        assert (done.duration_ms, done.response_text, done.message) == (12.5, "Added.", "add milk")
        assert done.created_at == pending.created_at
        assert done.updated_at >= pending.updated_at
        assert len(log.list_decisions()) == 1


async def test_tool_invocations_round_trip_as_json(tmp_path: Path) -> None:
    with SQLiteDecisionLog(tmp_path / "d.db") as log:
        await write_decision(log, "d1")
        await log.write_tool_invocation_log(
            decision_id="d1",
            tool_name="add_task",
            parameters={"title": "milk", "tags": ["a"]},
            result={"id": 1, "due": date(2025, 1, 2)},
            success=True,
            error_code=None,
            error_message=None,
            duration_ms=1.5,
        )
        await log.write_tool_invocation_log(
            decision_id="d1",
            tool_name="complete_task",
            parameters={"task_id": 9},
            result=None,
            success=False,
            error_code="execution_error",
            error_message="there is no task 9",
            duration_ms=0.4,
        )
        first, second = log.get_tool_invocations("d1")
    assert (first.tool_name, first.parameters, first.result, first.success) == (
        "add_task",
        {"title": "milk", "tags": ["a"]},
        {"id": 1, "due": "2025-01-02"},
        True,
    )
    assert (second.success, second.error_code, second.error_message) == (False, "execution_error", "there is no task 9")


async def test_list_filters_by_conversation_and_user_and_keeps_the_latest(tmp_path: Path) -> None:
    with SQLiteDecisionLog(tmp_path / "d.db") as log:
        for i in range(5):
            await write_decision(log, f"a{i}", conversation_id="c-a", message=f"msg {i}")
        await write_decision(log, "b0", conversation_id="c-b", user_id="bob")
        assert [d.decision_id for d in log.list_decisions(conversation_id="c-a", limit=3)] == ["a2", "a3", "a4"]
        assert [d.decision_id for d in log.list_decisions(user_id="bob")] == ["b0"]
        assert len(log.list_decisions(limit=None)) == 6


def test_reading_a_missing_log_creates_nothing(tmp_path: Path) -> None:
    log = SQLiteDecisionLog(tmp_path / "none" / "d.db")
    assert log.list_decisions() == []
    assert log.get_decision("x") is None
    assert log.get_tool_invocations("x") == []
    assert not (tmp_path / "none").exists()


def test_default_path_is_under_dot_agentmap_or_the_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTMAP_DECISION_LOG", raising=False)
    assert default_log_path(tmp_path) == tmp_path / ".agentmap" / "decisions.db"
    monkeypatch.chdir(tmp_path)
    assert SQLiteDecisionLog().path == tmp_path / ".agentmap" / "decisions.db"
    monkeypatch.setenv("AGENTMAP_DECISION_LOG", str(tmp_path / "custom.db"))
    assert SQLiteDecisionLog().path == tmp_path / "custom.db"


async def test_the_file_is_plain_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    with SQLiteDecisionLog(path) as log:
        await write_decision(log, "d1")
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"decisions", "tool_invocations"} <= tables


async def test_render_logs_shows_decisions_and_tool_calls(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    with SQLiteDecisionLog(path) as log:
        await write_decision(
            log, "d1", decision_type="INVOKE_TOOL", outcome_category="TOOL_ERROR", response_text="No such task."
        )
        await log.write_tool_invocation_log(
            decision_id="d1",
            tool_name="complete_task",
            parameters={"task_id": 9},
            result=None,
            success=False,
            error_code="execution_error",
            error_message="there is no task 9",
            duration_ms=2,
        )
        await write_decision(log, "d2", conversation_id="other", message="hello")

    out = render_logs(path)
    assert "INVOKE_TOOL / TOOL_ERROR" in out
    assert "user: add milk" in out and "reply: No such task." in out
    assert 'tool complete_task({"task_id": 9}) -> FAILED execution_error: there is no task 9' in out
    assert out.index("add milk") < out.index("hello")

    only_other = render_logs(path, conversation_id="other")
    assert "hello" in only_other and "add milk" not in only_other
    assert "tool complete_task" not in render_logs(path, show_tools=False)


def test_render_logs_says_when_there_is_no_log(tmp_path: Path) -> None:
    assert render_logs(tmp_path / "missing.db").startswith("No decision log at ")


def test_configured_path_comes_from_the_llm_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTMAP_DECISION_LOG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert configured_log_path({"llm": {"decision_log": "logs/d.db"}}) == Path("logs/d.db")
    assert configured_log_path({"llm.decision_log": "x.db"}) == Path("x.db")
    assert configured_log_path({"llm": {"decision_log": False}}) is None
    assert configured_log_path({"llm": {"decision_log": "off"}}) is None
    assert configured_log_path({}) == tmp_path / ".agentmap" / "decisions.db"
