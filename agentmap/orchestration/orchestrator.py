"""`Orchestrator`: routes one request between a planner and workers and answers with one response.

The orchestrator sends the request to its planner, checks the plan (every step must reach a worker),
then sends each step to its worker as an `AgentRequest` carrying the previous results in `context`.
Recoverable errors are retried after `retry_after`; policy violations stop a step before it runs; the
request's `timeout_seconds` bounds the whole run; queued requests are served by `priority`; every trace
event carries the request's `trace_id`. The answer is SUCCESS, PARTIAL (some steps failed), ERROR or
CANCELLED; with `on_failure="raise"` a failure raises `OrchestrationError` instead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentmap.contracts.io import (
    AgentError,
    AgentProtocol,
    AgentRequest,
    AgentResponse,
    ErrorType,
    OrchestrationError,
    RequestMetadata,
    ResponseStatus,
    describe_validation_error,
    error_response,
    new_trace_id,
    trace_event,
    validate_request,
)
from agentmap.orchestration._queue import PriorityGate
from agentmap.orchestration._routing import NodeAgent, route_plan
from agentmap.orchestration._run import Run, StepOutcome, call_agent
from agentmap.orchestration.policy import PolicyEnforcer, PolicyError, PolicyLimits

if TYPE_CHECKING:
    from agentmap.agents.base import AgentEnvironment, BaseAgent

__all__ = ["Orchestrator", "OrchestratorConfig"]


class OrchestratorConfig(BaseModel):
    """How an orchestrator retries, fails and queues.

    Attributes:
        max_retries: Retries of a step (or the plan) whose error is recoverable.
        retry_delay: Seconds to wait before a retry when the error gives no `retry_after`.
        max_retry_delay: The longest wait before a retry, whatever `retry_after` says.
        on_failure: What a step that still fails does: `continue` with the next step (the answer is
            PARTIAL, or ERROR if nothing succeeded), `stop` the plan there (same answers), `error`
            (answer ERROR at once), or `raise` `OrchestrationError`.
        step_timeout_seconds: A deadline for each step, besides the request's overall `timeout_seconds`.
        max_concurrent: Requests served at once; more wait in a queue ordered by priority.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_retries: int = Field(default=2, ge=0)
    retry_delay: float = Field(default=1.0, ge=0)
    max_retry_delay: float = Field(default=30.0, ge=0)
    on_failure: Literal["continue", "stop", "error", "raise"] = "continue"
    step_timeout_seconds: float | None = Field(default=None, gt=0)
    max_concurrent: int = Field(default=4, ge=1)


_CONFIG_KEYS = frozenset(OrchestratorConfig.model_fields)
_CANCELLED = ResponseStatus.CANCELLED


class Orchestrator:
    """The `orchestrator` agent.

    Args:
        planner: The agent that answers a request with `{"steps": [...]}`.
        workers: The agents steps are sent to, by name; a tool step goes to the worker whose
            `get_available_tools()` lists the tool (or that the step names in `worker`).
        policy: Limits per profile; requests' constraints tighten them.
        config: Retries, failure handling, per-step timeout, concurrency.
        name: The orchestrator's name in trace events.
    """

    def __init__(
        self,
        planner: AgentProtocol,
        workers: Mapping[str, AgentProtocol],
        *,
        policy: PolicyEnforcer | None = None,
        config: OrchestratorConfig | None = None,
        name: str = "orchestrator",
    ) -> None:
        self.planner = planner
        self.workers = dict(workers)
        self.policy = policy or PolicyEnforcer()
        self.config = config or OrchestratorConfig()
        self.name = name
        self._gate = PriorityGate(self.config.max_concurrent)
        self._running: dict[str, asyncio.Task[Any]] = {}
        self._cancelled: set[str] = set()

    # -- building from a workflow node ---------------------------------------------------------

    @classmethod
    def from_node(cls, node: BaseAgent) -> Orchestrator:
        """Build the orchestrator of an `orchestrator` node: its planner and workers are nodes of the same graph."""
        ctx = node.context
        planner, workers = _node_names(ctx)
        return cls(
            NodeAgent(node, planner, role="planner"),
            {w: NodeAgent(node, w, role="worker") for w in workers},
            policy=PolicyEnforcer(ctx.get("profiles")),
            config=OrchestratorConfig.model_validate({k: v for k, v in ctx.items() if k in _CONFIG_KEYS}),
            name=node.name,
        )

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """Report a missing planner or workers, bad settings and bad profiles in an orchestrator's Context."""
        problems: list[str] = []
        planner, workers = _node_names(context)
        if not planner:
            problems.append('an orchestrator needs "planner": the name of its planner node')
        if not workers:
            problems.append('an orchestrator needs "workers": the names of its worker nodes, e.g. ["flights"]')
        try:
            OrchestratorConfig.model_validate({k: v for k, v in context.items() if k in _CONFIG_KEYS})
        except ValidationError as exc:
            problems.append(describe_validation_error(exc))
        try:
            PolicyEnforcer(context.get("profiles"))
            PolicyLimits.model_validate(context.get("constraints") or {})
        except (PolicyError, ValidationError) as exc:
            problems.append(str(exc))
        return problems

    @classmethod
    def referenced_nodes(cls, context: Mapping[str, Any]) -> list[str]:
        """The planner and worker nodes an orchestrator node's Context names."""
        planner, workers = _node_names(context)
        return [n for n in [planner, *workers] if n]

    # -- the protocol ----------------------------------------------------------------------------

    async def run(
        self,
        goal: str,
        *,
        task: str = "Plan and execute the goal",
        inputs: dict[str, Any] | None = None,
        constraints: dict[str, Any] | None = None,
        **metadata: Any,
    ) -> AgentResponse:
        """Build a request for `goal` (a fresh trace id unless one is given) and `process` it."""
        if metadata.get("trace_id") is None:
            metadata["trace_id"] = new_trace_id()
        request = AgentRequest(
            goal=goal,
            task=task,
            inputs=inputs or {},
            constraints=constraints or {},
            metadata=RequestMetadata(**metadata),
        )
        return await self.process(request)

    def cancel(self, trace_id: str) -> bool:
        """Cancel the request with `trace_id` (running or queued); it answers CANCELLED with what it finished.

        Returns:
            Whether such a request was in progress.
        """
        task = self._running.get(trace_id)
        if task is None:
            return False
        self._cancelled.add(trace_id)
        task.cancel()
        return True

    async def process(self, request: AgentRequest) -> AgentResponse:
        """Plan `request.goal`, run the steps and answer with one response (see the module's docstring).

        Raises:
            OrchestrationError: Only with `on_failure="raise"`, when the plan or a step fails.
        """
        try:
            request = validate_request(request)
        except ValidationError as exc:
            trace_id = getattr(getattr(request, "metadata", None), "trace_id", None) or new_trace_id()
            return error_response(
                ErrorType.VALIDATION,
                f"orchestrator '{self.name}' got an invalid request: {describe_validation_error(exc)}",
                trace=[trace_event("orchestrate:invalid", trace_id)],
            )
        meta = request.metadata
        run = Run(request, self.name)
        run.event("orchestrate:start", goal=request.goal, priority=meta.priority)
        task = asyncio.current_task()
        if task is not None:
            self._running[meta.trace_id] = task
        try:
            async with asyncio.timeout(meta.timeout_seconds):
                queued = time.perf_counter()
                async with self._gate.slot(meta.priority):
                    run.metadata["queued_ms"] = (time.perf_counter() - queued) * 1000
                    await self._orchestrate(run)
        except TimeoutError:
            run.fail_all(
                AgentError(
                    type=ErrorType.TIMEOUT,
                    message=f"orchestration did not finish within timeout_seconds={meta.timeout_seconds}; "
                    f"{run.succeeded} of {len(run.steps) or '?'} steps finished: raise the timeout or "
                    "shorten the plan",
                    recoverable=True,
                    details={"completed_steps": run.succeeded},
                )
            )
        except asyncio.CancelledError:
            if meta.trace_id not in self._cancelled or task is None:
                raise
            task.uncancel()
            run.cancelled = True
        finally:
            self._running.pop(meta.trace_id, None)
            self._cancelled.discard(meta.trace_id)
        response = run.response()
        if response.is_error() and self.config.on_failure == "raise":
            assert response.error is not None
            raise OrchestrationError(response.error.message, error=response.error, response=response)
        return response

    async def _orchestrate(self, run: Run) -> None:
        plan = await call_agent(
            self.planner, run.planner_request(self.config.step_timeout_seconds), run, "planner", self.config
        )
        if not plan.ok:
            run.fail_all(plan.error_or("the planner failed"), stage="plan")
            return
        routed = await route_plan(plan.result, self.workers, self.name)
        if isinstance(routed, AgentError):
            run.fail_all(routed, stage="plan")
            return
        run.set_plan(routed.steps)
        for match in routed.matches:
            run.event("step:matched", **match)
        try:
            policy = self.policy.session(run.request)
        except PolicyError as exc:
            run.fail_all(AgentError(type=ErrorType.VALIDATION, message=str(exc)), stage="plan")
            return
        config, workers = self.config, self.workers
        on_failure, step_timeout = config.on_failure, config.step_timeout_seconds
        for index, (step_id, step, worker_name) in enumerate(routed.steps):
            violation = policy.check(step, step_id)
            if violation is not None:
                run.event("policy:violation", step=step_id, constraint=(violation.details or {}).get("constraint"))
                outcome = StepOutcome(error=violation)
            else:
                request = run.step_request(index, step_id, step, worker_name, step_timeout)
                outcome = await call_agent(
                    workers[worker_name], request, run, step_id, config, budget=policy, step=step
                )
            run.record(index, outcome)
            if outcome.status is _CANCELLED:
                run.cancelled = True
                return
            if not outcome.ok and on_failure != "continue":
                if on_failure in ("error", "raise"):
                    run.fail_all(outcome.error_or("the step failed"), stage=step_id)
                return


def _node_names(context: Mapping[str, Any]) -> tuple[str, list[str]]:
    planner = str(context.get("planner") or "").strip()
    workers: Any = context.get("workers") or []
    if isinstance(workers, str):
        workers = [w.strip() for w in workers.split("|") if w.strip()]
    elif isinstance(workers, Sequence):
        workers = [str(w) for w in workers]
    return planner, list(workers)
