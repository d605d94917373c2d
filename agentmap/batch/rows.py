"""One row of a batch: its id, its initial state, and the run that turns it into a result record.

`RowRunner` is what every executor runs, in this process, in a worker process or in a Ray worker: it
compiles the workflow once and drives each row through `CompiledWorkflow.invoke` (the one runner), so
a row behaves exactly as `agentmap run` with that row as its state.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agentmap.agents.costs import METER_KEY, Meter
from agentmap.agents.journal import digest
from agentmap.agents.journal_entries import journal_entries
from agentmap.agents.llm_batch import MODE_KEY, WAIT_KIND
from agentmap.batch._tracing import ROW_ID_KEY, ROW_KEY
from agentmap.errors import AgentMapError, ConfigError, ErrorCode, NodeError
from agentmap.runtime.checkpoint import redacted
from agentmap.runtime.options import CompileOptions
from agentmap.spec.models import state_key

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from agentmap.runtime.durable import Thread
    from agentmap.runtime.results import RunResult
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = [
    "RESULT_COLUMNS",
    "Job",
    "RowResult",
    "RowRunner",
    "Shaper",
    "WorkflowRecipe",
    "output_fields",
    "output_row",
]

RESULT_COLUMNS = (
    "success",
    "error",
    "failed_nodes",
    "duration_s",
    "tokens_in",
    "tokens_out",
    "tokens_cached",
    "cost",
    "row_id",
)
"""The columns every output row ends with, after the input columns and the workflow's outputs."""

Job = tuple[int, str, dict[str, Any]]
"""(row number, row id, initial state)."""

_KEY_TEXT = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)
"""A row's cells as the text its id hashes (one encoder for every row: `json.dumps` would make one per call)."""


@dataclass(frozen=True)
class RowResult:
    """The result of one row.

    Attributes:
        row: The 1-based data row number in the input.
        id: The row id (the `--id-column` value, else the row number and a hash of the row).
        inputs: The row as read (after renames), when known.
        outputs: The workflow's output fields from the row's final state.
        success: Whether the run succeeded under the success policy.
        error: The first error, on one line, or None.
        failed_nodes: The nodes that failed, in order.
        duration_s: Seconds the run took.
        tokens_in: Input tokens of the row's model calls (cached ones included).
        tokens_out: Output tokens of the row's model calls.
        tokens_cached: Of the input tokens, those read from the provider's prompt cache.
        cost: What the row's model calls cost in USD, at the prices paid (None: no call had a price).
        over_budget: The batch's budget stopped the row before a model call: it is not recorded, so running
            the batch again (with a higher budget) runs it.
        revision: The id of the revision of the workflow the row ran (`runtime.revisions`): a row continuing its
            thread runs the one it started on, unless moved (None: none recorded).
        moved: The row's thread was moved to the workflow file as it is now before it went on (`latest`).
        waiting: With `--llm-batch`, the row waits for a provider batch job to answer its model call: it is not
            recorded, and continues once the answer is in.
    """

    row: int
    id: str
    outputs: dict[str, Any]
    success: bool
    error: str | None = None
    failed_nodes: tuple[str, ...] = ()
    duration_s: float = 0.0
    inputs: dict[str, Any] = field(default_factory=dict)
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    cost: float | None = None
    over_budget: bool = False
    revision: str | None = None
    moved: bool = False
    waiting: bool = False

    def record(self) -> dict[str, Any]:
        """The row as a JSON-friendly record (what the `.partial` file holds)."""
        return {
            "row": self.row,
            "row_id": self.id,
            "success": self.success,
            "error": self.error,
            "failed_nodes": "|".join(self.failed_nodes),
            "duration_s": self.duration_s,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_cached": self.tokens_cached,
            "cost": self.cost,
            "outputs": self.outputs,
        }

    def columns(self) -> dict[str, Any]:
        """The output row: inputs, outputs, then the result columns."""
        return output_row(self.record(), self.inputs)


def output_row(record: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The output row of a row recorded as `RowResult.record` made it (the `.partial` file's lines): the input row,
    the outputs, then the result columns. Written straight from the record: a batch's output is written from its
    `.partial` file, a row at a time."""
    failed = record.get("failed_nodes") or ""
    cost = record.get("cost")
    return {
        **inputs,
        **(record.get("outputs") or {}),
        "success": bool(record.get("success")),
        "error": record.get("error"),
        "failed_nodes": failed if isinstance(failed, str) else "|".join(failed),
        "duration_s": round(float(record.get("duration_s") or 0.0), 6),
        "tokens_in": int(record.get("tokens_in") or 0),
        "tokens_out": int(record.get("tokens_out") or 0),
        "tokens_cached": int(record.get("tokens_cached") or 0),
        "cost": None if cost in (None, "") else float(cost),
        "row_id": str(record["row_id"]),
    }


@dataclass(frozen=True)
class Shaper:
    """Turns an input row into a job: renames (`--map col=key`), JSON cells, and the row id."""

    renames: Mapping[str, str] = field(default_factory=dict)
    json_cells: bool = False
    id_column: str | None = None

    def state(self, row: Mapping[str, Any], where: str) -> dict[str, Any]:
        """The initial state of a row (`where` names file and row for errors)."""
        state: dict[str, Any] = {}
        for column, value in row.items():
            if self.json_cells and isinstance(value, str) and value.strip()[:1] in ("{", "["):
                try:
                    value = json.loads(value)
                except json.JSONDecodeError as exc:
                    raise ConfigError(
                        f"{where}, column {column!r}: the cell is not valid JSON ({exc.msg})",
                        code=ErrorCode.BAD_INPUT,
                        hint="fix the cell, or leave out --json-cells to pass it as text",
                    ) from None
            state[self.renames.get(column, column)] = value
        return state

    def key(self, number: int, row: Mapping[str, Any], where: str) -> str:
        """The row id: the id column's value, else the row number plus a hash of the row."""
        if self.id_column is not None:
            if self.id_column not in row:
                raise ConfigError(
                    f"{where} has no id column {self.id_column!r} (columns: {', '.join(row)})",
                    code=ErrorCode.BAD_INPUT,
                    hint="name an existing column with --id-column",
                )
            value = row[self.id_column]
            if value is None or str(value).strip() == "":
                raise ConfigError(
                    f"{where}, column {self.id_column!r}: the row id is empty",
                    code=ErrorCode.BAD_INPUT,
                    hint="give every row an id, or leave out --id-column",
                )
            return str(value).strip()
        text = _KEY_TEXT.encode(row)  # json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
        return f"{number}-{hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:10]}"


def output_fields(app: CompiledWorkflow) -> list[str]:
    """Every state key the workflow's nodes write, in node order."""

    seen: dict[str, None] = {}
    for node in app.spec.nodes:
        for name in node.outputs:
            seen.setdefault(state_key(name, output=True), None)
    return list(seen)


@dataclass(frozen=True)
class WorkflowRecipe:
    """What a worker needs to compile the workflow itself (picklable: shipped to worker processes and Ray workers).

    Attributes:
        source: The workflow file, with `::Graph` when selected.
        options: How to compile it (folders, settings, success policy, ...); its checkpointer and state keys are
            the recipe's own.
        outputs: The output fields to report (None: every field the workflow writes).
        checkpoint: A checkpointer string; each row then runs as the thread named by its id.
        state_keys: Extra state keys to keep in the schema.
        run_metadata: Metadata every row's run gets in its LangGraph config (the batch span to trace under).
        no_cache: Every row's model calls go to the model, not to the LLM response cache (`--no-cache`).
        redo_failed: A checkpointed row whose thread finished with a failure starts over (`--redo-failed`);
            without it, such a row takes that run's result (the batch was stopped before it recorded the row).
        latest: A row continuing its thread is moved to the workflow file as it is now first (`--latest`), when
            that is safe (`Thread.move`; else the row fails saying why); without it, it goes on at the revision it
            started on.
        llm_batch: `on` or `sync`: the rows' model calls go through provider batch jobs (`--llm-batch`, and
            `--llm-batch-retry sync`); None: they are made as usual.
    """

    source: str
    options: CompileOptions = field(default_factory=CompileOptions)
    outputs: Sequence[str] | None = None
    checkpoint: str | None = None
    state_keys: Sequence[str] = ()
    run_metadata: Mapping[str, Any] = field(default_factory=dict)
    no_cache: bool = False
    redo_failed: bool = False
    latest: bool = False
    llm_batch: str | None = None

    def compile(self) -> CompiledWorkflow:
        """Compile the workflow: in the parent, in each worker process and in each Ray worker process, once."""
        from agentmap.runtime.api import compile

        options = replace(self.options, checkpointer=self.checkpoint, state_keys=tuple(self.state_keys))
        return compile(self.source, options=options)


_ROW_DIGEST = "agentmap_row_digest"  # the run metadata (and so every checkpoint's) that names the row's cells


def _continue(
    snapshot: StateSnapshot | None, state: Mapping[str, Any], cells: str, workflow: str | None, redo_failed: bool
) -> Mapping[str, Any] | None:
    """What a checkpointed row runs with: None (continue its thread) when an earlier run of the same row (the same
    cells) left it there, else the row's state (a new row, or one whose cells changed under the same id: it starts
    over rather than continue another row's run). `cells` is the digest of the row's cells (`_cells`), `workflow`
    the workflow file's (`CompiledWorkflow.file_digest`).

    - unfinished (killed, failed or paused): continued, so LangGraph reruns only the node cut short and the call
      journal replays its answered calls;
    - finished by this workflow file, succeeded or failed: continued too, which runs nothing and returns that run's
      result (the batch stopped before it recorded the row, e.g. a kill within its `.partial` file's loss window):
      a finished row is never run or paid for twice;
    - finished and failed under `--redo-failed` (what it runs again), or by another version of the workflow:
      started over.
    """
    from agentmap.runtime.threads import DIGEST_KEY, snapshot_status, unfinished

    if snapshot is None or snapshot.metadata is None or snapshot.metadata.get(_ROW_DIGEST) != cells:
        return state
    if unfinished(snapshot):
        return None
    if workflow is None or snapshot.metadata.get(DIGEST_KEY) != workflow:
        return state
    status = snapshot_status(snapshot)
    return None if status == "done" or (status == "failed" and not redo_failed) else state


def _cells(state: Mapping[str, Any], checkpointed: bool) -> str:
    """The digest of a checkpointed row's cells, recorded in its run's metadata ("" when rows are not checkpointed)."""
    return digest(dict(state)) if checkpointed else ""


class RowRunner:
    """Compiles the workflow once, then runs rows through it."""

    def __init__(self, recipe: WorkflowRecipe, app: CompiledWorkflow | None = None) -> None:
        self.recipe = recipe
        self.app = app or recipe.compile()
        self.outputs = list(recipe.outputs) if recipe.outputs is not None else output_fields(self.app)
        self.meter: Meter | None = None
        """The batch's meter, shared by the rows this runner runs (thread and async executors)."""

    def run(self, job: Job) -> RowResult:
        """Run one row; any failure ends in the row's result, never in an exception."""
        number, key, state = job
        cells = _cells(state, bool(self.recipe.checkpoint))
        config = self._config(number, key, cells)
        started = time.perf_counter()
        try:
            thread = self.app.thread(key) if self.recipe.checkpoint else None
            # a checkpointed row's snapshot, read by the revision its thread runs
            start = self._start(thread.snapshot(), state, cells) if thread is not None else state
            app, moved = self._continued(thread) if start is None and thread is not None else (self.app, False)
            result = app.invoke(start, config)
        except Exception as exc:
            return _failed(job, exc, time.perf_counter() - started)
        return self._finish(job, result, time.perf_counter() - started, app, moved)

    async def arun(self, job: Job) -> RowResult:
        """The async twin of `run` (through `CompiledWorkflow.ainvoke`)."""
        number, key, state = job
        cells = _cells(state, bool(self.recipe.checkpoint))
        config = self._config(number, key, cells)
        started = time.perf_counter()
        try:
            thread = self.app.thread(key) if self.recipe.checkpoint else None
            start = self._start(await thread.asnapshot(), state, cells) if thread is not None else state
            if start is None and thread is not None:
                app, moved = await asyncio.to_thread(self._continued, thread)
            else:
                app, moved = self.app, False
            result = await app.ainvoke(start, config)
        except Exception as exc:
            return _failed(job, exc, time.perf_counter() - started)
        return self._finish(job, result, time.perf_counter() - started, app, moved)

    def _continued(self, thread: Thread) -> tuple[CompiledWorkflow, bool]:
        """The workflow a row continuing `thread` runs, and whether the thread was moved: the revision it started
        on (compiled from the files stored with it, once per revision; `thread` found it reading the row's
        snapshot), or with `latest` the file as it is now, the thread moved there first when it is behind.

        Raises:
            ConfigError: Moving it is unsafe or needs a migration map (`unsafe-move`, `needs-migration`); its
                revision cannot be compiled (`unknown-revision`, `revision-unloadable`, `corrupt-checkpoint`).
        """
        if not self.recipe.latest:
            return thread.app, False
        thread = self.app.thread(thread.thread_id)  # moved as it is now
        if not thread.behind():
            return self.app, False
        thread.move()
        return self.app, True

    def _start(self, snapshot: StateSnapshot | None, state: dict[str, Any], cells: str) -> Mapping[str, Any] | None:
        """What the row's run starts from: its state, or None to continue its thread (`_continue`)."""
        return _continue(snapshot, state, cells, self.app.file_digest, self.recipe.redo_failed)

    def _config(self, number: int, key: str, cells: str) -> Any:
        """The row's LangGraph config: its number and id as run metadata (span attributes, LangSmith metadata),
        and its thread and the digest of its cells when rows are checkpointed."""
        config: dict[str, Any] = {"metadata": {**self.recipe.run_metadata, ROW_KEY: number, ROW_ID_KEY: key}}
        if self.recipe.checkpoint:
            config["configurable"] = {"thread_id": key}
            config["metadata"][_ROW_DIGEST] = cells
        if self.meter is not None:
            config["configurable"] = {**config.get("configurable", {}), METER_KEY: self.meter}
        if self.recipe.no_cache:
            config["configurable"] = {**config.get("configurable", {}), "no_cache": True}
        if self.recipe.llm_batch:
            config["configurable"] = {**config.get("configurable", {}), MODE_KEY: self.recipe.llm_batch}
        return config

    def _finish(
        self, job: Job, result: RunResult, duration: float, app: CompiledWorkflow, moved: bool = False
    ) -> RowResult:
        error: str | None = None
        if result.interrupts and all(_waits(i) for i in result.interrupts):
            return RowResult(job[0], job[1], {}, False, None, (), duration, waiting=True)
        if result.interrupts:
            error = _paused(job[1], result.interrupts, self.recipe.checkpoint)
        elif not result.success:
            error = _one_line(result.errors[0]) if result.errors else "the success policy failed"
        outputs = {name: result.state.get(name) for name in self.outputs}
        success = result.success and not result.interrupts
        usage = self._journaled_usage(job[1]) if self.recipe.llm_batch else result.usage
        return RowResult(
            job[0],
            job[1],
            outputs,
            success,
            error,
            tuple(result.failed_nodes),
            duration,
            tokens_in=int(usage.get("input_tokens", 0)),
            tokens_out=int(usage.get("output_tokens", 0)),
            tokens_cached=int(usage.get("cached_tokens", 0)),
            cost=usage.get("cost"),
            revision=app.revision.id if app.revision is not None else None,
            moved=moved,
        )

    def _journaled_usage(self, thread: str) -> dict[str, Any]:
        """The tokens and cost of a row's model calls as its thread's call journal holds them, each call once:
        with `--llm-batch` a row runs in rounds, each of which sees only its own calls."""

        usage: dict[str, Any] = {}
        for entry in journal_entries(self.app.graph.checkpointer, thread):
            if entry.kind != "model" or entry.status != "finished":
                continue
            usage["input_tokens"] = usage.get("input_tokens", 0) + (entry.input_tokens or 0)
            usage["output_tokens"] = usage.get("output_tokens", 0) + (entry.output_tokens or 0)
            usage["cached_tokens"] = usage.get("cached_tokens", 0) + (entry.cached_tokens or 0)
            if entry.cost is not None:
                usage["cost"] = round(usage.get("cost", 0.0) + entry.cost, 8)
        return usage


def _waits(interrupt: Any) -> bool:
    """Whether a run's pause is a model call waiting for a provider batch job (not a question for a person)."""
    value = getattr(interrupt, "value", interrupt)
    return isinstance(value, Mapping) and value.get("kind") == WAIT_KIND


def _paused(key: str, interrupts: Sequence[Any], checkpoint: str | None) -> str:
    """The error of a row that paused for input: with checkpoints, its question and how to answer it."""
    if not checkpoint:
        return "the run paused for input; run the batch with --checkpoint and resume the row's thread"
    first = interrupts[0]
    question = first.get("question") if isinstance(first, Mapping) else first

    store = redacted(checkpoint.removeprefix("sqlite:"))
    return f"the run paused for input ({question}); answer it: agentmap resume {key} ANSWER --checkpoint {store}"


def _failed(job: Job, exc: Exception, duration: float) -> RowResult:
    """The result of a row whose run raised (a row stopped by the batch's budget is `over_budget`); the node it
    names (a `NodeError`'s: the node whose router raised) is its failed node."""
    over = getattr(exc, "code", None) == "budget-exceeded"
    node = exc.node if isinstance(exc, NodeError) else None
    failed = (node,) if node else ()
    return RowResult(job[0], job[1], {}, False, _one_line(exc), failed, duration, over_budget=over)


def _one_line(error: Any) -> str:
    text = str(error).strip()
    if isinstance(error, Exception) and not isinstance(error, AgentMapError):
        text = f"{type(error).__name__}: {text}"  # a raw exception (a router, a bug): its type says what broke
    return (text.splitlines() or [type(error).__name__])[0][:500]
