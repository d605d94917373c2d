"""Durable runs on the command line: the checkpoint and thread options, and the checks `run` and `resume` share."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentmap.cli._common import json_value, value_error
from agentmap.errors import ConfigError, ErrorCode

if TYPE_CHECKING:
    from agentmap._cli_api import Durability, Thread

__all__ = [
    "CheckpointOption",
    "DurabilityOption",
    "check_durability",
    "durability_mode",
    "need_store",
    "parse_answer",
    "print_moved",
    "resume_hint",
]

CheckpointOption = Annotated[
    str | None,
    typer.Option(
        "--checkpoint",
        metavar="FILE|URL",
        help="Where runs are saved: a SQLite file (runs.db) or a postgresql:// URL "
        "(default: $AGENTMAP_CHECKPOINT, else .agentmap/runs.db).",
        show_default=False,
    ),
]
DurabilityOption = Annotated[
    str | None,
    typer.Option(
        "--durability",
        metavar="[sync|async|exit]",
        help="When steps are saved: sync (before the next step starts), async (while it runs; the default), "
        "or exit (only when the run ends).",
        show_default=False,
    ),
]

_MODES: tuple[Durability, ...] = ("sync", "async", "exit")


def durability_mode(value: str | None) -> Durability | None:
    """`--durability`'s mode, or None when not given; a value LangGraph does not know is a usage error."""
    if value is None:
        return None
    for mode in _MODES:
        if value == mode:
            return mode
    raise ConfigError(f"--durability must be sync, async or exit, not {value!r}", code=ErrorCode.USAGE)


def check_durability(value: str | None) -> dict[str, Any]:
    """`{"durability": value}` for `invoke`, or `{}`; a value LangGraph does not know is a usage error."""
    mode = durability_mode(value)
    return {} if mode is None else {"durability": mode}


def parse_answer(answer: str | None, data: str | None) -> Any:
    """The answer to resume with: `--data` (any JSON value), or ANSWER.

    ANSWER is taken as typed (`yes`, `2`, `Paris`), so a shell needs no JSON quoting; one that starts like a
    JSON object, list or string (`{`, `[`, `"`) is read as JSON when it parses.
    """
    if answer is not None and data is not None:
        raise ConfigError("give the answer once: as ANSWER or as --data, not both", code=ErrorCode.USAGE)
    if data is not None:
        hint = 'e.g. --data \'{"approved": true, "note": "ok"}\', or give a text answer as ANSWER'
        return json_value(data, "--data", code=ErrorCode.USAGE, hint=hint)
    if answer is None:
        return None
    from agentmap._cli_api import typed_answer, value_problem

    value = typed_answer(answer)  # words as typed: `agentmap resume t1 approve`, `... 2`, `... true`; or JSON
    problem = value_problem(value)  # a lone surrogate (bytes that are not UTF-8), NaN, an integer beyond 64 bits
    if problem is not None:
        raise value_error(problem, "ANSWER", code=ErrorCode.USAGE)
    return value


def need_store(checkpoint: str | None, thread: str) -> None:
    """Refuse to look for `thread` in a SQLite checkpoint file that does not exist (rather than make one).

    Raises:
        ConfigError: The file is missing (`unknown-thread`).
    """
    from agentmap._cli_api import checkpoint_exists, checkpoint_target

    if not checkpoint_exists(checkpoint):
        raise ConfigError(
            f"no thread {thread!r}: there is no checkpoint file {checkpoint_target(checkpoint, create=False)} here",
            code=ErrorCode.UNKNOWN_THREAD,
            hint="run from the folder the run started in, or pass the --checkpoint it used",
        )


def resume_hint(thread: str, checkpoint: str | None) -> str:
    """The command that resumes `thread` (naming the checkpoint only when it is not the default)."""
    where = f" --checkpoint {shlex.quote(checkpoint)}" if checkpoint else ""
    return f"agentmap resume {shlex.quote(thread)}{where}"


def print_moved(thread: Thread, checkpoint: str | None, json_mode: bool) -> None:
    """resume --latest / --migrate without an answer: the thread moved, and the question it asks again."""
    from agentmap._cli_api import example_answer

    questions = [i.value for i in thread.questions()]
    revision = thread.app.revision
    hint = resume_hint(thread.thread_id, checkpoint)
    resume_with = f"{hint} {example_answer(questions[0])}" if len(questions) == 1 else f"{hint} --data JSON"
    if json_mode:
        from agentmap.cli.render import dump_json

        dump_json(
            {
                "thread": thread.thread_id,
                "status": "paused",
                "moved": True,
                "revision": revision.id if revision else None,
                "interrupts": questions,
                "resume": resume_with,
            }
        )
        return
    from rich.markup import escape

    from agentmap.cli.render import console

    out = console()
    out.print(f"thread {escape(thread.thread_id)} moved to revision {revision.short if revision else '?'}; it asks:")
    for value in questions:
        question = value.get("question", value) if isinstance(value, dict) else value
        node = f"{value['node']}: " if isinstance(value, dict) and "node" in value else ""
        out.print(f"[bold yellow]?[/] {escape(node)}{escape(str(question))}")
    out.print("Resume with your answer:")
    out.print(f"  {escape(resume_with)}", soft_wrap=True)
