"""`agentmap batch status OUTPUT`: where a batch stands (its rows, provider jobs, calls, cost), and how the
`batch` command holds both forms: `agentmap batch FILE -i rows.csv -o out.csv` runs a batch, `agentmap batch
status OUTPUT` looks at one.

`batch` is a click group whose own parameters are the run's (`RunOrCommands`): its first word names a subcommand
(`status`) or it is the run's command line, parsed as a plain command's (options anywhere, one FILE[::GRAPH]).
A workflow file named like a subcommand is written `./status`.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from typer import _click
from typer.core import TyperGroup

from agentmap.cli._common import JsonOption
from agentmap.cli.render import dump_json, money, set_json_output

__all__ = ["RunOrCommands", "command_line", "register_status"]


class RunOrCommands(TyperGroup):
    """A group whose callback is a command of its own: run when the first word names no subcommand."""

    allow_interspersed_args = True  # the run's options go before or after its FILE
    allow_extra_args = False  # a word the run does not take is an error, as for a plain command

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        if args and args[0] in self.commands:
            _click.Command.parse_args(self, ctx, [])  # the run's parameters at their defaults (it does not run)
            ctx._protected_args, ctx.args = args[:1], args[1:]
            return ctx.args
        return _click.Command.parse_args(self, ctx, args)

    def get_params(self, ctx: _click.Context) -> list[_click.Parameter]:
        params = super().get_params(ctx)
        if ctx.command is not self:  # a subcommand's usage line: `agentmap batch status`, not `batch [FILE] status`
            return [param for param in params if param.param_type_name != "argument"]
        return params


def command_line(ctx: typer.Context, *, leave_out: tuple[str, ...] = ()) -> str:
    """The command line that ran `ctx`'s command, from the parameters given on it (`leave_out`: by name)."""
    words: list[str] = []
    for param in ctx.command.params:
        name = param.name or ""
        if name in leave_out or ctx.get_parameter_source(name) != _click.core.ParameterSource.COMMANDLINE:
            continue
        value = ctx.params.get(name)
        if param.param_type_name == "argument":
            words.append(str(value))
            continue
        flag = param.opts[0]
        if isinstance(value, bool):
            words += [flag] if value else list(getattr(param, "secondary_opts", ())[:1])
        elif isinstance(value, (list, tuple)):
            for item in value:
                words += [flag, str(item)]
        elif value is not None:
            words += [flag, str(value)]
    return " ".join(["agentmap", *(ctx.command_path.split()[1:] or ["batch"]), *map(shlex.quote, words)])


def _status(output: Path, checkpoint: str | None, live: bool, json_mode: bool) -> None:
    from agentmap._cli_api import batch_status

    found = batch_status(output, checkpoint, live=live)
    if json_mode:
        dump_json({**found.to_dict(), "collect": found.collect() if found.rows_waiting else None})
        return
    for line in _lines(found):
        sys.stdout.write(line + "\n")


def _lines(status: Any) -> Iterator[str]:
    """A `BatchStatus` as the command prints it."""

    state = "finished: the output table is written" if status.finished else "under way"
    yield f"batch {status.output}: {state}"
    yield (
        f"rows: {status.rows_done} done ({status.rows_succeeded} succeeded, {status.rows_failed} failed), "
        f"{status.rows_waiting} waiting for provider batch jobs"
    )
    if status.store is None:
        yield "provider batch jobs: none (the batch keeps no store: it ran without --llm-batch)"
        return
    yield (
        f"calls: {status.calls_in_jobs} in jobs waiting for answers, {status.calls_unplaced} queued in no job "
        f"(held by --budget, or not sent yet), {status.calls_answered} answered, {status.calls_failed} failed"
    )
    yield f"cost so far: {money(status.cost)} at the batch price (every model call of the batch: {money(status.spent)})"
    yield f"jobs ({len(status.jobs)}, in {status.store}):" if status.jobs else f"jobs: none yet (in {status.store})"
    for job in status.jobs:
        counts = ", ".join(f"{k} {v}" for k, v in job.counts.items()) or "-"
        live = f", now {job.live}" if job.live is not None else ""
        yield (
            f"  {job.id or '(being submitted)'}  {job.provider} {job.model}  {job.state}: {job.status}{live}  "
            f"calls {job.calls}: {job.answered} answered, {job.failed} failed, {job.waiting} waiting  "
            f"(provider: {counts})  {money(job.cost)}"
        )
    if status.rows_waiting:
        yield f"to collect: {status.collect()}"


def register_status(group: typer.Typer) -> None:
    """Add `agentmap batch status` to the `batch` group."""

    @group.command("status")
    def status(
        output: Annotated[
            Path, typer.Argument(metavar="OUTPUT", help="The batch's output table (its -o).", show_default=False)
        ],
        checkpoint: Annotated[
            str | None,
            typer.Option(
                "--checkpoint",
                metavar="FILE|URL",
                help="The checkpoint store the batch ran with (default: OUTPUT.llm-batch.db).",
                show_default=False,
            ),
        ] = None,
        live: Annotated[
            bool,
            typer.Option("--live", help="Also ask each open job's provider for its status now (a GET, nothing sent)."),
        ] = False,
        json_output: JsonOption = False,
    ) -> None:
        """Where a batch stands: rows done, waiting and failed, its provider batch jobs (id, provider, model, status,
        counts), calls queued and answered, the cost so far at the batch price, and the command that collects the
        rest. Reads the output, its .partial file and its checkpoint store; submits and bills nothing."""
        set_json_output(json_output)
        _status(output, checkpoint, live, json_output)
