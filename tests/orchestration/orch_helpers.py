"""Agents used by the orchestration tests: real `AgentProtocol` implementations with scripted behaviour."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agentmap.contracts.io import (
    AgentRequest,
    AgentResponse,
    ErrorType,
    error_response,
    success_response,
    trace_event,
)
from agentmap.orchestration import DeterministicPlanner, PlannerAgent


def fixed_planner(*steps: dict[str, Any]) -> PlannerAgent:
    """A planner that always plans `steps`."""
    return PlannerAgent(DeterministicPlanner(steps=list(steps)), name="fixed")


class RecordingWorker:
    """Answers each request with `behaviour(request, call_number)`; records every request it got."""

    def __init__(
        self,
        behaviour: Callable[[AgentRequest, int], Any] | None = None,
        *,
        name: str = "rec",
        tools: list[str] | None = None,
        description: str = "",
    ) -> None:
        self.behaviour = behaviour or (lambda request, n: {"echo": request.inputs})
        self.name = name
        self.description = description
        self.requests: list[AgentRequest] = []
        self.calls_at: list[float] = []
        self._tools = tools

    def get_available_tools(self) -> list[str] | None:
        return self._tools

    async def process(self, request: AgentRequest) -> AgentResponse:
        self.requests.append(request)
        self.calls_at.append(asyncio.get_running_loop().time())
        outcome = self.behaviour(request, len(self.requests))
        if asyncio.iscoroutine(outcome):
            outcome = await outcome
        if isinstance(outcome, AgentResponse):
            return outcome
        event = trace_event("work:done", request.metadata.trace_id, worker=self.name)
        return success_response(outcome, trace=[event])


def failing(kind: ErrorType, message: str, *, recoverable: bool = False, retry_after: float | None = None) -> Any:
    """An ERROR response with a trace event (no trace id: the orchestrator must add it)."""
    return error_response(kind, message, recoverable=recoverable, retry_after=retry_after, trace=[{"event": "oops"}])
