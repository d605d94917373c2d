"""`OfflineChatModel`: a deterministic stand-in chat model, for demos and tests; no network, no key.

It is **not** a language model. It answers from its inputs with simple, documented rules, so a workflow
built for a real provider runs anywhere and gives the same result every time:

* a scripted reply (`responses`) whose key occurs in the last user message wins;
* with tools bound (`bind_tools`), it calls the tool whose name (and then description) best matches
  the last user message, filling arguments from the message (see `agentmap.llm._offline_args`); when a
  required argument cannot be filled it asks a clarifying question instead;
* after tool results (`ToolMessage`s) it replies with a summary of them;
* otherwise it greets a greeting and echoes anything else as `"[offline] <message>"`.

Every reply carries `response_metadata={"model_provider": "offline", "stand_in": True, ...}` and a
`usage_metadata` whose token counts are word counts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from agentmap.llm._offline_args import choose_tool, fill_arguments, humanize

__all__ = ["OfflineChatModel"]

_GREETINGS = {"hello", "hi", "hey", "greetings", "good morning", "good afternoon", "good evening"}
_MAX_ECHO = 1000
_MAX_RESULT = 300


class OfflineChatModel(BaseChatModel):
    """A deterministic stand-in for a chat model (provider `offline`); see the module docstring.

    Attributes:
        model_name: The name reported in metadata (`offline:<model_name>`).
        responses: Scripted replies: when a key occurs in the last user message (case-insensitive), its
            value is the reply. Checked before tools.
    """

    model_name: str = "offline"
    responses: dict[str, str] = Field(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (any form `convert_to_openai_tool` accepts) so replies may call them.

        Args:
            tools: The tools.
            tool_choice: `"auto"` (default), `"none"`, `"any"`/`"required"` (always call one), or a
                tool name (always call that one).
            **kwargs: Further arguments bound to every call.
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, **kwargs))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Pure computation: no thread hop.
        return self._generate(messages, stop, None, **kwargs)

    # -- the rules -----------------------------------------------------------------------------

    def _reply(
        self,
        messages: list[BaseMessage],
        tools: Sequence[Mapping[str, Any]] = (),
        tool_choice: Any = None,
        **_: Any,
    ) -> AIMessage:
        text = _last_user_text(messages)
        calls: list[ToolCall] = []
        if messages and isinstance(messages[-1], ToolMessage):
            content = _summarize_results(messages)
        elif scripted := self._scripted(text):
            content = scripted
        elif (found := self._tool_turn(messages, text, tools, tool_choice)) is not None:
            content, calls = found
        elif text.strip().lower().rstrip("!.?, ") in _GREETINGS:
            content = "Hello! How can I help you today?"
        else:
            echo = " ".join(text.split())
            content = f"[offline] {echo[:_MAX_ECHO]}" if echo else "[offline] (no message)"
        prompt_words = sum(_words(m.content) for m in messages)
        reply_words = _words(content) + sum(_words(json.dumps(c["args"])) + 1 for c in calls)
        return AIMessage(
            content=content,
            tool_calls=calls,
            response_metadata={
                "model_provider": "offline",
                "model_name": self.model_name,
                "stand_in": True,
                "finish_reason": "tool_calls" if calls else "stop",
            },
            usage_metadata={
                "input_tokens": prompt_words,
                "output_tokens": reply_words,
                "total_tokens": prompt_words + reply_words,
            },
        )

    def _scripted(self, text: str) -> str | None:
        lowered = text.lower()
        for key, reply in self.responses.items():
            if key.lower() in lowered:
                return reply
        return None

    @staticmethod
    def _tool_turn(
        messages: list[BaseMessage], text: str, tools: Sequence[Mapping[str, Any]], tool_choice: Any
    ) -> tuple[str, list[ToolCall]] | None:
        functions = [t.get("function", t) for t in tools]
        if not functions or tool_choice == "none":
            return None
        forced = _forced_name(tool_choice)
        if forced is not None:
            functions = [f for f in functions if f.get("name") == forced] or functions
        must_call = forced is not None or tool_choice in ("any", "required")
        chosen = choose_tool(text, functions, must_call=must_call)
        if chosen is None:
            return None
        function, matched_words = chosen
        args, missing = fill_arguments(text, function.get("parameters") or {}, matched_words)
        name = str(function["name"])
        if missing:
            what = " and ".join(missing)
            verb = "is" if len(missing) == 1 else "are"
            return f"I can {humanize(name)} for you, but I need more details: what {verb} the {what}?", []
        digest = hashlib.sha1(f"{len(messages)}:{name}:{json.dumps(args, sort_keys=True)}".encode())
        return "", [ToolCall(name=name, args=args, id=f"call_{digest.hexdigest()[:12]}", type="tool_call")]


def _forced_name(tool_choice: Any) -> str | None:
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool_choice.get("name")
        return str(name) if name else None
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "any", "required", "none"):
        return tool_choice
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b if isinstance(b, str) else str(b.get("text", "")) for b in content if isinstance(b, str | dict)]
        return " ".join(p for p in parts if p)
    return "" if content is None else str(content)


def _words(content: Any) -> int:
    return len(_text(content).split())


def _last_user_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return _text(message.content)
    return ""


def _summarize_results(messages: Sequence[BaseMessage]) -> str:
    """One sentence per trailing tool result, naming the tool that produced it."""
    results: list[ToolMessage] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.append(message)
    names: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            names.update({str(c["id"]): c["name"] for c in message.tool_calls if c.get("id")})
    lines = []
    for result in reversed(results):
        name = result.name or names.get(result.tool_call_id, "the tool")
        body = re.sub(r"\s+", " ", _text(result.content)).strip()
        if len(body) > _MAX_RESULT:
            body = body[: _MAX_RESULT - 3] + "..."
        if result.status == "error":
            lines.append(f"{humanize(name).capitalize()} failed: {body}")
        else:
            lines.append(f"Done: {humanize(name)} returned {body or 'nothing'}.")
    return " ".join(lines)
