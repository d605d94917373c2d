"""Persistent runs for `agentmap run`: `--checkpoint`, `--thread`, `--resume`, and showing a paused run."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError, ErrorCode

if TYPE_CHECKING:
    from agentmap import RunResult

__all__ = [
    "ANSWER_EXAMPLE",
    "answer_for",
    "check_persistence",
    "example_answer",
    "print_pause",
    "print_question",
    "questions",
]

ANSWER_EXAMPLE = "'\"your answer\"'"
_RESUME_EXAMPLE = f"--resume {ANSWER_EXAMPLE}"


def check_persistence(thread: str | None, resume: str | None, state: str | None, state_file: Path | None) -> Any:
    """The `--resume` value (or None), after the options' combinations are checked."""
    if resume is None:
        return None
    if thread is None:
        raise ConfigError(
            "--resume continues a paused run: give the --thread it paused in",
            code=ErrorCode.USAGE,
            hint=f"e.g. agentmap resume 1a2b3c {ANSWER_EXAMPLE} (a paused run prints its command)",
        )
    if state is not None or state_file is not None:
        raise ConfigError(
            "--resume continues a paused run from its saved state: drop --state/--state-file", code=ErrorCode.USAGE
        )
    from agentmap.cli._common import json_value

    hint = f"quote a text answer as a JSON string: {_RESUME_EXAMPLE}, or use agentmap resume THREAD TEXT"
    return json_value(resume, "--resume", code=ErrorCode.USAGE, hint=hint)


def example_answer(result: RunResult) -> str:
    """The answer a paused run's hint shows: as a person would type it for one question, JSON for several."""
    return answer_for(result.interrupts)


def answer_for(interrupts: Sequence[Any]) -> str:
    """The answer to show after `agentmap resume ID` for these waiting interrupts (LangGraph's `Interrupt`s):
    as a person would type it for one question, a JSON object by interrupt id for several."""
    from agentmap._cli_api import example_answer as example_for

    if len(interrupts) == 1:
        return example_for(getattr(interrupts[0], "value", interrupts[0]))

    return shlex.quote(json.dumps({getattr(i, "id", "?"): "your answer" for i in interrupts}))


def questions(result: RunResult) -> list[Any]:
    return [getattr(i, "value", i) for i in result.interrupts]


def print_question(out: Any, value: Any) -> None:
    """A paused node's question on the terminal: `? node: question`, then a choice's options, numbered (an answer
    may be the option or its number)."""
    from rich.markup import escape

    question = value.get("question", value) if isinstance(value, dict) else value
    node = f"{value['node']}: " if isinstance(value, dict) and "node" in value else ""
    out.print(f"[bold yellow]?[/] {escape(node)}{escape(str(question))}")
    options = value.get("options") if isinstance(value, dict) else None
    for number, option in enumerate(options if isinstance(options, list) else (), start=1):
        out.print(f"    {number}. {escape(str(option))}", highlight=False)


def print_pause(result: RunResult, thread: str | None, resume_with: str) -> None:
    from rich.markup import escape

    from agentmap.cli.render import console

    out = console()
    for value in questions(result):
        print_question(out, value)
    if result.interrupts:
        out.print("Resume with your answer:")
        out.print(f"  {escape(resume_with)}", soft_wrap=True)
    elif thread is not None:
        out.print(f"[dim]thread {escape(thread)}[/]")
