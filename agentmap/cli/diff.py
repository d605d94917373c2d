"""`agentmap diff OLD NEW` / `agentmap diff --thread ID`: what an edit of a workflow does to the threads waiting.

OLD and NEW are workflow files (`file.csv`, `file.csv::Graph`) or revision ids of the checkpoint (any unique prefix
of at least 4 characters, as `agentmap threads` shows them). `--thread ID` compares the revision the thread runs
with its file as it is now, for that thread alone. Every change is listed, and for a thread waiting at each node of
OLD, whether moving it to NEW is `safe`, `needs-migration` (with the lines of the map that would do it) or `unsafe`
(why). Exit 0 when every move is safe, 1 when one needs a migration map, 7 when one is unsafe.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from agentmap.cli import _durable
from agentmap.cli._common import ConfigOption, JsonOption, load
from agentmap.cli.render import console, dump_json, set_json_output
from agentmap.errors import ConfigError, ErrorCode

__all__ = ["EXIT", "diff_command", "register"]

EXIT = {"safe": 0, "needs-migration": 1, "unsafe": 7}
"""The exit code of each verdict (the worst one found)."""


def diff_command(
    old: str | None,
    new: str | None,
    *,
    thread: str | None = None,
    checkpoint: str | None = None,
    migrate: str | None = None,
    json_output: bool = False,
    config: Path | None = None,
) -> int:
    """The `diff` command: returns 0 (every move safe), 1 (one needs a migration map) or 7 (one is unsafe)."""
    json_mode = json_output or not sys.stdout.isatty()
    set_json_output(json_mode)
    if thread is None and (old is None or new is None):
        raise ConfigError(
            "give two workflow files or revisions to compare, or --thread ID",
            code=ErrorCode.USAGE,
            hint="e.g. agentmap diff review.csv review_v2.csv, or agentmap diff --thread t1",
        )
    if thread is not None and (old is not None or new is not None):
        raise ConfigError(
            "--thread compares the thread's revision with its file as it is now: give no OLD or NEW with it",
            code=ErrorCode.USAGE,
        )
    from agentmap import CompileOptions
    from agentmap._cli_api import diff_workflows, read_migration

    settings = load(config, False)
    if thread is not None:
        _durable.need_store(checkpoint, thread)
    migration = read_migration(migrate) if migrate is not None else None
    options = CompileOptions.from_settings(settings)
    document = diff_workflows(old, new, thread=thread, checkpoint=checkpoint, migration=migration, options=options)
    code = EXIT[document["verdict"]]
    if json_mode:
        dump_json({**document, "exit_code": code})
    else:
        _print(document)
    return code


def _side(side: dict[str, Any]) -> str:
    revision = side.get("revision")
    at = f" at revision {revision[:12]}" if side["kind"] == "revision" and revision else ""
    now = f" (as it is now, revision {revision[:12]})" if side["kind"] == "file" and revision else ""
    return f"{side['file']}::{side['graph']}{at}{now}"


def _print(document: dict[str, Any]) -> None:
    from rich.markup import escape

    out = console()
    if "thread" in document:
        out.print(f"thread [bold]{escape(document['thread'])}[/]")
    out.print(f"old: {escape(_side(document['old']))}")
    out.print(f"new: {escape(_side(document['new']))}")
    changes = document["changes"]
    out.print(f"{len(changes)} change{'s' if len(changes) != 1 else ''}" + (":" if changes else ""))
    for change in changes:
        out.print(f"  {escape(change['text'])}")
    out.print("a thread waiting at:" if "thread" not in document else "moving it to the new revision:")
    colours = {"safe": "green", "needs-migration": "yellow", "unsafe": "red"}
    for verdict in document["threads"]:
        at = ", ".join(verdict["at"])
        out.print(f"  {escape(at)}: [{colours[verdict['verdict']]}]{verdict['verdict']}[/]")
        for reason in verdict["reasons"]:
            out.print(f"    {escape(reason)}")
        for line in verdict["map"]:
            out.print(f"    map: {escape(line)}")


def register(app: typer.Typer) -> None:
    """Add `agentmap diff`."""

    @app.command("diff")
    def diff(
        old: Annotated[
            str | None,
            typer.Argument(
                metavar="[OLD]",
                help="A workflow file (file.csv::Graph) or a revision id.",
                show_default=False,
            ),
        ] = None,
        new: Annotated[
            str | None,
            typer.Argument(
                metavar="[NEW]",
                help="A workflow file (file.csv::Graph) or a revision id.",
                show_default=False,
            ),
        ] = None,
        thread: Annotated[
            str | None,
            typer.Option(
                "--thread",
                metavar="ID",
                help="Compare the revision this thread runs with its workflow file as it is now.",
                show_default=False,
            ),
        ] = None,
        checkpoint: _durable.CheckpointOption = None,
        migrate: Annotated[
            str | None,
            typer.Option(
                "--migrate",
                metavar="MAP",
                help="Judge the moves with this migration map (CSV kind,old,new or YAML), as resume --migrate would.",
                show_default=False,
            ),
        ] = None,
        json_output: JsonOption = False,
        config: ConfigOption = None,
    ) -> None:
        """What an edit does: every change from OLD to NEW, and for a thread waiting at each node whether moving it
        is safe, needs a migration map (and its lines) or is unsafe (why). Exit 0 safe, 1 needs-migration, 7
        unsafe."""
        raise typer.Exit(
            diff_command(
                old, new, thread=thread, checkpoint=checkpoint, migrate=migrate, json_output=json_output, config=config
            )
        )
