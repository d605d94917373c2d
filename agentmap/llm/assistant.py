"""The `assistant` agent type: `LLMAgentEngine` (csv_specs/engine.md) as a workflow node.

Each run handles one user message: it reads the message, the conversation so far and any action
awaiting confirmation from the state, asks the engine for a decision, and writes what the Output_Field
names. The node's Prompt is the constitution; its tools come from Tool_Source / Available_Tools.

Inputs (by parameter name; rename a state key with `state_key:param` in Input_Fields):
`message` (required; else the first input), `history`, `pending_confirmation`, `user_id`,
`conversation_id`.

Outputs: one Output_Field receives the decision (`AgentDecision` as a JSON-ready dict). Several
fields pick from `decision`, `response`, `decision_type`, `history` (the conversation with this
exchange appended), `pending_confirmation` and `tool_calls`; `state_key=response` renames.

Context: the model options of the `llm` type (`model`, `temperature`, `timeout`, ...), `max_iterations`,
`include_history_messages`, `confirm_tools`, `decision_log`, `user_id`, `conversation_id`,
`fail_on_error`; see csv_specs/engine.md.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentmap._paths import OutsideRootsError, allowed_roots, confine, widen_hint
from agentmap.agents import costs
from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem, run_sync
from agentmap.agents.registry import agent
from agentmap.agents.state import parse_input_field, parse_output_field
from agentmap.agents.tool_sources import build_tool_executor, check_tool_config, split_names
from agentmap.contracts.engine import AgentEngineConfig, DecisionContext, Message, PendingAction
from agentmap.contracts.io import describe_validation_error
from agentmap.llm.agents import history_entries, model_call_problems, node_adapter
from agentmap.llm.decision_log import SQLiteDecisionLog, configured_log_path
from agentmap.llm.models import ModelSpec, build_model, choose_model, model_options, model_problems

if TYPE_CHECKING:
    from agentmap.llm.engine import LLMAgentEngine

__all__ = ["DEFAULT_CONSTITUTION", "OUTPUT_KEYS", "AssistantAgent"]

DEFAULT_CONSTITUTION = """You are a helpful assistant.

## Behavioral Rules
1. Only use tools when the user clearly wants an operation they perform
2. For greetings and general questions, respond conversationally WITHOUT tools
3. If the user's intent is unclear, ask a clarifying question
4. Destructive operations are confirmed with the user before they run
5. Politely decline requests outside your tools' purpose

## Response Guidelines
- Be concise and helpful
- Confirm successful operations
- Explain errors in user-friendly terms
- Never expose internal details or tool names to users"""
"""The constitution of an `assistant` node whose Prompt is empty."""

OUTPUT_KEYS = ("decision", "response", "decision_type", "history", "pending_confirmation", "tool_calls")
"""What an `assistant` node can write when its Output_Field names several fields."""

_INPUTS = ("message", "history", "pending_confirmation", "user_id", "conversation_id")
_OFF = ("off", "false", "none", "no", "")

_MAX_REMEMBERED = 1024

_logs: dict[Path, SQLiteDecisionLog] = {}
_logs_lock = threading.Lock()


def _shared_log(path: Path) -> SQLiteDecisionLog:
    """One log object (one connection) per file for the whole process."""
    path = path.resolve()
    with _logs_lock:
        log = _logs.get(path)
        if log is None:
            log = _logs[path] = SQLiteDecisionLog(path)
        return log


def _whole(context: Mapping[str, Any], key: str, default: int, minimum: int) -> int:
    value = context.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"Context {key} must be a whole number >= {minimum}, got {value!r}")
    return value


def _history(value: Any) -> list[Message]:
    """A stored conversation (role/content dicts, `Message`s, LangChain messages, pairs) as `Message`s."""
    return [Message(role=e["role"], content=e["content"]) for e in history_entries(value)]  # type: ignore[arg-type]


@agent("assistant")
class AssistantAgent(BaseAgent):
    """`assistant`: one turn of a tool-using conversation, decided by `LLMAgentEngine`.

    See the module docstring for its inputs, outputs and Context keys.
    """

    own_cache = True  # Context `cache` is the LLM response cache (llm/cache.py)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        context = self.context
        self.constitution = (self.prompt or "").strip() or DEFAULT_CONSTITUTION
        self.fail_on_error = bool(context.get("fail_on_error", False))
        outputs = [parse_output_field(f) for f in (self.output_field or "").split("|") if f.strip()]
        self._single_output = len(outputs) == 1 and outputs[0][1] is None
        self._spec: ModelSpec | None = None
        self._engine: LLMAgentEngine | None = None
        # The action each conversation was last asked to confirm, for callers that keep only the text of
        # the conversation (`agentmap chat`): see `_remembered`.
        self._asked: OrderedDict[tuple[str, str], PendingAction] = OrderedDict()
        self._asked_lock = threading.Lock()

    # -- configuration -------------------------------------------------------------------------

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        """Check the model, the numbers, the inputs and outputs, the tools and the decision log path."""
        problems: list[ConfigProblem] = [*model_problems(model_options(context), settings=environment.settings)]
        for key, default, minimum in (("max_iterations", 5, 1), ("include_history_messages", 10, 0)):
            try:
                _whole(context, key, default, minimum)
            except ValueError as exc:
                problems.append(str(exc))
        inputs = [f.partition(":")[2].strip() or f.strip() for f in context.get("input_fields", [])]
        if not inputs:
            problems.append("an assistant node needs the user's message: list it in Input_Fields (e.g. message)")
        fields = [parse_output_field(f) for f in str(context.get("output_field") or "").split("|") if f.strip()]
        if len(fields) > 1:
            for key, source in fields:
                if (source or key) not in OUTPUT_KEYS:
                    problems.append(
                        f"Output_Field '{key}' is not something an assistant writes: use one of "
                        f"{', '.join(OUTPUT_KEYS)}, or rename with {key}=response"
                    )
        confirm = context.get("confirm_tools")
        if confirm is not None and not isinstance(confirm, str | list):
            problems.append(f"Context confirm_tools must be a list of tool names or 'a|b', got {confirm!r}")
        if split_names(context.get("tool_source")) or split_names(context.get("available_tools")):
            problems.extend(check_tool_config(context, environment))
        try:
            _log_path(context, environment)
        except OutsideRootsError as exc:
            problems.append(f"Context decision_log {exc}: {widen_hint('the decision log')}")
        return problems + model_call_problems(context, environment.settings)

    def state_keys(self) -> list[str]:
        """No keys besides the output fields."""
        return []

    @property
    def spec(self) -> ModelSpec:
        """The node's resolved model choice."""
        if self._spec is None:
            self._spec = choose_model(model_options(self.context), settings=self.environment.settings)
        return self._spec

    def decision_log_path(self) -> Path | None:
        """Where decisions are logged: Context `decision_log` (relative to the workflow's folder), else
        `configured_log_path(settings)` (the `llm.decision_log` setting, `$AGENTMAP_DECISION_LOG`,
        `.agentmap/decisions.db`); None when turned off (`false`)."""
        return _log_path(self.context, self.environment)

    async def engine(self) -> LLMAgentEngine:
        """The node's engine, built on first use (model, tools, decision log)."""
        if self._engine is None:
            from agentmap.llm.engine import LLMAgentEngine

            context, spec, defaults = self.context, self.spec, AgentEngineConfig()
            config = AgentEngineConfig(
                max_iterations=_whole(context, "max_iterations", defaults.max_iterations, 1),
                include_history_messages=_whole(
                    context, "include_history_messages", defaults.include_history_messages, 0
                ),
                temperature=spec.temperature if spec.temperature is not None else defaults.temperature,
                timeout_seconds=max(1, round(spec.timeout)) if spec.timeout else defaults.timeout_seconds,
            )
            confirm = context.get("confirm_tools")
            log_path = self.decision_log_path()
            self._engine = LLMAgentEngine.from_config(
                node_adapter(build_model(spec), context, self.environment.settings, static=self.constitution),
                await build_tool_executor(context, self.environment),
                self.constitution,
                config,
                decision_log=_shared_log(log_path) if log_path is not None else None,
                confirm_tools=split_names(confirm) if confirm is not None else None,
            )
        return self._engine

    # -- the work ------------------------------------------------------------------------------

    def process(self, inputs: dict[str, Any]) -> Any:
        """Decide about the message (synchronously, on AgentMap's shared LLM event loop)."""

        return run_sync(self.aprocess(inputs))

    async def aprocess(self, inputs: dict[str, Any]) -> Any:
        """Decide about the message and return what the Output_Field names."""
        started = time.perf_counter()
        context = self._decision_context(inputs)
        from agentmap.llm.mcp import mcp_sessions

        engine = await self.engine()
        # an MCP server serves the whole decision loop, not one process per call; the tally counts its model
        # calls' tokens, cost, replays and cache hits (and holds them to Context `budget`)
        async with mcp_sessions():
            with costs.tally(self.name, self.context.get("budget")) as spent:
                outcome = await engine.decide(context)
        decision = outcome.decision
        self._remember(context, decision.pending_action)
        spec = self.spec
        self.record_metadata(
            model=spec.name,
            provider=spec.provider,
            decision_id=outcome.decision_id,
            decision_type=decision.decision_type.value,
            outcome=outcome.outcome_category,
            model_calls=outcome.model_calls,
            tool_calls=[c.tool_name for c in decision.tool_calls or []],
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            **(outcome.usage | spent.metadata()),
            **({"stand_in": True} if spec.provider == "offline" else {}),
        )
        if outcome.error is not None and self.fail_on_error:
            raise outcome.error
        dumped = decision.model_dump(mode="json")
        if self._single_output:
            return dumped
        reply = decision.response_text or decision.clarification_question or ""
        history = [m.model_dump(mode="json", exclude_none=True) for m in context.message_history]
        history += [{"role": "user", "content": context.message}, {"role": "assistant", "content": reply}]
        return {
            "decision": dumped,
            "response": reply,
            "decision_type": decision.decision_type.value,
            "history": history,
            "pending_confirmation": dumped["pending_action"],
            "tool_calls": dumped["tool_calls"] or [],
        }

    def _decision_context(self, inputs: dict[str, Any]) -> DecisionContext:
        key = "message" if "message" in inputs else next((k for k in inputs if k not in _INPUTS), "message")
        message = inputs.get(key)
        if message is None or not str(message).strip():
            raise ValueError(f"the message to answer is empty: give the state a non-blank {self._state_key(key)!r}")
        pending = inputs.get("pending_confirmation")
        try:
            action = PendingAction.model_validate(pending) if pending else None
        except ValidationError as exc:
            raise ValueError(
                f"the state's pending_confirmation is not a pending action ({describe_validation_error(exc)}): "
                "pass back the pending_confirmation the previous turn wrote, or null"
            ) from None
        context = DecisionContext(
            user_id=str(inputs.get("user_id") or self.context.get("user_id") or "default"),
            message=str(message),
            conversation_id=str(
                inputs.get("conversation_id")
                or self.context.get("conversation_id")
                or self.environment.graph_name
                or self.name
            ),
            message_history=_history(inputs.get("history")),
            pending_confirmation=action,
        )
        if context.pending_confirmation is None:
            context.pending_confirmation = self._remembered(context)
        return context

    def _state_key(self, param: str) -> str:
        """The state key feeding the input `param` (Input_Fields `state_key:param` renames)."""
        return next((key for key, name in map(parse_input_field, self.input_fields) if name == param), param)

    def _remember(self, context: DecisionContext, action: PendingAction | None) -> None:
        key = (context.user_id, context.conversation_id)
        with self._asked_lock:
            self._asked.pop(key, None)
            if action is not None:
                self._asked[key] = action
                while len(self._asked) > _MAX_REMEMBERED:
                    self._asked.popitem(last=False)

    def _remembered(self, context: DecisionContext) -> PendingAction | None:
        """The action this conversation was asked to confirm, when the state does not carry it.

        Only while the history's last message is that very question, so the user's reply answers it.
        """
        history = context.message_history
        with self._asked_lock:
            action = self._asked.get((context.user_id, context.conversation_id))
        if action is None or not history or history[-1].role != "assistant":
            return None
        return action if " ".join(history[-1].content.split()) == " ".join(action.description.split()) else None


def _log_path(context: Mapping[str, Any], environment: AgentEnvironment) -> Path | None:
    """Context `decision_log`, confined to the workflow's folder and the allowed roots (a CSV cannot make the
    engine write a file elsewhere); the configured path when the Context does not name one.

    Raises:
        OutsideRootsError: The Context's path leaves the allowed folders.
    """
    value = context.get("decision_log")
    if value is None:
        return configured_log_path(environment.settings)
    if value is False or str(value).strip().lower() in _OFF:
        return None
    return confine(str(value), environment.base_dir, allowed_roots(environment.settings))
