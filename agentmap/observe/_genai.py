"""Model and tool call spans from LangChain's callbacks, named and described by the GenAI conventions.

Every model an agent calls is a LangChain chat model and every tool a LangChain tool, and LangGraph hands
the run's callbacks to code inside a node; so one handler, registered as a LangChain configure hook while a
traced run is going, sees each call. Its span's parent is the OpenTelemetry context current where the
call starts: the node's span.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from agentmap.agents.costs import Price, Usage

__all__ = ["HANDLER", "GenAIHandler", "as_json"]

_LIMIT = 8192


def as_json(value: Any) -> str:
    """`value` as JSON text for a span attribute (`str()` for what JSON cannot hold), cut at 8 KiB."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=_plain)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= _LIMIT else text[:_LIMIT] + "…"


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json")
        except Exception:
            pass
    return str(value)


class GenAIHandler(BaseCallbackHandler):
    """Turns chat model and tool callbacks into spans (`chat <model>`, `execute_tool <name>`).

    Args:
        tracer: The OpenTelemetry tracer spans are made with.
        content: Whether prompts, replies, tool arguments and results go into the spans.
    """

    run_inline = True  # call back on the caller's thread/task, so the current span is the node's
    ignore_chain = True  # graph and node runs are the run observer's; chains would only cost time
    ignore_retriever = True  # (tool calls come under "agent" events, so those stay on)

    def __init__(self, tracer: trace.Tracer, content: bool = False) -> None:
        self.tracer = tracer
        self.content = content
        self._spans: dict[UUID, Span] = {}
        self._prices: dict[UUID, Any] = {}
        self._lock = threading.Lock()

    def _start(self, run_id: UUID, name: str, attributes: dict[str, Any]) -> None:
        span = self.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
        with self._lock:
            self._spans[run_id] = span

    def _pop(self, run_id: UUID) -> Span | None:
        with self._lock:
            return self._spans.pop(run_id, None)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Start a `chat <model>` span."""
        meta = metadata or {}
        params = kwargs.get("invocation_params") or {}
        model = meta.get("ls_model_name") or params.get("model") or params.get("model_name") or ""
        provider = meta.get("ls_provider") or params.get("_type") or "langchain"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": str(provider),
            "gen_ai.system": str(provider),
            "gen_ai.request.model": str(model),
        }
        if meta.get("ls_temperature") is not None:
            attributes["gen_ai.request.temperature"] = float(meta["ls_temperature"])
        if self.content:
            attributes["gen_ai.input.messages"] = as_json([[_message(m) for m in batch] for batch in messages])
        if meta.get("agentmap_cache_hit"):  # answered by the LLM response cache (llm/cache.py): no tokens, no cost
            attributes["agentmap.cache_hit"] = True
        if meta.get("agentmap_price"):  # the adapter's price of this model: the span gets the call's cost
            with self._lock:
                self._prices[run_id] = meta["agentmap_price"]
        self._start(run_id, f"chat {model}".strip(), attributes)

    def on_llm_start(
        self, serialized: dict[str, Any] | None, prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """A completion model (not chat): the same span."""
        self.on_chat_model_start(serialized, [[p] for p in prompts], run_id=run_id, **kwargs)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """End the model span with the token counts and the reply (when content is traced)."""
        span = self._pop(run_id)
        with self._lock:
            price = self._prices.pop(run_id, None)
        if span is None:
            return
        generations: Sequence[Sequence[Any]] = getattr(response, "generations", None) or []
        first = generations[0][0] if generations and generations[0] else None
        message = getattr(first, "message", None)
        usage = getattr(message, "usage_metadata", None) or {}
        if usage:
            span.set_attribute("gen_ai.usage.input_tokens", int(usage.get("input_tokens", 0)))
            span.set_attribute("gen_ai.usage.output_tokens", int(usage.get("output_tokens", 0)))
            measured = Usage.of(message)
            if measured.cached_tokens:
                span.set_attribute("gen_ai.usage.cache_read.input_tokens", measured.cached_tokens)
            if measured.cache_write_tokens:
                span.set_attribute("gen_ai.usage.cache_creation.input_tokens", measured.cache_write_tokens)
            if price:
                span.set_attribute("agentmap.cost_usd", measured.cost(Price(*price)))
        response_meta = getattr(message, "response_metadata", None) or {}
        model = response_meta.get("model_name") or response_meta.get("model")
        if model:
            span.set_attribute("gen_ai.response.model", str(model))
        if self.content and message is not None:
            span.set_attribute("gen_ai.output.messages", as_json([_message(message)]))
        span.end()

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """End the model span as failed."""
        with self._lock:
            self._prices.pop(run_id, None)
        _fail(self._pop(run_id), error)

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Start an `execute_tool <name>` span."""
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        call_id = kwargs.get("tool_call_id")
        if call_id:
            attributes["gen_ai.tool.call.id"] = str(call_id)
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = as_json(inputs) if inputs is not None else input_str
        self._start(run_id, f"execute_tool {name}", attributes)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """End the tool span (with its result when content is traced)."""
        span = self._pop(run_id)
        if span is None:
            return
        if self.content:
            span.set_attribute("gen_ai.tool.call.result", as_json(getattr(output, "content", output)))
        span.end()

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """End the tool span as failed."""
        _fail(self._pop(run_id), error)


def _message(message: Any) -> Any:
    if isinstance(message, str):
        return {"role": "user", "content": message}
    data: dict[str, Any] = {"role": getattr(message, "type", "message"), "content": getattr(message, "content", "")}
    calls = getattr(message, "tool_calls", None)
    if calls:
        data["tool_calls"] = calls
    return data


def _fail(span: Span | None, error: BaseException) -> None:
    if span is None:
        return
    span.set_attribute("error.type", type(error).__name__)
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, str(error)))
    span.end()


HANDLER: contextvars.ContextVar[GenAIHandler | None] = contextvars.ContextVar("agentmap_genai_handler", default=None)
"""The handler of the traced run going on in this context; LangChain adds it to every callback manager."""
register_configure_hook(HANDLER, inheritable=True)
