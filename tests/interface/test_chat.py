"""`agentmap chat` / `agentmap ask` as functions: history kept across turns, JSON output, session logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentmap.interface.chat import ask, chat_loop, resolve_agent
from agentmap.interface.history import parse_chat_history
from agentmap.interface.logs import read_log


async def remembering_agent(prompt: str, chat_history: str | None = None, **_: Any) -> dict[str, Any]:
    if prompt == "fail":
        raise ValueError("no thanks")
    earlier = [text for role, text in parse_chat_history(chat_history) if role == "user"]
    return {
        "content": f"{prompt} (earlier: {', '.join(earlier) or 'nothing'})",
        "response_time_secs": 0.0,
        "traces": [],
    }


async def test_chat_keeps_history_until_exit(tmp_path: Path) -> None:
    lines = iter(["hello", "", "fail", "again", "/exit", "never read"])
    shown: list[str] = []
    log = await chat_loop(remembering_agent, lambda _: next(lines), shown.append, log_path=tmp_path / "c.log")
    assert shown == [
        "hello (earlier: nothing)",
        "Error: the agent failed (ValueError: no thanks).",
        "again (earlier: hello, fail)",
    ]
    assert log.metadata.stop_reason == "user_exit"
    assert read_log(tmp_path / "c.log") == log
    assert [t.role for t in log.turns] == ["user", "assistant"] * 3


async def test_chat_ends_at_end_of_input_or_max_turns() -> None:
    def eof(_: str) -> str:
        raise EOFError

    assert (await chat_loop(remembering_agent, eof, print)).turns == ()
    log = await chat_loop(remembering_agent, lambda _: "again", lambda _: None, max_turns=2)
    assert log.metadata.stop_reason == "max_turns"
    assert len(log.turns) == 4


async def test_ask_prints_the_reply_or_the_json(tmp_path: Path) -> None:
    assert await ask(remembering_agent, "hi") == "hi (earlier: nothing)"
    data = json.loads(await ask(remembering_agent, "hi", as_json=True))
    assert set(data) == {"content", "response_time_secs", "traces"}


async def test_resolve_agent_for_a_workflow_file(tmp_path: Path) -> None:
    path = tmp_path / "echo.csv"
    path.write_text(
        "GraphName,Node,AgentType,Prompt,Input_Fields,Output_Field\n"
        "Echo,Reply,template,You said {prompt},prompt,reply\n",
        encoding="utf-8",
    )
    agent = resolve_agent(f"{path}::Echo")
    assert await ask(agent, "hi") == "You said hi"
