"""`agentmap logs` (agentmap/cli/logs.py) on a real SQLite decision log."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agentmap.cli.logs import register
from agentmap.llm.decision_log import SQLiteDecisionLog


def app() -> typer.Typer:
    cli = typer.Typer()

    @cli.callback()
    def _root() -> None:
        """Root, so `logs` stays a subcommand."""

    register(cli)
    return cli


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    path = tmp_path / "decisions.db"

    async def fill() -> None:
        with SQLiteDecisionLog(path) as log:
            for i, conversation in enumerate(("c1", "c1", "c2")):
                await log.write_decision_log(
                    decision_id=f"d{i}",
                    conversation_id=conversation,
                    user_id="ada",
                    message=f"message {i}",
                    intent_type="add_task",
                    decision_type="INVOKE_TOOL",
                    outcome_category="SUCCESS",
                    duration_ms=3,
                    response_text=f"reply {i}",
                )
                await log.write_tool_invocation_log(
                    decision_id=f"d{i}",
                    tool_name="add_task",
                    parameters={"title": f"t{i}"},
                    result={"id": i},
                    success=True,
                    error_code=None,
                    error_message=None,
                    duration_ms=1,
                )

    asyncio.run(fill())
    return path


def test_logs_prints_decisions_and_tool_calls(log_file: Path) -> None:
    result = CliRunner().invoke(app(), ["logs", "--db", str(log_file)])
    assert result.exit_code == 0, result.output
    assert result.output.count("INVOKE_TOOL / SUCCESS") == 3
    assert 'tool add_task({"title": "t2"}) -> ok' in result.output


def test_logs_filters_and_limits(log_file: Path) -> None:
    result = CliRunner().invoke(app(), ["logs", "--db", str(log_file), "--conversation", "c1", "-n", "1"])
    assert "message 1" in result.output
    assert "message 0" not in result.output and "message 2" not in result.output


def test_logs_json(log_file: Path) -> None:
    result = CliRunner().invoke(app(), ["logs", "--db", str(log_file), "--json"])
    data = json.loads(result.output)
    assert [d["decision_id"] for d in data["decisions"]] == ["d0", "d1", "d2"]
    assert data["decisions"][0]["tool_invocations"][0]["parameters"] == {"title": "t0"}


def test_logs_default_path_from_the_environment(log_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMAP_DECISION_LOG", str(log_file))
    result = CliRunner().invoke(app(), ["logs", "--no-tools"])
    assert result.exit_code == 0
    assert "reply 0" in result.output and "tool add_task" not in result.output


def test_logs_without_a_log_exits_3(tmp_path: Path) -> None:
    result = CliRunner().invoke(app(), ["logs", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 3
    assert "No decision log at" in result.output
