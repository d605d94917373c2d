"""Benchmark: `LLMAgentEngine`'s own cost per tool-calling iteration, against a hand-written loop.

Both sides drive the same fake chat model (a `BaseChatModel` with `bind_tools`, answering with tool
calls until it has seen `ROUNDS` tool results, then with text) and the same LangChain tools. The
hand-written loop is what one would write without AgentMap: `bind_tools`, `ainvoke`, run each call,
append `ToolMessage`s, repeat. The engine adds the decision mapping, the confirmation check, the
ToolCall/ToolResult records, the time limit and (optionally) the SQLite decision log.

Run: `.venv/bin/python bench/engine.py`. Prints per-iteration microseconds and the ratio (target
<= 1.3x without the log); numbers are medians over interleaved rounds measured in this run.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool

from agentmap.agents.tools import LocalToolExecutor
from agentmap.contracts.engine import AgentEngineConfig, DecisionContext, DecisionType, ToolResult
from agentmap.llm.adapter import LLMAdapter
from agentmap.llm.decision_log import SQLiteDecisionLog
from agentmap.llm.engine import LLMAgentEngine

ROUNDS = 4  # tool-calling iterations per message (plus one final text reply)
MESSAGES = 100  # messages per timed batch
BATCHES = 7
CONSTITUTION = "You manage tasks."


class _FakeToolModel(BaseChatModel):
    """Calls `add_task` until it has seen ROUNDS tool results after the last user message."""

    @property
    def _llm_type(self) -> str:
        return "bench-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=list(tools), **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        seen = 0
        for message in reversed(messages):
            if isinstance(message, HumanMessage):
                break
            seen += isinstance(message, ToolMessage)
        if seen < ROUNDS:
            reply = AIMessage("", tool_calls=[{"name": "add_task", "args": {"title": f"t{seen}"}, "id": f"c{seen}"}])
        else:
            reply = AIMessage(f"Added {seen} tasks.")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return self._generate(messages, stop, None, **kw)


def add_task(title: str) -> str:
    """Add a task.

    Args:
        title: What to do.
    """
    return f"added {title}"


def list_tasks() -> list[str]:
    """List the tasks."""
    return []


TOOLS: list[BaseTool] = [StructuredTool.from_function(add_task), StructuredTool.from_function(list_tasks)]


class _DirectExecutor:
    """The thinnest `ToolExecutor`: calls the LangChain tool, as the hand-written loop does."""

    def __init__(self, tools: list[BaseTool]) -> None:
        self._tools = {t.name: t for t in tools}

    async def execute(self, tool_name: str, parameters: dict[str, Any], user_id: str) -> ToolResult:
        return ToolResult(success=True, data=await self._tools[tool_name].ainvoke(parameters))

    def get_available_tools(self) -> list[str]:
        return list(self._tools)

    def get_tool_schemas(self) -> list[BaseTool]:
        return list(self._tools.values())


async def hand_loop(model: BaseChatModel, message: str) -> str:
    """The baseline: a plain bind_tools loop."""
    tools = {t.name: t for t in TOOLS}
    bound = model.bind_tools(TOOLS)
    messages: list[BaseMessage] = [SystemMessage(CONSTITUTION), HumanMessage(message)]
    for _ in range(ROUNDS + 1):
        ai = await bound.ainvoke(messages)
        assert isinstance(ai, AIMessage)
        if not ai.tool_calls:
            return ai.text
        messages.append(ai)
        for call in ai.tool_calls:
            result = await tools[call["name"]].ainvoke(call["args"])
            messages.append(ToolMessage(content=str(result), tool_call_id=call["id"] or ""))
    raise RuntimeError("too many rounds")


def engine_runner(engine: LLMAgentEngine) -> Callable[[str], Awaitable[str]]:
    async def run(message: str) -> str:
        decision = await engine.process_message(DecisionContext(user_id="u", message=message, conversation_id="bench"))
        assert decision.decision_type is DecisionType.INVOKE_TOOL, decision
        return decision.response_text or ""

    return run


async def _batch(run: Callable[[str], Awaitable[str]]) -> float:
    started = time.perf_counter()
    for i in range(MESSAGES):
        await run(f"add tasks {i}")
    return (time.perf_counter() - started) / (MESSAGES * ROUNDS) * 1e6  # us per tool iteration


async def main() -> int:
    model = _FakeToolModel()
    config = AgentEngineConfig(max_iterations=ROUNDS + 1)

    def engine(executor: Any, log: SQLiteDecisionLog | None = None) -> LLMAgentEngine:
        adapter = LLMAdapter(model)
        return LLMAgentEngine.from_config(adapter, executor, CONSTITUTION, config, decision_log=log)

    with tempfile.TemporaryDirectory() as tmp, SQLiteDecisionLog(Path(tmp) / "bench.db") as log:
        runners: dict[str, Callable[[str], Awaitable[str]]] = {
            "hand-written bind_tools loop": lambda m: hand_loop(model, m),
            "LLMAgentEngine": engine_runner(engine(_DirectExecutor(TOOLS))),
            "LLMAgentEngine + LocalToolExecutor": engine_runner(engine(LocalToolExecutor(TOOLS))),
            "LLMAgentEngine + SQLite decision log": engine_runner(engine(_DirectExecutor(TOOLS), log)),
        }
        assert await runners["hand-written bind_tools loop"]("x") == await runners["LLMAgentEngine"]("x")
        for run in runners.values():  # warm up
            await _batch(run)
        samples: dict[str, list[float]] = {name: [] for name in runners}
        for _ in range(BATCHES):
            for name, run in runners.items():
                samples[name].append(await _batch(run))

    base = statistics.median(samples["hand-written bind_tools loop"])
    print(f"per tool-calling iteration ({ROUNDS} tool rounds per message, {MESSAGES} messages x {BATCHES} batches)")
    for name, values in samples.items():
        value = statistics.median(values)
        print(f"  {name:<38} {value:8.1f} us   {value / base:5.2f}x")
    ratio = statistics.median(samples["LLMAgentEngine"]) / base
    print(f"engine overhead ratio: {ratio:.2f}x (target <= 1.30x)")
    return 0 if ratio <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
