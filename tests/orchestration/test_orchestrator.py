"""The orchestrator: routing, context chaining, retries, failures, timeouts, policy, cancel, priority."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from orch_helpers import RecordingWorker, failing, fixed_planner
from timing import scaled

from agentmap.agents.tools import LocalToolExecutor
from agentmap.contracts.io import (
    AgentRequest,
    AgentResponse,
    ErrorType,
    OrchestrationError,
    RequestMetadata,
    ResponseStatus,
    success_response,
)
from agentmap.orchestration import (
    DeterministicPlanner,
    Orchestrator,
    OrchestratorConfig,
    PlannerAgent,
    PolicyEnforcer,
    WorkerAgent,
)
from agentmap.testing import assert_agent_io_compliance

FAST = OrchestratorConfig(retry_delay=0.0)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def double(x: int) -> int:
    """Double a number."""
    return 2 * x


def math_worker() -> WorkerAgent:
    return WorkerAgent(LocalToolExecutor([add, double]), name="math")


def request(goal: str = "Compute", **meta: Any) -> AgentRequest:
    constraints = meta.pop("constraints", None)
    meta.setdefault("trace_id", "trace-1")
    return AgentRequest(goal=goal, task="Plan and run", metadata=RequestMetadata(**meta), constraints=constraints)


async def test_steps_run_in_order_with_results_chained_through_context() -> None:
    planner = fixed_planner(
        {"tool": "add", "inputs": {"a": 2, "b": 3}},
        {"tool": "double", "inputs": {"x": "${previous}"}},
        {"agent": "notes", "inputs": {"note": "done"}},
    )
    notes = RecordingWorker(lambda req, n: {"saw": req.context["previous_result"]}, name="notes")
    orchestrator = Orchestrator(planner, {"math": math_worker(), "notes": notes}, config=FAST)

    response = await orchestrator.process(request())

    assert response.status is ResponseStatus.SUCCESS
    assert response.result["results"] == {"add": 5, "double": 10, "notes": {"saw": 10}}
    assert response.result["final"] == {"saw": 10}
    assert [s["worker"] for s in response.result["steps"]] == ["math", "math", "notes"]
    context = notes.requests[0].context
    assert context["previous_agent"] == "math"
    assert context["results"] == {"add": 5, "double": 10}
    assert context["step_index"] == 2
    assert notes.requests[0].inputs == {"note": "done"}
    assert response.metadata["steps_succeeded"] == 3


async def test_trace_id_reaches_every_agent_and_every_trace_event() -> None:
    worker = RecordingWorker(lambda req, n: failing(ErrorType.EXECUTION, "no") if n == 1 else "ok", tools=["t"])
    orchestrator = Orchestrator(fixed_planner({"tool": "t"}, {"tool": "t"}), {"w": worker}, config=FAST)

    response = await orchestrator.process(request(trace_id="abc-42"))

    assert {r.metadata.trace_id for r in worker.requests} == {"abc-42"}
    assert response.trace and all(event["trace_id"] == "abc-42" for event in response.trace)
    events = [e["event"] for e in response.trace]
    assert events[0] == "orchestrate:start" and events[-1] == "orchestrate:complete"
    assert {"plan:start", "plan:complete", "oops", "work:done", "step:failed", "step:complete"} <= set(events)
    await assert_agent_io_compliance(orchestrator, request(trace_id="abc-43"))


async def test_some_failed_steps_make_a_partial_answer_naming_them() -> None:
    worker = RecordingWorker(
        lambda req, n: failing(ErrorType.EXECUTION, "disk full") if n == 2 else f"r{n}", tools=["t"]
    )
    planner = fixed_planner({"tool": "t", "id": "one"}, {"tool": "t", "id": "two"}, {"tool": "t", "id": "three"})
    response = await Orchestrator(planner, {"w": worker}, config=FAST).process(request())

    assert response.status is ResponseStatus.PARTIAL
    assert response.result["results"] == {"one": "r1", "three": "r3"}
    assert [s["status"] for s in response.result["steps"]] == ["success", "error", "success"]
    assert response.error is not None and response.error.message == "step 'two' failed: disk full"
    assert response.metadata["steps_failed"] == 1


async def test_all_steps_failing_is_an_error() -> None:
    worker = RecordingWorker(lambda req, n: failing(ErrorType.PERMISSION, f"denied {n}"), tools=["t"])
    response = await Orchestrator(fixed_planner({"tool": "t"}, {"tool": "t"}), {"w": worker}, config=FAST).process(
        request()
    )
    assert response.status is ResponseStatus.ERROR
    assert response.error is not None and response.error.type is ErrorType.PERMISSION
    assert response.error.message == "2 of 2 steps failed: step 't': denied 1; step 't_2': denied 2"


@pytest.mark.parametrize(("on_failure", "status"), [("stop", ResponseStatus.PARTIAL), ("error", ResponseStatus.ERROR)])
async def test_stop_and_error_do_not_run_later_steps(on_failure: str, status: ResponseStatus) -> None:
    worker = RecordingWorker(lambda req, n: failing(ErrorType.EXECUTION, "bad") if n == 2 else "fine", tools=["t"])
    config = OrchestratorConfig(on_failure=on_failure)  # type: ignore[arg-type]
    planner = fixed_planner({"tool": "t"}, {"tool": "t"}, {"tool": "t"})
    response = await Orchestrator(planner, {"w": worker}, config=config).process(request())

    assert len(worker.requests) == 2
    assert response.status is status
    assert response.metadata["steps_skipped"] == 1
    assert response.error is not None and "bad" in response.error.message


async def test_raise_turns_a_failure_into_orchestration_error() -> None:
    worker = RecordingWorker(lambda req, n: failing(ErrorType.VALIDATION, "bad input"), tools=["t"])
    orchestrator = Orchestrator(
        fixed_planner({"tool": "t"}), {"w": worker}, config=OrchestratorConfig(on_failure="raise")
    )
    with pytest.raises(OrchestrationError, match="bad input") as caught:
        await orchestrator.process(request())
    assert caught.value.response is not None and caught.value.response.is_error()
    assert caught.value.error is not None and caught.value.error.type is ErrorType.VALIDATION


async def test_a_recoverable_error_is_retried_after_retry_after() -> None:
    worker = RecordingWorker(
        lambda req, n: failing(ErrorType.NETWORK, "reset", recoverable=True, retry_after=0.05) if n == 1 else "ok",
        tools=["t"],
    )
    response = await Orchestrator(fixed_planner({"tool": "t"}), {"w": worker}, config=FAST).process(request())

    assert response.status is ResponseStatus.SUCCESS
    assert response.result["steps"][0]["attempts"] == 2
    assert response.metadata["retries"] == 1
    retry = next(e for e in response.trace if e["event"] == "step:retry")
    assert retry["delay"] == 0.05 and retry["error"] == "reset"
    assert worker.calls_at[1] - worker.calls_at[0] >= 0.05


async def test_a_flaky_tool_recovers_on_retry_through_the_worker() -> None:
    calls: list[int] = []

    def flaky() -> str:
        """Fails with a network error the first time."""
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("connection reset by peer")
        return "landed"

    worker = WorkerAgent(LocalToolExecutor([flaky]))
    response = await Orchestrator(fixed_planner({"tool": "flaky"}), {"w": worker}, config=FAST).process(request())
    assert response.status is ResponseStatus.SUCCESS
    assert response.result["final"] == "landed"
    assert len(calls) == 2


async def test_a_recoverable_error_that_never_recovers_gives_up_after_max_retries() -> None:
    worker = RecordingWorker(lambda req, n: failing(ErrorType.NETWORK, "down", recoverable=True), tools=["t"])
    config = OrchestratorConfig(max_retries=3, retry_delay=0.0)
    response = await Orchestrator(fixed_planner({"tool": "t"}), {"w": worker}, config=config).process(request())

    assert len(worker.requests) == 4
    assert response.status is ResponseStatus.ERROR
    assert response.error is not None and response.error.type is ErrorType.NETWORK
    assert response.result["steps"][0]["attempts"] == 4


async def test_an_unrecoverable_error_is_not_retried() -> None:
    worker = RecordingWorker(lambda req, n: failing(ErrorType.VALIDATION, "bad"), tools=["t"])
    await Orchestrator(fixed_planner({"tool": "t"}), {"w": worker}, config=FAST).process(request())
    assert len(worker.requests) == 1


async def test_a_worker_that_raises_becomes_an_execution_error() -> None:
    def explode(req: AgentRequest, n: int) -> Any:
        raise RuntimeError("worker crashed")

    worker = RecordingWorker(explode, tools=["t"])
    response = await Orchestrator(fixed_planner({"tool": "t"}), {"w": worker}, config=FAST).process(request())
    assert response.status is ResponseStatus.ERROR
    assert response.error is not None and response.error.type is ErrorType.EXECUTION
    assert "raised RuntimeError: worker crashed" in response.error.message


async def test_a_worker_answering_garbage_becomes_an_execution_error() -> None:
    class Garbage:
        async def process(self, request: AgentRequest) -> Any:
            return {"status": "success"}  # no result

    response = await Orchestrator(fixed_planner({"agent": "g"}), {"g": Garbage()}, config=FAST).process(request())
    assert response.error is not None and "not an AgentResponse" in response.error.message


async def test_a_hanging_worker_is_stopped_by_the_request_timeout() -> None:
    async def hang(req: AgentRequest, n: int) -> Any:
        await asyncio.sleep(30)

    worker = RecordingWorker(lambda req, n: "fast" if n == 1 else hang(req, n), tools=["t"])
    orchestrator = Orchestrator(fixed_planner({"tool": "t"}, {"tool": "t"}), {"w": worker}, config=FAST)

    response = await asyncio.wait_for(orchestrator.process(request(timeout_seconds=0.2)), timeout=scaled(10))

    assert response.status is ResponseStatus.ERROR
    assert response.error is not None and response.error.type is ErrorType.TIMEOUT
    assert "timeout_seconds=0.2" in response.error.message
    assert response.result["results"] == {"t": "fast"}
    assert worker.requests[1].metadata.timeout_seconds is not None
    assert worker.requests[1].metadata.timeout_seconds <= 0.2


async def test_a_step_timeout_fails_one_step_and_the_rest_go_on() -> None:
    async def hang(req: AgentRequest, n: int) -> Any:
        await asyncio.sleep(30)

    worker = RecordingWorker(lambda req, n: hang(req, n) if n == 1 else "ok", tools=["t"])
    config = OrchestratorConfig(step_timeout_seconds=0.1)
    orchestrator = Orchestrator(fixed_planner({"tool": "t"}, {"tool": "t"}), {"w": worker}, config=config)
    response = await asyncio.wait_for(orchestrator.process(request()), timeout=scaled(10))

    assert response.status is ResponseStatus.PARTIAL
    failed = response.result["steps"][0]
    assert failed["error"]["type"] == "timeout" and "step_timeout_seconds=0.1" in failed["error"]["message"]


@pytest.mark.parametrize(
    ("step", "words"),
    [
        (
            {"tool": "ad"},
            "no worker of orchestrator 'orchestrator' offers tool 'ad' (tools: add, double); did you mean 'add'?",
        ),
        (
            {"agent": "mathz"},
            "names worker 'mathz', which is not a worker of orchestrator 'orchestrator'; did you mean 'math'?",
        ),
        ({"tool": "add", "worker": "math", "agent": "math"}, 'exactly one of "tool" or "agent"'),
    ],
)
async def test_an_unroutable_plan_runs_nothing(step: dict[str, Any], words: str) -> None:
    spy = RecordingWorker(tools=["add", "double"])
    response = await Orchestrator(_RawPlanner([{"tool": "add"}, step]), {"math": spy}, config=FAST).process(request())

    assert response.status is ResponseStatus.ERROR
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert "nothing was executed" in response.error.message and words in response.error.message
    assert spy.requests == []


async def test_a_step_naming_a_capability_goes_to_the_worker_whose_description_matches() -> None:
    rooms = RecordingWorker(tools=["search"], description="Finds hotel rooms")
    math = WorkerAgent(LocalToolExecutor([add, double]), name="math", description="Does arithmetic on numbers")
    planner = _RawPlanner(
        [
            {"tool": "search", "worker": "hotel finder", "inputs": {"city": "Rome"}},
            {"agent": "arithmetic", "inputs": {"tool": "add", "inputs": {"a": 1, "b": 2}}},
        ]
    )
    orchestrator = Orchestrator(planner, {"flights": RecordingWorker(tools=["search"]), "rooms": rooms, "math": math})

    response = await orchestrator.process(request())

    assert response.is_success(), response.error
    assert [s["worker"] for s in response.result["steps"]] == ["rooms", "math"]
    assert response.result["final"] == 3 and len(rooms.requests) == 1
    matched = [e for e in response.trace if e["event"] == "step:matched"]
    assert [(e["requested"], e["worker"], e["matched"]) for e in matched] == [
        ("hotel finder", "rooms", ["finder", "hotel"]),
        ("arithmetic", "math", ["arithmetic"]),
    ]


class _RawPlanner:
    """A planner answering with raw step dicts, as an LLM planner might."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = steps

    async def process(self, request: AgentRequest) -> AgentResponse:
        return success_response({"steps": self.steps}, trace=[{"event": "plan:raw"}])


async def test_a_planner_with_no_steps_is_an_error_saying_what_to_add() -> None:
    planner = PlannerAgent(DeterministicPlanner(rules=[{"keywords": ["flight"], "steps": [{"tool": "add"}]}]))
    response = await Orchestrator(planner, {"math": math_worker()}).process(request("Learn Italian"))
    assert response.status is ResponseStatus.ERROR
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert "found no steps for the goal 'Learn Italian'" in response.error.message


async def test_a_planner_answering_without_steps_is_an_error() -> None:
    response = await Orchestrator(_RawPlanner([]), {"math": math_worker()}).process(request())
    assert response.error is not None and "at least one step; it gave no steps" in response.error.message


async def test_a_constraint_violation_skips_the_step_as_a_permission_error() -> None:
    worker = RecordingWorker(tools=["search", "book"])
    planner = fixed_planner({"tool": "search"}, {"tool": "book"})
    response = await Orchestrator(planner, {"w": worker}, config=FAST).process(
        request(constraints={"allowed_tools": ["search"]})
    )

    assert [r.inputs["tool"] for r in worker.requests] == ["search"]
    assert response.status is ResponseStatus.PARTIAL
    error = response.result["steps"][1]["error"]
    assert error["type"] == "permission"
    assert "allowed_tools" in error["message"] and "request constraints" in error["message"]
    assert error["details"]["constraint"] == "allowed_tools"
    assert any(e["event"] == "policy:violation" for e in response.trace)


async def test_max_api_calls_stops_steps_beyond_the_budget_and_a_tighter_constraint_wins() -> None:
    worker = RecordingWorker(tools=["t"])
    policy = PolicyEnforcer({"default": {"max_api_calls": 5}})
    planner = fixed_planner({"tool": "t"}, {"tool": "t"}, {"tool": "t"})
    response = await Orchestrator(planner, {"w": worker}, policy=policy, config=FAST).process(
        request(constraints={"max_api_calls": 2})
    )
    assert len(worker.requests) == 2
    error = response.result["steps"][2]["error"]
    assert "max_api_calls=2 (request constraints)" in error["message"]


async def test_a_looser_constraint_does_not_override_the_profile() -> None:
    worker = RecordingWorker(tools=["t"])
    policy = PolicyEnforcer({"strict": {"max_api_calls": 1}})
    planner = fixed_planner({"tool": "t"}, {"tool": "t"})
    response = await Orchestrator(planner, {"w": worker}, policy=policy, config=FAST).process(
        request(profile="strict", constraints={"max_api_calls": 100})
    )
    assert len(worker.requests) == 1
    assert "max_api_calls=1 (profile 'strict')" in response.result["steps"][1]["error"]["message"]


async def test_bad_constraints_and_unknown_profiles_are_validation_errors() -> None:
    orchestrator = Orchestrator(fixed_planner({"tool": "t"}), {"w": RecordingWorker(tools=["t"])})
    response = await orchestrator.process(request(constraints={"max_api_calls": "lots"}))
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert "invalid constraints: max_api_calls" in response.error.message
    strict = Orchestrator(
        fixed_planner({"tool": "t"}), {"w": RecordingWorker(tools=["t"])}, policy=PolicyEnforcer({"strict": {}})
    )
    response = await strict.process(request(profile="lenient"))
    assert (
        response.error is not None and "unknown profile 'lenient'; the profiles are: strict" in response.error.message
    )


async def test_an_invalid_request_is_answered_with_a_validation_error() -> None:
    sneaky = AgentRequest.model_construct(goal="", task="t", metadata=RequestMetadata(trace_id="x"))
    response = await Orchestrator(fixed_planner({"tool": "t"}), {}).process(sneaky)
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert "goal: goal must be a non-empty string" in response.error.message
    assert response.trace[0]["trace_id"] == "x"


async def test_cancel_answers_cancelled_with_what_finished() -> None:
    started = asyncio.Event()

    async def block(req: AgentRequest, n: int) -> Any:
        started.set()
        await asyncio.sleep(30)

    worker = RecordingWorker(lambda req, n: "first" if n == 1 else block(req, n), tools=["t"])
    orchestrator = Orchestrator(fixed_planner({"tool": "t"}, {"tool": "t"}, {"tool": "t"}), {"w": worker})
    task = asyncio.create_task(orchestrator.process(request(trace_id="to-cancel")))
    await asyncio.wait_for(started.wait(), timeout=scaled(5))

    assert orchestrator.cancel("to-cancel")
    response = await asyncio.wait_for(task, timeout=scaled(5))

    assert response.status is ResponseStatus.CANCELLED
    assert response.result["results"] == {"t": "first"}
    assert not orchestrator.cancel("to-cancel")
    assert not task.cancelled()


async def test_a_worker_answering_cancelled_cancels_the_run() -> None:
    from agentmap.contracts.io import AgentResponse as Response

    worker = RecordingWorker(
        lambda req, n: Response(status=ResponseStatus.CANCELLED, trace=[{"event": "stop"}]), tools=["t"]
    )
    response = await Orchestrator(fixed_planner({"tool": "t"}, {"tool": "t"}), {"w": worker}).process(request())
    assert response.status is ResponseStatus.CANCELLED
    assert len(worker.requests) == 1


async def test_queued_requests_are_served_by_priority() -> None:
    gate_open = asyncio.Event()
    order: list[str] = []

    async def work(req: AgentRequest, n: int) -> Any:
        if n == 1:
            await gate_open.wait()
        order.append(req.goal)
        return "ok"

    worker = RecordingWorker(work, tools=["t"])
    orchestrator = Orchestrator(
        fixed_planner({"tool": "t"}), {"w": worker}, config=OrchestratorConfig(max_concurrent=1)
    )
    first = asyncio.create_task(orchestrator.process(request("first", trace_id="a")))
    await asyncio.sleep(0.01)
    queued = [
        asyncio.create_task(orchestrator.process(request(goal, trace_id=goal, priority=p)))
        for goal, p in [("low", 1), ("high", 9), ("mid", 5), ("high-too", 9)]
    ]
    await asyncio.sleep(0.01)
    gate_open.set()
    await asyncio.wait_for(asyncio.gather(first, *queued), timeout=scaled(5))

    assert order == ["first", "high", "high-too", "mid", "low"]


async def test_the_answer_survives_json() -> None:
    orchestrator = Orchestrator(fixed_planner({"tool": "add", "inputs": {"a": 1, "b": 2}}), {"m": math_worker()})
    response = await orchestrator.run("Add", trace_id="j", priority=7)
    restored = AgentResponse.model_validate(json.loads(json.dumps(response.model_dump(mode="json"))))
    assert restored == response and restored.result["final"] == 3


async def test_run_makes_a_fresh_trace_id() -> None:
    orchestrator = Orchestrator(fixed_planner({"tool": "add", "inputs": {"a": 1, "b": 2}}), {"m": math_worker()})
    one, two = await orchestrator.run("Add"), await orchestrator.run("Add")
    assert one.metadata["trace_id"] != two.metadata["trace_id"]


async def test_every_shipped_agent_passes_the_compliance_check() -> None:
    planner = fixed_planner({"tool": "add", "inputs": {"a": 1, "b": 2}})
    worker = math_worker()
    for agent in (planner, worker, Orchestrator(planner, {"m": worker}), PlannerAgent()):
        await assert_agent_io_compliance(agent)


async def test_a_queued_request_can_be_cancelled_before_it_starts() -> None:
    gate_open = asyncio.Event()

    async def work(req: AgentRequest, n: int) -> Any:
        await gate_open.wait()
        return "ok"

    worker = RecordingWorker(work, tools=["t"])
    orchestrator = Orchestrator(
        fixed_planner({"tool": "t"}), {"w": worker}, config=OrchestratorConfig(max_concurrent=1)
    )
    running = asyncio.create_task(orchestrator.process(request("first", trace_id="run")))
    await asyncio.sleep(0.01)
    queued = asyncio.create_task(orchestrator.process(request("second", trace_id="wait")))
    await asyncio.sleep(0.01)

    assert orchestrator.cancel("wait")
    cancelled = await asyncio.wait_for(queued, timeout=scaled(5))
    gate_open.set()
    finished = await asyncio.wait_for(running, timeout=scaled(5))

    assert cancelled.status is ResponseStatus.CANCELLED and cancelled.result["steps"] == []
    assert finished.status is ResponseStatus.SUCCESS
    assert [r.goal for r in worker.requests] == ["first"]
