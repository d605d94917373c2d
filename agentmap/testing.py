"""Helpers for testing agents: the I/O contract's compliance check (csv_specs/agents.md) as a reusable function.

```python
from agentmap.testing import assert_agent_io_compliance

async def test_my_agent_is_compliant():
    await assert_agent_io_compliance(MyAgent())
```
"""

from __future__ import annotations

import inspect
from typing import Any

from agentmap.agents.base import BaseAgent
from agentmap.agents.protocol import as_protocol
from agentmap.contracts.io import AgentRequest, AgentResponse, RequestMetadata, ResponseStatus, validate_response

__all__ = ["assert_agent_io_compliance"]


async def assert_agent_io_compliance(agent: Any, request: AgentRequest | None = None) -> AgentResponse:
    """Check that `agent` follows the agent I/O contract, as the contract's canonical test does.

    `agent` is an `AgentProtocol` (a class with `async def process(request)`), or a `BaseAgent`, which
    is checked through `agentmap.agents.protocol.as_protocol`. The agent gets `request` (by default
    goal "Test goal", task "Test task", trace id "test-123") and its answer must be an `AgentResponse`
    that obeys every rule (SUCCESS has a result, ERROR an error with a message), propagates the trace
    id into its trace, and survives a JSON round trip unchanged.

    Returns:
        The agent's response, for further checks.

    Raises:
        AssertionError: Saying which rule the agent broke.
    """

    protocol = as_protocol(agent) if isinstance(agent, BaseAgent) else agent
    process = getattr(protocol, "process", None)
    assert process is not None and inspect.iscoroutinefunction(process), (
        f"{type(agent).__name__} must define `async def process(self, request: AgentRequest) -> AgentResponse`"
    )
    request = request or AgentRequest(goal="Test goal", task="Test task", metadata=RequestMetadata(trace_id="test-123"))
    response = await process(request)

    assert isinstance(response, AgentResponse), f"process() must return an AgentResponse, not {type(response).__name__}"
    validate_response(response)
    assert response.status in ResponseStatus, f"unknown status {response.status!r}"
    if response.status == ResponseStatus.SUCCESS:
        assert response.result is not None, "a SUCCESS response must carry a result"
    elif response.status == ResponseStatus.ERROR:
        assert response.error is not None, "an ERROR response must carry an error"
        assert response.error.message, "an ERROR response's error must have a message"

    trace_id = request.metadata.trace_id
    assert any("trace_id" in event or trace_id in str(event) for event in response.trace), (
        f"no trace event carries the request's trace_id {trace_id!r}; add it to the response's trace events"
    )
    restored = AgentResponse.model_validate(response.model_dump(mode="json"))
    assert restored == response, "the response does not survive a JSON round trip (model_dump -> model_validate)"
    return response
