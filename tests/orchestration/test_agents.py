"""The `planner`, `worker` and `orchestrator` agent types in CSV workflows, run through `agentmap.compile`."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import agentmap
from agentmap.agents.registry import agent
from agentmap.contracts.io import AgentRequest, AgentResponse, success_response, trace_event

GRAPHS = Path(__file__).resolve().parents[2] / "graphs"
TRIP = GRAPHS / "trip_planner.csv"
HEADER = ["GraphName", "Node", "AgentType", "Prompt", "Description", "Context", "Input_Fields", "Output_Field"]
HEADER += ["Success_Next", "Failure_Next", "Tool_Source", "Available_Tools"]


@agent("test_orchestration_counter")
class Counter:
    """A custom `AgentProtocol` worker: counts the requests it gets."""

    def __init__(self) -> None:
        self.calls = 0

    async def process(self, request: AgentRequest) -> AgentResponse:
        self.calls += 1
        event = trace_event("count", request.metadata.trace_id, calls=self.calls)
        return success_response({"calls": self.calls, "seen": request.context.get("previous_result")}, trace=[event])


def write_graph(folder: Path, rows: list[dict[str, Any]]) -> Path:
    """Write a TripPlanner-like graph beside a copy of the travel tools and their data."""
    (folder / "tools").mkdir(exist_ok=True)
    (folder / "data").mkdir(exist_ok=True)
    shutil.copy(GRAPHS / "tools" / "travel.py", folder / "tools" / "travel.py")
    shutil.copy(GRAPHS / "data" / "trips.json", folder / "data" / "trips.json")
    path = folder / "graph.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, HEADER, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            ctx = row.get("Context")
            writer.writerow({"GraphName": "G", **row, "Context": json.dumps(ctx) if isinstance(ctx, dict) else ctx})
    return path


def orchestrated(folder: Path, orchestrator_context: dict[str, Any], planner_context: dict[str, Any]) -> Path:
    return write_graph(
        folder,
        [
            {
                "Node": "run",
                "AgentType": "orchestrator",
                "Context": {"planner": "plan", "workers": ["travel"], "retry_delay": 0, **orchestrator_context},
                "Input_Fields": "goal",
                "Output_Field": "answer",
                "Success_Next": "ok",
                "Failure_Next": "failed",
            },
            {"Node": "ok", "AgentType": "success", "Prompt": "done"},
            {
                "Node": "failed",
                "AgentType": "template",
                "Prompt": "failed: {errors}",
                "Input_Fields": "errors",
                "Output_Field": "message",
            },
            {"Node": "plan", "AgentType": "planner", "Context": planner_context},
            {"Node": "travel", "AgentType": "worker", "Tool_Source": "tools/travel.py"},
        ],
    )


def test_the_trip_planner_workflow_plans_a_trip() -> None:
    result = agentmap.run(TRIP, {"goal": "Plan a trip from New York to Paris for 3 nights"})

    assert result.success
    assert result.state["message"] == (
        "Your trip: Fly Air France AF11 from New York to Paris at 19:30 ($575), then stay 3 nights at "
        "Maison Rivoli ($1020). Total: $1595."
    )
    trip = AgentResponse.model_validate(result.state["trip"])
    assert trip.is_success()
    assert [s["worker"] for s in trip.result["steps"]] == ["flights", "hotels", "hotels"]
    trace_id = trip.metadata["trace_id"]
    assert all(event["trace_id"] == trace_id for event in trip.trace)
    assert result.summary[0].metadata == {"trace_id": trace_id, "status": "success"}
    assert [e.name for e in result.summary] == ["plan_trip", "show_itinerary"]


def test_a_trace_id_in_the_state_is_used_for_the_whole_run() -> None:
    app = agentmap.compile(TRIP)
    result = app.invoke({"goal": "Find flights from New York to London", "trace_id": "caller-7"})
    trip = result.state["trip"]
    assert trip["status"] == "success" and trip["result"]["final"]["cheapest"]["airline"] == "Virgin Atlantic"
    assert {e["trace_id"] for e in trip["trace"]} == {"caller-7"}


@pytest.mark.parametrize(
    ("goal", "words"),
    [
        ("Plan a trip from Mars to Paris for 3 nights", "no flight from Mars to Paris; known routes:"),
        ("Teach me Italian", "found no steps for the goal 'Teach me Italian'"),
        ("", "could not build its request: goal: goal must be a non-empty string"),
    ],
)
def test_a_failed_orchestration_takes_failure_next_with_the_reason(goal: str, words: str) -> None:
    result = agentmap.run(TRIP, {"goal": goal})
    assert [e.name for e in result.summary] == ["plan_trip", "explain_failure"]
    assert result.state["message"].startswith("The trip could not be planned: ")
    assert words in result.state["message"]
    assert result.state["trip"]["status"] == "error"
    assert words in result.errors[0]


def test_workers_can_be_custom_protocol_agents_and_plain_base_agents(tmp_path: Path) -> None:
    path = write_graph(
        tmp_path,
        [
            {
                "Node": "run",
                "AgentType": "orchestrator",
                "Context": {"planner": "plan", "workers": ["count", "greet"]},
                "Input_Fields": "goal",
                "Output_Field": "answer",
            },
            {
                "Node": "plan",
                "AgentType": "planner",
                "Context": {
                    "steps": [{"agent": "count"}, {"agent": "greet", "inputs": {"name": "Ada"}}, {"agent": "count"}]
                },
            },
            {"Node": "count", "AgentType": "test_orchestration_counter"},
            {"Node": "greet", "AgentType": "template", "Prompt": "Hello, {name}!", "Input_Fields": "name"},
        ],
    )
    answer = agentmap.run(path, {"goal": "Count and greet"}).state["answer"]
    assert answer["status"] == "success"
    assert answer["result"]["results"] == {
        "count": {"calls": 1, "seen": None},
        "greet": "Hello, Ada!",
        "count_2": {"calls": 2, "seen": "Hello, Ada!"},
    }


def _described_workers(tmp_path: Path, steps: list[dict[str, Any]]) -> Path:
    return write_graph(
        tmp_path,
        [
            {
                "Node": "run",
                "AgentType": "orchestrator",
                "Context": {"planner": "plan", "workers": ["greeter", "tally", "flights"]},
                "Input_Fields": "goal",
                "Output_Field": "answer",
            },
            {"Node": "plan", "AgentType": "planner", "Context": {"steps": steps}},
            {
                "Node": "greeter",
                "AgentType": "template",
                "Prompt": "Hello, {name}!",
                "Description": "Writes a greeting for a traveller by name",
                "Input_Fields": "name",
            },
            {"Node": "tally", "AgentType": "test_orchestration_counter", "Description": "Counts the requests it gets"},
            {
                "Node": "flights",
                "AgentType": "worker",
                "Description": "Searches flights between two cities",
                "Tool_Source": "tools/travel.py",
                "Available_Tools": "search_flights",
            },
        ],
    )


def test_a_step_naming_a_capability_goes_to_the_worker_whose_description_matches(tmp_path: Path) -> None:
    steps: list[dict[str, Any]] = [
        {"agent": "greeting writer", "inputs": {"name": "Ada"}},
        {"agent": "request counter"},
        {"tool": "search_flights", "worker": "flight search", "inputs": {"origin": "London", "destination": "Rome"}},
    ]
    answer = agentmap.run(_described_workers(tmp_path, steps), {"goal": "Greet, count, fly"}).state["answer"]

    assert answer["status"] == "success"
    assert [s["worker"] for s in answer["result"]["steps"]] == ["greeter", "tally", "flights"]
    assert answer["result"]["results"]["greeting writer"] == "Hello, Ada!"
    matched = [e for e in answer["trace"] if e["event"] == "step:matched"]
    assert [(e["step"], e["worker"], e["matched"]) for e in matched] == [
        ("greeting writer", "greeter", ["greeting", "writer"]),
        ("request counter", "tally", ["counter", "request"]),
        ("search_flights", "flights", ["flight", "search"]),
    ]
    assert matched[0]["reason"] == (
        "'greeting writer' is not a worker of orchestrator 'run'; worker 'greeter' matches it best "
        "on its Description and tools: greeting, writer"
    )


@pytest.mark.parametrize(
    ("step", "words"),
    [
        (
            {"agent": "spaceship booking"},
            "step 1 (spaceship booking): names worker 'spaceship booking', which is not a worker of orchestrator "
            "'run'; known: greeter, tally, flights; no worker's Description or tools share a word with it: name "
            "a worker, or describe the step with words from a worker's Description",
        ),
        (
            {"agent": "writes and counts"},
            "step 1 (writes and counts): 'writes and counts' matches workers 'greeter' and 'tally' equally "
            "(greeter on: writes; tally on: counts); name one of them",
        ),
    ],
)
def test_a_step_no_description_matches_or_several_match_equally_runs_nothing(
    tmp_path: Path, step: dict[str, Any], words: str
) -> None:
    result = agentmap.run(_described_workers(tmp_path, [step]), {"goal": "Do it"})
    answer = result.state["answer"]
    assert not result.success and answer["status"] == "error"
    assert answer["error"]["type"] == "validation"
    assert words in answer["error"]["message"]
    assert "nothing was executed" in answer["error"]["message"]


def test_a_policy_violation_in_a_workflow_is_reported_and_the_step_skipped(tmp_path: Path) -> None:
    plan = {
        "steps": [
            {"tool": "search_flights", "inputs": {"origin": "London", "destination": "Rome"}},
            {"tool": "search_hotels", "inputs": {"city": "Rome"}},
        ]
    }
    path = orchestrated(tmp_path, {"constraints": {"allowed_tools": ["search_flights"]}}, plan)
    result = agentmap.run(path, {"goal": "Go to Rome"})
    answer = result.state["answer"]
    assert answer["status"] == "partial" and result.success
    assert answer["result"]["steps"][1]["error"]["type"] == "permission"
    assert "allowed_tools (request constraints)" in answer["error"]["message"]


def test_a_hanging_tool_past_the_timeout_takes_failure_next(tmp_path: Path) -> None:
    path = orchestrated(tmp_path, {"timeout_seconds": 0.3}, {"steps": [{"tool": "wait"}]})
    (tmp_path / "tools" / "travel.py").write_text(
        "import asyncio\n\nasync def wait() -> str:\n    '''Never answers.'''\n"
        "    await asyncio.sleep(30)\n    return 'late'\n"
    )
    result = agentmap.run(path, {"goal": "wait"})
    assert result.state["answer"]["error"]["type"] == "timeout"
    assert "failed: " in result.state["message"] and "timeout_seconds=0.3" in result.state["message"]


def test_an_orchestrator_naming_a_missing_node_is_a_validation_error_with_a_suggestion(tmp_path: Path) -> None:
    path = orchestrated(tmp_path, {"planner": "plann"}, {"steps": [{"tool": "search_flights"}]})
    (issue,) = [i for i in agentmap.validate(path) if i.severity == "error"]
    assert (issue.code, issue.column, issue.row) == ("unknown-target", "Context", 2)
    assert "names node 'plann', which is not a node of graph 'G'; did you mean 'plan'?" in issue.message
    with pytest.raises(agentmap.WorkflowValidationError):
        agentmap.run(path, {"goal": "x"})  # caught before any node runs


async def test_the_workflow_runs_asynchronously_too() -> None:
    app = agentmap.compile(TRIP)
    result = await app.ainvoke({"goal": "Plan a trip from London to Rome for 2 nights"})
    assert result.success and "Villa Aurelia" in result.state["message"]


def test_validation_reports_bad_orchestration_rows_at_their_context(tmp_path: Path) -> None:
    path = write_graph(
        tmp_path,
        [
            {"Node": "run", "AgentType": "orchestrator", "Context": {"max_retries": -1}, "Input_Fields": "goal"},
            {"Node": "plan", "AgentType": "planner"},
            {"Node": "travel", "AgentType": "worker", "Tool_Source": "tools/nowhere.py"},
        ],
    )
    messages = [i.message for i in agentmap.validate(path) if i.severity == "error"]
    assert 'an orchestrator needs "planner": the name of its planner node' in messages
    assert any(m.startswith('an orchestrator needs "workers"') for m in messages)
    assert any("max_retries" in m and "greater than or equal to 0" in m for m in messages)
    assert 'a planner needs "steps" (a fixed plan) or "rules" (goal patterns -> steps) in its Context' in messages
    assert any("nowhere.py" in m for m in messages)
    columns = {i.column for i in agentmap.validate(path) if i.severity == "error"}
    assert columns == {"Context", "Tool_Source"}  # the missing tool file is reported at its own cell


async def test_every_node_of_the_trip_workflow_passes_the_compliance_check() -> None:
    from agentmap.agents.protocol import ProtocolAgent
    from agentmap.testing import assert_agent_io_compliance

    app = agentmap.compile(TRIP)
    checked = []
    for name, node in app.agents.items():
        response = await assert_agent_io_compliance(node)
        checked.append((name, response.status.value, isinstance(node, ProtocolAgent)))
    assert ("plan_trip", "error", True) in checked  # "Test goal" matches no rule: a clean ERROR
    assert ("flights", "error", True) in checked  # no step in the request: a clean ERROR
    assert ("show_itinerary", "success", False) in checked  # a template node behind as_protocol


def test_an_orchestrator_node_declares_the_nodes_it_calls() -> None:
    from agentmap.orchestration.agents import OrchestratorNode, PlannerNode

    context = {"planner": "trip_planner", "workers": "flights|hotels"}
    assert OrchestratorNode.referenced_nodes(context) == ["trip_planner", "flights", "hotels"]
    assert PlannerNode.referenced_nodes({"steps": []}) == []
