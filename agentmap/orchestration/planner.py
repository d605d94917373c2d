"""Planning: turn a goal into steps (`{"tool" or "agent": ..., "inputs": {...}}`).

`Planner` is the interface (`async plan(goal, request) -> list[PlanStep]`); `DeterministicPlanner`
plans from configuration alone (a fixed step list, or rules whose keywords or pattern match the goal),
with no LLM; an LLM planner implements the same interface. `PlannerAgent` puts any planner behind the
`AgentProtocol` face the orchestrator routes to.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentmap.agents.protocol import error_for_exception
from agentmap.contracts.io import (
    AgentRequest,
    AgentResponse,
    ErrorType,
    describe_validation_error,
    error_response,
    success_response,
    trace_event,
)

if TYPE_CHECKING:
    from agentmap.agents.base import AgentEnvironment, BaseAgent

__all__ = ["DeterministicPlanner", "PlanRule", "PlanStep", "Planner", "PlannerAgent", "PlanningError"]

_PLACEHOLDER = re.compile(r"(?<!\$)\{(\w+)\}")


class PlanningError(ValueError):
    """A plan cannot be made from the goal (a missing placeholder value, ...); the message says what to add."""


class PlanStep(BaseModel):
    """One step of a plan: call a `tool` (on the worker offering it) or send to an `agent` (a worker).

    Attributes:
        tool: The tool to call; the orchestrator routes the step to the worker offering it.
        agent: The worker to send the step to (for workers that are not tool runners).
        inputs: The step's inputs; a string `"$id.key"` refers to an earlier step's result,
            `"$previous"` to the previous one.
        id: The name later steps refer to; defaults to the tool or agent name.
        worker: The worker that runs a tool step, when several offer the tool.
        cost_usd: Estimated cost, checked against `max_cost_usd` before the step runs.
        api_calls: API calls the step makes, counted against `max_api_calls`.
        description: What the step does, for people reading the trace.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str | None = None
    agent: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    worker: str | None = None
    cost_usd: float = Field(default=0.0, ge=0)
    api_calls: int = Field(default=1, ge=0)
    description: str | None = None

    @property
    def target(self) -> str:
        """The tool or agent the step names."""
        return self.tool or self.agent or ""

    def problem(self) -> str | None:
        """What is wrong with the step (it must name exactly one of `tool` or `agent`), or None.

        Checked wherever plans enter (a planner's Context, the orchestrator's routing) rather than on
        every construction, which keeps building long plans cheap.
        """
        if bool(self.tool) == bool(self.agent):
            return 'a step names exactly one of "tool" or "agent", e.g. {"tool": "search", "inputs": {}}'
        return None

    def to_dict(self) -> dict[str, Any]:
        """The step as a plain dict, without the fields left at their defaults."""
        data: dict[str, Any] = {"tool": self.tool} if self.tool else {}
        if self.agent or not self.tool:
            data["agent"] = self.agent  # both, or neither: kept so the receiver sees the problem
        if self.inputs:
            data["inputs"] = dict(self.inputs)
        if self.id is not None:
            data["id"] = self.id
        if self.worker is not None:
            data["worker"] = self.worker
        if self.description is not None:
            data["description"] = self.description
        if self.cost_usd:
            data["cost_usd"] = self.cost_usd
        if self.api_calls != 1:
            data["api_calls"] = self.api_calls
        return data


def _check_steps(steps: Sequence[PlanStep], where: str = "steps") -> None:
    for index, step in enumerate(steps):
        problem = step.problem()
        if problem:
            raise ValueError(f"{where}.{index}: {problem}")


class PlanRule(BaseModel):
    """Steps to plan when the goal matches: any of `keywords` (whole words, any case) or the `pattern` regex.

    Named groups of `pattern` (`(?P<city>\\w+)`) fill `{city}` placeholders in the steps' inputs.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    keywords: list[str] = Field(default_factory=list)
    pattern: str | None = None
    steps: list[PlanStep]

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"pattern {value!r} is not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _has_matcher(self) -> PlanRule:
        if not self.keywords and not self.pattern:
            raise ValueError('a rule needs "keywords" (a list of words) or a "pattern" (a regex) to match goals')
        _check_steps(self.steps)
        return self

    def match(self, goal: str) -> dict[str, str] | None:
        """Return the values captured from `goal` (named groups) if the rule matches, else None."""
        if self.pattern:
            found = re.search(self.pattern, goal, re.IGNORECASE)
            if found:
                return {k: v for k, v in found.groupdict().items() if v is not None}
        words = set(re.findall(r"\w+", goal.lower()))
        if any(k.lower() in words for k in self.keywords):
            return {}
        return None


class _PlannerConfig(BaseModel):
    steps: list[PlanStep]
    rules: list[PlanRule]

    @model_validator(mode="after")
    def _steps_have_targets(self) -> _PlannerConfig:
        _check_steps(self.steps)
        return self


@runtime_checkable
class Planner(Protocol):
    """Anything that turns a goal into steps; an LLM planner implements this too."""

    async def plan(self, goal: str, request: AgentRequest) -> list[PlanStep]:
        """Return the steps that achieve `goal` (may be empty when nothing fits)."""
        ...


class DeterministicPlanner:
    """Plans from configuration alone: every rule that matches the goal adds its steps, in order.

    When no rule matches, the fixed `steps` are the plan. `{name}` in a step's string inputs is filled
    from the matching rule's named groups, then from the request's inputs.

    Args:
        steps: The fixed plan (or the fallback when rules are given).
        rules: Rules mapping goals to steps.
    """

    def __init__(
        self,
        steps: Sequence[PlanStep | Mapping[str, Any]] = (),
        rules: Sequence[PlanRule | Mapping[str, Any]] = (),
    ) -> None:
        config = _PlannerConfig.model_validate({"steps": list(steps), "rules": list(rules)})
        self.steps = config.steps
        self.rules = config.rules
        # Steps without placeholders are planned as they are; find them once, not on every plan.
        self._fixed = {
            id(step) for step in [*self.steps, *(s for r in self.rules for s in r.steps)] if not _templated(step)
        }

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> DeterministicPlanner:
        """Build a planner from a node's Context (`steps` and `rules` keys).

        Raises:
            pydantic.ValidationError: When a step or rule is malformed.
        """
        config = _PlannerConfig.model_validate(
            {"steps": context.get("steps") or [], "rules": context.get("rules") or []}
        )
        return cls(steps=config.steps, rules=config.rules)

    async def plan(self, goal: str, request: AgentRequest) -> list[PlanStep]:
        """Return the steps of every rule matching `goal`, or the fixed steps when none matches.

        Raises:
            PlanningError: When a `{name}` placeholder has no value.
        """
        planned: list[PlanStep] = []
        for rule in self.rules:
            captured = rule.match(goal)
            if captured is not None:
                values = {**request.inputs, **captured}
                planned += [step if id(step) in self._fixed else _fill(step, values) for step in rule.steps]
        if not planned:
            values = dict(request.inputs)
            planned = [step if id(step) in self._fixed else _fill(step, values) for step in self.steps]
        return planned


def _fill(step: PlanStep, values: Mapping[str, Any]) -> PlanStep:
    def fill(value: Any, key: str) -> Any:
        if isinstance(value, str):
            whole = _PLACEHOLDER.fullmatch(value)
            if whole:
                return _lookup(whole.group(1), values, step, key)
            return _PLACEHOLDER.sub(lambda m: str(_lookup(m.group(1), values, step, key)), value)
        if isinstance(value, dict):
            return {k: fill(v, key) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v, key) for v in value]
        return value

    if not _templated(step):
        return step
    return step.model_copy(update={"inputs": {k: fill(v, k) for k, v in step.inputs.items()}})


def _templated(step: PlanStep) -> bool:
    return any(_PLACEHOLDER.search(str(v)) for v in step.inputs.values())


def _lookup(name: str, values: Mapping[str, Any], step: PlanStep, key: str) -> Any:
    if name not in values:
        raise PlanningError(
            f"step '{step.id or step.target}' input '{key}' uses {{{name}}}, but neither the goal nor the "
            f"request inputs give '{name}': capture it with a named group (?P<{name}>...) in the rule's "
            f"pattern or pass it in the request inputs"
        )
    return values[name]


class PlannerAgent:
    """The `planner` agent: answers a request with `{"steps": [...]}` from its `Planner`.

    Args:
        planner: The planner; a `DeterministicPlanner` with no rules when omitted.
        name: The agent's name in trace events.
    """

    def __init__(self, planner: Planner | None = None, *, name: str = "planner") -> None:
        self.planner: Planner = planner or DeterministicPlanner()
        self.name = name

    @classmethod
    def from_node(cls, node: BaseAgent) -> PlannerAgent:
        """Build the planner of a `planner` node from its Context (`steps`, `rules`)."""
        return cls(DeterministicPlanner.from_context(node.context), name=node.name)

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """Report malformed `steps` or `rules`, and a planner with neither."""
        if not context.get("steps") and not context.get("rules"):
            return ['a planner needs "steps" (a fixed plan) or "rules" (goal patterns -> steps) in its Context']
        try:
            DeterministicPlanner.from_context(context)
        except ValidationError as exc:
            return [f"bad plan in Context: {describe_validation_error(exc)}"]
        return []

    async def process(self, request: AgentRequest) -> AgentResponse:
        """Plan `request.goal`; `inputs["max_steps"]` caps the plan's length.

        Returns:
            SUCCESS with `{"steps": [...]}`, or a VALIDATION error when no step fits the goal.
        """
        trace_id = request.metadata.trace_id
        started = time.perf_counter()
        trace: list[dict[str, Any]] = [trace_event("plan:start", trace_id, planner=self.name, goal=request.goal)]
        try:
            steps = await self.planner.plan(request.goal, request)
        except (PlanningError, ValidationError) as exc:
            message = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            trace.append(trace_event("plan:error", trace_id, planner=self.name))
            return error_response(ErrorType.VALIDATION, f"planner '{self.name}': {message}", trace=trace)
        except Exception as exc:
            kind, recoverable = error_for_exception(exc)
            trace.append(trace_event("plan:error", trace_id, planner=self.name))
            return error_response(
                kind, f"planner '{self.name}' raised {type(exc).__name__}: {exc}", recoverable=recoverable, trace=trace
            )
        if not steps:
            trace.append(trace_event("plan:empty", trace_id, planner=self.name))
            return error_response(
                ErrorType.VALIDATION,
                f"planner '{self.name}' found no steps for the goal {request.goal!r}: add a rule whose keywords "
                'or pattern match it, or a fixed "steps" list, to the planner\'s Context',
                trace=trace,
            )
        limit = request.inputs.get("max_steps")
        if isinstance(limit, int) and 0 < limit < len(steps):
            trace.append(trace_event("plan:truncated", trace_id, planned=len(steps), kept=limit))
            steps = steps[:limit]
        trace.append(trace_event("plan:complete", trace_id, step_count=len(steps)))
        return success_response(
            {"steps": [s.to_dict() for s in steps]},
            trace=trace,
            metadata={"duration_ms": (time.perf_counter() - started) * 1000, "tool_count": len(steps)},
        )
