"""The `llm_planner` agent: plans from a chat model, driven through the real `ChatOpenAI` against a
scripted local server, and an orchestrated CSV workflow whose planner is an `llm_planner` node."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_stub import OpenAIStub, chat_model, error, text, tool_calls

import agentmap
from agentmap.contracts.io import AgentRequest, ErrorType, RequestMetadata, ResponseStatus
from agentmap.llm.adapter import LLMAdapter
from agentmap.llm.planner import LLMPlanner, LLMPlannerAgent
from agentmap.testing import assert_agent_io_compliance

REPO = Path(__file__).resolve().parents[2]
TOOLS = {"search_flights": "Find flights between two cities", "search_hotels": "Find hotels in a city"}


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def planner(stub: OpenAIStub, **kwargs: Any) -> LLMPlannerAgent:
    return LLMPlannerAgent(LLMPlanner(LLMAdapter(chat_model(stub)), TOOLS, **kwargs), name="plan")


def request(goal: str = "Trip from Lisbon to Paris", **inputs: Any) -> AgentRequest:
    return AgentRequest(goal=goal, task="Plan", inputs=inputs, metadata=RequestMetadata(trace_id="t-1"))


PLAN = {
    "steps": [
        {"tool": "search_flights", "inputs": {"origin": "Lisbon", "destination": "Paris"}},
        {"tool": "search_hotels", "inputs": {"city": "${search_flights.destination}"}, "id": "hotel"},
    ]
}


async def test_a_json_plan_becomes_the_steps_and_the_model_sees_goal_and_tools(stub: OpenAIStub) -> None:
    stub.script(text(json.dumps(PLAN)))
    response = await assert_agent_io_compliance(planner(stub, instructions="Prefer direct flights."), request())

    assert response.status is ResponseStatus.SUCCESS
    assert response.result == PLAN
    sent = stub.requests[0]
    system, user = sent["messages"][0]["content"], sent["messages"][1]["content"]
    assert '{"steps": [' in system and "Prefer direct flights." in system
    assert "- search_flights(): Find flights between two cities" in system
    assert user == "Trip from Lisbon to Paris"
    assert sent["temperature"] == 0.0
    assert [t["function"]["name"] for t in sent["tools"]] == list(TOOLS)


async def test_a_fenced_plan_with_prose_around_it_is_read(stub: OpenAIStub) -> None:
    stub.script(text("Here is the plan:\n```json\n" + json.dumps(PLAN["steps"]) + "\n```"))
    response = await planner(stub).process(request())
    assert response.status is ResponseStatus.SUCCESS
    assert [s["tool"] for s in response.result["steps"]] == ["search_flights", "search_hotels"]


async def test_tool_calls_are_steps_in_order(stub: OpenAIStub) -> None:
    stub.script(
        tool_calls(("search_flights", {"origin": "Rome", "destination": "Oslo"}), ("search_hotels", {"city": "Oslo"}))
    )
    response = await planner(stub).process(request("Trip from Rome to Oslo", nights=2))
    assert response.result == {
        "steps": [
            {"tool": "search_flights", "inputs": {"origin": "Rome", "destination": "Oslo"}},
            {"tool": "search_hotels", "inputs": {"city": "Oslo"}},
        ]
    }
    assert stub.requests[0]["messages"][1]["content"] == "Trip from Rome to Oslo\nInputs:\nnights: 2"


async def test_a_plan_that_is_not_json_is_a_validation_error(stub: OpenAIStub) -> None:
    stub.script(text("First search flights, then hotels."))
    response = await assert_agent_io_compliance(planner(stub), request())
    assert response.status is ResponseStatus.ERROR
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert response.error.message.startswith("planner 'plan': the model's plan is not valid JSON (")
    assert "'First search flights, then hotels.'" in response.error.message
    assert 'must answer with {"steps": [...]} only' in response.error.message


async def test_an_unknown_tool_is_named_with_a_close_match(stub: OpenAIStub) -> None:
    steps = [{"tool": "search_flights", "inputs": {}}, {"tool": "search_hotel", "inputs": {}}, {"tool": "book_car"}]
    stub.script(text(json.dumps({"steps": steps})))
    response = await planner(stub).process(request())
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert response.error.message == (
        "planner 'plan': the model's plan cannot run: step 2 names unknown tool 'search_hotel' (did you mean "
        "'search_hotels'?); step 3 names unknown tool 'book_car'; the tools are: search_flights, search_hotels"
    )


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"plan": []}', 'the model\'s plan must be {"steps": [...]} with a list of steps'),
        ('{"steps": [{"inputs": {}}]}', 'step 1: a step names exactly one of "tool" or "agent"'),
        ('{"steps": [{"tool": "search_flights", "inputs": "Paris"}]}', "step 1: "),
        ('{"steps": []}', "found no steps for the goal"),
    ],
)
async def test_malformed_plans_say_what_is_wrong(stub: OpenAIStub, reply: str, expected: str) -> None:
    stub.script(text(reply))
    response = await planner(stub).process(request())
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert expected in response.error.message


async def test_a_rate_limit_is_a_recoverable_error(stub: OpenAIStub) -> None:
    stub.script(error(429, "slow down"))
    response = await planner(stub).process(request())
    assert response.error is not None
    assert (response.error.type, response.error.recoverable) == (ErrorType.NETWORK, True)
    assert "rate limit" in response.error.message


async def test_a_slow_model_is_a_recoverable_timeout(stub: OpenAIStub) -> None:
    from openai_stub import slow

    stub.script(slow(2.0, text(json.dumps(PLAN))))
    response = await planner(stub, timeout_seconds=0.2).process(request())
    assert response.error is not None
    assert (response.error.type, response.error.recoverable) == (ErrorType.TIMEOUT, True)


async def test_tools_in_the_request_context_are_offered_too(stub: OpenAIStub) -> None:
    stub.script(text('{"steps": [{"tool": "rent_car", "inputs": {"city": "Paris"}}]}'))
    call = request()
    call = call.model_copy(update={"context": {"tools": {"rent_car": "Rent a car"}}})
    response = await planner(stub).process(call)
    assert response.status is ResponseStatus.SUCCESS
    assert "- rent_car(): Rent a car" in stub.requests[0]["messages"][0]["content"]


# -- in a CSV workflow -------------------------------------------------------------------------

HEADER = (
    "GraphName,Node,AgentType,Prompt,Context,Input_Fields,Output_Field,Success_Next,Failure_Next,"
    "Tool_Source,Available_Tools"
)


def _cell(value: dict[str, Any]) -> str:
    return '"' + json.dumps(value).replace('"', '""') + '"'


def write_trip(folder: Path, planner_context: dict[str, Any]) -> Path:
    (folder / "tools").mkdir()
    (folder / "data").mkdir()
    shutil.copy(REPO / "graphs" / "tools" / "travel.py", folder / "tools" / "travel.py")
    shutil.copy(REPO / "graphs" / "data" / "trips.json", folder / "data" / "trips.json")
    orchestrator = {"planner": "planner", "workers": ["flights", "hotels"], "on_failure": "stop"}
    rows = [
        HEADER,
        f"Trip,run,orchestrator,Plan the trip,{_cell(orchestrator)},goal,answer=response|final=result.final|"
        "problem=error.message,,,,",
        f"Trip,planner,llm_planner,Plan trips.,{_cell(planner_context)},,,,,,",
        "Trip,flights,worker,,,,,,,tools/travel.py,search_flights",
        "Trip,hotels,worker,,,,,,,tools/travel.py,search_hotels",
    ]
    path = folder / "trip.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_an_orchestrated_workflow_runs_the_models_plan(
    stub: OpenAIStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    context = {
        "model": "openai:gpt-stub",
        "base_url": stub.base_url,
        "max_retries": 0,
        "workers": ["flights", "hotels"],
    }
    plan = {
        "steps": [
            {"tool": "search_flights", "inputs": {"origin": "New York", "destination": "Paris"}},
            {"tool": "search_hotels", "inputs": {"city": "${search_flights.destination}", "nights": 2}},
        ]
    }
    stub.script(text(json.dumps(plan)))
    result = agentmap.run(write_trip(tmp_path, context), {"goal": "Two nights in Paris from New York"})

    assert result.success, result.errors
    assert result.state["final"]["city"] == "Paris"
    assert [s["status"] for s in result.state["answer"]["result"]["steps"]] == ["success", "success"]
    offered = {t["function"]["name"]: t["function"] for t in stub.requests[0]["tools"]}
    assert set(offered) == {"search_flights", "search_hotels"}
    assert "origin" in offered["search_flights"]["parameters"]["properties"]  # the workers' real schemas


def test_an_llm_planner_with_context_cache_plans_a_repeated_goal_from_the_llm_cache(
    stub: OpenAIStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)  # the cache without a checkpoint: .agentmap/llm_cache.db in the working folder
    context = {
        "model": "openai:gpt-stub",
        "base_url": stub.base_url,
        "max_retries": 0,
        "workers": ["flights"],
        "cache": {"ttl": 3600},
    }
    stub.script(
        text(json.dumps({"steps": [{"tool": "search_flights", "inputs": {"origin": "Paris", "destination": "Rome"}}]}))
    )
    path = write_trip(tmp_path, context)
    results = [agentmap.run(path, {"goal": "Fly from Paris"}) for _ in range(2)]
    assert [r.success for r in results] == [True, True], [r.errors for r in results]
    assert len(stub.requests) == 1  # the second plan came from the cache


def test_a_bad_cache_in_an_llm_planners_context_is_a_validation_error(tmp_path: Path) -> None:
    context = {"model": "offline", "workers": ["flights"], "cache": {"ttl": -1}}
    issues = agentmap.validate(write_trip(tmp_path, context))
    assert any('Context cache "ttl" must be a positive' in i.message for i in issues), issues


def test_an_invalid_plan_takes_the_failure_path_with_the_reason(
    stub: OpenAIStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    context = {"model": "openai:gpt-stub", "base_url": stub.base_url, "max_retries": 0, "workers": "flights|hotels"}
    stub.script(text('{"steps": [{"tool": "book_flight", "inputs": {}}]}'))
    result = agentmap.run(write_trip(tmp_path, context), {"goal": "Fly to Paris"})

    assert not result.success
    assert "step 1 names unknown tool 'book_flight'" in result.state["problem"]
    assert "the tools are: search_flights, search_hotels" in result.state["problem"]


def test_the_offline_model_plans_one_step(tmp_path: Path) -> None:
    path = write_trip(tmp_path, {"model": "offline", "workers": ["flights", "hotels"]})
    result = agentmap.run(path, {"goal": "search flights origin New York destination Paris"})

    assert result.success, result.errors
    assert result.state["final"]["destination"] == "Paris"
    assert result.state["final"]["flights"]


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({"model": "offline"}, 'an llm_planner needs the tools it may plan with: Context "workers"'),
        ({"model": "offline", "tools": 3}, "tools must be a list of tool names"),
        ({"model": "nosuch:x", "tools": ["a"]}, "unknown model provider"),
    ],
)
def test_bad_configuration_is_found_before_the_run(tmp_path: Path, context: dict[str, Any], expected: str) -> None:
    issues = agentmap.validate(write_trip(tmp_path, context))
    messages = [i.message for i in issues if i.severity == "error"]
    assert any(expected in m for m in messages), messages


def test_a_worker_name_that_is_no_node_is_reported(tmp_path: Path) -> None:
    result = agentmap.run(write_trip(tmp_path, {"model": "offline", "workers": ["flight"]}), {"goal": "flights"})
    assert not result.success
    assert (
        "Context workers names 'flight', which is not a node of this graph (did you mean 'flights'?)"
        in (result.state["problem"])
    )
