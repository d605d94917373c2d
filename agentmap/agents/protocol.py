"""The one adapter between `BaseAgent` nodes and `AgentProtocol` agents (csv_specs/agents.md).

* `protocol_agent(cls)` turns a class with `async def process(request) -> AgentResponse` into a
  `BaseAgent` subclass usable as a CSV node: the node builds an `AgentRequest` from its inputs, awaits
  the protocol agent, writes the response (as a JSON-able dict) to its output field, and fails (so
  Failure_Next is taken) when the response is an ERROR.
* `as_protocol(agent)` gives any `BaseAgent` the `AgentProtocol` face, so an orchestrator can route
  requests to it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import ValidationError as PydanticValidationError

from agentmap.agents.base import AgentEnvironment, BaseAgent
from agentmap.agents.state import parse_input_field, parse_output_field
from agentmap.contracts.io import (
    AgentProtocol,
    AgentRequest,
    AgentResponse,
    ErrorType,
    RequestMetadata,
    ResponseStatus,
    describe_validation_error,
    error_response,
    new_trace_id,
    success_response,
    trace_event,
    validate_response,
)

__all__ = ["ProtocolAgent", "as_protocol", "error_for_exception", "protocol_agent"]

_CALL_KEY = "__agentmap_protocol_call__"
_RESPONSE_PARTS = ("response", "status", "result", "error", "trace", "metadata")
_REQUEST_KEYS = ("goal", "task", "context", "constraints", "expected_output")
_METADATA_KEYS = ("profile", "priority", "timeout_seconds", "tags")


def error_for_exception(exc: BaseException) -> tuple[ErrorType, bool]:
    """Map an exception to the contract's error type and whether retrying may help.

    Timeouts and network failures are recoverable; bad arguments are VALIDATION; refusals PERMISSION.
    """
    if isinstance(exc, TimeoutError):
        return ErrorType.TIMEOUT, True
    if isinstance(exc, PermissionError):
        return ErrorType.PERMISSION, False
    if isinstance(exc, ConnectionError):
        return ErrorType.NETWORK, True
    if isinstance(exc, (ValueError, TypeError, KeyError, LookupError)):
        return ErrorType.VALIDATION, False
    if isinstance(exc, (MemoryError, FileNotFoundError)):
        return ErrorType.RESOURCE, False
    return ErrorType.EXECUTION, False


class _ResponseFailure(Exception):
    """Raised inside a node so `BaseAgent.run` takes its failure path (Failure_Next)."""


@dataclass
class _Call:
    """Per-run scratch space shared by `_pre_process`, `process` and `_post_process` of one run."""

    trace_id: str | None = None
    response: AgentResponse | None = None
    parts: dict[str, Any] = field(default_factory=dict)


class ProtocolAgent(BaseAgent):
    """A workflow node running an `AgentProtocol` agent; subclasses come from `protocol_agent(cls)`.

    Context keys (all optional): `task` (the request's task; default the Prompt), `profile`,
    `priority`, `timeout_seconds`, `tags`, `constraints`, `expected_output`, `trace_id_field` (the state
    key holding a trace id to reuse, default `trace_id`) and `fail_on` (statuses that make the node
    fail, default `["error"]`). The goal is the input named `goal`, or else the first input.
    """

    own_timeout = True  # the request's timeout_seconds bounds the whole exchange, with a typed timeout error

    protocol_class: ClassVar[type[Any]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._protocol: AgentProtocol | None = None
        self._targets = _output_targets(self.output_field)
        fail_on = self.context.get("fail_on", ["error"])
        self._fail_on = {ResponseStatus(s) for s in ([fail_on] if isinstance(fail_on, str) else fail_on)}

    @classmethod
    def validate_config(cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
        """Check the adapter's Context keys, then the protocol class's own `validate_config`, if any."""
        problems: list[str] = []
        fail_on = context.get("fail_on", ["error"])
        for status in [fail_on] if isinstance(fail_on, str) else list(fail_on):
            if status not in {s.value for s in ResponseStatus}:
                problems.append(
                    f"fail_on names unknown status {status!r}; use any of {', '.join(s.value for s in ResponseStatus)}"
                )
        targets = _output_targets(str(context.get("output_field") or ""))
        if len(targets) > 1 or any(src for _, src in targets):
            problems += [
                f"Output_Field '{key}' names no part of a response; with several output fields (or "
                f"`field=part.path`) start each with one of: {', '.join(_RESPONSE_PARTS)}"
                for key, src in targets
                if (src or key).split(".")[0] not in _RESPONSE_PARTS
            ]
        try:
            RequestMetadata(trace_id="check", **{k: context[k] for k in _METADATA_KEYS if k in context})
        except PydanticValidationError as exc:
            problems.append(describe_validation_error(exc))
        own = getattr(cls.protocol_class, "validate_config", None)
        if callable(own):
            problems += list(own(prompt, context, environment))
        return problems

    @classmethod
    def referenced_nodes(cls, context: Mapping[str, Any]) -> list[str]:
        """Nodes of the same graph this node calls by name (an orchestrator's planner and workers).

        They run without an edge leading to them, so validation should not call them unreachable.
        """
        own = getattr(cls.protocol_class, "referenced_nodes", None)
        return list(own(context)) if callable(own) else []

    def state_keys(self) -> list[str]:
        """The state key a trace id is read from (`trace_id_field`), so the graph's state keeps it."""
        return [str(self.context.get("trace_id_field", "trace_id"))]

    @property
    def protocol(self) -> AgentProtocol:
        """The wrapped protocol agent, built on first use (after the compiler set the environment).

        The class builds it with a `from_node(node)` classmethod when it has one; otherwise with the
        keyword arguments among `name`, `prompt` and `context` its constructor accepts.
        """
        if self._protocol is None:
            cls = self.protocol_class
            from_node = getattr(cls, "from_node", None)
            if callable(from_node):
                self._protocol = from_node(self)
            else:
                offered = {"name": self.name, "prompt": self.prompt, "context": dict(self.context)}
                params = inspect.signature(cls).parameters
                takes_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
                self._protocol = cls(**{k: v for k, v in offered.items() if takes_all or k in params})
        assert self._protocol is not None
        return self._protocol

    def _pre_process(self, state: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
        key = str(self.context.get("trace_id_field", "trace_id"))
        found = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
        call = _Call(trace_id=found if isinstance(found, str) and found.strip() else None)
        return state, {**inputs, _CALL_KEY: call}

    async def process(self, inputs: dict[str, Any]) -> Any:
        """Build the request from `inputs`, await the protocol agent and return its response as a dict.

        Raises:
            Exception: When the response's status is in `fail_on` (by default an ERROR), so the node
                takes its failure path; the response is still written to the output field.
        """
        call = inputs.get(_CALL_KEY)
        if not isinstance(call, _Call):
            call = _Call()
        values = {k: v for k, v in inputs.items() if k != _CALL_KEY}
        trace_id = call.trace_id or new_trace_id()
        try:
            request = self.build_request(values, trace_id)
        except PydanticValidationError as exc:
            response = error_response(
                ErrorType.VALIDATION,
                f"node '{self.name}' could not build its request: {describe_validation_error(exc)}",
                trace=[{"event": "request:invalid", "node": self.name, "trace_id": trace_id}],
            )
        else:
            if request.metadata.parent_context:
                self.record_metadata(_parent_contexts=[request.metadata.parent_context])
            response = await self._call_protocol(request)
        call.response = response
        dumped = response.model_dump(mode="json")
        call.parts = {"response": dumped, **{k: dumped[k] for k in _RESPONSE_PARTS[1:]}}
        # `_` keys reach tracers (the response's trace events, the request's parent context), not the summary
        self.record_metadata(trace_id=trace_id, status=response.status.value, _trace=response.trace)
        if response.status in self._fail_on:
            raise _ResponseFailure(_failure_message(response, trace_id))
        return self._output_value(call.parts)

    async def _call_protocol(self, request: AgentRequest) -> AgentResponse:
        trace_id = request.metadata.trace_id
        try:
            response = await self.protocol.process(request)
            return response if isinstance(response, AgentResponse) else validate_response(response)
        except PydanticValidationError as exc:
            message = f"agent '{self.name}' returned an invalid response: {describe_validation_error(exc)}"
            return error_response(ErrorType.EXECUTION, message, trace=[trace_event("agent:invalid", trace_id)])
        except Exception as exc:
            kind, recoverable = error_for_exception(exc)
            message = f"agent '{self.name}' raised {type(exc).__name__}: {exc}"
            return error_response(kind, message, recoverable=recoverable, trace=[trace_event("agent:raised", trace_id)])

    def build_request(self, inputs: Mapping[str, Any], trace_id: str) -> AgentRequest:
        """Build the node's `AgentRequest` from its inputs and Context.

        An input named `request` holding a request dict is used as is (its trace id filled when
        missing). Otherwise the goal is the input `goal` (or the first input), and inputs named
        `task`, `context`, `constraints` and `expected_output` fill those fields; the rest become
        `inputs`.

        Raises:
            pydantic.ValidationError: When the request breaks a rule (an empty goal, ...).
        """
        given = inputs.get("request")
        if isinstance(given, Mapping):
            data = dict(given)
            meta = dict(data.get("metadata") or {})
            meta.setdefault("trace_id", trace_id)
            return AgentRequest.model_validate({**data, "metadata": meta})
        ctx = self.context
        rest = dict(inputs)
        goal_key = "goal" if "goal" in rest else next(iter(rest), None)
        goal = rest.pop(goal_key) if goal_key is not None else ctx.get("goal")
        fields: dict[str, Any] = {
            "goal": "" if goal is None else str(goal),
            "task": str(ctx.get("task") or self.prompt or self.description or f"Run node {self.name}"),
            "expected_output": ctx.get("expected_output"),
            "constraints": dict(ctx.get("constraints") or {}),
        }
        for key in _REQUEST_KEYS[1:]:
            value = rest.pop(key, None)
            if key == "constraints" and isinstance(value, Mapping):
                fields["constraints"].update(value)
            elif value is not None:
                fields[key] = value
        meta_fields = {k: ctx[k] for k in _METADATA_KEYS if k in ctx}
        metadata = RequestMetadata(trace_id=trace_id, **meta_fields)
        return AgentRequest(metadata=metadata, inputs=rest, **fields)

    def _output_value(self, parts: Mapping[str, Any]) -> Any:
        # One plain output field gets the whole response; mapped or several fields pick parts by path.
        if len(self._targets) == 1 and self._targets[0][1] is None:
            return parts["response"]
        return {src or key: _pick(parts, src or key) for key, src in self._targets}

    def _updates_from_parts(self, parts: Mapping[str, Any]) -> dict[str, Any]:
        if len(self._targets) == 1 and self._targets[0][1] is None:
            return {self._targets[0][0]: parts["response"]}
        return {key: _pick(parts, src or key) for key, src in self._targets}

    def _post_process(self, state: Any, inputs: dict[str, Any], output: Any) -> tuple[Any, Any]:
        call = inputs.get(_CALL_KEY)
        is_failure = isinstance(output, dict) and output.get("last_action_success") is False
        if is_failure and isinstance(call, _Call) and call.parts:
            # The node failed on purpose: keep the response beside the error so the failure branch sees it.
            return state, {**output, **self._updates_from_parts(call.parts)}
        return state, output


def _pick(parts: Mapping[str, Any], path: str) -> Any:
    """Follow a dotted path (`result.final.summary`) into the response's parts; None when it is missing."""
    current: Any = parts
    for segment in path.split("."):
        if isinstance(current, Mapping):
            current = current.get(segment)
        elif isinstance(current, list) and segment.isdigit() and int(segment) < len(current):
            current = current[int(segment)]
        else:
            return None
    return current


def _output_targets(output_field: str) -> list[tuple[str, str | None]]:
    return [parse_output_field(k) for k in output_field.split("|") if k.strip()]


def _failure_message(response: AgentResponse, trace_id: str) -> str:
    if response.error is not None:
        return f"{response.error.type.value} error: {response.error.message} (trace_id {trace_id})"
    return f"the agent's response status was {response.status.value} (trace_id {trace_id})"


_ADAPTED: dict[type[Any], type[ProtocolAgent]] = {}


def protocol_agent(cls: type[Any]) -> type[ProtocolAgent]:
    """Return a `BaseAgent` subclass (one per `cls`) that runs instances of `cls` as workflow nodes.

    Args:
        cls: A class with `async def process(self, request: AgentRequest) -> AgentResponse`.

    Raises:
        TypeError: If `cls` has no `async def process`.
    """
    process = getattr(cls, "process", None)
    if not isinstance(cls, type) or process is None or not inspect.iscoroutinefunction(process):
        raise TypeError(
            f"{cls!r} is not an AgentProtocol: define `async def process(self, request: AgentRequest) -> AgentResponse`"
        )
    adapted = _ADAPTED.get(cls)
    if adapted is None:
        name = cls.__name__ if cls.__name__.endswith("Node") else f"{cls.__name__}Node"
        doc = f"Workflow node running `{cls.__module__}.{cls.__qualname__}` (see `ProtocolAgent`)."
        attrs = {"protocol_class": cls, "__doc__": doc, "__module__": cls.__module__}
        adapted = _ADAPTED.setdefault(cls, type(name, (ProtocolAgent,), attrs))
    return adapted


def as_protocol(agent: Any) -> AgentProtocol:
    """Return `agent` as an `AgentProtocol`.

    A node built by `protocol_agent` gives back its protocol agent; any other `BaseAgent` is wrapped so
    that `process(request)` calls its `process(inputs)` and answers with an `AgentResponse`; an object
    that already has `async def process(request)` is returned unchanged.

    Raises:
        TypeError: If `agent` is none of these.
    """
    if isinstance(agent, ProtocolAgent):
        return agent.protocol
    if isinstance(agent, BaseAgent):
        return _BaseAgentProtocol(agent)
    if inspect.iscoroutinefunction(getattr(agent, "process", None)):
        return agent  # type: ignore[no-any-return]
    raise TypeError(
        f"{agent!r} cannot take an AgentRequest: pass a BaseAgent or an object with "
        "`async def process(self, request: AgentRequest) -> AgentResponse`"
    )


class _BaseAgentProtocol:
    """An `AgentProtocol` face on a `BaseAgent`: request inputs in, `process(inputs)` output as the result."""

    def __init__(self, agent: BaseAgent) -> None:
        self.agent = agent
        self.name = agent.name
        self._fields = [parse_input_field(f) for f in agent.input_fields]

    def _inputs(self, request: AgentRequest) -> dict[str, Any]:
        given = request.inputs
        if not self._fields:
            return dict(given) if given else {"goal": request.goal}
        own = {"goal": request.goal, "task": request.task}
        return {param: given.get(param, given.get(key, own.get(param))) for key, param in self._fields}

    async def process(self, request: AgentRequest) -> AgentResponse:
        """Call the wrapped agent's `process` with the request's inputs (sync ones in a thread)."""
        trace_id = request.metadata.trace_id
        start = trace_event("agent:start", trace_id, agent=self.name)
        try:
            inputs = self._inputs(request)
            aprocess = getattr(self.agent, "aprocess", None)
            if aprocess is not None:
                output = await aprocess(inputs)
            elif inspect.iscoroutinefunction(self.agent.process):
                output = await self.agent.process(inputs)
            else:
                output = await asyncio.to_thread(self.agent.process, inputs)
                if inspect.isawaitable(output):
                    output = await output
        except Exception as exc:
            kind, recoverable = error_for_exception(exc)
            return error_response(
                kind,
                f"agent '{self.name}' failed: {type(exc).__name__}: {exc}",
                recoverable=recoverable,
                trace=[start, trace_event("agent:error", trace_id, agent=self.name)],
            )
        return success_response(
            {} if output is None else output,
            trace=[start, trace_event("agent:complete", trace_id, agent=self.name)],
            metadata={"agent": self.name},
        )
