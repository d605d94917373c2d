"""The deterministic planner and the `planner` agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentmap.agents.base import AgentEnvironment
from agentmap.contracts.io import AgentRequest, ErrorType, RequestMetadata, ResponseStatus
from agentmap.orchestration import DeterministicPlanner, PlannerAgent, PlanRule, PlanStep
from agentmap.testing import assert_agent_io_compliance

TRIP_RULE = {
    "pattern": r"trip from (?P<origin>[A-Za-z ]+?) to (?P<destination>[A-Za-z ]+?) for (?P<nights>\d+) nights?",
    "steps": [
        {"tool": "search_flights", "inputs": {"origin": "{origin}", "destination": "{destination}"}},
        {"tool": "search_hotels", "inputs": {"city": "{destination}", "nights": "{nights}", "note": "{nights} nights"}},
        {"tool": "book", "inputs": {"flight": "${search_flights.cheapest}"}},
    ],
}


def _request(goal: str, **inputs: Any) -> AgentRequest:
    return AgentRequest(goal=goal, task="Plan", metadata=RequestMetadata(trace_id="p-1"), inputs=inputs)


async def _plan(planner: PlannerAgent, goal: str, **inputs: Any) -> Any:
    response = await planner.process(_request(goal, **inputs))
    return response


async def test_a_rule_pattern_fills_placeholders_from_named_groups() -> None:
    planner = PlannerAgent(DeterministicPlanner(rules=[TRIP_RULE]))
    response = await _plan(planner, "Plan a trip from New York to Paris for 3 nights")

    assert response.status is ResponseStatus.SUCCESS
    steps = response.result["steps"]
    assert steps[0] == {"tool": "search_flights", "inputs": {"origin": "New York", "destination": "Paris"}}
    assert steps[1]["inputs"] == {"city": "Paris", "nights": "3", "note": "3 nights"}
    assert steps[2]["inputs"] == {"flight": "${search_flights.cheapest}"}  # left for the worker to resolve
    assert response.metadata["tool_count"] == 3
    assert [e["event"] for e in response.trace] == ["plan:start", "plan:complete"]
    assert all(e["trace_id"] == "p-1" for e in response.trace)


async def test_request_inputs_fill_placeholders_and_keep_their_type() -> None:
    planner = PlannerAgent(DeterministicPlanner(steps=[{"tool": "search_hotels", "inputs": {"nights": "{nights}"}}]))
    response = await _plan(planner, "Find a hotel", nights=4)
    assert response.result["steps"][0]["inputs"] == {"nights": 4}


async def test_keywords_match_whole_words_in_any_case_and_every_matching_rule_adds_steps() -> None:
    planner = DeterministicPlanner(
        rules=[
            {"keywords": ["flight", "fly"], "steps": [{"tool": "search_flights"}]},
            {"keywords": ["hotel"], "steps": [{"tool": "search_hotels"}]},
            {"keywords": ["car"], "steps": [{"tool": "rent_car"}]},
        ],
        steps=[{"tool": "fallback"}],
    )
    both = await planner.plan("I want to FLY and need a hotel", _request("x"))
    assert [s.tool for s in both] == ["search_flights", "search_hotels"]
    assert [s.tool for s in await planner.plan("carpool ideas", _request("x"))] == ["fallback"]


async def test_fixed_steps_are_the_plan_when_no_rule_matches() -> None:
    planner = PlannerAgent(DeterministicPlanner(steps=[{"agent": "writer", "inputs": {"topic": "x"}}]))
    response = await _plan(planner, "anything")
    assert response.result == {"steps": [{"agent": "writer", "inputs": {"topic": "x"}}]}


async def test_no_steps_is_a_validation_error_saying_what_to_add() -> None:
    planner = PlannerAgent(DeterministicPlanner(rules=[TRIP_RULE]), name="trips")
    response = await _plan(planner, "Teach me Italian")
    assert response.status is ResponseStatus.ERROR
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert response.error.message.startswith("planner 'trips' found no steps for the goal 'Teach me Italian'")
    assert 'or a fixed "steps" list' in response.error.message
    await assert_agent_io_compliance(planner)


async def test_a_placeholder_without_a_value_is_a_validation_error() -> None:
    planner = PlannerAgent(DeterministicPlanner(steps=[{"tool": "book", "inputs": {"date": "{date}"}}]))
    response = await _plan(planner, "Book it")
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert "input 'date' uses {date}" in response.error.message
    assert "named group (?P<date>...)" in response.error.message


async def test_max_steps_caps_the_plan_and_says_so_in_the_trace() -> None:
    planner = PlannerAgent(DeterministicPlanner(steps=[{"tool": f"t{i}"} for i in range(5)]))
    response = await _plan(planner, "go", max_steps=2)
    assert [s["tool"] for s in response.result["steps"]] == ["t0", "t1"]
    assert any(e["event"] == "plan:truncated" and e["planned"] == 5 for e in response.trace)


async def test_a_planner_that_raises_gives_an_error_response() -> None:
    class Broken:
        async def plan(self, goal: str, request: AgentRequest) -> list[PlanStep]:
            raise ConnectionError("model server unreachable")

    response = await _plan(PlannerAgent(Broken(), name="llm"), "go")
    assert response.error is not None and response.error.type is ErrorType.NETWORK
    assert response.error.recoverable
    assert "planner 'llm' raised ConnectionError: model server unreachable" in response.error.message


async def test_any_planner_implementation_plugs_in() -> None:
    class Echo:
        async def plan(self, goal: str, request: AgentRequest) -> list[PlanStep]:
            return [PlanStep(tool="say", inputs={"text": goal})]

    response = await _plan(PlannerAgent(Echo()), "hello")
    assert response.result == {"steps": [{"tool": "say", "inputs": {"text": "hello"}}]}


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ({"steps": [{"tool": "a"}]}, 'needs "keywords"'),
        ({"pattern": "(unclosed", "steps": [{"tool": "a"}]}, "not a valid regular expression"),
        ({"keywords": ["a"], "steps": [{"tool": "a", "agent": "b"}]}, 'exactly one of "tool" or "agent"'),
        ({"keywords": ["a"], "steps": [{"inputs": {}}]}, 'exactly one of "tool" or "agent"'),
        ({"keywords": ["a"], "steps": [{"tool": "a", "cost_usd": -1}]}, "greater than or equal to 0"),
    ],
)
def test_malformed_rules_are_rejected(rule: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=words.replace("(", r"\(")):
        PlanRule.model_validate(rule)


def test_validate_config_reports_planner_context_problems() -> None:
    env = AgentEnvironment(base_dir=Path("."))
    assert PlannerAgent.validate_config("", {"rules": [TRIP_RULE]}, env) == []
    assert PlannerAgent.validate_config("", {}, env) == [
        'a planner needs "steps" (a fixed plan) or "rules" (goal patterns -> steps) in its Context'
    ]
    (problem,) = PlannerAgent.validate_config("", {"steps": [{"tool": "a", "agent": "b"}]}, env)
    assert problem.startswith("bad plan in Context: steps.0:") and '"tool" or "agent"' in problem
