"""`LLMAgentEngine`: the LLM decision loop of csv_specs/engine.md.

`process_message(DecisionContext) -> AgentDecision`:

1. build the request: the constitution as the system message, the last `include_history_messages`
   of the history, the new message;
2. call the model with the executor's tools bound (temperature and time limit from the config);
3. execute the tool calls it makes and feed the results back;
4. loop until the model answers in text, at most `max_iterations` model calls;
5. map the outcome to an `AgentDecision` (see the decision table in csv_specs/engine.md).

A tool that needs confirmation (by default, tools named like `delete_*` / `remove_*`) is not run: the
decision is REQUEST_CONFIRMATION with a `PendingAction`, executed only when the next context carries
it as `pending_confirmation` and the user confirms.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentmap.agents._bridge import is_control_flow
from agentmap.agents.tools import USER_ID_PARAM
from agentmap.contracts.engine import (
    AgentDecision,
    AgentEngineConfig,
    DecisionContext,
    DecisionType,
    PendingAction,
    ToolCall,
    ToolExecutor,
    ToolResult,
)
from agentmap.llm._engine_request import request_messages, tool_schemas
from agentmap.llm._replies import (
    ConfirmationReply,
    confirmation_policy,
    describe_action,
    is_question,
    read_confirmation,
    tool_result_text,
)
from agentmap.llm.adapter import (
    LLMAdapter,
    LLMError,
    LLMRateLimitError,
    LLMTimeoutError,
    to_llm_error,
)

if TYPE_CHECKING:
    from langchain_core.language_models import LanguageModelInput
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.runnables import Runnable

    from agentmap.llm.decision_log import DecisionLogService

__all__ = [
    "LLM_FAILURE_MESSAGE",
    "MAX_ITERATIONS_MESSAGE",
    "RATE_LIMIT_MESSAGE",
    "DecisionOutcome",
    "LLMAgentEngine",
]

LLM_FAILURE_MESSAGE = "I'm having trouble processing your request. Please try again."
RATE_LIMIT_MESSAGE = "I'm receiving too many requests. Please wait a moment."
MAX_ITERATIONS_MESSAGE = "That request is too complex. Could you break it into smaller steps?"
DECLINED_MESSAGE = "Okay, I won't do that. Nothing was changed."

_logger = logging.getLogger("agentmap.llm.engine")


@dataclass
class DecisionOutcome:
    """A decision with what it took to reach it (for metadata and the execution summary).

    Attributes:
        decision: The decision `process_message` returns.
        decision_id: Its id in the decision log.
        outcome_category: `SUCCESS`, `TOOL_ERROR`, `CLARIFICATION`, `CONFIRMATION_REQUESTED`,
            `DECLINED`, `LLM_ERROR`, `RATE_LIMITED`, `TIMEOUT` or `MAX_ITERATIONS`.
        model_calls: How many times the model was called.
        usage: Token usage summed over the calls (`input_tokens`, `output_tokens`, `total_tokens`).
        duration_ms: Wall-clock milliseconds.
        error: The model error behind an error reply, if any.
    """

    decision: AgentDecision
    decision_id: str
    outcome_category: str = "SUCCESS"
    model_calls: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0
    error: LLMError | None = None


@dataclass
class _Turn:
    """The mutable state of one `process_message` call."""

    context: DecisionContext
    decision_id: str
    messages: list[BaseMessage]
    executed: list[ToolCall] = field(default_factory=list)
    failed_tools: int = 0
    model_calls: int = 0
    usage: dict[str, int] = field(default_factory=dict)


class LLMAgentEngine:
    """LLM-powered agent decision engine: `DecisionContext` in, `AgentDecision` out.

    Args:
        llm_adapter: The model, wrapped in an `LLMAdapter`.
        tool_executor: Runs the tools; its `get_available_tools()` are bound to the model. When it also
            has `get_tool_schemas()` (LangChain tools or OpenAI-style schemas), those are what the model
            sees; otherwise each tool is offered with free-form arguments.
        constitution: The system prompt defining the agent's behaviour.
        max_iterations: Model calls allowed per message; wins over `config.max_iterations`.
        config: History window, temperature and time limit (`AgentEngineConfig` defaults if None).
        decision_log: Where decisions and tool calls are logged (e.g. `SQLiteDecisionLog`); None logs
            only to the `agentmap.llm.engine` Python logger.
        confirm_tools: Tools needing the user's confirmation: names, a predicate, or None for
            tools named with a destructive verb (delete, remove, erase, destroy, purge, drop).
    """

    def __init__(
        self,
        llm_adapter: LLMAdapter,
        tool_executor: ToolExecutor,
        constitution: str,
        max_iterations: int = 5,
        *,
        config: AgentEngineConfig | None = None,
        decision_log: DecisionLogService | None = None,
        confirm_tools: Collection[str] | Callable[[str], bool] | None = None,
    ) -> None:
        self.llm_adapter = llm_adapter
        self.tool_executor = tool_executor
        self.constitution = constitution
        self.config = dataclasses.replace(config or AgentEngineConfig(), max_iterations=max_iterations)
        self.decision_log = decision_log
        self.needs_confirmation = confirmation_policy(confirm_tools)
        self._bound: tuple[tuple[str, ...], Runnable[LanguageModelInput, BaseMessage]] | None = None

    @classmethod
    def from_config(
        cls,
        llm_adapter: LLMAdapter,
        tool_executor: ToolExecutor,
        constitution: str,
        config: AgentEngineConfig,
        **kwargs: Any,
    ) -> LLMAgentEngine:
        """Build an engine whose every setting, `max_iterations` included, comes from `config`."""
        return cls(llm_adapter, tool_executor, constitution, config.max_iterations, config=config, **kwargs)

    @property
    def max_iterations(self) -> int:
        """Model calls allowed per message."""
        return self.config.max_iterations

    # -- public entry points -------------------------------------------------------------------

    async def process_message(self, context: DecisionContext) -> AgentDecision:
        """Process a user message and return an agent decision.

        Model failures never raise: they become RESPOND_ONLY decisions with the contract's sentences.
        """
        return (await self.decide(context)).decision

    async def decide(self, context: DecisionContext) -> DecisionOutcome:
        """Like `process_message`, with the decision id, model calls, token usage and duration."""
        started = time.perf_counter()
        turn = _Turn(
            context,
            uuid.uuid4().hex,
            request_messages(self.constitution, self.config.include_history_messages, context),
        )
        await self._log_decision(turn, "LLM_PROCESSING", "PENDING", "PENDING", 0.0)
        error: LLMError | None = None
        try:
            decision, category = await self._run(turn)
        except LLMRateLimitError as exc:
            error, category = exc, "RATE_LIMITED"
            decision = self._error_decision(turn, RATE_LIMIT_MESSAGE)
        except LLMTimeoutError as exc:
            error, category = exc, "TIMEOUT"
            decision = self._error_decision(turn, LLM_FAILURE_MESSAGE)
        except LLMError as exc:
            error, category = exc, "LLM_ERROR"
            decision = self._error_decision(turn, LLM_FAILURE_MESSAGE)
        except Exception as exc:  # binding tools, a broken executor: the user still gets the contract's reply
            if is_control_flow(exc):
                raise  # a pause (an in-doubt tool call asks a person) is not a failure
            _logger.exception("decision %s failed unexpectedly", turn.decision_id)
            error, category = to_llm_error(exc, model=self.llm_adapter.model_name), "LLM_ERROR"
            decision = self._error_decision(turn, LLM_FAILURE_MESSAGE)
        duration = (time.perf_counter() - started) * 1000
        intent = ",".join(dict.fromkeys(c.tool_name for c in turn.executed)) or (
            decision.pending_action.tool_name if decision.pending_action else "CONVERSATION"
        )
        await self._log_decision(
            turn, intent, decision.decision_type.value, category, duration, decision.response_text, error
        )
        if error is not None:
            _logger.warning("decision %s: %s (%s)", turn.decision_id, category, error.message)
        else:
            _logger.info(
                "decision %s: %s / %s in %.0f ms, %d model call(s)",
                turn.decision_id,
                decision.decision_type.value,
                category,
                duration,
                turn.model_calls,
            )
        return DecisionOutcome(decision, turn.decision_id, category, turn.model_calls, turn.usage, duration, error)

    # -- the loop ------------------------------------------------------------------------------

    async def _run(self, turn: _Turn) -> tuple[AgentDecision, str]:
        pending = turn.context.pending_confirmation
        if pending is not None:
            reply = read_confirmation(turn.context.message)
            if reply is ConfirmationReply.DECLINED:
                return AgentDecision(
                    decision_type=DecisionType.RESPOND_ONLY, response_text=DECLINED_MESSAGE
                ), "DECLINED"
            if reply is ConfirmationReply.CONFIRMED:
                await self._run_confirmed(turn, pending)
            # OTHER: the pending action lapses and the message is handled as a new request.

        bound = self._bound_model()
        config = self.config
        for _ in range(config.max_iterations):
            ai = await self.llm_adapter.ainvoke(
                turn.messages,
                bound=bound,
                temperature=config.temperature,
                timeout_seconds=config.timeout_seconds,
            )
            self._count(turn, ai)
            calls = ai.tool_calls
            if not calls:
                return self._final(turn, ai.text)
            to_confirm = next((c for c in calls if self.needs_confirmation(c["name"])), None)
            if to_confirm is not None:
                for call in calls:
                    if not self.needs_confirmation(call["name"]):
                        await self._execute(turn, call["name"], call["args"], call.get("id"))
                return self._ask_confirmation(turn, to_confirm["name"], to_confirm["args"], ai.text)
            turn.messages.append(ai)
            for call in calls:
                await self._execute(turn, call["name"], call["args"], call.get("id"))
        return self._error_decision(turn, MAX_ITERATIONS_MESSAGE), "MAX_ITERATIONS"

    async def _run_confirmed(self, turn: _Turn, pending: PendingAction) -> None:
        from langchain_core.messages import AIMessage

        call_id = f"call_{pending.action_id}"
        turn.messages.append(
            AIMessage(
                content="",
                tool_calls=[{"name": pending.tool_name, "args": dict(pending.parameters), "id": call_id}],
            )
        )
        await self._execute(turn, pending.tool_name, dict(pending.parameters), call_id)

    async def _execute(self, turn: _Turn, name: str, args: dict[str, Any], call_id: str | None) -> ToolResult:
        from langchain_core.messages import ToolMessage

        started = time.perf_counter()
        args = {k: v for k, v in args.items() if k != USER_ID_PARAM}  # the authenticated user, never the model's
        try:
            result = await self.tool_executor.execute(name, args, turn.context.user_id)
        except Exception as exc:  # the protocol says results, not exceptions; be safe anyway
            if is_control_flow(exc):
                raise
            result = ToolResult(success=False, error=f"{type(exc).__name__}: {exc}", error_code="execution_error")
        duration = (time.perf_counter() - started) * 1000
        turn.executed.append(ToolCall(tool_name=name, parameters=args, id=call_id))
        if not result.success:
            turn.failed_tools += 1
            _logger.info("tool %s failed: %s", name, result.error)
        if call_id is not None:
            status = "success" if result.success else "error"
            turn.messages.append(
                ToolMessage(content=tool_result_text(result), tool_call_id=call_id, name=name, status=status)
            )
        if self.decision_log is not None:
            try:
                await self.decision_log.write_tool_invocation_log(
                    decision_id=turn.decision_id,
                    tool_name=name,
                    parameters=args,
                    result=result.data,
                    success=result.success,
                    error_code=result.error_code,
                    error_message=result.error,
                    duration_ms=duration,
                )
            except Exception as exc:
                _logger.warning("could not write the tool invocation log: %s", exc)
        return result

    # -- decisions -----------------------------------------------------------------------------

    def _final(self, turn: _Turn, text: str) -> tuple[AgentDecision, str]:
        text = text.strip()
        if turn.executed:
            category = "TOOL_ERROR" if turn.failed_tools else "SUCCESS"
            return AgentDecision(
                decision_type=DecisionType.INVOKE_TOOL,
                tool_calls=list(turn.executed),
                response_text=text or "Done.",
            ), category
        if not text:
            raise LLMError("the model returned an empty reply with no tool calls")
        if is_question(text):
            return AgentDecision(
                decision_type=DecisionType.ASK_CLARIFICATION, clarification_question=text, response_text=text
            ), "CLARIFICATION"
        return AgentDecision(decision_type=DecisionType.RESPOND_ONLY, response_text=text), "SUCCESS"

    def _ask_confirmation(self, turn: _Turn, name: str, args: dict[str, Any], text: str) -> tuple[AgentDecision, str]:
        question = describe_action(name, args, text)
        action = PendingAction(tool_name=name, parameters=dict(args), description=question)
        return AgentDecision(
            decision_type=DecisionType.REQUEST_CONFIRMATION,
            tool_calls=list(turn.executed) or None,
            response_text=question,
            pending_action=action,
        ), "CONFIRMATION_REQUESTED"

    @staticmethod
    def _error_decision(turn: _Turn, sentence: str) -> AgentDecision:
        # RESPOND_ONLY as the contract says; tools that already ran stay on the record in `tool_calls`.
        return AgentDecision(
            decision_type=DecisionType.RESPOND_ONLY, tool_calls=list(turn.executed) or None, response_text=sentence
        )

    # -- binding the tools (the request itself: llm/_engine_request.py) ---------------------------

    def _bound_model(self) -> Runnable[LanguageModelInput, BaseMessage]:
        names = tuple(self.tool_executor.get_available_tools())
        if self._bound is None or self._bound[0] != names:
            self._bound = (names, self.llm_adapter.bind_tools(tool_schemas(self.tool_executor, names)))
        return self._bound[1]

    @staticmethod
    def _count(turn: _Turn, ai: AIMessage) -> None:
        turn.model_calls += 1
        usage = ai.usage_metadata
        if usage:
            turn.usage["input_tokens"] = turn.usage.get("input_tokens", 0) + usage["input_tokens"]
            turn.usage["output_tokens"] = turn.usage.get("output_tokens", 0) + usage["output_tokens"]
            turn.usage["total_tokens"] = turn.usage.get("total_tokens", 0) + usage["total_tokens"]

    async def _log_decision(
        self,
        turn: _Turn,
        intent: str,
        decision_type: str,
        category: str,
        duration_ms: float,
        response_text: str | None = None,
        error: LLMError | None = None,
    ) -> None:
        if self.decision_log is None:
            return
        context = turn.context
        try:
            await self.decision_log.write_decision_log(
                decision_id=turn.decision_id,
                conversation_id=context.conversation_id,
                user_id=context.user_id,
                message=context.message,
                intent_type=intent,
                decision_type=decision_type,
                outcome_category=category,
                duration_ms=duration_ms,
            )
            details = getattr(self.decision_log, "write_decision_details", None)
            if details is not None and (response_text is not None or error is not None):
                await details(
                    decision_id=turn.decision_id,
                    response_text=response_text,
                    error=error.message if error is not None else None,
                )
        except Exception as exc:  # logging must never cost the user their answer
            _logger.warning("could not write the decision log: %s", exc)
