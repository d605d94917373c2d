"""Routing a plan: check the planner's steps and pick each step's worker; workers that are graph nodes."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from agentmap.agents.protocol import as_protocol
from agentmap.contracts.io import (
    AgentError,
    AgentProtocol,
    AgentRequest,
    AgentResponse,
    ErrorType,
    describe_validation_error,
    error_response,
    trace_event,
)
from agentmap.orchestration.planner import PlanStep

if TYPE_CHECKING:
    from agentmap.agents.base import BaseAgent

__all__ = ["NodeAgent", "Routed", "route_plan"]

Routed = list[tuple[str, PlanStep, str]]
"""A routed plan: `(step id, step, worker name)` per step."""

_STEP_LIST = TypeAdapter(list[PlanStep])


async def route_plan(result: Any, workers: Mapping[str, AgentProtocol], name: str) -> Routed | AgentError:
    """Check a planner's result and pick each step's worker; an unroutable plan is a VALIDATION error."""
    raw = result.get("steps") if isinstance(result, Mapping) else None
    if not isinstance(raw, list) or not raw:
        what = "no steps" if isinstance(raw, list) else f"{type(result).__name__}"
        return AgentError(
            type=ErrorType.VALIDATION,
            message=f'the planner must answer with {{"steps": [...]}} holding at least one step; it gave {what}',
        )
    problems: list[str] = []
    tools: dict[str, list[str] | None] = {}
    for worker_name, worker in workers.items():
        try:
            tools[worker_name] = await _tools_of(worker)
        except Exception as exc:  # a missing node or a tool source that does not load
            problems.append(f"worker '{worker_name}': {exc}")
    generic = [w for w, t in tools.items() if t is None]
    routed: Routed = []
    seen: set[str] = set()
    repeats: dict[str, int] = {}
    for number, step in enumerate(_steps(raw, problems), start=1):
        if step is None:
            continue
        problem = step.problem()
        if problem:
            problems.append(f"step {number}: {problem}")
            continue
        worker_or_problem = _pick_worker(step, tools, generic, name)
        if worker_or_problem.startswith("!"):
            problems.append(f"step {number} ({step.target}): {worker_or_problem[1:]}")
            continue
        step_id = base = step.id or step.target
        while step_id in seen:
            repeats[base] = repeats.get(base, 1) + 1
            step_id = f"{base}_{repeats[base]}"
        seen.add(step_id)
        routed.append((step_id, step, worker_or_problem))
    if problems:
        return AgentError(
            type=ErrorType.VALIDATION,
            message="the plan cannot run, nothing was executed: " + "; ".join(dict.fromkeys(problems)),
            details={"problems": problems},
        )
    return routed


def _steps(raw: list[Any], problems: list[str]) -> list[PlanStep | None]:
    """Validate the steps at once (fast); on a failure, one by one so each problem names its step."""
    try:
        return list(_STEP_LIST.validate_python(raw))
    except ValidationError:
        pass
    steps: list[PlanStep | None] = []
    for number, item in enumerate(raw, start=1):
        try:
            steps.append(PlanStep.model_validate(item))
        except ValidationError as exc:
            problems.append(f"step {number}: {describe_validation_error(exc)}")
            steps.append(None)
    return steps


async def _tools_of(worker: Any) -> list[str] | None:
    ready = getattr(worker, "ready", None)
    if callable(ready):
        await ready()
    getter = getattr(worker, "get_available_tools", None)
    found = getter() if callable(getter) else None
    return None if found is None else list(found)


def _pick_worker(step: PlanStep, tools: Mapping[str, list[str] | None], generic: list[str], name: str) -> str:
    """The worker for `step`, or a problem prefixed with `!`."""
    wanted = step.agent or step.worker
    if wanted:
        if wanted not in tools:
            return f"!names worker '{wanted}', which is not a worker of orchestrator '{name}'" + _did_you_mean(
                wanted, list(tools)
            )
        offered = tools[wanted]
        if step.tool and offered is not None and step.tool not in offered:
            return f"!worker '{wanted}' has no tool '{step.tool}' (it has: {', '.join(offered)})" + _did_you_mean(
                step.tool, offered
            )
        return wanted
    for worker_name, offered in tools.items():
        if offered is not None and step.tool in offered:
            return worker_name
    if len(generic) == 1:
        return generic[0]
    every = sorted({t for offered in tools.values() for t in offered or ()})
    return f"!no worker of orchestrator '{name}' offers tool '{step.tool}' (tools: {', '.join(every) or 'none'})" + (
        _did_you_mean(step.tool or "", every)
    )


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(known) or 'none'}"


class NodeAgent:
    """A planner or worker named by an orchestrator node: another node of the same graph, found at run time."""

    def __init__(self, node: BaseAgent, target: str, *, role: str) -> None:
        self.node = node
        self.target = target
        self.role = role
        self._agent: AgentProtocol | None = None

    def resolve(self) -> AgentProtocol:
        """The node's agent as an `AgentProtocol`.

        Raises:
            LookupError: When the graph has no such node.
        """
        if self._agent is None:
            agents = self.node.environment.agents
            found = agents.get(self.target)
            if found is None:
                env = self.node.environment
                raise LookupError(
                    f"orchestrator node '{self.node.name}' names {self.role} '{self.target}', which is not a "
                    f"node of graph '{env.graph_name}'" + _did_you_mean(self.target, sorted(agents))
                )
            self._agent = as_protocol(found)
        return self._agent

    async def ready(self) -> None:
        """Resolve the node and let its agent load what it needs (a worker's tools).

        Raises:
            LookupError: When the graph has no such node.
        """
        ready = getattr(self.resolve(), "ready", None)
        if callable(ready):
            await ready()

    def get_available_tools(self) -> list[str] | None:
        """The node's tools, or None when it does not list tools (it takes any step sent to it)."""
        getter = getattr(self.resolve(), "get_available_tools", None)
        return list(getter()) if callable(getter) else None

    async def process(self, request: AgentRequest) -> AgentResponse:
        """Send `request` to the node's agent."""
        try:
            agent = self.resolve()
        except LookupError as exc:
            trace = [trace_event("agent:missing", request.metadata.trace_id, node=self.target)]
            return error_response(ErrorType.VALIDATION, str(exc), trace=trace)
        return await agent.process(request)
