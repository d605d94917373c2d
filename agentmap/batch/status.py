"""`agentmap batch status OUTPUT`: where a batch stands, read from what it leaves beside its output.

- the rows done, from `<output>.partial` (a batch under way) or the output table (a batch that finished): each
  row's last record, succeeded or failed;
- with `--llm-batch`, its checkpoint store (`<output>.llm-batch.db`, or the `--checkpoint` it ran with): the
  provider jobs (`_llm_jobs.py`: id, provider, model, the status and counts the provider last gave), the calls
  the journal holds `queued` (in a job, or not placed yet: held by the budget), those answered or failed, and
  what the answered calls cost at the prices paid; and the command that collects the rest, as the batch noted it.

Nothing is submitted, cancelled or billed, and the store is only read (its tables are made if a batch never
made them). `live=True` also asks each open job's provider for its status now (a GET), without recording it.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentmap.agents._saver_sql import saver_sql
from agentmap.agents.journal_entries import answered_calls, queued_calls
from agentmap.errors import ConfigError, ErrorCode, WorkflowFileError
from agentmap.runtime.checkpoint import checkpoint_exists, checkpointer, redacted

__all__ = ["BatchStatus", "JobStatus", "batch_status", "default_store", "remember_command", "status_command"]

_NOTES = "agentmap_batch_notes"
_CREATE_NOTES = (f"CREATE TABLE IF NOT EXISTS {_NOTES} (name TEXT PRIMARY KEY, value TEXT NOT NULL)",)


def default_store(output: str | Path) -> str:
    """The checkpoint store of an `--llm-batch` batch writing `output`, when it names none."""
    return f"{output}.llm-batch.db"


def status_command(output: str | Path, checkpoint: str | Path | None = None) -> str:
    """`agentmap batch status OUTPUT` for a batch writing `output` (with the `--checkpoint` it was given; a
    PostgreSQL URL's password shown as `***`)."""

    store = f" --checkpoint {shlex.quote(redacted(str(checkpoint)))}" if checkpoint is not None else ""
    return f"agentmap batch status {shlex.quote(str(output))}{store}"


def remember_command(saver: Any, command: str) -> None:
    """Note in the batch's store the command that runs it again (and the folder it ran in), for `status` (a
    PostgreSQL URL's password in it noted as `***`)."""

    execute = saver_sql(saver, _CREATE_NOTES)
    if execute is None:
        return
    command = shlex.join(redacted(word) for word in shlex.split(command))
    note = json.dumps({"command": command, "folder": os.getcwd(), "at": time.time()})
    execute(
        f"INSERT INTO {_NOTES} VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", ("command", note)
    )


@dataclass
class JobStatus:
    """One provider job of the batch, as its store records it.

    Attributes:
        id: The provider's job id (None: written before it was sent, and not confirmed yet).
        provider: `openai` or `anthropic`.
        model: The model of its calls.
        state: `submitting`, `open` or `done` (its answers are written).
        status: The provider's status when the batch last looked (`in_progress`, `completed`, `ended`, ...), or
            what ended it (`expired`, `cancelled`, `timed out (...)`, `refused`).
        counts: The provider's request counts when the batch last looked.
        calls: Calls it carries.
        answered: Of those, answered (their journal entry `finished`).
        failed: Failed (the provider's error, a result that could not be read, a timeout).
        waiting: Still queued, waiting for its answer.
        cost: What its answered calls cost, at the batch price, in USD.
        submitted_at: When the provider took it (seconds since the epoch).
        live: The provider's status now (`live=True`; `unreachable: ...` when it could not be asked).
    """

    id: str | None
    provider: str
    model: str
    state: str
    status: str
    counts: dict[str, int]
    calls: int
    answered: int = 0
    failed: int = 0
    waiting: int = 0
    cost: float = 0.0
    submitted_at: float | None = None
    live: str | None = None


@dataclass
class BatchStatus:
    """Where the batch writing `output` stands (`batch_status`).

    Attributes:
        output: The output table.
        finished: The output table is written (no `.partial` file): every row is done.
        rows_done: Rows recorded done (in the `.partial` file, or the output table).
        rows_succeeded: Of those, succeeded.
        rows_failed: Of those, failed.
        rows_waiting: Rows whose model call waits for a provider job (or for a place in one).
        store: The checkpoint store read, a PostgreSQL URL's password as `***` (None: the batch keeps none; it
            ran without `--llm-batch`).
        calls_in_jobs: Calls queued in provider jobs, waiting for their answers.
        calls_unplaced: Calls queued but in no job: held by `--budget`, or not sent yet.
        calls_answered: Calls the provider jobs answered.
        calls_failed: Calls the provider jobs failed.
        cost: What the answered calls of the jobs cost, at the batch price, in USD.
        spent: What every model call of the batch's store cost, at the prices paid (calls made directly too).
        jobs: The provider jobs, oldest first.
        command: The command that collects the rest, as the batch's last run noted it (None: not noted).
        folder: The folder that command ran in.
        live: Whether the open jobs' providers were asked for their status now.
    """

    output: str
    finished: bool = False
    rows_done: int = 0
    rows_succeeded: int = 0
    rows_failed: int = 0
    rows_waiting: int = 0
    store: str | None = None
    calls_in_jobs: int = 0
    calls_unplaced: int = 0
    calls_answered: int = 0
    calls_failed: int = 0
    cost: float = 0.0
    spent: float = 0.0
    jobs: list[JobStatus] = field(default_factory=list)
    command: str | None = None
    folder: str | None = None
    live: bool = False

    def to_dict(self) -> dict[str, Any]:
        """As JSON values (`agentmap batch status --json`)."""
        found = asdict(self)
        found["cost"], found["spent"] = round(self.cost, 8), round(self.spent, 8)
        return found

    def collect(self) -> str:
        """What to run to collect the rest of the batch."""
        if self.command is None:
            return (
                "run the same `agentmap batch ... --llm-batch` command (or agentmap.batch(..., llm_batch=True)) again"
            )
        here = self.folder is None or Path(self.folder) == Path.cwd()
        return self.command if here else f"cd {shlex.quote(self.folder or '.')} && {self.command}"


def batch_status(output: str | Path, checkpoint: str | Path | None = None, *, live: bool = False) -> BatchStatus:
    """Where the batch writing `output` stands: its rows, provider jobs, calls and cost (see the module's docstring).

    Args:
        output: The batch's output table (`-o`).
        checkpoint: The checkpoint store it ran with (default: `<output>.llm-batch.db` when that file exists).
        live: Also ask each open job's provider for its status now (a GET; the key variable must be set).

    Raises:
        WorkflowFileError: No batch writes `output`: neither it, its `.partial` file nor its store exists, or the
            `checkpoint` named is not there (`no-batch`, exit 3).
        ConfigError: `output` is not a batch's output (`output-exists`), its `.partial` file is not a batch's
            (`bad-partial`), or the store cannot be read (`corrupt-checkpoint`, `bad-checkpointer`).
    """
    from agentmap.batch.resume import partial_path

    path = Path(output)
    partial = partial_path(path)
    store = _store(path, checkpoint)
    if not path.exists() and not partial.exists() and store is None:
        raise WorkflowFileError(
            f"{path}: no batch writes this output: there is no {path.name}, {partial.name} or "
            f"{Path(default_store(path)).name} {'in ' + str(path.parent) if str(path.parent) != '.' else 'here'}",
            code=ErrorCode.NO_BATCH,
            hint="name the --output (-o) file the batch was run with, and the --checkpoint it used if it gave one",
        )
    status = BatchStatus(str(path), finished=path.exists() and not partial.exists())
    done = _partial_rows(partial) if partial.exists() else _output_rows(path) if path.exists() else {}
    status.rows_done = len(done)
    status.rows_succeeded = sum(done.values())
    status.rows_failed = status.rows_done - status.rows_succeeded
    if store is not None:
        _read_store(status, store, live)
    return status


def _store(output: Path, checkpoint: str | Path | None) -> str | None:
    """The checkpoint store to read, or None: the default one was never made (a batch without `--llm-batch`)."""

    if checkpoint is not None:
        text = str(checkpoint)
        if not checkpoint_exists(text):
            raise WorkflowFileError(
                f"--checkpoint {text}: there is no such checkpoint file",
                code=ErrorCode.NO_BATCH,
                hint="pass the --checkpoint the batch ran with, or leave it out for <output>.llm-batch.db",
            )
        return text
    default = default_store(output)
    return default if Path(default).is_file() else None


def _partial_rows(partial: Path) -> dict[str, bool]:
    """Each row's last record in a `.partial` file: row id -> success (a last line cut short by a kill: ignored)."""
    from agentmap.batch.resume import _FORMAT

    done: dict[str, bool] = {}
    with partial.open("rb") as handle:
        lines = iter(handle)
        header = _record(next(lines, b""))
        if header is None or header.get("format") != _FORMAT:
            raise ConfigError(
                f"{partial} is not the partial results of an agentmap batch",
                code=ErrorCode.BAD_PARTIAL,
                hint="name the output of a batch: agentmap batch status OUTPUT reads OUTPUT.partial beside it",
            )
        for line in lines:
            record = _record(line)
            if record is None or "row_id" not in record:
                break
            done[str(record["row_id"])] = bool(record.get("success"))
    return done


def _record(line: bytes) -> dict[str, Any] | None:
    if not line.endswith(b"\n"):
        return None
    try:
        found = json.loads(line)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _output_rows(output: Path) -> dict[str, bool]:
    """Each row of a finished batch's output table: row id -> success."""
    from agentmap.batch.tables import read_rows

    done: dict[str, bool] = {}
    for row in read_rows(output, warn=lambda _: None):
        if "row_id" not in row:
            raise ConfigError(
                f"{output} is not the output of a batch (it has no row_id column)",
                code=ErrorCode.OUTPUT_EXISTS,
                hint="name the --output (-o) file of the batch",
            )
        if row.get("row_id") not in (None, ""):
            done[str(row["row_id"])] = str(row.get("success")).lower() in ("true", "1")
    return done


def _read_store(status: BatchStatus, store: str, live: bool) -> None:
    """The jobs, calls, cost and noted command of the batch's checkpoint store."""
    from agentmap.batch._llm_jobs import JobStore

    saver = checkpointer(store)
    try:
        status.store = redacted(store)
        jobs = JobStore(saver)
        answered = {(c.key, c.digest): c for c in answered_calls(saver)}
        queued = {(c.key, c.digest): c for c in queued_calls(saver)}
        status.spent = sum(_cost(c.usage) for c in answered.values())
        placed = set()
        for row in jobs.jobs():
            job = JobStatus(
                row.job_id,
                row.provider,
                row.model,
                row.state,
                row.status,
                dict(row.counts),
                row.calls,
                submitted_at=row.submitted_at,
            )
            for call in jobs.calls_of(row.tag).values():
                found = answered.get(call)
                if found is not None:
                    job.failed += found.failed
                    job.answered += not found.failed
                    job.cost += _cost(found.usage)
                elif call in queued and row.state != "done":
                    job.waiting += 1
                    placed.add(call)
            if live and row.state == "open" and row.job_id is not None:
                job.live = _live(row.provider, row.root, row.key_env, row.job_id)
            status.jobs.append(job)
        status.live = live
        status.calls_in_jobs = len(placed)
        status.calls_unplaced = len(set(queued) - placed)
        status.calls_answered = sum(job.answered for job in status.jobs)
        status.calls_failed = sum(job.failed for job in status.jobs)
        status.cost = sum(job.cost for job in status.jobs)
        status.rows_waiting = len({key.thread_id for key, _ in queued})
        status.command, status.folder = _noted(saver)
    finally:
        _close(saver)


def _cost(usage: Mapping[str, Any]) -> float:
    cost = usage.get("cost")
    return float(cost) if isinstance(cost, (int, float)) else 0.0


def _live(provider: str, root: str, key_env: str, job_id: str) -> str:
    """The provider's status of a job now (a GET), or why it could not be asked."""
    from agentmap.batch._provider_jobs import ProviderError, jobs_for

    jobs = jobs_for(provider, root, key_env)
    try:
        return jobs.state(job_id).status
    except ProviderError as exc:
        return f"unreachable: {exc}"
    finally:
        jobs.close()


def _noted(saver: Any) -> tuple[str | None, str | None]:
    execute = saver_sql(saver, _CREATE_NOTES)
    rows = execute(f"SELECT value FROM {_NOTES} WHERE name = ?", ("command",)) if execute is not None else []
    if not rows:
        return None, None
    try:
        note = json.loads(rows[0][0])
        return str(note["command"]), str(note.get("folder") or "") or None
    except (ValueError, KeyError, TypeError):
        return None, None


def _close(saver: Any) -> None:
    conn = getattr(saver, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        conn.close()
