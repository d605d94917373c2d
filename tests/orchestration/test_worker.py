"""The worker: tool calls through the shared executor, references between steps, error mapping."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from timing import scaled

from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.agents.tools import LocalToolExecutor
from agentmap.contracts.io import AgentRequest, ErrorType, RequestMetadata, ResponseStatus
from agentmap.orchestration import StepError, WorkerAgent, resolve_references
from agentmap.testing import assert_agent_io_compliance


def search_flights(origin: str, destination: str) -> dict[str, Any]:
    """Find flights."""
    return {"cheapest": {"price": 299, "airline": "Delta"}, "route": f"{origin}-{destination}"}


def book(flight: dict[str, Any], passenger: str = "Ada") -> str:
    """Book a flight."""
    return f"booked {flight['airline']} for {passenger}"


def refuse() -> None:
    """Always refused."""
    raise PermissionError("account is read-only")


def unreachable() -> None:
    """The network is down."""
    raise ConnectionError("connection refused")


def broken() -> None:
    """A bug."""
    raise ValueError("price must be positive")


def nothing() -> None:
    """Returns nothing."""


async def slow() -> str:
    """Takes a long time."""
    await asyncio.sleep(30)
    return "late"


def worker() -> WorkerAgent:
    tools: list[Any] = [search_flights, book, refuse, unreachable, broken, nothing, slow]
    return WorkerAgent(LocalToolExecutor(tools), name="travel")


def _request(inputs: dict[str, Any], context: dict[str, Any] | None = None, **meta: Any) -> AgentRequest:
    return AgentRequest(
        goal="Travel",
        task="Execute step",
        metadata=RequestMetadata(trace_id="w-1", **meta),
        inputs=inputs,
        context=context or {},
    )


async def test_one_step_calls_its_tool_and_returns_its_output() -> None:
    response = await worker().process(
        _request({"tool": "search_flights", "inputs": {"origin": "NY", "destination": "LA"}})
    )
    assert response.status is ResponseStatus.SUCCESS
    assert response.result["route"] == "NY-LA"
    assert [e["event"] for e in response.trace] == ["tool:call", "tool:result"]
    assert all(e["trace_id"] == "w-1" for e in response.trace)


async def test_several_steps_chain_with_references() -> None:
    steps = [
        {"tool": "search_flights", "inputs": {"origin": "NY", "destination": "LA"}},
        {"tool": "book", "inputs": {"flight": "${search_flights.cheapest}", "passenger": "Grace"}},
        {"tool": "book", "id": "again", "inputs": {"flight": {"airline": "${search_flights.cheapest.airline}"}}},
    ]
    response = await worker().process(_request({"steps": steps}))
    assert response.result["results"][1:] == ["booked Delta for Grace", "booked Delta for Ada"]
    assert response.metadata["api_calls"] == 3


async def test_references_read_results_chained_by_the_orchestrator() -> None:
    context = {"results": {"search": {"cheapest": {"airline": "KLM"}}}, "previous_result": {"airline": "SAS"}}
    first = await worker().process(_request({"tool": "book", "inputs": {"flight": "${search.cheapest}"}}, context))
    second = await worker().process(_request({"tool": "book", "inputs": {"flight": "${previous}"}}, context))
    assert (first.result, second.result) == ("booked KLM for Ada", "booked SAS for Ada")


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        (
            {"flight": "${search.cheapest}"},
            "${search.cheapest} names no earlier step 'search'; earlier steps: none yet",
        ),
        ({"flight": "${previous}"}, "there is no previous result yet"),
    ],
)
async def test_a_dangling_reference_is_a_validation_error(inputs: dict[str, Any], words: str) -> None:
    response = await worker().process(_request({"tool": "book", "inputs": inputs}))
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert words in response.error.message


def test_a_reference_into_a_missing_key_lists_the_keys_there_are() -> None:
    with pytest.raises(StepError, match=r"\$\{s.cheapest\} has no 'cost' \(it has \['airline'\]\)"):
        resolve_references("${s.cheapest.cost}", {"s": {"cheapest": {"airline": "x"}}})
    assert resolve_references("flight ${s.0} at ${s.1}", {"s": ["AF1", 9]}) == "flight AF1 at 9"


@pytest.mark.parametrize(
    ("step", "kind", "recoverable", "words"),
    [
        ({"tool": "serch_flights"}, ErrorType.VALIDATION, False, "has no tool 'serch_flights'"),
        ({"tool": "search_flights", "inputs": {"origin": "NY"}}, ErrorType.VALIDATION, False, "destination"),
        ({"tool": "refuse"}, ErrorType.PERMISSION, False, "account is read-only"),
        ({"tool": "unreachable"}, ErrorType.NETWORK, True, "connection refused"),
        ({"tool": "broken"}, ErrorType.EXECUTION, False, "price must be positive"),
    ],
)
async def test_tool_failures_map_to_the_contract_error_types(
    step: dict[str, Any], kind: ErrorType, recoverable: bool, words: str
) -> None:
    response = await worker().process(_request(step))
    assert response.status is ResponseStatus.ERROR
    assert response.error is not None
    assert (response.error.type, response.error.recoverable) == (kind, recoverable)
    assert words in response.error.message
    assert any(e["event"] == "step:error" and e["trace_id"] == "w-1" for e in response.trace)


async def test_an_unknown_tool_suggests_the_closest_one() -> None:
    response = await worker().process(_request({"tool": "serch_flights"}))
    assert response.error is not None and "did you mean 'search_flights'?" in response.error.message


async def test_a_tool_past_the_request_timeout_is_a_recoverable_timeout() -> None:
    response = await asyncio.wait_for(worker().process(_request({"tool": "slow"}, timeout_seconds=0.05)), scaled(10))
    assert response.error is not None and response.error.type is ErrorType.TIMEOUT
    assert response.error.recoverable
    assert "did not finish within 0.05s" in response.error.message


async def test_a_tool_returning_nothing_still_succeeds_with_a_result() -> None:
    response = await worker().process(_request({"tool": "nothing"}))
    assert response.is_success() and response.result == "tool 'nothing' completed (it returned nothing)"


async def test_a_request_without_a_step_says_what_to_send() -> None:
    response = await worker().process(_request({}))
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert '{"tool": "<name>", "inputs": {...}}' in response.error.message
    await assert_agent_io_compliance(worker())


def test_a_worker_needs_an_executor_or_a_loader() -> None:
    with pytest.raises(TypeError, match="needs an executor"):
        WorkerAgent()


class _Node(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        return inputs


async def test_a_worker_node_loads_its_tools_from_tool_source(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(
        "def shout(text: str) -> str:\n    '''Shout.'''\n    return text.upper()\n\n"
        "def whisper(text: str) -> str:\n    '''Whisper.'''\n    return text.lower()\n"
    )
    node = _Node("w", "", {"tool_source": "tools.py", "available_tools": ["shout"]})
    node.environment = AgentEnvironment(base_dir=tmp_path)
    built = WorkerAgent.from_node(node)
    assert built.get_available_tools() == []
    await built.ready()
    assert built.get_available_tools() == ["shout"]
    response = await built.process(_request({"tool": "shout", "inputs": {"text": "hi"}}))
    assert response.result == "HI"
    assert WorkerAgent.validate_config("", node.context, node.environment) == []


async def test_a_worker_node_with_a_bad_tool_source_answers_with_a_validation_error(tmp_path: Path) -> None:
    node = _Node("w", "", {"tool_source": "missing.py"})
    node.environment = AgentEnvironment(base_dir=tmp_path)
    response = await WorkerAgent.from_node(node).process(_request({"tool": "x"}))
    assert response.error is not None and response.error.type is ErrorType.VALIDATION
    assert response.error.message.startswith("worker 'w' could not load its tools:")
    assert "missing.py" in response.error.message
    problems = WorkerAgent.validate_config("", node.context, node.environment)
    assert problems and problems[0][0] == "Tool_Source" and "missing.py" in problems[0][1]
    assert WorkerAgent.validate_config("", {}, node.environment) == [
        "a worker needs a Tool_Source (a Python file, module or MCP server) or Available_Tools"
    ]
