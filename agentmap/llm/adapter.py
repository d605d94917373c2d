"""`LLMAdapter`: the seam between the decision engine and a langchain-core chat model.

The adapter binds tools, passes the temperature and the time limit to every call, marks the static part of the
node's prompt for the provider's prompt cache (`llm/_prompt_cache.py`), and turns whatever a provider raises into
one of three errors the engine (and the `llm` agent types) can act on (`llm/_llm_errors.py`: `LLMRateLimitError`,
`LLMTimeoutError`, `LLMError`; re-exported here).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from agentmap.agents import costs
from agentmap.agents.journal import journaled, journaled_sync
from agentmap.agents.llm_batch import ANSWER_KEY, ModelBatching, Queued
from agentmap.llm import _batch_calls, _prompt_cache, cache
from agentmap.llm._llm_errors import LLMError, LLMRateLimitError, LLMTimeoutError, to_llm_error

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel, LanguageModelInput
    from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
    from langchain_core.runnables import Runnable

__all__ = ["LLMAdapter", "LLMError", "LLMRateLimitError", "LLMTimeoutError", "open_tool_schema", "to_llm_error"]

PRICE_KEY = "agentmap_price"
"""The call metadata key holding the model's price (the fields of `costs.Price` in order; USD per million tokens)."""
CACHE_HIT_KEY = "agentmap_cache_hit"
"""The call metadata key set on a model call the LLM response cache answered (the model span's attribute)."""
# Fields through which a provider's client takes a per-request time limit as a `timeout` argument.
_REQUEST_TIMEOUT_FIELDS = ("request_timeout", "default_request_timeout")


def open_tool_schema(name: str, description: str = "") -> dict[str, Any]:
    """An OpenAI-style schema for a tool known only by name: any arguments, as the model sees fit."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description or f"The {name} tool.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }


@dataclasses.dataclass(frozen=True)
class _Call:
    """One model call, as `LLMAdapter.invoke` and `ainvoke` both make it.

    Attributes:
        messages: The conversation, as the node gave it.
        runnable: The model, its tools bound.
        limit: Its time limit in seconds (None: none).
        options: What is passed with it (temperature, time limit).
        request: What the call journal's digest of it is made of (`LLMAdapter._request`).
        measured: Its tokens and cost, once made or answered (empty: the journal replayed it).
    """

    messages: Sequence[BaseMessage]
    runnable: Any
    limit: float | None
    options: dict[str, Any]
    request: dict[str, Any]
    measured: dict[str, Any] = dataclasses.field(default_factory=dict)


class _JournalArgs(TypedDict):
    """The call journal's arguments for a model call (`journal.journaled` and `journaled_sync`)."""

    encode: Callable[[AIMessage], Any]
    decode: Callable[[Any], AIMessage]
    idempotent: bool
    queue: Callable[[], Queued | None]


def _model_name(model: BaseChatModel) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


class LLMAdapter:
    """Calls a langchain-core chat model for the decision engine.

    Args:
        model: Any `BaseChatModel` (`ChatOpenAI`, `ChatAnthropic`, the offline model, ...).
        temperature: Default sampling temperature for each call; None leaves the model's own.
        timeout_seconds: Default time limit of each call; None means no limit.
        prices: The price table (`costs.price_table`); None: the default prices.
        budget: The run's budget in USD when the run itself sets none (`llm.budget`).
        cache_ttl: Answer a repeated request from the LLM response cache for this many seconds (`llm/cache.py`);
            None: no cache.
        static_prefix: The text every call of this node begins its first message with (its Prompt up to the first
            placeholder): marked for the provider's prompt cache where the provider asks for marks (Anthropic).
        prompt_cache: False: mark nothing (Context / `llm.prompt_cache: false`).
        key_env: The environment variable holding the model's API key, named to a provider batch job's client
            (`agentmap batch --llm-batch`); None: the provider's usual one.

    Example:
        >>> adapter = LLMAdapter(ChatOpenAI(model="gpt-4o-mini"), temperature=0.0, timeout_seconds=30)
        >>> reply = await adapter.ainvoke([HumanMessage("hi")], tools=[add_task])
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        temperature: float | None = None,
        timeout_seconds: float | None = None,
        prices: Mapping[str, costs.Price] | None = None,
        budget: float | None = None,
        cache_ttl: float | None = None,
        static_prefix: str = "",
        prompt_cache: bool = True,
        key_env: str | None = None,
    ) -> None:
        from agentmap.llm.offline import OfflineChatModel

        self.model = model
        self.temperature = temperature
        self.timeout_seconds = timeout_seconds
        self.model_name = _model_name(model)
        free = isinstance(model, OfflineChatModel)  # the stand-in model costs nothing
        self.price = costs.Price(0, 0, 0) if free else costs.price_of(self.model_name, prices or costs.DEFAULT_PRICES)
        self.budget = budget
        self.cache_ttl = cache_ttl
        self.static_prefix = static_prefix
        self.marks_cache = prompt_cache and _prompt_cache.marks_blocks(model)
        self.key_env = key_env
        self._held = 0  # prompt tokens the provider's cache held after the last call: the budget's estimate
        fields = getattr(type(model), "model_fields", {})
        self._takes_temperature = "temperature" in fields
        self._takes_timeout = any(f in fields for f in _REQUEST_TIMEOUT_FIELDS)

    def bind_tools(self, tools: Sequence[Any]) -> Runnable[LanguageModelInput, BaseMessage]:
        """Return the model with `tools` bound (LangChain tools, functions or OpenAI-style schemas).

        Raises:
            LLMError: When the model cannot call tools.
        """
        if not tools:
            return self.model
        try:
            return self.model.bind_tools(list(tools))
        except NotImplementedError as exc:
            raise LLMError(
                f"model {self.model_name!r} ({type(self.model).__name__}) cannot call tools",
                model=self.model_name,
                hint="Choose a model that supports tool calling, or remove the node's tools.",
            ) from exc

    def call_options(self, *, temperature: float | None = None, timeout_seconds: float | None = None) -> dict[str, Any]:
        """The keyword arguments passed to the model call for this temperature and time limit."""
        options: dict[str, Any] = {}
        temp = self.temperature if temperature is None else temperature
        if temp is not None and self._takes_temperature:
            options["temperature"] = temp
        limit = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        if limit is not None and self._takes_timeout:
            options["timeout"] = limit
        return options

    async def ainvoke(
        self,
        messages: Sequence[BaseMessage],
        *,
        tools: Sequence[Any] | None = None,
        bound: Runnable[LanguageModelInput, BaseMessage] | None = None,
        temperature: float | None = None,
        timeout_seconds: float | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> AIMessage:
        """Call the model once and return its reply.

        Args:
            messages: The conversation, system message first.
            tools: Tools to bind for this call (ignored when `bound` is given).
            bound: A runnable from `bind_tools`, to reuse one binding across calls.
            temperature: Overrides the adapter's temperature.
            timeout_seconds: Overrides the adapter's time limit.
            config: A LangChain `RunnableConfig` (callbacks, tags) passed through.

        Raises:
            LLMRateLimitError: On a rate limit (HTTP 429).
            LLMTimeoutError: When the model does not answer in time.
            LLMError: On any other failure.
        """
        call = self._call(
            messages, bound if bound is not None else self.bind_tools(tools or ()), temperature, timeout_seconds
        )

        async def send() -> AIMessage:
            hit = self._cached(call)
            if hit is not None:
                return hit
            sent, target = self._outgoing(call)
            try:
                # asyncio.timeout, not wait_for: no extra task per call.
                async with asyncio.timeout(call.limit):
                    reply = await target.ainvoke(sent, config=self._config(config), **call.options)
            except Exception as exc:
                raise to_llm_error(exc, model=self.model_name, timeout=call.limit) from exc
            return self._received(call, reply)

        return self._settled(call, await journaled("model", self.model_name, call.request, send, **self._journal(call)))

    def invoke(
        self,
        messages: Sequence[BaseMessage],
        *,
        tools: Sequence[Any] | None = None,
        temperature: float | None = None,
        timeout_seconds: float | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> AIMessage:
        """The synchronous twin of `ainvoke` (the time limit is enforced by the provider's client)."""
        call = self._call(messages, self.bind_tools(tools or ()), temperature, timeout_seconds)

        def send() -> AIMessage:
            hit = self._cached(call)
            if hit is not None:
                return hit
            sent, target = self._outgoing(call)
            try:
                reply = target.invoke(sent, config=self._config(config), **call.options)
            except Exception as exc:
                raise to_llm_error(exc, model=self.model_name, timeout=call.limit) from exc
            return self._received(call, reply)

        return self._settled(call, journaled_sync("model", self.model_name, call.request, send, **self._journal(call)))

    def _call(
        self, messages: Sequence[BaseMessage], runnable: Any, temperature: float | None, timeout_seconds: float | None
    ) -> _Call:
        """One call as both twins make it: its options, and the journal's digest of it."""
        limit = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        options = self.call_options(temperature=temperature, timeout_seconds=limit)
        return _Call(messages, runnable, limit, options, self._request(messages, runnable, options))

    def _journal(self, call: _Call) -> _JournalArgs:
        """How the call journal keeps the call's reply, replays it, and queues the call for a provider batch job."""
        return _JournalArgs(
            encode=lambda reply: _dump(reply, call.measured),
            decode=self._replayed(call.messages, measured=call.measured),
            idempotent=True,
            queue=self._queue(call),
        )

    def _outgoing(self, call: _Call, *, batch: bool = False) -> tuple[list[BaseMessage], Any]:
        """The messages and the model a call the journal did not answer sends (`batch`: queues for a provider
        batch job), once the budget allows it."""
        self._check_budget(call.messages, batch=batch)
        return self._as_sent(call.messages, call.runnable)

    def _received(self, call: _Call, reply: Any) -> AIMessage:
        """A reply the model sent: checked, counted, and kept in the LLM response cache."""
        return self._keep(call.request, self._measure(self._as_ai_message(reply), call.measured))

    @staticmethod
    def _settled(call: _Call, reply: AIMessage) -> AIMessage:
        """The call's reply; one the journal replayed, which measured nothing, is counted as replayed."""
        if not call.measured:
            costs.replayed()
        return reply

    @property
    def batching(self) -> ModelBatching:
        """Whether this model's calls can go through a provider batch job (`agentmap batch --llm-batch`)."""
        return _batch_calls.batching_of(self.model, self.model_name)

    def _queue(self, call: _Call) -> Callable[[], Queued | None]:
        """How the call journal gets this call as the provider's batch API takes it (asked only when the run
        batches its model calls and the call has no answer yet)."""

        def queued() -> Queued | None:
            sent, target = self._outgoing(call, batch=True)
            return _batch_calls.queued_call(self.model, sent, target, call.options, self.key_env, self.price)

        return queued

    def _batch_answer(self, value: Mapping[str, Any], measured: dict[str, Any]) -> AIMessage:
        """The reply a provider batch job answered (the journal's `finished` entry the batch wrote), counted as a
        call made, at the batch price, in the node run that reads it."""
        try:
            reply = _batch_calls.answer_of(self.model, value[ANSWER_KEY])
        except Exception as exc:  # the provider's body, as the batch wrote it: anything a reader may raise
            raise LLMError(
                f"model {self.model_name!r}: the provider batch job's answer could not be read ({exc})",
                model=self.model_name,
            ) from exc
        usage = costs.Usage.of(reply)
        price = None if self.price is None else self.price.in_batch()
        cost = costs.record(self.model_name, usage, price)
        measured.update(dataclasses.asdict(usage), cost=cost, batch=True)
        return reply

    def _cached(self, call: _Call) -> AIMessage | None:
        """The reply the LLM response cache holds for the call (counted as a cache hit, told to the run's
        callbacks as one streamed chunk, without tokens), or None: not cached, expired, or `--no-cache`."""
        if self.cache_ttl is None:
            return None
        value = cache.lookup(self.model_name, call.request)
        if value is None:
            return None
        costs.cache_hit()
        call.measured["cache_hit"] = True  # a model call answered, with no tokens or cost: not a journal replay
        return self._replayed(call.messages, hit=True)(value)

    def _keep(self, request: Any, reply: AIMessage) -> AIMessage:
        """Store a reply the model sent in the LLM response cache (when the node caches)."""
        if self.cache_ttl is not None:
            from langchain_core.messages import messages_to_dict

            cache.store(self.model_name, request, messages_to_dict([reply])[0], self.cache_ttl)
        return reply

    def _replayed(
        self, messages: Sequence[BaseMessage], *, hit: bool = False, measured: dict[str, Any] | None = None
    ) -> Callable[[Any], AIMessage]:
        """Decode a reply the call journal replays (or, `hit`, the LLM response cache answers: without its
        tokens) and tell the run's callbacks of it as a model call that streamed it in one chunk: a
        `stream_mode="messages"` client, `agentmap run` and the server's message events show a replayed reply as
        they show one the model sent; a cache hit's model span says `agentmap.cache_hit`."""

        def decode(value: Any) -> AIMessage:
            if measured is not None and isinstance(value, Mapping) and ANSWER_KEY in value:
                reply = self._batch_answer(value, measured)
            else:
                reply = _load(value)
            if hit:
                reply.usage_metadata = None
            from langchain_core.callbacks import CallbackManager
            from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, LLMResult
            from langchain_core.runnables.config import ensure_config

            config = ensure_config()
            manager = CallbackManager.configure(config.get("callbacks"), inheritable_tags=config.get("tags"))
            if not manager.handlers:  # nobody to tell: the common case, so the metadata is made only when needed
                return reply
            extra = {"ls_model_name": self.model_name, **({CACHE_HIT_KEY: True} if hit else {})}
            manager.add_metadata({**(config.get("metadata") or {}), **extra})
            (run,) = manager.on_chat_model_start({"name": self.model_name}, [list(messages)], name=self.model_name)
            chunk = ChatGenerationChunk(message=_as_chunk(reply))
            run.on_llm_new_token(reply.text, chunk=chunk)
            run.on_llm_end(LLMResult(generations=[[ChatGeneration(message=reply)]]))
            return reply

        return decode

    def _config(self, config: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The call's RunnableConfig, with the model's price in its metadata (`agentmap_price`: the model span's
        cost, observe/_genai.py)."""
        if self.price is None or self.price == costs.Price(0, 0, 0):
            return dict(config) if config else None
        merged = dict(config or {})
        price = dataclasses.astuple(self.price)
        merged["metadata"] = {**(merged.get("metadata") or {}), PRICE_KEY: price}
        return merged

    def _as_sent(self, messages: Sequence[BaseMessage], runnable: Any) -> tuple[list[BaseMessage], Any]:
        """The messages and the model as sent: the static part marked for the provider's cache when it asks for
        marks; as they are otherwise (the journal and the LLM response cache digest them as they are)."""
        if self.marks_cache:
            return _prompt_cache.marked(messages, runnable, self.static_prefix)
        return list(messages), runnable

    def _check_budget(self, messages: Sequence[BaseMessage], *, batch: bool = False) -> None:
        """Stop before a call that would pass the budget (estimated from the prompt's characters: the part the
        provider's cache held for the last call at the cached price; a marked static part not yet held, which
        the call will write, at the cache-write price; `batch`: a call queued for a provider batch job, at the
        batch price it is billed at)."""
        chars = sum(len(m.text) for m in messages)
        written = len(self.static_prefix) // 4 if self.marks_cache and not self._held else 0
        price = self.price.in_batch() if batch and self.price is not None else self.price
        costs.check(self.model_name, price, chars, self.budget, self._held, written)

    def _measure(self, reply: AIMessage, measured: dict[str, Any]) -> AIMessage:
        """Count a call made for real: its tokens and cost go to the node's tally, the run's meter and (through
        `measured`) its journal entry."""
        usage = costs.Usage.of(reply)
        cost = costs.record(self.model_name, usage, self.price)
        self._held = usage.cached_tokens + usage.cache_write_tokens
        measured.update(dataclasses.asdict(usage), cost=cost)
        return reply

    def _request(self, messages: Sequence[BaseMessage], runnable: Any, options: Mapping[str, Any]) -> dict[str, Any]:
        """What the call journal's digest of a model call is made of: the model, the messages (roles, text, tool
        calls), the tools bound and the options."""
        from langchain_core.messages import convert_to_openai_messages

        tools = (getattr(runnable, "kwargs", None) or {}).get("tools")
        chosen = {k: v for k, v in options.items() if k != "timeout"}
        return {
            "model": self.model_name,
            "messages": convert_to_openai_messages(list(messages)),
            "tools": tools,
            "options": chosen,
        }

    def _as_ai_message(self, reply: Any) -> AIMessage:
        from langchain_core.messages import AIMessage

        if isinstance(reply, AIMessage):
            return reply
        raise LLMError(
            f"model {self.model_name!r} returned {type(reply).__name__}, not a chat message",
            model=self.model_name,
        )


def _dump(reply: AIMessage, measured: Mapping[str, Any]) -> Any:
    """The reply as the journal keeps it, with the call's tokens and cost beside it (`usage`)."""
    from langchain_core.messages import messages_to_dict

    return {**messages_to_dict([reply])[0], "usage": dict(measured)}


def _as_chunk(reply: AIMessage) -> AIMessageChunk:
    """`reply` as the one (so the last) chunk a streaming model would have sent (same id, text, tool calls,
    usage)."""
    from langchain_core.messages import AIMessageChunk
    from langchain_core.messages.tool import tool_call_chunk

    calls = [
        tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c.get("id"), index=i)
        for i, c in enumerate(reply.tool_calls)
    ]
    return AIMessageChunk(
        content=reply.content,
        id=reply.id,
        tool_call_chunks=calls,
        chunk_position="last",
        usage_metadata=reply.usage_metadata,
        response_metadata=reply.response_metadata,
    )


def _load(value: Any) -> AIMessage:
    from langchain_core.messages import AIMessage, messages_from_dict

    reply = messages_from_dict([value])[0]
    if not isinstance(reply, AIMessage):
        raise LLMError(f"the call journal holds {type(reply).__name__}, not a model reply")
    return reply
