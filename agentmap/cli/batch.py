"""`agentmap batch FILE[::GRAPH] --input rows.csv --output results.csv`: one run per row of a table.

Rows are read from CSV, JSON Lines, Parquet or Excel and the results written in the output's format, in
input order. Finished rows are kept in `<output>.partial` as they finish, so running the same command
again continues a batch that was stopped. A progress bar on stderr in a terminal, a line now and then
otherwise; `--json` prints a summary on stdout. Exit 0 when every row succeeded, 1 when some failed.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

import agentmap
from agentmap.cli._batch_progress import BarProgress, LineProgress
from agentmap.cli._batch_report import report, report_failed, report_interrupted, report_waiting
from agentmap.cli._common import (
    BudgetOption,
    ConfigOption,
    DebugOption,
    JsonOption,
    NoCacheOption,
    WorkflowArgument,
    ensure_writable,
    load,
    missing_inputs_mode,
)
from agentmap.cli._common import split_target as _split_target
from agentmap.cli._observe import TraceContentOption, TraceOption, tracing_for
from agentmap.cli._process import collect_from_here, signal_handlers
from agentmap.errors import ConfigError, ErrorCode

__all__ = ["register"]


def _renames(pairs: list[str]) -> dict[str, str]:
    renames: dict[str, str] = {}
    for pair in pairs:
        column, sep, key = pair.partition("=")
        if not sep or not column.strip() or not key.strip():
            raise ConfigError(f"bad --map {pair!r}", code=ErrorCode.USAGE, hint="write --map column=state_key")
        renames[column.strip()] = key.strip()
    return renames


def _warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def _stop_workers(executor: str) -> None:
    """Stop the worker processes this command started (Ray, or a process pool's helpers), ignoring Ctrl-C.

    The results are written already; the command waits for its workers so that none outlives it. Only a batch on
    processes starts a fork server: on other executors one found running belongs to the program that runs this
    command in its own process, with the workers it forked.
    """
    if executor == "process":
        from agentmap._cli_api import stop_worker_processes

        stop_worker_processes()
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        with signal_handlers({signal.SIGINT: signal.SIG_IGN}):
            ray.shutdown()


def batch_command(
    target: str | None,
    *,
    input_path: Path,
    output: Path,
    outputs: str | None,
    renames: list[str],
    json_cells: bool,
    id_column: str | None,
    sheet: str | None,
    executor: str,
    concurrency: int,
    workers: int | None,
    chunk_size: int,
    ray_address: str | None,
    redo_failed: bool,
    rate_limit: str | None,
    checkpoint: str | None,
    json_output: bool,
    config: Path | None,
    debug: bool,
    trace: str | None = None,
    trace_content: bool = False,
    lenient: bool = False,
    budget: float | None = None,
    no_cache: bool = False,
    csv_formulas: str = "keep",
    latest: bool = False,
    missing_inputs: str | None = None,
    llm_batch: dict[str, Any] | None = None,
) -> int:
    """The `batch` command; returns the exit code."""
    mode = missing_inputs_mode(missing_inputs)
    settings = load(config, debug)
    tracing = tracing_for(settings, trace, trace_content)  # OpenTelemetry is imported only when tracing is on
    if not debug:  # a failing row's error is in its output row; one log line per failure would bury the progress
        logging.getLogger("agentmap").setLevel(logging.CRITICAL)
    path, graph = _split_target(target, settings)
    if output.resolve() == input_path.resolve():
        raise ConfigError("--output must not be the --input file", code=ErrorCode.USAGE, hint="name another file")
    from agentmap._cli_api import table_format

    table_format(input_path, "input table")
    table_format(output, "output table")
    ensure_writable(output, "output table")
    from agentmap._cli_api import BatchInterrupted, BatchOverBudget, executor_named

    progress: Any = BarProgress() if sys.stderr.isatty() else LineProgress()
    collect_from_here()  # start-up's objects live until exit; the rows' garbage is collected as usual
    with signal_handlers({signal.SIGINT: signal.default_int_handler}):  # even when started with it ignored
        extra = {"file": str(path), "input": str(input_path), "executor": executor}
        try:
            result = agentmap.batch(
                f"{path}::{graph}" if graph else path,
                input_path,
                output=output,
                executor=executor_named(executor),
                concurrency=concurrency,
                workers=workers,
                outputs=[o.strip() for o in outputs.split(",") if o.strip()] if outputs else None,
                id_column=id_column,
                rename=_renames(renames),
                json_cells=json_cells,
                redo_failed=redo_failed,
                checkpoint=checkpoint,
                rate_limit=rate_limit,
                chunk_size=chunk_size,
                ray_address=ray_address,
                sheet=sheet,
                keep_rows=False,
                progress=progress,
                tracing=tracing,
                lenient=lenient,
                on_warning=_warn,
                budget=budget,
                cache=not no_cache,
                csv_formulas=csv_formulas,
                latest=latest,
                missing_inputs=mode,
                **_llm_keywords(llm_batch),
                **settings.compile_options(),
                **settings.policy_options(),
            )
        except BatchOverBudget as over:
            report(over.result, json_output, {**extra, "exit_code": over.exit_code})
            report_waiting(over.result, output, checkpoint)
            raise
        except BatchInterrupted as stop:
            report_interrupted(stop.result, output, json_output, {**extra, "exit_code": 130})
            sys.stdout.flush()
            sys.stderr.flush()
            _stop_workers(executor)  # os._exit skips the exit hooks that would stop them
            if tracing is not None:  # and the exit hook that sends the spans still buffered
                from agentmap._cli_api import flush_traces

                flush_traces()
            os._exit(130)  # rows still running in threads cannot be stopped; their results are not recorded
        _stop_workers(executor)
        code = 0 if result.success else 1
        report(result, json_output, {**extra, "exit_code": code})
        report_waiting(result, output, checkpoint)
        report_failed(result, output)
        return code


def _llm_keywords(options: dict[str, Any] | None) -> dict[str, Any]:
    """`agentmap.batch`'s `--llm-batch` keywords, its progress lines printed on stderr."""
    if not options or not options.get("llm_batch"):
        return {"detach": True} if options and options.get("detach") else {}

    def tell(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    return {**options, "on_llm_progress": tell}


def register(app: typer.Typer) -> None:
    """Add `agentmap batch` and `agentmap batch status` (agentmap/cli/batch_status.py)."""
    from agentmap.cli.batch_status import RunOrCommands, command_line, register_status

    group = typer.Typer(
        cls=RunOrCommands,
        invoke_without_command=True,
        subcommand_metavar="",  # its one subcommand is listed under Commands: `agentmap batch status OUTPUT`
        help="Run a workflow once per row of a table; resumable, in input order, on threads, processes or Ray "
        "(`agentmap batch status OUTPUT`: where a batch stands).",
    )

    @group.callback()
    def batch(
        ctx: typer.Context,
        target: WorkflowArgument = None,
        input_path: Annotated[
            Path,
            typer.Option(
                "--input", "-i", metavar="FILE", help="The rows: .csv, .jsonl, .parquet or .xlsx.", show_default=False
            ),
        ] = Path(),
        output: Annotated[
            Path,
            typer.Option(
                "--output",
                "-o",
                metavar="FILE",
                help="The results, in the format of its extension.",
                show_default=False,
            ),
        ] = Path(),
        outputs: Annotated[
            str | None,
            typer.Option("--outputs", metavar="KEY,...", help="State keys to write (default: every Output_Field)."),
        ] = None,
        renames: Annotated[
            list[str] | None,
            typer.Option("--map", metavar="COLUMN=KEY", help="Rename a column to a state key: col=key (repeatable)."),
        ] = None,
        json_cells: Annotated[
            bool, typer.Option("--json-cells", help="Parse cells holding JSON objects/arrays.")
        ] = False,
        id_column: Annotated[
            str | None,
            typer.Option(
                "--id-column", metavar="COLUMN", help="The column of row ids (default: row number + row hash)."
            ),
        ] = None,
        sheet: Annotated[
            str | None, typer.Option("--sheet", metavar="SHEET", help="The Excel sheet (default: the first).")
        ] = None,
        executor: Annotated[
            str,
            typer.Option(
                "--executor", "-e", metavar="[thread|async|process|ray]", help="thread, async, process or ray."
            ),
        ] = "thread",
        concurrency: Annotated[int, typer.Option("--concurrency", help="Rows in flight (thread, async).")] = 8,
        workers: Annotated[
            int | None, typer.Option("--workers", help="Processes or Ray workers (default: the CPUs).")
        ] = None,
        chunk_size: Annotated[int, typer.Option("--chunk-size", help="Rows per message to a worker.")] = 16,
        ray_address: Annotated[
            str | None, typer.Option("--ray-address", help="The Ray cluster (default: a local Ray).")
        ] = None,
        redo_failed: Annotated[bool, typer.Option("--redo-failed", help="Rerun the rows that failed before.")] = False,
        lenient: Annotated[
            bool,
            typer.Option("--lenient", help="Run input rows that do not fit the header as they stand, with a warning."),
        ] = False,
        missing_inputs: Annotated[
            str | None,
            typer.Option(
                "--missing-inputs",
                metavar="[error|warn|ignore]",
                help="When the input has no column for an input no node writes: error (refuse the batch before any "
                "row runs, exit 2; the default), warn (say so once and run the rows, the nodes reading None) or "
                "ignore.",
                show_default=False,
            ),
        ] = None,
        rate_limit: Annotated[
            str | None,
            typer.Option("--rate-limit", metavar="RATE", help="LLM requests per model provider, e.g. 5/s or 300/min."),
        ] = None,
        checkpoint: Annotated[
            str | None,
            typer.Option(
                "--checkpoint",
                metavar="FILE|URL",
                help="Save each row as a thread named by its id in this SQLite file or postgresql:// database; "
                "running again continues unfinished rows, on the revision of the workflow they started on.",
            ),
        ] = None,
        latest: Annotated[
            bool,
            typer.Option(
                "--latest",
                help="With --checkpoint: move unfinished rows started on an earlier revision to the workflow as it "
                "is now before they go on (when that is safe; a row whose move is not fails saying why).",
            ),
        ] = False,
        trace: TraceOption = None,
        trace_content: TraceContentOption = False,
        json_output: JsonOption = False,
        config: ConfigOption = None,
        debug: DebugOption = False,
        budget: BudgetOption = None,
        no_cache: NoCacheOption = False,
        csv_formulas: Annotated[
            str,
            typer.Option(
                "--csv-formulas",
                metavar="[keep|escape]",
                help="Output cells a spreadsheet would run as formulas (=HYPERLINK(...)) in a .csv output: keep "
                "them as they are, with a warning, or escape them with a ' before them.",
            ),
        ] = "keep",
        llm_batch: Annotated[
            bool,
            typer.Option(
                "--llm-batch",
                help="Send the rows' OpenAI and Anthropic model calls as provider batch jobs, at the batch price; "
                "rows wait for their answers, round by round (csv_specs/batch.md).",
            ),
        ] = False,
        llm_batch_retry: Annotated[
            str,
            typer.Option(
                "--llm-batch-retry",
                metavar="[fail|sync]",
                help="A request the provider failed: the row's error, or made again as a normal call.",
            ),
        ] = "fail",
        llm_batch_timeout: Annotated[
            float,
            typer.Option("--llm-batch-timeout", metavar="SECONDS", help="Cancel a job unfinished after this long."),
        ] = 24 * 3600.0,
        llm_batch_poll: Annotated[
            float,
            typer.Option("--llm-batch-poll", metavar="SECONDS", help="Seconds between two looks at the open jobs."),
        ] = 30.0,
        detach: Annotated[
            bool,
            typer.Option("--detach", help="With --llm-batch: exit once the jobs are submitted; run again to collect."),
        ] = False,
    ) -> None:
        """Run a workflow once per row of a table; resumable, in input order, on threads, processes or Ray."""
        if ctx.invoked_subcommand is not None:
            return
        for name, value in (("--input", input_path), ("--output", output)):
            if value == Path():
                raise ConfigError(
                    f"{name} is required",
                    code=ErrorCode.USAGE,
                    hint="e.g. agentmap batch flow.csv -i rows.csv -o results.csv",
                )
        code = batch_command(
            target,
            input_path=input_path,
            output=output,
            outputs=outputs,
            renames=renames or [],
            json_cells=json_cells,
            id_column=id_column,
            sheet=sheet,
            executor=executor,
            concurrency=concurrency,
            workers=workers,
            chunk_size=chunk_size,
            ray_address=ray_address,
            redo_failed=redo_failed,
            rate_limit=rate_limit,
            checkpoint=checkpoint,
            latest=latest,
            json_output=json_output,
            config=config,
            debug=debug,
            trace=trace,
            trace_content=trace_content,
            lenient=lenient,
            budget=budget,
            no_cache=no_cache,
            csv_formulas=csv_formulas,
            missing_inputs=missing_inputs,
            llm_batch={
                "llm_batch": llm_batch,
                "llm_batch_retry": llm_batch_retry,
                "llm_batch_timeout": llm_batch_timeout,
                "llm_batch_poll": llm_batch_poll,
                "detach": detach,
                "llm_batch_command": command_line(ctx, leave_out=("detach",)) if llm_batch else None,
            },
        )
        raise typer.Exit(code)

    register_status(group)
    app.add_typer(group, name="batch")
