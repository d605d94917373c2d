"""Routing a plan: check the planner's steps and pick each step's worker; workers that are graph nodes."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
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
from agentmap.orchestration._matching import match_worker, profile
from agentmap.orchestration.planner import PlanStep

if TYPE_CHECKING:
    from agentmap.agents.base import BaseAgent

__all__ = ["NodeAgent", "Routed", "RoutedPlan", "route_plan"]

Routed = list[tuple[str, PlanStep, str]]
"""A routed plan: `(step id, step, worker name)` per step."""

_STEP_LIST = TypeAdapter(list[PlanStep])


@dataclass
class RoutedPlan:
    """A plan whose every step has a worker.

    Attributes:
        steps: `(step id, step, worker name)` per step, in order.
        matches: For each step routed by description, the data of its `step:matched` trace event.
    """

    steps: Routed
    matches: list[dict[str, Any]] = field(default_factory=list)


async def route_plan(result: Any, workers: Mapping[str, AgentProtocol], name: str) -> RoutedPlan | AgentError:
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
    router = _Router(tools, workers, name)
    plan = RoutedPlan([])
    seen: set[str] = set()
    repeats: dict[str, int] = {}
    for number, step in enumerate(_steps(raw, problems), start=1):
        if step is None:
            continue
        decided = router.decide(step)
        if isinstance(decided, str):
            problems.append(f"step {number}{decided}")
            continue
        chosen, match = decided
        step_id = base = step.id or step.target
        while step_id in seen:
            repeats[base] = repeats.get(base, 1) + 1
            step_id = f"{base}_{repeats[base]}"
        seen.add(step_id)
        plan.steps.append((step_id, step, chosen))
        if match is not None:
            plan.matches.append({"step": step_id, **match})
    if problems:
        return AgentError(
            type=ErrorType.VALIDATION,
            message="the plan cannot run, nothing was executed: " + "; ".join(dict.fromkeys(problems)),
            details={"problems": problems},
        )
    return plan


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


class _Unroutable(Exception):
    """A step no worker can take; the message says why and what to change."""


_Pick = tuple[str, dict[str, Any] | None]


class _Router:
    """Picks each step's worker; steps alike (same tool, agent, worker, description) are decided once."""

    def __init__(self, tools: dict[str, list[str] | None], workers: Mapping[str, AgentProtocol], name: str) -> None:
        self.tools = tools
        self.workers = workers
        self.name = name
        self._decided: dict[tuple[str | None, ...], _Pick | str] = {}
        self._profiles: dict[str, frozenset[str]] = {}

    def decide(self, step: PlanStep) -> _Pick | str:
        """The worker for `step` and, when it was chosen by description, why; or what is wrong with the step.

        A problem is returned as the end of a message about the step: `" (target): why"`.
        """
        key = (step.tool, step.agent, step.worker, step.description)
        decided = self._decided.get(key)
        if decided is None:
            problem = step.problem()
            if problem:
                decided = f": {problem}"
            else:
                try:
                    decided = self._pick(step)
                except _Unroutable as exc:
                    decided = f" ({step.target}): {exc}"
            self._decided[key] = decided
        return decided

    def _pick(self, step: PlanStep) -> _Pick:
        tools, tool = self.tools, step.tool
        wanted = step.agent or step.worker
        if wanted and wanted in tools:
            offered = tools[wanted]
            if tool and offered is not None and tool not in offered:
                raise _Unroutable(
                    f"worker '{wanted}' has no tool '{tool}' (it has: {', '.join(offered)})"
                    + _did_you_mean(tool, offered)
                )
            return wanted, None
        able = [w for w, offered in tools.items() if not tool or offered is None or tool in offered]
        if wanted and able:
            return self._by_description(step, wanted, able)
        if tool:
            offering = [w for w in able if tools[w] is not None]
            if offering or len(able) == 1:
                return (offering or able)[0], None
        if wanted:
            raise _Unroutable(self._not_a_worker(wanted))
        every = sorted({t for offered in tools.values() for t in offered or ()})
        raise _Unroutable(
            f"no worker of orchestrator '{self.name}' offers tool '{tool}' (tools: {', '.join(every) or 'none'})"
            + _did_you_mean(tool or "", every)
        )

    def _by_description(self, step: PlanStep, wanted: str, able: list[str]) -> _Pick:
        profiles = {w: self._profile(w) for w in able}
        found = match_worker((wanted, step.description), profiles)
        if len(found.best) == 1:
            worker = found.best[0]
            shared = list(found.shared[worker])
            reason = (
                f"'{wanted}' is not a worker of orchestrator '{self.name}'; worker '{worker}' matches it best "
                f"on its Description and tools: {', '.join(shared)}"
            )
            return worker, {"requested": wanted, "worker": worker, "matched": shared, "reason": reason}
        if found.best:
            *rest, last = (f"'{w}'" for w in found.best)
            on = "; ".join(f"{w} on: {', '.join(found.shared[w])}" for w in found.best)
            raise _Unroutable(
                f"'{wanted}' matches workers {', '.join(rest)} and {last} equally ({on}); name one of them"
            )
        raise _Unroutable(
            self._not_a_worker(wanted) + "; no worker's Description or tools share a word with it: name a worker, "
            "or describe the step with words from a worker's Description"
        )

    def _not_a_worker(self, wanted: str) -> str:
        known = list(self.tools)
        return f"names worker '{wanted}', which is not a worker of orchestrator '{self.name}'" + _did_you_mean(
            wanted, known
        )

    def _profile(self, worker: str) -> frozenset[str]:
        found = self._profiles.get(worker)
        if found is None:
            description = getattr(self.workers[worker], "description", None)
            text = description if isinstance(description, str) else None
            found = self._profiles[worker] = profile(worker, text, self.tools[worker])
        return found


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

    @property
    def description(self) -> str:
        """The node's Description (what the orchestrator matches a step naming a capability on)."""
        found = self.node.environment.agents.get(self.target)
        return str(getattr(found, "description", "") or "")

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
