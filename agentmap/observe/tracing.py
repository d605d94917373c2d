"""OpenTelemetry traces of runs: one span per run, per node, per model call and per tool call.

Turn it on with `agentmap run --trace otlp|console|file:spans.jsonl`, `tracing:` in `agentmap.yaml`,
`agentmap.compile(..., tracing=...)`, or by installing a TracerProvider as any OpenTelemetry program does.
Spans (names, attributes, events) are listed in csv_specs/tracing.md. This module needs the `otel` extra
and is imported only when tracing is on.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, Status, StatusCode, TraceFlags

from agentmap.errors import ConfigError, ErrorCode
from agentmap.observe._exporters import HINT, flush_providers, provider_for
from agentmap.observe._genai import HANDLER, GenAIHandler, as_json
from agentmap.runtime.events import RunHooks, RunInfo

if TYPE_CHECKING:
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow
    from agentmap.runtime.tracking import NodeExecution
    from agentmap.spec.models import GraphSpec

__all__ = [
    "PARENT_KEY",
    "Tracing",
    "flush_traces",
    "installed_provider_observer",
    "resolve_tracing",
    "tracing_from_settings",
]

_SCOPE = "agentmap"


class Tracing(RunHooks):
    """The run hooks that make the spans (add them to `CompiledWorkflow.observers`, or let `compile` do it).

    Args:
        provider: Where spans go: a TracerProvider, or None for the globally installed one.
        content: Whether state values, node inputs and outputs, prompts and replies go into spans.
    """

    def __init__(self, provider: trace.TracerProvider | None = None, *, content: bool = False) -> None:
        self.provider = provider
        self.content = content
        self.tracer = (provider or trace.get_tracer_provider()).get_tracer(_SCOPE)
        self.handler = GenAIHandler(self.tracer, content)
        self._static: weakref.WeakKeyDictionary[CompiledWorkflow, dict[str, dict[str, Any]]] = (
            weakref.WeakKeyDictionary()
        )
        self._runs: dict[RunInfo, _NodeSpans] = {}  # the open runs' spans (parallel runs share this object)

    def static_attributes(self, workflow: CompiledWorkflow) -> dict[str, dict[str, Any]]:
        """Per node name, the attributes its spans always have (kept for each workflow this observer saw)."""
        found = self._static.get(workflow)
        if found is None:
            found = self._static[workflow] = {}
        return found

    def flush(self) -> None:
        """Send the spans still buffered (before a process exits)."""
        flush = getattr(self.provider or trace.get_tracer_provider(), "force_flush", None)
        if flush is not None:
            flush()

    def batch_started(
        self, attributes: Mapping[str, Any]
    ) -> tuple[dict[str, Any], Callable[[Mapping[str, Any]], None]]:
        """Open the `agentmap.batch` span of a batch (`agentmap.batch` calls this on the workflow's run hooks).

        Returns:
            The run metadata that makes each row's `agentmap.run` span a child of the batch span (it travels to
            worker processes and Ray workers with the rows), and the function that ends the span with the counts.
        """
        graph = attributes.get("agentmap.graph", "")
        span = self.tracer.start_span(f"agentmap.batch {graph}", attributes=dict(attributes))
        context = span.get_span_context()
        metadata = {PARENT_KEY: f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"}

        def end(counts: Mapping[str, Any]) -> None:
            span.set_attributes({k: v for k, v in counts.items() if isinstance(v, (str, bool, int, float))})
            failed = counts.get("agentmap.batch.failed")
            if failed:
                span.set_status(Status(StatusCode.ERROR, f"{failed} row{'s' if failed != 1 else ''} failed"))
            span.end()

        return metadata, end

    def run_started(self, run: RunInfo) -> None:
        """Open the run's span; node spans open and close with its node events."""
        spec = run.workflow.spec
        attributes: dict[str, Any] = {"agentmap.graph": spec.name, "agentmap.run.depth": run.depth}
        if spec.file:
            attributes["agentmap.workflow.file"] = str(spec.file)
        thread = run.thread_id
        if thread is not None:
            attributes["agentmap.thread_id"] = thread
        if self.content and isinstance(run.state, Mapping):
            attributes["agentmap.run.input"] = as_json(dict(run.state))
        metadata = (run.config or {}).get("metadata") or {}
        parent = _run_attributes(metadata, attributes) if metadata else None
        span = self.tracer.start_span(
            f"agentmap.run {spec.name}", context=parent if run.depth == 0 else None, attributes=attributes
        )
        self._runs[run] = _NodeSpans(self, run, span, trace.set_span_in_context(span))

    def node_started(self, run: RunInfo, node: NodeExecution) -> None:
        self._runs[run].start(node)

    def node_ended(self, run: RunInfo, node: NodeExecution) -> None:
        self._runs[run].end(node)

    def run_ended(self, run: RunInfo, result: RunResult | None, error: BaseException | None) -> None:
        """Close the run's span with its outcome (and the spans of nodes still open)."""
        nodes = self._runs.pop(run)
        nodes.close_open()
        span = nodes.run_span
        if result is not None:
            span.set_attribute("agentmap.success", result.success)
            span.set_attribute("agentmap.node_count", len(result.summary))
            span.set_attributes(usage_attributes(result.usage))
            if result.interrupts:
                span.set_attribute("agentmap.paused", True)
            if self.content:
                span.set_attribute("agentmap.run.output", as_json(result.state))
            if not result.success:
                failed = ", ".join(result.failed_nodes) or "the success policy"
                span.set_status(Status(StatusCode.ERROR, f"failed: {failed}"))
        elif error is not None:
            span.set_attribute("agentmap.success", False)
            span.set_attribute("error.type", str(getattr(error, "code", None) or type(error).__name__))
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, str(error)))
        span.end()


class _NodeSpans:
    """The node spans of one run: opened on a node's start event, closed on its end event."""

    def __init__(self, tracing: Tracing, run: RunInfo, run_span: Span, parent: otel_context.Context) -> None:
        self.tracing = tracing
        self.run = run
        self.run_span = run_span
        self.parent = parent
        self.static = tracing.static_attributes(run.workflow)
        self.open: dict[int, tuple[Span, object, contextvars.Token[GenAIHandler | None]]] = {}
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def start(self, execution: NodeExecution) -> None:
        name = execution.name
        with self.lock:
            attempt = self.counts[name] = self.counts.get(name, 0) + 1
        static = self.static.get(name)
        if static is None:
            static = self.static[name] = _node_attributes(self.run.workflow.spec, name)
        attributes = {**static, "agentmap.node.attempt": attempt}
        thread = self.run.thread_id
        if thread is not None:
            attributes["agentmap.thread_id"] = thread
        if self.tracing.content and execution.inputs is not None:
            attributes["agentmap.node.inputs"] = as_json(dict(execution.inputs))
        span = self.tracing.tracer.start_span(
            f"agentmap.node {name}", context=self.parent, attributes=attributes, start_time=_ns(execution.start)
        )
        token = otel_context.attach(trace.set_span_in_context(span))  # model, tool and subgraph spans nest here
        # Model and tool calls inside the node get the GenAI handler (LangChain's configure hook reads this
        # variable); set per node, not per run, so plain nodes' callback managers stay handler-free and cheap.
        handler = HANDLER.set(self.tracing.handler)
        with self.lock:
            self.open[id(execution)] = (span, token, handler)

    def end(self, execution: NodeExecution) -> None:
        with self.lock:
            opened = self.open.pop(id(execution), None)
        if opened is None:  # an end with no start event (a tracker fed by hand)
            self.start(execution)
            with self.lock:
                opened = self.open.pop(id(execution))
        span, token, handler = opened
        if trace.get_current_span() is span:
            otel_context.detach(token)  # type: ignore[arg-type]
            with contextlib.suppress(ValueError):
                HANDLER.reset(handler)
        _describe(span, execution, self.tracing.content)
        span.end(end_time=_ns(execution.end or execution.start))

    def close_open(self) -> None:
        """End the spans of nodes still running when the run ended (a paused node, Ctrl-C)."""
        with self.lock:
            left = list(self.open.values())
            self.open.clear()
        for span, _, _ in left:
            span.set_attribute("agentmap.paused", True)
            span.end()


PARENT_KEY = "agentmap.parent"
"""Run metadata: the W3C `traceparent` of the span a top-level run's span is a child of (a batch's span)."""


def _run_attributes(metadata: Mapping[str, Any], attributes: dict[str, Any]) -> otel_context.Context | None:
    """Copy the run metadata's `agentmap.*` facts (a batch row's number and id) and the server's `run_id` into
    `attributes`; return the parent context the metadata names, if any."""
    for key, value in metadata.items():
        if key.startswith("agentmap.") and key != PARENT_KEY and isinstance(value, (str, bool, int, float)):
            attributes[key] = value
    if isinstance(metadata.get("run_id"), str):
        attributes["agentmap.run_id"] = metadata["run_id"]
    parent = metadata.get(PARENT_KEY)
    link = _link({"traceparent": parent}) if isinstance(parent, str) else None
    return trace.set_span_in_context(trace.NonRecordingSpan(link.context)) if link is not None else None


def _node_attributes(spec: GraphSpec, name: str) -> dict[str, Any]:
    """The attributes of a node's spans that do not change from run to run."""
    attributes: dict[str, Any] = {"agentmap.graph": spec.name, "agentmap.node": name}
    if spec.file:
        attributes["agentmap.workflow.file"] = str(spec.file)
    node = next((n for n in spec.nodes if n.name == name), None)
    if node is not None:
        attributes["agentmap.agent_type"] = (node.agent_type or "default").lower()
        if node.row is not None:
            attributes["agentmap.csv.row"] = node.row
    return attributes


def usage_attributes(usage: Mapping[str, Any]) -> dict[str, Any]:
    """The GenAI usage attributes (and AgentMap's cost) of a node's or a run's model calls; `{}` without any."""
    if "input_tokens" not in usage and "replayed_calls" not in usage:
        return {}
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": int(usage.get("input_tokens") or 0),
        "gen_ai.usage.output_tokens": int(usage.get("output_tokens") or 0),
        "gen_ai.usage.cache_read.input_tokens": int(usage.get("cached_tokens") or 0),
        "gen_ai.usage.cache_creation.input_tokens": int(usage.get("cache_write_tokens") or 0),
    }
    if usage.get("cost") is not None:
        attributes["agentmap.cost_usd"] = float(usage["cost"])
    if usage.get("replayed_calls"):
        attributes["agentmap.replayed_calls"] = int(usage["replayed_calls"])
    if usage.get("cache_hits"):
        attributes["agentmap.cache_hits"] = int(usage["cache_hits"])
    return attributes


def _describe(span: Span, execution: NodeExecution, content: bool) -> None:
    metadata, facts = execution.metadata, execution.facts
    attributes: dict[str, Any] = {"agentmap.success": bool(execution.success)}  # set at once: one lock per span
    if metadata:
        if metadata.get("trace_id"):
            attributes["agentmap.trace_id"] = str(metadata["trace_id"])
        for key in ("model", "status"):
            if isinstance(metadata.get(key), (str, int, float, bool)):
                attributes[f"agentmap.{key}"] = metadata[key]
        attributes.update(usage_attributes(metadata))
    if facts:
        for event in facts.get("trace") or ():
            _add_event(span, event)
        for parent in facts.get("parent_contexts") or ():
            link = _link(parent)
            if link is not None:
                span.add_link(link.context, link.attributes)
    if content and execution.success:
        attributes["agentmap.node.output"] = as_json(execution.result)
    if execution.success is False:
        attributes["error.type"] = attributes["agentmap.error.code"] = str(facts.get("error_code") or "agent-error")
        attributes["agentmap.handled"] = execution.handled  # its Failure_Next goes on: the run may still succeed
        span.set_status(Status(StatusCode.ERROR, execution.error or "failed"))
    span.set_attributes(attributes)


def _add_event(span: Span, event: Any) -> None:
    if not isinstance(event, Mapping):
        return
    attributes = {
        str(k): v if isinstance(v, (str, bool, int, float)) else as_json(v)
        for k, v in event.items()
        if k not in ("event", "timestamp") and v is not None
    }
    stamp = event.get("timestamp")
    when: int | None = None
    if isinstance(stamp, str):
        try:
            when = int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1e9)
        except ValueError:
            when = None
    span.add_event(str(event.get("event", "event")), attributes, timestamp=when)


def _link(parent: Any) -> Link | None:
    """A link to the span a request's `parent_context` names by its W3C `traceparent`."""
    if not isinstance(parent, Mapping) or not isinstance(parent.get("traceparent"), str):
        return None
    parts = parent["traceparent"].split("-")
    try:
        context = SpanContext(int(parts[1], 16), int(parts[2], 16), is_remote=True, trace_flags=TraceFlags(1))
    except (IndexError, ValueError):
        return None
    extra = {str(k): str(v) for k, v in parent.items() if k != "traceparent"}
    return Link(context, {"agentmap.link": "parent_context", **extra})


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def resolve_tracing(value: Any, *, content: bool | None = None) -> Tracing | None:
    """The run hooks `compile(..., tracing=value)` adds.

    Args:
        value: None or False (no tracing of this workflow's own), True (the installed TracerProvider),
            `"otlp"`, `"console"`, `"file:PATH"`, a TracerProvider, a `Tracing`, or a mapping
            `{"exporter": ..., "content": bool}` (the `tracing:` section of agentmap.yaml).
        content: Put state values and prompts in spans (overrides the mapping's `content`).

    Raises:
        ConfigError: An unknown exporter, or a trace file in a folder that does not exist.
    """
    if value is None or value is False:
        return None
    if isinstance(value, Tracing):
        return value
    if isinstance(value, Mapping):
        exporter = value.get("exporter")
        wanted = bool(value.get("content", False)) if content is None else content
        return resolve_tracing(exporter if exporter else None, content=wanted)
    with_content = bool(content)
    if value is True:
        return Tracing(None, content=with_content)
    if isinstance(value, str):
        return Tracing(provider_for(value.strip()), content=with_content)
    if isinstance(value, trace.TracerProvider):
        return Tracing(value, content=with_content)
    raise ConfigError(f"tracing={value!r} is not understood", code=ErrorCode.BAD_CONFIG, hint=HINT)


def tracing_from_settings(
    settings: Any = None, trace_option: str | None = None, content: bool | None = None
) -> Tracing | None:
    """The tracing a command asks for: its `--trace` option, else the `tracing:` settings (or None: off).

    `agentmap run`, `batch` and `serve` call this and pass the result to `compile(..., tracing=...)`.

    Args:
        settings: `agentmap.config.Settings` (its `tracing` section), a mapping like it, or None.
        trace_option: The `--trace` value (`otlp`, `console`, `file:PATH`), which wins over the settings.
        content: `--trace-content`: put state values and prompts in spans.
    """
    section = getattr(settings, "tracing", None) if settings is not None else None
    if isinstance(settings, Mapping):
        section = settings.get("tracing", settings)
    dump = getattr(section, "model_dump", None)
    data: dict[str, Any] = dict(dump() if callable(dump) else section or {})
    if trace_option:
        data["exporter"] = trace_option
    if content:
        data["content"] = True
    return resolve_tracing(data) if data.get("exporter") else None


_INSTALLED: dict[int, Tracing] = {}


def installed_provider_observer() -> Tracing | None:
    """A `Tracing` for the TracerProvider the user installed globally (None when none was)."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    found = _INSTALLED.get(id(provider))
    if found is None or found.provider is not provider:
        found = _INSTALLED[id(provider)] = Tracing(provider)
    return found


def flush_traces() -> None:
    """Send every span this process still buffers: those of `--trace`/`tracing=` exporters and of the installed
    TracerProvider. Call it before a process ends without running its exit hooks (`os._exit`, a worker)."""

    flush_providers()
    installed = installed_provider_observer()
    if installed is not None:
        installed.flush()
