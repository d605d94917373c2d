"""The moving parts of one orchestrated request: its record (`Run`), agent calls with retries, plan routing."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from agentmap.agents.protocol import error_for_exception
from agentmap.contracts.io import (
    AgentError,
    AgentProtocol,
    AgentRequest,
    AgentResponse,
    ErrorType,
    RequestMetadata,
    ResponseStatus,
    describe_validation_error,
    error_response,
    trace_event,
    utc_timestamp,
    validate_response,
)
from agentmap.orchestration._routing import Routed
from agentmap.orchestration.planner import PlanStep

if TYPE_CHECKING:
    from agentmap.orchestration.orchestrator import OrchestratorConfig

# Enum members read through the class, `in` tests on enum sets and `.value` all run Python code in 3.11;
# these names keep the per-step path to plain identity checks.
_SUCCESS, _PARTIAL, _ERROR = ResponseStatus.SUCCESS, ResponseStatus.PARTIAL, ResponseStatus.ERROR


class _Budget(Protocol):
    def check(self, step: PlanStep, step_id: str) -> AgentError | None: ...

    def record(self, step: PlanStep, response: AgentResponse | None) -> None: ...


def _traceparent() -> dict[str, str]:
    """The W3C `traceparent` of the OpenTelemetry span current here (the orchestrator node's, when traced).

    Step requests carry it in `parent_context`, linking each to the span that made it; OpenTelemetry is only
    looked at when something already imported it.
    """
    otel = sys.modules.get("opentelemetry.trace")
    if otel is None:
        return {}
    context = otel.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"}


class StepOutcome:
    """How a call to the planner or a worker ended, after retries.

    Attributes:
        response: The agent's answer (None when the step did not run).
        error: Why the step did not run (a policy violation).
        attempts: How many times the agent was asked.
        status: The response's status (ERROR when the step did not run).
        ok: Whether the call produced a result (SUCCESS or PARTIAL).
    """

    __slots__ = ("attempts", "error", "ok", "response", "status")

    def __init__(
        self, response: AgentResponse | None = None, error: AgentError | None = None, attempts: int = 0
    ) -> None:
        self.response = response
        self.error = error
        self.attempts = attempts
        status = self.status = response.status if response is not None else _ERROR
        self.ok = status is _SUCCESS or status is _PARTIAL

    @property
    def result(self) -> Any:
        """The response's result."""
        return self.response.result if self.response is not None else None

    def error_or(self, message: str) -> AgentError:
        """The error of the call, or an EXECUTION error with `message` when there is none."""
        found = self.error or (self.response.error if self.response is not None else None)
        if found is not None:
            return found
        return AgentError(type=ErrorType.EXECUTION, message=f"{message} (status {self.status.value})")


class Run:
    """Everything one orchestrated request has done so far; builds the step requests and the answer."""

    def __init__(self, request: AgentRequest, name: str) -> None:
        self.request = request
        self.name = name
        self.trace_id = request.metadata.trace_id
        self.parent = {"orchestrator": name, "task": request.task, **_traceparent()}
        self.started = time.perf_counter()
        timeout = request.metadata.timeout_seconds
        self.deadline = self.started + timeout if timeout else None
        self.trace: list[dict[str, Any]] = []
        self.steps: Routed = []
        self.records: list[dict[str, Any]] = []
        self.results: dict[str, Any] = {}
        self.previous: Any = None
        self.previous_agent: str | None = None
        self.failures: list[tuple[str, AgentError]] = []
        self.fatal: AgentError | None = None
        self.cancelled = False
        self.retries = 0
        self.metadata: dict[str, Any] = {}
        self._fixed_metadata: RequestMetadata | None = None

    @property
    def succeeded(self) -> int:
        """Steps that produced a result."""
        return len(self.results)

    def event(self, name: str, **data: Any) -> None:
        """Append a trace event stamped with the trace id."""
        self.trace.append(trace_event(name, self.trace_id, orchestrator=self.name, **data))

    def absorb(self, events: list[dict[str, Any]], label: str) -> None:
        """Append a sub-agent's trace events, each given the trace id (when missing) and the step label."""
        trace_id = self.trace_id
        for event in events:
            merged = event.copy()
            merged["step"] = label
            if "trace_id" not in merged:
                merged["trace_id"] = trace_id
            self.trace.append(merged)

    def _metadata(self, timeout: float | None) -> RequestMetadata:
        if self.deadline is not None:
            remaining = max(self.deadline - time.perf_counter(), 0.001)
            timeout = remaining if timeout is None else min(timeout, remaining)
        elif self._fixed_metadata is not None and timeout == self._fixed_metadata.timeout_seconds:
            return self._fixed_metadata
        meta = self.request.metadata
        built = RequestMetadata(
            trace_id=self.trace_id,
            profile=meta.profile,
            priority=meta.priority,
            timeout_seconds=timeout,
            parent_context=self.parent,
            tags=meta.tags,
        )
        if self.deadline is None:
            self._fixed_metadata = built  # immutable, so every step may share it
        return built

    def planner_request(self, timeout: float | None) -> AgentRequest:
        """The request sent to the planner: the goal, the caller's inputs, context and constraints."""
        request = self.request
        return AgentRequest(
            goal=request.goal,
            task=f"Generate an execution plan for: {request.task}",
            metadata=self._metadata(timeout),
            inputs=request.inputs,
            context=request.context,
            constraints=request.constraints,
        )

    def set_plan(self, routed: Routed) -> None:
        """Record the routed plan."""
        self.steps = routed
        self.event("plan:received", step_count=len(routed), steps=[sid for sid, _, _ in routed])

    def step_request(
        self, index: int, step_id: str, step: PlanStep, worker: str, timeout: float | None
    ) -> AgentRequest:
        """The request for one step: the step in `inputs`, the results so far in `context`."""
        action = f"call {step.tool}" if step.tool else f"send to {step.agent}"
        inputs = {"tool": step.tool, "inputs": dict(step.inputs), "id": step_id} if step.tool else dict(step.inputs)
        return AgentRequest(
            goal=self.request.goal,
            task=f"Execute plan step {index + 1}: {action}",
            metadata=self._metadata(timeout),
            inputs=inputs,
            context={
                "step_index": index,
                "step_id": step_id,
                "step_count": len(self.steps),
                "previous_result": self.previous,
                "previous_agent": self.previous_agent,
                "results": dict(self.results),
            },
            constraints=self.request.constraints,
        )

    def record(self, index: int, outcome: StepOutcome) -> None:
        """Record how step `index` ended."""
        step_id, step, worker = self.steps[index]
        entry: dict[str, Any] = {"id": step_id, "worker": worker, "status": outcome.status._value_}
        entry["tool" if step.tool else "agent"] = step.target
        entry["attempts"] = outcome.attempts
        if outcome.ok:
            self.results[step_id] = self.previous = entry["result"] = outcome.result
            self.previous_agent = worker
            self.trace.append(
                {
                    "event": "step:complete",
                    "trace_id": self.trace_id,
                    "timestamp": utc_timestamp(),
                    "orchestrator": self.name,
                    "step": step_id,
                    "worker": worker,
                    "attempts": outcome.attempts,
                }
            )
        else:
            error = outcome.error_or(f"step '{step_id}' did not complete")
            self.failures.append((step_id, error))
            entry["error"] = error.model_dump(mode="json")
            self.event("step:failed", step=step_id, worker=worker, error_type=error.type.value)
        self.records.append(entry)

    def fail_all(self, error: AgentError, stage: str | None = None) -> None:
        """End the run with `error` (the answer will be ERROR)."""
        message = f"{stage}: {error.message}" if stage and stage != "plan" else error.message
        context = {**(error.trace_context or {}), "trace_id": self.trace_id, "stage": stage or "orchestrate"}
        self.fatal = error.model_copy(update={"message": message, "trace_context": context})

    def response(self) -> AgentResponse:
        """The one answer: CANCELLED, ERROR, PARTIAL or SUCCESS, with the steps' records as the result."""
        failed = len(self.failures)
        skipped = max(len(self.steps) - len(self.records), 0)
        error: AgentError | None = self.fatal
        if self.cancelled:
            status = ResponseStatus.CANCELLED
        elif error is not None:
            status = ResponseStatus.ERROR
        elif failed and not self.succeeded:
            status, error = ResponseStatus.ERROR, self._combined_error()
        elif failed or skipped:
            status, error = ResponseStatus.PARTIAL, self._combined_error() if failed else None
        else:
            status = ResponseStatus.SUCCESS
        self.event("orchestrate:complete", status=status.value, succeeded=self.succeeded, failed=failed)
        result = {"goal": self.request.goal, "steps": self.records, "results": self.results, "final": self.previous}
        metadata = {
            **self.metadata,
            "trace_id": self.trace_id,
            "duration_ms": (time.perf_counter() - self.started) * 1000,
            "steps_total": len(self.steps),
            "steps_succeeded": self.succeeded,
            "steps_failed": failed,
            "steps_skipped": skipped,
            "retries": self.retries,
        }
        # Every part was built here from checked values (SUCCESS has its result, ERROR its error), so
        # skip re-validating hundreds of trace events.
        return AgentResponse.model_construct(
            status=status,
            result=result,
            error=error,
            trace=self.trace,
            metadata=metadata,
            timestamp=utc_timestamp(),
        )

    def _combined_error(self) -> AgentError:
        kinds = {e.type for _, e in self.failures}
        failed, skipped = len(self.failures), max(len(self.steps) - len(self.records), 0)
        if failed == 1:
            sid, only = self.failures[0]
            message = f"step '{sid}' failed: {only.message}"
        else:
            message = f"{failed} of {len(self.steps)} steps failed: " + "; ".join(
                f"step '{sid}': {e.message}" for sid, e in self.failures
            )
        if skipped:
            message += f" ({skipped} later step{'s' if skipped != 1 else ''} not run)"
        return AgentError(
            type=kinds.pop() if len(kinds) == 1 else ErrorType.EXECUTION,
            message=message,
            details={"failures": [{"step": sid, **e.model_dump(mode="json")} for sid, e in self.failures]},
            trace_context={"trace_id": self.trace_id},
        )


async def call_agent(
    agent: AgentProtocol,
    request: AgentRequest,
    run: Run,
    label: str,
    config: OrchestratorConfig,
    *,
    budget: _Budget | None = None,
    step: PlanStep | None = None,
) -> StepOutcome:
    """Send `request` to `agent`, retrying recoverable errors; exceptions and hangs become errors."""
    attempts = 0
    timeout = config.step_timeout_seconds
    while True:
        attempts += 1
        if budget is not None and step is not None and attempts > 1:
            violation = budget.check(step, label)
            if violation is not None:
                run.event("policy:violation", step=label, constraint=(violation.details or {}).get("constraint"))
                return StepOutcome(error=violation, attempts=attempts - 1)
        try:
            if timeout is None:
                response = await agent.process(request)
            else:
                async with asyncio.timeout(timeout):
                    response = await agent.process(request)
            if not isinstance(response, AgentResponse):
                response = validate_response(response)
        except Exception as exc:
            response = _no_answer(exc, request, label, timeout)
        if budget is not None and step is not None:
            budget.record(step, response)
        run.absorb(response.trace, label)
        error = response.error
        if error is not None and error.recoverable and response.status is _ERROR and attempts <= config.max_retries:
            delay = min(config.retry_delay if error.retry_after is None else error.retry_after, config.max_retry_delay)
            if run.deadline is None or time.perf_counter() + delay < run.deadline:
                run.retries += 1
                run.event("step:retry", step=label, attempt=attempts, delay=delay, error=error.message)
                await asyncio.sleep(delay)
                continue
        return StepOutcome(response=response, attempts=attempts)


def _no_answer(exc: Exception, request: AgentRequest, label: str, timeout: float | None) -> AgentResponse:
    """The error an agent's exception (or hang, or malformed answer) stands for."""
    if isinstance(exc, TimeoutError) and timeout is not None:
        kind, recoverable = ErrorType.TIMEOUT, False
        message = f"'{label}' did not answer within step_timeout_seconds={timeout}; it was stopped"
    elif isinstance(exc, ValidationError):
        kind, recoverable = ErrorType.EXECUTION, False
        message = f"'{label}' answered with something that is not an AgentResponse: {describe_validation_error(exc)}"
    else:
        kind, recoverable = error_for_exception(exc)
        message = f"'{label}' raised {type(exc).__name__}: {exc}"
    return error_response(kind, message, recoverable=recoverable, trace=_failed(request, label))


def _failed(request: AgentRequest, label: str) -> list[dict[str, Any]]:
    return [trace_event("step:no-answer", request.metadata.trace_id, step=label)]
