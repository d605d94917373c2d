"""The engine contract held exactly: the authenticated user is the one a tool acts for, and the decision
log is called with exactly the contract's keyword arguments."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import CONSTITUTION, RecordingExecutor
from openai_stub import OpenAIStub, chat_model, text, tool_calls

from agentmap.agents.tools import LocalToolExecutor
from agentmap.contracts.engine import DecisionContext
from agentmap.llm.adapter import LLMAdapter
from agentmap.llm.decision_log import SQLiteDecisionLog
from agentmap.llm.engine import LLMAgentEngine


def whoami(user_id: str) -> str:
    """Say whom the call is made for."""
    return user_id


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def _context() -> DecisionContext:
    return DecisionContext(
        user_id="alice", message="who am I?", conversation_id="c1", message_history=[], pending_confirmation=None
    )


async def test_a_model_supplied_user_id_never_reaches_the_tool() -> None:
    executor = LocalToolExecutor([whoami])
    result = await executor.execute("whoami", {"user_id": "mallory"}, "alice")
    assert result.success and result.data == "alice"


async def test_the_engine_passes_parameters_without_user_id(stub: OpenAIStub) -> None:
    stub.script(tool_calls(("whoami", {"user_id": "mallory"})), text("You are alice."))
    executor = RecordingExecutor([whoami])
    engine = LLMAgentEngine(LLMAdapter(chat_model(stub)), executor, CONSTITUTION)
    await engine.process_message(_context())
    assert executor.calls == [("whoami", {}, "alice")]
    reported = stub.requests[1]["messages"][-1]["content"]
    assert "alice" in reported and "mallory" not in reported


class ContractLog:
    """A logging service written to exactly the contract's signatures."""

    def __init__(self) -> None:
        self.decisions: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []

    async def write_decision_log(
        self,
        *,
        decision_id: str,
        conversation_id: str,
        user_id: str,
        message: str,
        intent_type: str,
        decision_type: str,
        outcome_category: str,
        duration_ms: float,
    ) -> None:
        self.decisions.append({"decision_id": decision_id, "decision_type": decision_type, "user_id": user_id})

    async def write_tool_invocation_log(
        self,
        *,
        decision_id: str,
        tool_name: str,
        parameters: dict[str, Any],
        result: Any,
        success: bool,
        error_code: str | None,
        error_message: str | None,
        duration_ms: float,
    ) -> None:
        self.tools.append({"tool_name": tool_name, "parameters": parameters})


async def test_a_log_written_to_the_contract_gets_the_pending_row_and_the_final_update(stub: OpenAIStub) -> None:
    stub.script(tool_calls(("whoami", {})), text("You are alice."))
    log = ContractLog()
    engine = LLMAgentEngine(LLMAdapter(chat_model(stub)), LocalToolExecutor([whoami]), CONSTITUTION, decision_log=log)
    await engine.process_message(_context())
    assert [d["decision_type"] for d in log.decisions] == ["PENDING", "INVOKE_TOOL"]
    assert len({d["decision_id"] for d in log.decisions}) == 1 and log.decisions[0]["user_id"] == "alice"
    assert log.tools == [{"tool_name": "whoami", "parameters": {}}]


async def test_the_sqlite_log_still_keeps_the_reply_text(stub: OpenAIStub, tmp_path: Path) -> None:
    stub.script(text("Hello there."))
    with SQLiteDecisionLog(tmp_path / "d.db") as log:
        engine = LLMAgentEngine(
            LLMAdapter(chat_model(stub)), LocalToolExecutor([whoami]), CONSTITUTION, decision_log=log
        )
        await engine.process_message(_context())
        [row] = log.list_decisions()
    assert (row.decision_type, row.response_text) == ("RESPOND_ONLY", "Hello there.")
