"""`agentmap.batch`: one run of a workflow per row of a table, resumable, on threads, processes or Ray."""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentmap.agents.costs import Meter
from agentmap.batch._input_scan import Finished, RowSource, check_columns, row_options, scan
from agentmap.batch._llm_rounds import Tell, run_rounds, say_synchronous
from agentmap.batch._options import BatchOptions, checked_budget, llm_batch_options, row_store, with_model_limits
from agentmap.batch._recording import Recorder
from agentmap.batch._tracing import BatchSpan, shippable_options
from agentmap.batch.executors import Executor, default_workers, execute, executor_named
from agentmap.batch.results import BatchInterrupted, BatchOverBudget, BatchResult, Progress
from agentmap.batch.resume import PartialFile, partial_path
from agentmap.batch.rows import Job, RowResult, RowRunner, Shaper, WorkflowRecipe, output_fields
from agentmap.batch.status import default_store, status_command
from agentmap.batch.tables import Warn, read_rows
from agentmap.batch.writers import check_formulas
from agentmap.errors import ConfigError, ErrorCode
from agentmap.runtime.options import CompileOptions

__all__ = ["BatchOptions", "batch", "run_batch"]

_logger = logging.getLogger("agentmap.batch")


def _row_source(rows: Any, sheet: str | None, warn: Warn | None, note: Warn) -> tuple[RowSource, str]:
    if isinstance(rows, str | Path):
        path = Path(rows)
        return RowSource(lambda: read_rows(path, sheet=sheet, warn=warn, note=note)), str(path)
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):  # a pandas DataFrame
        records = rows.to_dict("records")
        return RowSource(lambda: iter(records), held=records), "the DataFrame"
    listed = rows if isinstance(rows, Sequence) else list(rows)
    return RowSource(lambda: iter(listed), held=listed), "the rows"


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=2)


def batch(
    source: str | Path,
    rows: Iterable[Mapping[str, Any]] | str | Path | Any,
    *,
    output: str | Path | None = None,
    executor: Executor = "thread",
    concurrency: int = 8,
    workers: int | None = None,
    on_result: Callable[[RowResult], None] | None = None,
    outputs: Sequence[str] | None = None,
    id_column: str | None = None,
    rename: Mapping[str, str] | None = None,
    json_cells: bool = False,
    redo_failed: bool = False,
    checkpoint: str | Path | None = None,
    rate_limit: str | float | None = None,
    chunk_size: int = 16,
    ray_address: str | None = None,
    sheet: str | None = None,
    keep_rows: bool = True,
    progress: Progress | None = None,
    lenient: bool = False,
    on_warning: Warn | None = None,
    budget: float | None = None,
    cache: bool = True,
    csv_formulas: str = "keep",
    latest: bool = False,
    llm_batch: bool = False,
    llm_batch_retry: str = "fail",
    llm_batch_timeout: float = 24 * 3600.0,
    llm_batch_poll: float = 30.0,
    detach: bool = False,
    on_llm_progress: Callable[[str], None] | None = None,
    llm_batch_command: str | None = None,
    **compile_options: Any,
) -> BatchResult:
    """Run a workflow once per row: `agentmap.batch("flow.csv", [{"name": "Ada"}, {"name": "Grace"}])`.

    A failing row never stops the batch: its error is in its `RowResult`. With `output`, finished rows are
    appended to `<output>.partial` as they finish (in blocks: each within 0.2 s of the batch taking it,
    csv_specs/batch.md "Resuming") and the output table is written in input order at the end; calling again with
    the same output skips rows already done (`redo_failed` reruns the failures).

    Args:
        source: The workflow file (`flow.csv` or `flow.csv::Graph`).
        rows: A list of dicts, a pandas DataFrame, or the path of a .csv/.jsonl/.parquet/.xlsx table.
        output: An output table (.csv, .jsonl, .parquet, .xlsx) to write, resumably.
        executor: `thread` (default), `async`, `process` or `ray`.
        concurrency: Rows in flight at once with the thread and async executors.
        workers: Processes or Ray workers (default: the CPUs available).
        on_result: Called with each `RowResult` as its row finishes (in the calling thread; with `output`, once the
            row is written to the `.partial` file).
        outputs: The state keys to report (default: every key the workflow's nodes write).
        id_column: The column holding each row's id (default: the row number plus a hash of the row).
        rename: Column -> state key renames.
        json_cells: Parse text cells holding JSON objects or arrays.
        redo_failed: Rerun the rows an earlier run of this batch recorded as failed (with `checkpoint`, also a row
            whose thread finished failing but which the output does not hold: without it, such a row takes that
            run's result).
        checkpoint: A SQLite file or a `postgresql://` URL: each row runs as a thread named by its id there, and
            running the batch again continues each unfinished row (every executor; with Ray on another machine, a
            PostgreSQL URL), on the revision of the workflow it started on, whatever the file holds now (new rows
            run the file as it is: `BatchResult.earlier` counts the rows continued on earlier revisions).
        rate_limit: LLM requests per second per model provider (`5/s`, `300/min`), shared by the whole batch.
        chunk_size: Rows sent to a worker process or Ray worker at a time.
        ray_address: The Ray cluster to use (default: start a local one).
        sheet: The Excel sheet to read (default: the first).
        keep_rows: Keep every `RowResult` in `BatchResult.rows` (False for tables larger than memory).
        progress: Told the counts and each result (the command line's progress bar).
        lenient: Run rows of an input table that do not fit its header (too few or too many cells, a quote left
            open) as they stand, with a warning each, instead of refusing the table.
        on_warning: Told each such warning once, (with `missing_inputs="warn"`) the one warning of a table whose
            columns lack an input no node writes, and each quoted CSV cell whose lines each read as a row (default:
            `warnings.warn`).
        budget: What this call may spend on model calls, in USD: rows start only while the batch has spent less,
            and a model call that would pass it is not made (csv_specs/batch.md, "Cost and budget").
        cache: False: every model call goes to the model, even where an LLM node's cache holds the reply
            (`--no-cache`; csv_specs/llm.md, "Cache").
        csv_formulas: A value of a CSV output that a spreadsheet would run as a formula (`=HYPERLINK(...)`):
            `keep` writes it as it is and warns of its cells (`on_warning`), `escape` writes it with a `'`
            before it, as a spreadsheet shows text (csv_specs/batch.md, "Formulas in a CSV output").
        latest: With `checkpoint`, an unfinished row started on an earlier revision is moved to the file as it is
            now before it goes on, when that is safe (`agentmap resume --latest`); one whose move is not safe fails
            saying why (its thread untouched).
        llm_batch: Send the rows' model calls (OpenAI and Anthropic models) as provider batch jobs, at the
            providers' batch price: each row runs to its next model call and waits for its job's answer
            (csv_specs/batch.md, "Provider batch jobs"). The jobs are kept in the `checkpoint` store (default:
            `<output>.llm-batch.db`), so calling again with the same arguments collects them.
        llm_batch_retry: `fail`: a request the provider failed is its row's error; `sync`: made again as a normal
            call.
        llm_batch_timeout: Seconds a job may stay unfinished; then it is cancelled and its rows fail.
        llm_batch_poll: Seconds between two looks at the open jobs.
        detach: Return once every queued call is in a job (`BatchResult.llm.waiting_rows` rows wait); call again
            to collect.
        on_llm_progress: Told each progress line of the provider jobs (default: the `agentmap.batch` logger).
        llm_batch_command: The command that runs this batch again, noted in its store for `agentmap batch status`
            to tell (the command line gives its own).
        **compile_options: `agentmap.compile`'s keywords (`success_policy`, `functions_dir`, `settings`, ...;
            not `checkpointer` or `state_keys`: see `checkpoint`); chain fusion is on unless `fuse=False`.
            `missing_inputs`: a table without a column for an input no node writes is refused before any row
            runs (`"error"`, the default), warned of once (`"warn"`), or run as it is (`"ignore"`).

    Raises:
        ConfigError: Bad options, input that cannot be read (its file and row are named), or a table lacking an
            input no node writes (`missing-state`).
        WorkflowFileError, GraphNotFoundError, ValidationError: The workflow cannot be compiled.
        BatchInterrupted: Ctrl-C; what finished is kept.
        BatchOverBudget: The budget was reached; what finished is kept, the rest runs when called again.
    """
    executor = executor_named(executor)
    check_formulas(csv_formulas)
    llm_options = llm_batch_options(llm_batch, llm_batch_retry, llm_batch_timeout, llm_batch_poll, detach)
    if llm_options is not None and output is not None:
        llm_options = replace(llm_options, look=status_command(output, checkpoint), again=llm_batch_command or "")
    if llm_options is not None and checkpoint is None:
        if output is None:
            raise ConfigError(
                "--llm-batch keeps its provider jobs and each row's calls in a checkpoint store",
                code=ErrorCode.USAGE,
                hint="give an output table (-o) or --checkpoint FILE.db",
            )
        checkpoint = default_store(output)
    if latest and checkpoint is None:
        raise ConfigError(
            "latest moves the threads of unfinished rows to the file as it is now, and rows have threads only with "
            "a checkpoint",
            code=ErrorCode.USAGE,
            hint="give --checkpoint (the one the earlier run used), or leave out --latest",
        )
    store = row_store(checkpoint, executor, ray_address)
    # Chain fusion (the same rows, fewer LangGraph steps) unless the caller says, or each row is a checkpointed
    # thread (a fused chain would be saved as one step); the checkpointer and state keys are the recipe's.
    fused = {"fuse": True} if checkpoint is None else {}
    options = CompileOptions.of("batch", {**fused, **compile_options}, refuse=("checkpointer", "state_keys"))
    budget = checked_budget(budget)
    share = 1 if executor in ("thread", "async") else workers or default_workers()
    options = with_model_limits(options, rate_limit, budget, share)
    if llm_options is not None and budget is not None:  # held as calls are placed in jobs (batch/_llm_budget.py)
        llm_options = replace(llm_options, budget=budget)
    recipe = WorkflowRecipe(
        str(source),
        options,
        list(outputs) if outputs is not None else None,
        store,
        no_cache=not cache,
        latest=latest,
    )
    told = on_warning or _warn
    row_source, name = _row_source(rows, sheet, told if lenient else None, told)
    return run_batch(
        recipe,
        row_source,
        warn=on_warning or _warn,
        source_name=name,
        output=Path(output) if output is not None else None,
        shaper=Shaper(dict(rename or {}), json_cells, id_column),
        options=BatchOptions(
            executor,
            concurrency,
            workers,
            chunk_size,
            ray_address,
            redo_failed,
            keep_rows,
            budget,
            csv_formulas,
            llm_options,
        ),
        on_result=on_result,
        progress=progress,
        tell=on_llm_progress,
    )


def run_batch(
    recipe: WorkflowRecipe,
    rows: RowSource,
    *,
    source_name: str,
    output: Path | None = None,
    shaper: Shaper | None = None,
    options: BatchOptions = BatchOptions(),
    on_result: Callable[[RowResult], None] | None = None,
    progress: Progress | None = None,
    warn: Warn = _warn,
    tell: Tell | None = None,
) -> BatchResult:
    """The batch itself (see `batch`): `rows.read()` is the one pass over the input (`scan`).

    The table's columns are checked once against the inputs no node writes (`CompiledWorkflow.check_state`): a
    column missing stops the batch before any row runs (`missing-state`), or with the compile option
    `missing_inputs="warn"` `warn` is told of it, once for the whole batch. A row is reported done (`progress`,
    `on_result`) once it is recorded in the `.partial` file, when there is one (`Recorder`).
    """
    shaper = shaper or Shaper()
    tell = tell or _logger.info
    executor, keep_rows, budget = options.executor, options.keep_rows, options.budget
    started = time.perf_counter()
    recipe = replace(recipe, options=shippable_options(recipe.options, executor), redo_failed=options.redo_failed)
    mode = recipe.options.missing_inputs
    recipe = replace(recipe, options=row_options(recipe.options))
    if options.llm is not None:
        recipe = replace(recipe, llm_batch="sync" if options.llm.retry == "sync" else "on")
    runner = RowRunner(recipe)  # compiles here, so a bad workflow stops the batch before any row runs
    if recipe.outputs is None:
        recipe = replace(recipe, outputs=output_fields(runner.app))
    partial = (
        PartialFile(output, graph=runner.app.name, outputs=runner.outputs, formulas=options.csv_formulas)
        if output is not None
        else None
    )
    finished = Finished(partial.load() if partial is not None else {}, options.redo_failed)
    with scan(rows, shaper, source_name, finished) as scanned:
        check_columns(runner.app, [shaper.renames.get(c, c) for c in scanned.columns], source_name, warn, mode)
        result = BatchResult(
            total=scanned.total,
            skipped=scanned.skipped,
            failed_before=len(finished.failed),
            output=output,
            graph=runner.app.name,
            revision=runner.app.revision.id if runner.app.revision is not None else None,
        )
        recorder = Recorder(result, partial, {} if keep_rows else None, progress, on_result)
        runner.meter = Meter(float(budget)) if budget is not None else None

        def jobs() -> Iterator[Job]:
            for number, key, row in scanned.rows():
                if finished(key):
                    continue
                if _spent(result, budget):
                    return
                if recorder.kept is not None:
                    recorder.kept[number] = row
                yield number, key, shaper.state(row, f"{source_name}, row {number}")

        _start_progress(progress, scanned.total, scanned.skipped)
        span = BatchSpan(runner.app, source_name, executor, scanned.total, scanned.skipped)
        runner.recipe = recipe = replace(recipe, run_metadata=span.metadata)
        llm = options.llm
        if llm is not None:
            say_synchronous(runner.app, tell)
        rounds = _Rounds(recipe, options, runner if executor in ("thread", "async") else None)
        try:
            if llm is None:
                rounds.run(jobs(), recorder)
            else:
                result.llm = run_rounds(rounds, jobs(), recorder, runner.app, llm, tell)
                result.over_budget = result.over_budget or result.llm.held > 0
            recorder.finish()
        except KeyboardInterrupt:
            result.interrupted = True
            result.duration_s = time.perf_counter() - started
            raise BatchInterrupted(result) from None
        finally:
            rounds.close()
            recorder.stop()  # every row counted is on disk before anyone sees the counts
            if progress is not None:
                progress.stop()
            span.finish(result.successes, result.failures, result.interrupted)
        result.rows.sort(key=lambda r: r.row)
        _stop_over_budget(result, runner.meter, output, started)
        if partial is not None and not (result.llm is not None and result.llm.waiting_rows):
            partial.finish(((key, dict(row)) for _, key, row in scanned.rows()), scanned.columns, warn)
            result.formula_cells = len(partial.formula_cells)
    result.duration_s = time.perf_counter() - started
    return result


class _Rounds:
    """Runs rows through the executor, a round at a time (one round without `--llm-batch`)."""

    def __init__(self, recipe: WorkflowRecipe, options: BatchOptions, runner: RowRunner | None) -> None:
        self.recipe, self.options, self.runner = recipe, options, runner
        self._stream: Any = None

    def run(self, jobs: Iterable[Job], recorder: Recorder) -> dict[str, Job]:
        """Run `jobs`; record each finished row; the rows that wait for a provider batch job, by id."""
        held: dict[str, Job] = {}
        waiting: dict[str, Job] = {}

        def tracked() -> Iterator[Job]:
            for job in jobs:
                held[job[1]] = job
                yield job

        options = self.options
        self._stream = execute(
            self.recipe,
            tracked(),
            executor=options.executor,
            concurrency=options.concurrency,
            workers=options.workers,
            chunk_size=options.chunk_size,
            ray_address=options.ray_address,
            runner=self.runner,
        )
        for row_result in self._stream:
            job = held.pop(row_result.id, None)
            if row_result.waiting and job is not None:
                waiting[row_result.id] = job
            else:
                recorder.take(row_result)
        self._stream = None
        return waiting

    def close(self) -> None:
        if self._stream is not None and hasattr(self._stream, "close"):
            self._stream.close()


def _spent(result: BatchResult, budget: float | None) -> bool:
    """Whether the batch has spent its budget (no more rows start)."""
    result.over_budget = result.over_budget or (budget is not None and (result.cost or 0.0) >= budget)
    return result.over_budget


def _stop_over_budget(result: BatchResult, meter: Meter | None, output: Path | None, started: float) -> None:
    """Raise `BatchOverBudget` when the budget stopped the batch (its output stays the `.partial` file)."""
    if result.over_budget and meter is not None:
        result.duration_s = time.perf_counter() - started
        spent = max(meter.spent, result.cost or 0.0)  # rows run elsewhere, and rows stopped half-way, count too
        spent = max(spent, result.llm.committed if result.llm is not None else 0.0)  # calls in provider jobs
        raise BatchOverBudget(result, meter.limit or 0.0, spent, partial_path(output) if output is not None else None)


def _start_progress(progress: Progress | None, total: int, skipped: int) -> None:
    if progress is not None:
        progress.start(total, skipped)
