"""`assert_agent_io_compliance`: passes compliant agents, names the rule a non-compliant one breaks."""

from __future__ import annotations

from typing import Any

import pytest

from agentmap.agents.base import BaseAgent
from agentmap.contracts.io import AgentRequest, AgentResponse, RequestMetadata, error_response, success_response
from agentmap.testing import assert_agent_io_compliance


class Compliant:
    async def process(self, request: AgentRequest) -> AgentResponse:
        return success_response({"done": request.task}, trace=[{"event": "x", "trace_id": request.metadata.trace_id}])


class ErrorsCleanly:
    async def process(self, request: AgentRequest) -> AgentResponse:
        return error_response("execution", "cannot", trace=[{"event": f"failed {request.metadata.trace_id}"}])


class SyncProcess:
    def process(self, request: AgentRequest) -> AgentResponse:
        return success_response("x")


class ReturnsDict:
    async def process(self, request: AgentRequest) -> Any:
        return {"status": "success", "result": 1}


class ForgetsTraceId:
    async def process(self, request: AgentRequest) -> AgentResponse:
        return success_response("x", trace=[{"event": "done"}])


class LosesDataInJson:
    async def process(self, request: AgentRequest) -> AgentResponse:
        return success_response((1, 2), trace=[{"trace_id": request.metadata.trace_id}])


class Upper(BaseAgent):
    def process(self, inputs: dict[str, Any]) -> Any:
        return str(inputs).upper()


async def test_compliant_agents_pass_and_their_response_is_returned() -> None:
    response = await assert_agent_io_compliance(Compliant())
    assert response.result == {"done": "Test task"}
    assert (await assert_agent_io_compliance(ErrorsCleanly())).is_error()
    assert (await assert_agent_io_compliance(Upper("u", ""))).is_success()


async def test_a_custom_request_can_be_given() -> None:
    request = AgentRequest(goal="g", task="Other task", metadata=RequestMetadata(trace_id="mine"))
    assert (await assert_agent_io_compliance(Compliant(), request)).result == {"done": "Other task"}


@pytest.mark.parametrize(
    ("agent", "words"),
    [
        (SyncProcess(), "must define `async def process"),
        (ReturnsDict(), "must return an AgentResponse, not dict"),
        (ForgetsTraceId(), "no trace event carries the request's trace_id 'test-123'"),
        (LosesDataInJson(), "does not survive a JSON round trip"),
    ],
)
async def test_non_compliant_agents_fail_with_the_rule_they_break(agent: Any, words: str) -> None:
    with pytest.raises(AssertionError, match=words.replace("(", r"\(")):
        await assert_agent_io_compliance(agent)
