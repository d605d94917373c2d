"""`agentmap threads [show ID]`: the saved runs of a checkpoint, and where one of them stands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentmap.cli import _durable, _resume
from agentmap.cli._common import ConfigOption, JsonOption, load
from agentmap.cli.render import cache_note, console, dump_json, money, set_json_output, shown_path

if TYPE_CHECKING:
    from agentmap import CompileOptions

__all__ = ["register"]


def _options(config: Path | None) -> CompileOptions:
    from agentmap import CompileOptions

    return CompileOptions.from_settings(load(config, False))


def _list(checkpoint: str | None, json_mode: bool, config: Path | None) -> None:
    from agentmap import ThreadInfo, threads
    from agentmap._cli_api import checkpoint_exists, checkpoint_target

    found: list[ThreadInfo] = threads(checkpoint, options=_options(config)) if checkpoint_exists(checkpoint) else []
    if json_mode:
        dump_json({"threads": [t.to_dict() for t in found]})
        return
    from rich.table import Table

    table = Table(title=f"threads in {checkpoint_target(checkpoint, create=False)}", title_justify="left")
    for column in ("thread", "workflow::graph", "status", "step", "revision", "updated"):
        table.add_column(column, no_wrap=column in ("thread", "status"))
    for t in found:
        updated = t.updated[:19].replace("T", " ")
        table.add_row(
            t.thread_id, shown_path(t.target), t.status, str(t.step), _revision(t.revision, t.behind), updated
        )
    console().print(table if found else "no threads saved yet (agentmap run FILE --thread ID saves one)")


def _revision(revision: str | None, behind: bool | None) -> str:
    """A thread's revision as listings show it: its first 8 characters, `behind` when the file moved on."""
    if revision is None:
        return "-"
    return revision[:8] + (" behind" if behind else "")


def _show(thread: str, checkpoint: str | None, json_mode: bool, config: Path | None, calls: bool = False) -> None:
    from agentmap import checkpointer
    from agentmap._cli_api import thread_history

    _durable.need_store(checkpoint, thread)
    saver = checkpointer(checkpoint)
    info, snapshots = thread_history(saver, thread, options=_options(config))
    if calls:
        _calls(saver, thread, json_mode)
        return
    history = [
        {
            "step": (s.metadata or {}).get("step"),
            "at": s.created_at,
            "next": list(s.next),
            "checkpoint_id": s.config["configurable"].get("checkpoint_id"),
            "revision": (s.metadata or {}).get("agentmap_revision"),
            **_moved(s.metadata or {}),
        }
        for s in reversed(snapshots)
    ]
    hint = _durable.resume_hint(thread, checkpoint)
    waiting = list(snapshots[0].interrupts) if snapshots and info.questions else []
    if waiting:  # the answer the node waits for, as `agentmap run` shows it (without one, resume refuses)
        hint = f"{hint} {_resume.answer_for(waiting)}"
    resumable = info.status in ("paused", "interrupted", "failed") and bool(info.next or info.questions)
    if json_mode:
        dump_json({**info.to_dict(), "history": history, "resume": hint if resumable else None})
        return
    from rich.markup import escape

    out = console()
    out.print(
        f"[bold]{escape(thread)}[/]: {escape(shown_path(info.target))}, [bold]{info.status}[/] at step {info.step}"
    )
    if info.revision:
        behind = " (the file has changed since: `agentmap diff --thread ID` says what that does)" if info.behind else ""
        out.print(f"revision: {info.revision[:12]}{escape(behind.replace('ID', thread))}")
    if info.next:
        out.print(f"next: {escape(', '.join(info.next))}")
    for question in info.questions:
        _resume.print_question(out, question)
    if info.error:
        out.print(f"[red]error[/]: {escape(info.error)}")
    for entry in history:
        moved = f"  moved from revision {str(entry['moved_from'] or '-')[:12]}" if "moved_from" in entry else ""
        out.print(
            f"  step {entry['step']:>3}  {str(entry['at'])[:19]}  {entry['checkpoint_id']}  "
            f"next: {', '.join(entry['next']) or '-'}{moved}"
        )
    if resumable:
        out.print(f"continue with: {escape(hint)}", soft_wrap=True)


def _moved(metadata: dict[str, Any]) -> dict[str, Any]:
    """The record of a checkpoint that moved the thread to another revision (`resume --latest`, `--migrate`)."""
    if "agentmap_moved_from" not in metadata:
        return {}
    return {"moved_from": metadata["agentmap_moved_from"], "migration": metadata.get("agentmap_migration") or []}


def _calls(saver: Any, thread: str, json_mode: bool) -> None:
    """The call journal of `thread`: each model and tool call, its node, status, duration, tokens and cost."""
    from agentmap._cli_api import journal_entries

    found = journal_entries(saver, thread)
    if json_mode:
        dump_json({"thread": thread, "calls": [e.to_dict() for e in found]})
        return
    from rich.table import Table

    table = Table(title=f"calls of thread {thread}", title_justify="left")
    for column in ("step", "node", "#", "kind", "name", "status", "ms", "tokens in/out", "cost"):
        table.add_column(column)
    for e in found:
        ms = "-" if e.duration_ms is None else f"{e.duration_ms:.1f}"
        tokens = "" if e.input_tokens is None else f"{e.input_tokens}/{e.output_tokens}"
        tokens += cache_note(e.cached_tokens, e.cache_write_tokens)
        cost = money(e.cost) if e.cost is not None else "-" if tokens else ""
        status = e.status + (" (cache hit)" if e.cache_hit else "")
        if e.replays:
            status += f" (replayed{f' {e.replays}x' if e.replays > 1 else ''})"
        table.add_row(str(e.step), e.node, str(e.call_index), e.kind, e.name, status, ms, tokens, cost)
    console().print(table if found else f"no calls journaled for thread {thread}")


def register(app: typer.Typer) -> None:
    """Add `agentmap threads` and `agentmap threads show`."""
    group = typer.Typer(
        help="The saved runs (threads) of a checkpoint: `agentmap threads`, `agentmap threads show ID`.",
        invoke_without_command=True,
        no_args_is_help=False,
        subcommand_metavar="[show THREAD]",  # not `COMMAND [ARGS]...`: without one, the threads are listed
    )

    @group.callback()
    def threads(
        ctx: typer.Context,
        checkpoint: _durable.CheckpointOption = None,
        json_output: JsonOption = False,
        config: ConfigOption = None,
    ) -> None:
        """List the threads: id, workflow::graph, status (running/paused/interrupted/failed/done), step, updated."""
        if ctx.invoked_subcommand is None:
            json_mode = json_output or not sys.stdout.isatty()
            set_json_output(json_mode)
            _list(checkpoint, json_mode, config)

    @group.command("show")
    def show(
        thread: Annotated[str, typer.Argument(metavar="THREAD", help="The thread id.")],
        checkpoint: _durable.CheckpointOption = None,
        json_output: JsonOption = False,
        config: ConfigOption = None,
        calls: Annotated[
            bool, typer.Option("--calls", help="List the call journal: each model and tool call the nodes made.")
        ] = False,
    ) -> None:
        """Where a thread stands: its status, the question it waits on, and its step history (`--calls`: the
        model and tool calls its nodes made)."""
        json_mode = json_output or not sys.stdout.isatty()
        set_json_output(json_mode)
        _show(thread, checkpoint, json_mode, config, calls)

    app.add_typer(group, name="threads")
