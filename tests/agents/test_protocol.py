"""The adapter between `BaseAgent` nodes and `AgentProtocol` agents, in both directions."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.agents.protocol import ProtocolAgent, as_protocol, protocol_agent
from agentmap.agents.registry import AgentRegistry, agent
from agentmap.contracts.io import (
    AgentRequest,
    AgentResponse,
    ErrorType,
    RequestMetadata,
    ResponseStatus,
    error_response,
    success_response,
    trace_event,
)
from agentmap.runtime.tracking import ExecutionTracker
from agentmap.testing import assert_agent_io_compliance

LOGGER = logging.getLogger("tests.protocol")


class Greeter:
    """A plain `AgentProtocol` class configured from its node's Context."""

    def __init__(self, context: dict[str, Any]) -> None:
        self.greeting = context.get("greeting", "Hello")
        self.seen: list[AgentRequest] = []

    async def process(self, request: AgentRequest) -> AgentResponse:
        self.seen.append(request)
        if request.goal == "fail":
            return error_response(ErrorType.RESOURCE, "no greetings left", trace=[trace_event("x", "-")])
        if request.goal == "partial":
            return AgentResponse(status=ResponseStatus.PARTIAL, result={"text": "Hel"}, trace=[{"event": "cut"}])
        if request.goal == "raise":
            raise ConnectionError("greeting service down")
        return success_response(
            {"text": f"{self.greeting}, {request.goal}!"},
            trace=[trace_event("greet", request.metadata.trace_id)],
        )


GreeterNode = protocol_agent(Greeter)


def node(context: dict[str, Any] | None = None, *, cls: type[ProtocolAgent] = GreeterNode) -> ProtocolAgent:
    ctx = {"input_fields": ["name:goal"], "output_field": "reply", **(context or {})}
    return cls("greet", "Greet the user", ctx, LOGGER, ExecutionTracker())


def greeter_of(agent: ProtocolAgent) -> Greeter:
    found = agent.protocol
    assert isinstance(found, Greeter)
    return found


def test_the_adapted_class_is_a_base_agent_made_once_per_class() -> None:
    assert issubclass(GreeterNode, BaseAgent) and GreeterNode.is_async()
    assert protocol_agent(Greeter) is GreeterNode
    assert GreeterNode.__name__ == "GreeterNode"

    class Sync:
        def process(self, request: AgentRequest) -> AgentResponse:
            raise NotImplementedError

    with pytest.raises(TypeError, match="define `async def process"):
        protocol_agent(Sync)


async def test_a_node_builds_the_request_from_inputs_and_context_and_writes_the_response() -> None:
    greet = node({"priority": 8, "profile": "fast", "timeout_seconds": 5, "constraints": {"max_api_calls": 2}})
    update = await greet.arun({"name": "Ada"})

    assert update["last_action_success"] is True
    reply = update["reply"]
    assert reply["status"] == "success" and reply["result"] == {"text": "Hello, Ada!"}
    request = greeter_of(greet).seen[0]
    assert (request.goal, request.task) == ("Ada", "Greet the user")
    meta = request.metadata
    assert (meta.priority, meta.profile, meta.timeout_seconds) == (8, "fast", 5.0)
    assert request.constraints == {"max_api_calls": 2}
    assert reply["trace"][0]["trace_id"] == meta.trace_id
    assert AgentResponse.model_validate(reply).is_success()


async def test_other_inputs_become_request_inputs_and_named_ones_fill_their_fields() -> None:
    greet = node({"input_fields": ["goal", "city", "constraints", "context"]})
    await greet.arun({"goal": "Bo", "city": "Oslo", "constraints": {"max_cost_usd": 1}, "context": {"prev": 1}})
    request = greeter_of(greet).seen[0]
    assert (request.goal, request.inputs, request.constraints, request.context) == (
        "Bo",
        {"city": "Oslo"},
        {"max_cost_usd": 1},
        {"prev": 1},
    )


async def test_a_trace_id_in_the_state_is_reused_and_otherwise_fresh_ones_are_made() -> None:
    greet = node()
    await greet.arun({"name": "A", "trace_id": "from-state"})
    await greet.arun({"name": "B"})
    await greet.arun({"name": "C"})
    ids = [r.metadata.trace_id for r in greeter_of(greet).seen]
    assert ids[0] == "from-state"
    assert ids[1] != ids[2] and "from-state" not in ids[1:]
    assert greet.state_keys() == ["trace_id"]


async def test_an_error_response_fails_the_node_and_keeps_the_response() -> None:
    tracker = ExecutionTracker()
    greet = GreeterNode("greet", "", {"input_fields": ["name:goal"], "output_field": "reply"}, LOGGER, tracker)
    update = await greet.arun({"name": "fail", "trace_id": "t-9"})

    assert update["last_action_success"] is False
    assert update["errors"] == ["Error in greet: resource error: no greetings left (trace_id t-9)"]
    assert update["reply"]["error"]["message"] == "no greetings left"
    (record,) = tracker.summary
    assert record.success is False and record.metadata == {"trace_id": "t-9", "status": "error"}


async def test_fail_on_chooses_which_statuses_fail_the_node() -> None:
    lenient = await node().arun({"name": "partial"})
    assert lenient["last_action_success"] is True and lenient["reply"]["status"] == "partial"
    strict = await node({"fail_on": ["error", "partial"]}).arun({"name": "partial"})
    assert strict["last_action_success"] is False
    assert "the agent's response status was partial" in strict["errors"][0]


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ({"name": ""}, "node 'greet' could not build its request: goal: goal must be a non-empty string"),
        ({"name": None}, "goal: goal must be a non-empty string"),
        ({"name": "raise"}, "network error: agent 'greet' raised ConnectionError: greeting service down"),
    ],
)
async def test_bad_input_and_a_raising_agent_fail_the_node_with_the_reason(state: dict[str, Any], words: str) -> None:
    update = await node().arun(state)
    assert update["last_action_success"] is False
    assert words in update["errors"][0]
    assert update["reply"]["status"] == "error"


def test_the_sync_run_path_works_too() -> None:
    update = node().run({"name": "Sync"})
    assert update["reply"]["result"] == {"text": "Hello, Sync!"}


async def test_output_fields_can_pick_parts_of_the_response() -> None:
    greet = node({"output_field": "status=status|text=result.text|why=error.message|events=trace"})
    ok = await greet.arun({"name": "Ada"})
    assert (ok["status"], ok["text"]) == ("success", "Hello, Ada!")
    assert ok["events"][0]["event"] == "greet"
    failed = await greet.arun({"name": "fail"})
    assert (failed["status"], failed["text"], failed["why"]) == ("error", None, "no greetings left")


def test_context_is_handed_to_the_constructor_and_from_node_wins() -> None:
    assert greeter_of(node({"greeting": "Hej"})).greeting == "Hej"

    class Built:
        def __init__(self, label: str) -> None:
            self.label = label

        @classmethod
        def from_node(cls, agent: BaseAgent) -> Built:
            return cls(f"{agent.name}@{agent.environment.graph_name}")

        async def process(self, request: AgentRequest) -> AgentResponse:
            return success_response(self.label, trace=[{"trace_id": request.metadata.trace_id}])

    made = protocol_agent(Built)("n", "", {}, LOGGER, ExecutionTracker())
    made.environment = AgentEnvironment(base_dir=Path("."), graph_name="G")
    assert isinstance(made.protocol, Built) and made.protocol.label == "n@G"


def test_validate_config_checks_the_adapter_keys_and_asks_the_class() -> None:
    class Picky(Greeter):
        @classmethod
        def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
            return [] if "greeting" in context else ["set a greeting"]

    env = AgentEnvironment(base_dir=Path("."))
    problems = protocol_agent(Picky).validate_config(
        "", {"fail_on": ["oops"], "priority": 12, "output_field": "a|text=result.text"}, env
    )
    assert problems == [
        "fail_on names unknown status 'oops'; use any of success, error, partial, pending, cancelled",
        "Output_Field 'a' names no part of a response; with several output fields (or `field=part.path`) "
        "start each with one of: response, status, result, error, trace, metadata",
        "priority: priority must be between 0 (lowest) and 10 (highest), got 12",
        "set a greeting",
    ]
    assert protocol_agent(Picky).validate_config("", {"greeting": "Hi", "output_field": "reply"}, env) == []


def test_the_registry_adapts_protocol_classes_and_the_decorator_keeps_the_class() -> None:
    private = AgentRegistry()
    decorated = agent("greeter", registry=private)(Greeter)
    assert decorated is Greeter
    assert private.resolve("GreeterAgent") is GreeterNode


class Shout(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        if inputs.get("text") == "boom":
            raise ValueError("cannot shout boom")
        return None if inputs.get("text") == "" else str(inputs.get("text")).upper()


class AsyncShout(BaseAgent):
    async def process(self, inputs: dict[str, Any]) -> Any:
        return {"loud": str(inputs).upper()}


def _request(goal: str = "g", **inputs: Any) -> AgentRequest:
    return AgentRequest(goal=goal, task="t", metadata=RequestMetadata(trace_id="as-1"), inputs=inputs)


async def test_as_protocol_wraps_a_base_agent_mapping_request_inputs_to_its_input_fields() -> None:
    wrapped = as_protocol(Shout("s", "", {"input_fields": ["message:text"]}))
    response = await wrapped.process(_request(text="hi"))
    assert response.result == "HI"
    assert [e["event"] for e in response.trace] == ["agent:start", "agent:complete"]
    assert (await wrapped.process(_request(message="by key"))).result == "BY KEY"
    failed = await wrapped.process(_request(text="boom"))
    assert failed.error is not None and failed.error.type is ErrorType.VALIDATION
    assert failed.error.message == "agent 's' failed: ValueError: cannot shout boom"
    assert (await wrapped.process(_request(text=""))).result == {}
    await assert_agent_io_compliance(Shout("s", "", {"input_fields": ["text"]}))


async def test_as_protocol_uses_the_goal_for_an_agent_with_no_inputs_and_awaits_async_ones() -> None:
    response = await as_protocol(AsyncShout("a", "")).process(_request("quiet"))
    assert response.status is ResponseStatus.SUCCESS and response.result == {"loud": "{'GOAL': 'QUIET'}"}


def test_as_protocol_unwraps_adapted_nodes_and_passes_protocol_objects_through() -> None:
    greet = node()
    assert as_protocol(greet) is greet.protocol
    plain = Greeter({})
    assert as_protocol(plain) is plain
    with pytest.raises(TypeError, match="cannot take an AgentRequest"):
        as_protocol(object())


async def test_an_input_holding_a_whole_request_is_sent_as_it_is() -> None:
    greet = node({"input_fields": ["request"]})
    given = {"goal": "Lin", "task": "Greet warmly", "metadata": {"priority": 9}, "inputs": {"lang": "sv"}}
    update = await greet.arun({"request": given, "trace_id": "outer"})
    seen = greeter_of(greet).seen[0]
    assert (seen.goal, seen.task, seen.inputs) == ("Lin", "Greet warmly", {"lang": "sv"})
    assert (seen.metadata.priority, seen.metadata.trace_id) == (9, "outer")
    assert update["reply"]["result"] == {"text": "Hello, Lin!"}
