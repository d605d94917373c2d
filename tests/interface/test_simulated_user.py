"""A simulated user played by a real chat model: the local OpenAI-compatible server (tests/llm/openai_stub.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agentmap.interface.eval_runner import run_eval
from agentmap.interface.evaluate import score_logs
from agentmap.interface.logs import read_log
from agentmap.interface.scenarios import Scenario, ScenarioTurn
from agentmap.interface.simulated_user import SimulatedUser

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from openai_stub import OpenAIStub, error, text


async def booking_agent(
    prompt: str, chat_history: str | None = None, memory: str | None = None, config: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"content": "Booked, your table is confirmed." if "4" in prompt else "For how many people?"}


def _scenario(stop_when: str = "", max_turns: int = 4) -> Scenario:
    user = SimulatedUser(goal="Book a table for 4.", persona="a pirate", max_turns=max_turns, stop_when=stop_when)
    return Scenario(name="booking", turns=(ScenarioTurn(turn=1, message=""),), user=user)


def _user(model_settings: dict[str, Any]) -> dict[str, Any]:
    return {"user_model": "openai:gpt-user", "model_settings": model_settings}


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIStub() as stub:
        yield stub, {"llm": {"base_url": stub.base_url, "max_retries": 0}}


async def test_an_llm_plays_the_persona_until_it_says_done(settings: Any, tmp_path: Path) -> None:
    stub, model_settings = settings
    stub.script(text("Arr, I need a table."), text("We be 4 hungry sailors."), text("DONE"))
    summary = await run_eval([_scenario()], booking_agent, tmp_path, **_user(model_settings))
    [outcome] = summary.outcomes
    assert outcome.stop_reason == "completed"
    turns = [(t.role, t.text) for t in read_log(outcome.log).turns]
    assert turns == [
        ("user", "Arr, I need a table."),
        ("assistant", "For how many people?"),
        ("user", "We be 4 hungry sailors."),
        ("assistant", "Booked, your table is confirmed."),
    ]
    first, _, last = stub.requests
    system = first["messages"][0]["content"]
    assert "Persona: a pirate" in system and "Your goal: Book a table for 4." in system
    # the roles are swapped: the agent's replies reach the model as the user's words, its own as the assistant's
    assert [m["role"] for m in last["messages"][1:]] == ["user", "assistant", "user", "assistant", "user"]
    assert last["messages"][-1]["content"] == "Booked, your table is confirmed."
    assert score_logs(tmp_path).passed == 1


async def test_stop_when_ends_the_conversation_without_asking_the_user(settings: Any, tmp_path: Path) -> None:
    stub, model_settings = settings
    stub.script(text("Table for 4 please."))
    summary = await run_eval([_scenario('"confirmed"')], booking_agent, tmp_path, **_user(model_settings))
    assert summary.outcomes[0].stop_reason == "completed" and stub.remaining == 0


async def test_a_user_that_never_reaches_the_goal_stops_at_max_turns(settings: Any, tmp_path: Path) -> None:
    stub, model_settings = settings
    stub.script(*[text("I want a table.")] * 3)
    summary = await run_eval([_scenario('"confirmed"', max_turns=3)], booking_agent, tmp_path, **_user(model_settings))
    assert summary.outcomes[0].stop_reason == "max_turns"
    [run] = score_logs(tmp_path).runs
    assert [f.kind for f in run.findings] == ["goal"]


async def test_a_failing_user_model_is_an_error_in_a_valid_log(settings: Any, tmp_path: Path) -> None:
    stub, model_settings = settings
    stub.script(error(500, "down"))
    summary = await run_eval([_scenario()], booking_agent, tmp_path, **_user(model_settings))
    [outcome] = summary.outcomes
    assert outcome.stop_reason == "agent_error"
    assert read_log(outcome.log).turns[-1].text.startswith("Error: the simulated user failed (")
