"""LLM agent types: `llm`, and the provider shorthands `openai`, `anthropic`, `google`, `ollama`, `offline`.

A node's Prompt is formatted with its inputs (`{name}` placeholders only: no attribute or index
access; `{{`/`}}` are literal braces; an unknown name stays as written) and sent as the system message
(Context `prompt_role: "system"`, the default) or as the user message (`"user"`). The user message is
the inputs the prompt did not use: one input as its text, several as `name: value` lines; with the
prompt as system message and no input left over, the prompt itself is the user message.

Conversation memory (Context `memory_key`, off by default): the history is read from that state key,
its last `max_memory_messages` (default 10) are sent before the new message, and the history with the
new exchange appended (trimmed to the same window) is written back. The memory key must also be listed
in Output_Field (`reply|chat_history`): the first other field gets the reply. Messages are stored as
`{"role": "user" | "assistant", "content": str}` dicts. A conversation that ends with the user's message, when
the node has no other input left over, is that message's answer (a chat front end sends it so). The memory key
`messages` is a chat (agents/messages.py): only the new messages are written, and the state appends them.

With Tool_Source / Available_Tools the model may call tools: the node runs `LLMAgentEngine`'s loop
(`max_iterations` model calls at most) and writes the final reply. A provider error, rate limit or
timeout fails the node (Failure_Next), and so does running out of iterations.

Prompt caching: the Prompt up to its first placeholder is what every call of the node begins with; the adapter
marks it for the provider's prompt cache where the provider asks for marks (Anthropic), and the cache reads and
writes the provider reports are counted and priced (Context `prompt_cache: false`, or `llm.prompt_cache: false`,
sends no marks).

Model options (Context, else the `llm.*` settings, else `AGENTMAP_LLM_*`): `model` (`provider:model`),
`temperature`, `max_tokens`, `timeout`, `base_url`, `max_retries`, `api_key_env`. A node with a `retry` policy
retries by that policy alone: its client makes no retries of its own unless Context sets `max_retries`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from agentmap.agents import costs
from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem, run_sync
from agentmap.agents.findings import EnvironmentProblem
from agentmap.agents.llm_batch import PROVIDERS, ModelBatching
from agentmap.agents.messages import MESSAGES_KEY
from agentmap.agents.registry import agent
from agentmap.agents.state import StateAdapter
from agentmap.agents.tool_sources import build_tool_executor, check_tool_config, split_names
from agentmap.contracts.engine import AgentEngineConfig, DecisionContext, Message
from agentmap.errors import ConfigError
from agentmap.llm import cache
from agentmap.llm._conversation import format_prompt, history_entries, static_prefix
from agentmap.llm.models import ModelSpec, build_model, choose_model, model_options, model_problems

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from agentmap.agents.tools import LocalToolExecutor
    from agentmap.llm.adapter import LLMAdapter

__all__ = [
    "AnthropicAgent",
    "GoogleAgent",
    "LLMAgent",
    "OfflineAgent",
    "OllamaAgent",
    "OpenAIAgent",
    "format_prompt",
    "history_entries",
]

T = TypeVar("T")
_ROLES = ("system", "user")
_DEFAULT_WINDOW = 10


@agent("llm")
class LLMAgent(BaseAgent):
    """`llm`: asks a chat model; see the module docstring for the Context keys.

    Attributes:
        provider: The provider a bare model name (or no name) means, for the shorthand types.
    """

    own_cache = True  # Context `cache` is the LLM response cache (llm/cache.py)

    provider: ClassVar[str | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        context = self.context
        self.prompt_role: str = str(context.get("prompt_role", "system")).lower()
        self.memory_key: str | None = context.get("memory_key") or None
        self.max_memory_messages: int = int(context.get("max_memory_messages", _DEFAULT_WINDOW))
        fields = [f.strip() for f in (self.output_field or "").split("|") if f.strip()]
        self._reply_field = next((f for f in fields if f != self.memory_key), None)
        self._has_tools = bool(split_names(context.get("tool_source")) or split_names(context.get("available_tools")))
        self._spec: ModelSpec | None = None
        self._adapter: LLMAdapter | None = None
        self._building = threading.Lock()  # the rows a batch runs on threads reach a node's first call at once
        self._executor: LocalToolExecutor | None = None

    # -- configuration -------------------------------------------------------------------------

    @classmethod
    def may_pause(cls, context: Mapping[str, Any]) -> bool:
        """A node with tools may pause: a tool call cut short by a crash is in doubt (the call journal)."""
        return bool(split_names(context.get("tool_source")) or split_names(context.get("available_tools")))

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        """Check the model (extra installed, API key set), the memory settings and the tools."""
        from agentmap.llm._legacy_models import legacy_problems

        problems: list[ConfigProblem] = [*legacy_problems(context.get("model"))]
        problems += model_problems(model_options(context), default_provider=cls.provider, settings=environment.settings)
        role = str(context.get("prompt_role", "system")).lower()
        if role not in _ROLES:
            problems.append(f"Context prompt_role must be 'system' or 'user', got {context.get('prompt_role')!r}")
        for key, default, least in (("max_memory_messages", _DEFAULT_WINDOW, 0), ("max_iterations", 1, 1)):
            value = context.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                problems.append(f"Context {key} must be a whole number >= {least}, got {value!r}")
        fields = [f.strip() for f in str(context.get("output_field") or "").split("|") if f.strip()]
        memory_key = context.get("memory_key")
        if memory_key and memory_key not in fields:
            reply = fields[0] if fields else "reply"
            problems.append(
                f"Context memory_key '{memory_key}' must also be listed in Output_Field so the conversation "
                f"is saved: write {reply}|{memory_key}"
            )
        if len([f for f in fields if f != memory_key]) > 1:
            problems.append(
                f"Output_Field '{context.get('output_field')}' names several fields; an LLM node writes its "
                "reply to one field (and the conversation to its memory_key)"
            )
        if split_names(context.get("tool_source")) or split_names(context.get("available_tools")):
            problems.extend(check_tool_config(context, environment))
        return problems + model_call_problems(context, environment.settings)

    @classmethod
    def dialect_notes(cls, prompt: str, context: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """How AgentMap 0.9's `provider` / `llm_provider` / `provider.tier` keys were read."""
        from agentmap.llm._legacy_models import legacy_notes

        return legacy_notes(context)

    @property
    def spec(self) -> ModelSpec:
        """The node's resolved model choice."""
        if self._spec is None:
            options = model_options(self.context)
            spec = choose_model(options, default_provider=self.provider, settings=self.environment.settings)
            if self.context.get("retry") is not None and options.max_retries is None:
                # The node's retry policy does the retrying (its attempts and backoff, each attempt through the
                # rate limiter); the client's own hidden retries would multiply its attempts.
                spec = replace(spec, max_retries=0)
            self._spec = spec
        return self._spec

    @property
    def adapter(self) -> LLMAdapter:
        """The node's model, wrapped for calls (built on first use)."""
        if self._adapter is None:
            with self._building:  # built once: a model's clients cost tens of milliseconds of CPU each
                if self._adapter is None:
                    self._adapter = node_adapter(
                        build_model(self.spec),
                        self.context,
                        self.environment.settings,
                        timeout=self.spec.timeout,
                        static=static_prefix(self.prompt or ""),
                        key_env=self.spec.api_key_env,
                    )
        return self._adapter

    def model_batching(self) -> ModelBatching | None:
        """Whether the node's model calls can go through a provider batch job: the OpenAI and Anthropic
        providers' can; other providers' run synchronously."""
        spec = self.spec
        if spec.provider in PROVIDERS:
            return ModelBatching(spec.provider, spec.model)
        return ModelBatching(None, spec.name, f"the {spec.provider} provider has no batch API")

    # -- the work ------------------------------------------------------------------------------

    def _pre_process(self, state: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
        if self.memory_key:
            inputs = {**inputs, self.memory_key: StateAdapter.get_value(state, self.memory_key)}
        return state, inputs

    def process(self, inputs: dict[str, Any]) -> Any:
        """Ask the model (synchronously); return the reply, or the reply and the history with memory."""
        if self._has_tools:
            return run_sync(self.aprocess(inputs))
        system, user, history, asked = self._conversation(inputs)
        started = self._begin_call()
        with costs.tally(self.name, self.context.get("budget")) as spent:
            try:
                reply = self.adapter.invoke(self._messages(system, user, history))
            except Exception:
                self.record_metadata(duration_ms=_since(started), **spent.metadata())
                raise
        return self._finish(reply.text, user, history, asked, started, spent, 1)

    async def aprocess(self, inputs: dict[str, Any]) -> Any:
        """The async twin of `process`; runs the tool loop when the node has tools."""
        system, user, history, asked = self._conversation(inputs)
        started = self._begin_call()
        with costs.tally(self.name, self.context.get("budget")) as spent:
            try:
                if self._has_tools:
                    return await self._with_tools(inputs, system, user, history, asked, started, spent)
                reply = await self.adapter.ainvoke(self._messages(system, user, history))
            except Exception:
                self.record_metadata(duration_ms=_since(started), **spent.metadata())
                raise
        return self._finish(reply.text, user, history, asked, started, spent, 1)

    async def _with_tools(
        self,
        inputs: dict[str, Any],
        system: str,
        user: str,
        history: list[dict[str, str]],
        asked: bool,
        started: float,
        spent: costs.Tally,
    ) -> Any:
        from agentmap.llm.engine import LLMAgentEngine
        from agentmap.llm.mcp import mcp_sessions

        if self._executor is None:
            self._executor = await build_tool_executor(self.context, self.environment)
        defaults = AgentEngineConfig()
        config = AgentEngineConfig(
            max_iterations=int(self.context.get("max_iterations", defaults.max_iterations)),
            include_history_messages=len(history),
            temperature=self.spec.temperature if self.spec.temperature is not None else defaults.temperature,
            timeout_seconds=max(1, round(self.spec.timeout)) if self.spec.timeout else defaults.timeout_seconds,
        )
        engine = LLMAgentEngine.from_config(self.adapter, self._executor, system, config, confirm_tools=())
        user_id = str(inputs.get("user_id") or self.context.get("user_id") or "")
        request = DecisionContext(
            user_id=user_id,
            message=user,
            conversation_id=str(inputs.get("conversation_id") or self.context.get("conversation_id") or self.name),
            message_history=[Message(role=m["role"], content=m["content"]) for m in history],  # type: ignore[arg-type]
        )
        async with mcp_sessions():  # an MCP server serves the whole loop, not one process per call
            outcome = await engine.decide(request)
        if outcome.error is not None:
            raise outcome.error
        if outcome.outcome_category == "MAX_ITERATIONS":
            raise RuntimeError(
                f"the model was still calling tools after {config.max_iterations} model calls; raise Context "
                "max_iterations or simplify the request"
            )
        decision = outcome.decision
        text = decision.response_text or decision.clarification_question or ""
        self.record_metadata(tool_calls=[c.tool_name for c in decision.tool_calls or []])
        return self._finish(text, user, history, asked, started, spent, outcome.model_calls)

    # -- helpers -------------------------------------------------------------------------------

    def _conversation(self, inputs: dict[str, Any]) -> tuple[str, str, list[dict[str, str]], bool]:
        """(system text, user text, earlier messages, whether the user text is the conversation's last message)
        for this call."""
        history: list[dict[str, str]] = []
        values = dict(inputs)
        if self.memory_key:
            history = history_entries(values.pop(self.memory_key, None))
        prompt, used = format_prompt(self.prompt or "", values)
        rest = {k: v for k, v in values.items() if k not in used and v is not None}
        lines = [f"{k}: {v}" for k, v in rest.items()]
        extra = str(next(iter(rest.values()))) if len(rest) == 1 else "\n".join(lines)
        asked = not extra and bool(history) and history[-1]["role"] == "user"
        if asked:  # the conversation ends with the question: it is the user message (a chat front end's turn)
            extra = history.pop()["content"]
        history = history[-self.max_memory_messages :] if self.max_memory_messages else []
        if self.prompt_role == "user":
            return "", "\n\n".join(p for p in (prompt, extra) if p), history, asked
        if not extra:
            return "", prompt, history, asked
        return prompt, extra, history, asked

    @staticmethod
    def _messages(system: str, user: str, history: list[dict[str, str]]) -> list[BaseMessage]:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

        kinds = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}
        messages: list[BaseMessage] = [SystemMessage(content=system)] if system else []
        messages += [kinds[m["role"]](content=m["content"]) for m in history]
        messages.append(HumanMessage(content=user))
        return messages

    def _begin_call(self) -> float:
        """Record the model (so a failed call names it too) and return the start time."""
        spec = self.spec
        stand_in = {"stand_in": True} if spec.provider == "offline" else {}
        self.record_metadata(model=spec.name, provider=spec.provider, **stand_in)
        return time.perf_counter()

    def _finish(
        self,
        text: str,
        user: str,
        history: list[dict[str, str]],
        asked: bool,
        started: float,
        spent: costs.Tally,
        calls: int,
    ) -> Any:
        self.record_metadata(duration_ms=_since(started), model_calls=calls, **spent.metadata())
        if not self.memory_key:
            return text
        window = self.max_memory_messages
        reply = {"role": "assistant", "content": text}
        result: dict[str, Any]
        if self.memory_key == MESSAGES_KEY:  # a chat: the state appends what is new (agents/messages.py)
            result = {self.memory_key: [reply] if asked else [{"role": "user", "content": user}, reply]}
        else:
            updated = [*history, {"role": "user", "content": user}, reply]
            result = {self.memory_key: updated[-window:] if window else []}
        if self._reply_field:
            result[self._reply_field] = text
        return result


def _since(started: float) -> float:
    """Milliseconds since `started` (a `time.perf_counter()` reading)."""
    return round((time.perf_counter() - started) * 1000, 3)


def node_adapter(
    model: Any,
    context: Mapping[str, Any],
    settings: Mapping[str, Any] | None,
    *,
    timeout: float | None = None,
    static: str = "",
    key_env: str | None = None,
) -> LLMAdapter:
    """A node's model wrapped for calls, with the price table and budget (`llm.prices`, `llm.budget`), the
    LLM response cache (Context `cache`, else `llm.cache`) and the provider's prompt cache (`static`: the text the
    node's every call begins with, marked for it unless Context `prompt_cache`, else `llm.prompt_cache`, is
    false): how every node that calls a model (the LLM types, `assistant`, `llm_planner`) makes its calls."""
    from agentmap.llm.adapter import LLMAdapter

    llm = (settings or {}).get("llm") or {}
    marks = context.get("prompt_cache", llm.get("prompt_cache"))
    return LLMAdapter(
        model,
        timeout_seconds=timeout,
        prices=costs.price_table(llm.get("prices")),
        budget=llm.get("budget"),
        cache_ttl=cache.ttl_of(context.get("cache"), llm.get("cache")),
        static_prefix=static,
        prompt_cache=marks is not False,
        key_env=key_env,
    )


def model_call_problems(context: Mapping[str, Any], settings: Mapping[str, Any] | None) -> list[ConfigProblem]:
    """What is wrong with the settings `node_adapter` reads: Context `budget` and `llm.budget` must be positive
    numbers of dollars; `llm.prices` must be prices; Context `cache` and `llm.cache` must be `{"ttl": SECONDS}`
    (or false); Context `prompt_cache` and `llm.prompt_cache` must be true or false."""

    llm = (settings or {}).get("llm") or {}
    found: list[tuple[str, str]] = []  # (where, message)
    for where, value in (("Context budget", context.get("budget")), ("llm.budget", llm.get("budget"))):
        if value is not None and not costs.is_budget(value):
            found.append((where, f"{where} must be a positive number of US dollars, got {value!r}"))
    for where, value in (("Context cache", context.get("cache")), ("llm.cache", llm.get("cache"))):
        problem = cache.cache_problem(value, where)
        if problem:
            found.append((where, problem))
    for where, value in (
        ("Context prompt_cache", context.get("prompt_cache")),
        ("llm.prompt_cache", llm.get("prompt_cache")),
    ):
        if value is not None and not isinstance(value, bool):
            found.append(
                (
                    where,
                    f"{where} must be true or false (mark the static part of the prompt for the provider's "
                    f"prompt cache, or not), got {value!r}",
                )
            )
    try:
        costs.price_table(llm.get("prices"))
    except ConfigError as exc:
        found.append(("llm.prices", exc.message))
    return [_in_config(where, message) if where.startswith("llm.") else message for where, message in found]


def _in_config(setting: str, message: str) -> EnvironmentProblem:
    """A problem of an `llm.*` setting: fixed in the config (or its variable), not in the node's Context cell."""
    variable = "AGENTMAP_LLM__" + setting.removeprefix("llm.").upper()
    return EnvironmentProblem(
        message, fix=f"fix {setting} in the config file (agentmap.yaml) or {variable} (csv_specs/llm.md)"
    )


@agent("chatgpt")
@agent("gpt")
@agent("openai")
class OpenAIAgent(LLMAgent):
    """`openai`: an LLM node whose bare model names (and default) are OpenAI's."""

    provider = "openai"


@agent("claude")
@agent("anthropic")
class AnthropicAgent(LLMAgent):
    """`anthropic`: an LLM node whose bare model names (and default) are Anthropic's."""

    provider = "anthropic"


@agent("gemini")
@agent("google")
class GoogleAgent(LLMAgent):
    """`google`: an LLM node whose bare model names (and default) are Google Gemini's."""

    provider = "google_genai"


@agent("ollama")
class OllamaAgent(LLMAgent):
    """`ollama`: an LLM node whose bare model names (and default) are served by Ollama."""

    provider = "ollama"


@agent("offline")
class OfflineAgent(LLMAgent):
    """`offline`: an LLM node on the deterministic offline stand-in model (no network, no key)."""

    provider = "offline"
