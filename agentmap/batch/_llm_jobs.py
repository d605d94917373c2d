"""The provider batch jobs of `agentmap batch --llm-batch`, kept in the checkpoint's database beside the call
journal, so a batch killed at any moment and run again polls the same jobs and never sends a call twice.

- `agentmap_llm_jobs`: one row per job: our tag, the provider, API root, key variable and model, the provider's
  job id (None while it is being submitted), `state` (`submitting`, `open`, `done`), the provider's last status
  and counts, and when it was submitted;
- `agentmap_llm_job_calls`: which queued call (its journal key and request digest) each job carries, under the
  custom id it was sent with. A call is *placed* while a row holds it in a job not yet `done`; a job that ends
  without answering a call (expired, cancelled) drops that call's row, and the call is placed again.

A job is written `submitting`, with its calls, before the provider is asked; a batch that finds one on start asks
the provider for a job of that tag (`ProviderJobs.find`) and takes it over, or submits it when the provider has
none: a call is in at most one live job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import blake2b
from typing import Any

from agentmap.agents._journal_rows import CallKey
from agentmap.agents._saver_sql import Execute, ExecuteMany, saver_sql, saver_sql_many
from agentmap.agents.journal_entries import QueuedCall

__all__ = ["JobRow", "JobStore", "custom_id"]

_JOBS = "agentmap_llm_jobs"
_CALLS = "agentmap_llm_job_calls"
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {_JOBS} (tag TEXT PRIMARY KEY, provider TEXT NOT NULL, root TEXT NOT NULL, "
    "key_env TEXT NOT NULL, model TEXT NOT NULL, job_id TEXT, state TEXT NOT NULL, status TEXT NOT NULL, "
    "counts TEXT NOT NULL, calls INTEGER NOT NULL, made_at DOUBLE PRECISION NOT NULL, "
    "submitted_at DOUBLE PRECISION)",
    f"CREATE TABLE IF NOT EXISTS {_CALLS} (custom_id TEXT PRIMARY KEY, tag TEXT NOT NULL, thread_id TEXT NOT NULL, "
    "checkpoint_ns TEXT NOT NULL, step INTEGER NOT NULL, node TEXT NOT NULL, task_id TEXT NOT NULL, "
    "call_index INTEGER NOT NULL, digest TEXT NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {_CALLS}_tag ON {_CALLS} (tag)",
)
_JOB_COLUMNS = "tag, provider, root, key_env, model, job_id, state, status, counts, calls, made_at, submitted_at"


def custom_id(tag: str, call: QueuedCall) -> str:
    """The id a call is sent with in job `tag` (Anthropic's pattern: at most 64 of `[a-zA-Z0-9_-]`)."""
    text = "\x00".join(str(part) for part in (*call.key, call.digest))
    return f"{tag[:16]}-{blake2b(text.encode(), digest_size=16).hexdigest()}"


@dataclass(frozen=True)
class JobRow:
    """One provider job as the store keeps it."""

    tag: str
    provider: str
    root: str
    key_env: str
    model: str
    job_id: str | None
    state: str
    status: str
    counts: dict[str, int]
    calls: int
    made_at: float
    submitted_at: float | None

    @classmethod
    def of(cls, row: Sequence[Any]) -> JobRow:
        """A row of `agentmap_llm_jobs` as read."""
        values = list(row)
        values[8] = json.loads(values[8] or "{}")
        return cls(*values)


class JobStore:
    """The jobs and their calls in the checkpoint database of `saver` (SQLite or PostgreSQL)."""

    def __init__(self, saver: Any) -> None:
        execute, many = saver_sql(saver, _CREATE), saver_sql_many(saver, _CREATE)
        if execute is None or many is None:
            raise ValueError("provider batch jobs are kept in a SQLite or PostgreSQL checkpoint store")
        self._execute: Execute = execute
        self._many: ExecuteMany = many

    def intend(self, tag: str, group: tuple[str, str, str, str], calls: Sequence[tuple[str, QueuedCall]]) -> None:
        """Record job `tag` about to be submitted, with its calls (custom id, call), in one transaction: a kill
        leaves the job with all its calls or nothing of it."""
        provider, root, key_env, model = group
        now = time.time()
        job = (tag, provider, root, key_env, model, None, "submitting", "submitting", "{}", len(calls), now, None)
        add = f"INSERT INTO {_CALLS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        self._many(
            [
                (f"INSERT INTO {_JOBS} ({_JOB_COLUMNS}) VALUES ({', '.join('?' * 12)})", job),
                *((add, (cid, tag, *call.key, call.digest)) for cid, call in calls),
            ]
        )

    def submitted(self, tag: str, job_id: str) -> None:
        """The provider took job `tag` as `job_id`."""
        sql = f"UPDATE {_JOBS} SET job_id = ?, state = 'open', status = 'submitted', submitted_at = ? WHERE tag = ?"
        self._execute(sql, (job_id, time.time(), tag))

    def seen(self, tag: str, status: str, counts: dict[str, int]) -> None:
        """The provider's last word on job `tag`."""
        self._execute(f"UPDATE {_JOBS} SET status = ?, counts = ? WHERE tag = ?", (status, json.dumps(counts), tag))

    def done(self, tag: str, status: str) -> None:
        """Job `tag` ended and its answers were written."""
        self._execute(f"UPDATE {_JOBS} SET state = 'done', status = ? WHERE tag = ?", (status, tag))

    def abandon(self, tag: str) -> None:
        """Job `tag` was never taken by the provider: gone, with its calls (they are placed again)."""
        self._many([(f"DELETE FROM {_CALLS} WHERE tag = ?", (tag,)), (f"DELETE FROM {_JOBS} WHERE tag = ?", (tag,))])

    def release(self, custom_ids: Sequence[str]) -> None:
        """Drop these calls from their ended job: they are placed in a new one."""
        if custom_ids:
            self._many([(f"DELETE FROM {_CALLS} WHERE custom_id = ?", (cid,)) for cid in custom_ids])

    def jobs(self, *states: str) -> list[JobRow]:
        """The jobs in `states` (all with none), oldest first."""
        rows = self._execute(f"SELECT {_JOB_COLUMNS} FROM {_JOBS} ORDER BY made_at", ())
        found = [JobRow.of(r) for r in rows]
        return [job for job in found if not states or job.state in states]

    def calls_of(self, tag: str) -> dict[str, tuple[CallKey, str]]:
        """The calls of job `tag`: custom id -> (journal key, request digest)."""
        rows = self._execute(
            f"SELECT custom_id, thread_id, checkpoint_ns, step, node, task_id, call_index, digest "
            f"FROM {_CALLS} WHERE tag = ?",
            (tag,),
        )
        return {str(r[0]): (CallKey(r[1], r[2], int(r[3]), r[4], r[5], int(r[6])), str(r[7])) for r in rows}

    def placed(self) -> set[tuple[CallKey, str]]:
        """The calls in a job not yet done: (journal key, request digest)."""
        rows = self._execute(
            f"SELECT c.thread_id, c.checkpoint_ns, c.step, c.node, c.task_id, c.call_index, c.digest FROM {_CALLS} c "
            f"JOIN {_JOBS} j ON j.tag = c.tag WHERE j.state <> 'done'",
            (),
        )
        return {(CallKey(r[0], r[1], int(r[2]), r[3], r[4], int(r[5])), str(r[6])) for r in rows}
