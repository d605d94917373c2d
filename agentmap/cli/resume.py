"""`agentmap resume THREAD [ANSWER]`: continue a saved run where it stopped.

The thread remembers its workflow file and graph, so no FILE is needed. An interrupted run (a crash,
SIGTERM, Ctrl-C) continues from its last completed step; a paused one gets ANSWER (JSON, or plain text)
or `--data JSON`, checked against the node's question before anything runs. The thread runs the revision
it started on, whatever the file holds now; `--latest` moves it to the file as it is now when that is safe,
`--migrate MAP` with a migration map when it is not (csv_specs/versions.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agentmap.cli import _durable
from agentmap.cli._common import (
    BudgetOption,
    ConfigOption,
    DebugOption,
    JsonOption,
    NoCacheOption,
    RecursionLimitOption,
    StreamOption,
    load,
)
from agentmap.cli.render import set_json_output

__all__ = ["register", "resume_thread"]


def resume_thread(
    thread: str,
    answer: str | None = None,
    *,
    data: str | None = None,
    checkpoint: str | None = None,
    force: bool = False,
    latest: bool = False,
    migrate: str | None = None,
    from_checkpoint: str | None = None,
    durability: str | None = None,
    json_output: bool = False,
    config: Path | None = None,
    debug: bool = False,
    stream: bool | None = None,
    budget: float | None = None,
    no_cache: bool = False,
    recursion_limit: int | None = None,
) -> int:
    """The `resume` command: returns the exit code, as `agentmap run` does."""
    json_mode = json_output or not sys.stdout.isatty()
    set_json_output(json_mode)
    value = _durable.parse_answer(answer, data)
    invoke_options = _durable.check_durability(durability)
    settings = load(config, debug)

    from agentmap import CompileOptions, checkpointer
    from agentmap._cli_api import open_thread, read_migration
    from agentmap.cli._execute import execute

    _durable.need_store(checkpoint, thread)
    migration = read_migration(migrate) if migrate is not None else None
    options = CompileOptions.from_settings(settings)
    found = open_thread(
        checkpointer(checkpoint),
        thread,
        checkpoint_id=from_checkpoint,
        force=force,
        latest=latest,
        migration=migration,
        options=options,
    )
    if (latest or migration is not None) and value is None and found.questions():
        _durable.print_moved(found, checkpoint, json_mode)  # moved, and asking again: the answer comes next
        return 0
    run_config = dict(found.config())
    if recursion_limit is not None:
        run_config["recursion_limit"] = recursion_limit
    return execute(
        found.app,
        found.run_input(value),
        run_config,
        json_mode=json_mode,
        policy=settings.execution.success_policy,
        checkpoint=checkpoint,
        stream=stream,
        budget=budget,
        no_cache=no_cache,
        **invoke_options,
    )


def register(app: typer.Typer) -> None:
    """Add `agentmap resume`."""

    @app.command("resume")
    def resume(
        thread: Annotated[str, typer.Argument(metavar="THREAD", help="The thread id the run was saved under.")],
        answer: Annotated[
            str | None,
            typer.Argument(
                metavar="[ANSWER]",
                help="The answer to a paused node's question: JSON, or plain text (`approve`).",
                show_default=False,
            ),
        ] = None,
        data: Annotated[
            str | None, typer.Option("--data", metavar="JSON", help="The answer as a JSON value.", show_default=False)
        ] = None,
        checkpoint: _durable.CheckpointOption = None,
        latest: Annotated[
            bool,
            typer.Option(
                "--latest",
                help="Move the thread to the workflow file as it is now, then continue (refused unless safe: "
                "`agentmap diff --thread ID` tells).",
            ),
        ] = False,
        migrate: Annotated[
            str | None,
            typer.Option(
                "--migrate",
                metavar="MAP",
                help="Move the thread to the file as it is now with this migration map (CSV kind,old,new or YAML: "
                "old node -> new node, old key -> new key, defaults for new keys), then continue.",
                show_default=False,
            ),
        ] = None,
        force: Annotated[
            bool,
            typer.Option(
                "--force",
                help="A thread saved before revisions were recorded: resume it on its changed file anyway "
                "(prefer --latest, which checks the edit and records the move).",
            ),
        ] = False,
        from_checkpoint: Annotated[
            str | None,
            typer.Option(
                "--from-checkpoint",
                metavar="ID",
                help="Continue from this saved checkpoint of the thread (the last good one a corrupt-checkpoint "
                "error names) instead of its latest.",
                show_default=False,
            ),
        ] = None,
        durability: _durable.DurabilityOption = None,
        json_output: JsonOption = False,
        stream: StreamOption = None,
        config: ConfigOption = None,
        debug: DebugOption = False,
        budget: BudgetOption = None,
        no_cache: NoCacheOption = False,
        recursion_limit: RecursionLimitOption = None,
    ) -> None:
        """Continue a saved run: after a crash or a stop, or with the answer a paused node waits for."""
        raise typer.Exit(
            resume_thread(
                thread,
                answer,
                data=data,
                checkpoint=checkpoint,
                force=force,
                latest=latest,
                migrate=migrate,
                from_checkpoint=from_checkpoint,
                durability=durability,
                json_output=json_output,
                config=config,
                debug=debug,
                stream=stream,
                budget=budget,
                no_cache=no_cache,
                recursion_limit=recursion_limit,
            )
        )
