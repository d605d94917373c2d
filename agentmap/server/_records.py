"""The run store's records: what crosses the seam between the store and the rest of the server, typed and frozen.

The store (`_store.py` and its parts) reads rows into these records (`from_row`, the JSON columns decoded by
`column`, so one damaged row cannot fail every answer listing it) and takes them, or typed keyword arguments,
when it writes; the routes, the queue and the crons read their fields, never a row.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NewType, TypedDict

from agentmap.runtime.values import repaired
from agentmap.server._run_states import RunStatus

__all__ = [
    "CronChanges",
    "CronRecord",
    "Owner",
    "RunRecord",
    "ServerThreadStatus",
    "ThreadRecord",
    "Tick",
    "VersionRecord",
    "column",
    "now",
    "webhook_of",
]

_log = logging.getLogger("agentmap.server")

Owner = NewType("Owner", str)
"""A replica's name (`host:pid:boot`), the owner of the runs it holds; a run's id is never one."""


class ServerThreadStatus(StrEnum):
    """A served thread's status: no run, a run in progress, paused (or cut short), or its last run failed."""

    IDLE = "idle"
    BUSY = "busy"
    INTERRUPTED = "interrupted"
    ERROR = "error"


def now() -> str:
    """The time now, as LangGraph's server writes it (ISO 8601, UTC)."""
    return datetime.now(UTC).isoformat()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """A run as the store keeps it: what LangGraph's server shows of it (`public`), and the queue's columns."""

    run_id: str
    thread_id: str
    """The run's thread (a throwaway id for a stateless run)."""
    assistant_id: str
    created_at: str
    updated_at: str
    status: RunStatus = RunStatus.PENDING
    metadata: dict[str, Any] = field(default_factory=dict)
    multitask_strategy: str | None = None
    graph_id: str | None = None
    request: dict[str, Any] = field(default_factory=dict)
    """What rebuilds the run on any replica: its request body, thread, route and claimant (`RunRequest.payload`)."""
    stateless: bool = False
    user_id: str | None = None
    """The identity of the user who started it (`--auth`; "" without): what quotas count by."""
    seq: int = 0
    """Its place on the queue (runs of a thread are claimed in this order)."""
    owner: str | None = None
    """The replica holding it (claimed, or kept for the replica its client waits on); None once it ended."""
    lease_until: float = 0.0
    """Until when (the database's clock, seconds since 1970) its owner holds it."""
    attempt: int = 0
    """How many times a replica claimed it."""
    result: Any = None
    """What it ended with (`Run.result`), None until then."""
    cancel: str | None = None
    """Why a client asked it to stop (`cancel_reason`)."""
    webhook_due: float | None = None
    """When its webhook delivery is next due (`time.time()` seconds); None: none due."""
    webhook_tries: int = 0

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RunRecord:
        """A row of `agentmap_runs` (every column), its JSON columns read by `column`."""
        return cls(
            run_id=row["run_id"],
            thread_id=row["thread_id"],
            assistant_id=row["assistant_id"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            status=RunStatus(row["status"]),
            metadata=column(row, "metadata", {}),
            multitask_strategy=row["multitask_strategy"],
            graph_id=row["graph_id"],
            request=column(row, "request") or {},
            stateless=bool(row["stateless"]),
            user_id=row["user_id"],
            seq=int(row["seq"] or 0),
            owner=row["owner"],
            lease_until=float(row["lease_until"] or 0),
            attempt=int(row["attempt"] or 0),
            result=column(row, "result"),
            cancel=row["cancel"],
            webhook_due=row["webhook_due"],
            webhook_tries=int(row["webhook_tries"] or 0),
        )

    def public(self) -> dict[str, Any]:
        """The run as LangGraph's server returns it: without the queue's columns, with `cancel_reason` and
        `kwargs` (the request that made the run)."""
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "assistant_id": self.assistant_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "status": self.status,
            "metadata": self.metadata,
            "multitask_strategy": self.multitask_strategy,
            "cancel_reason": self.cancel,
            "kwargs": self.request.get("body", {}),
        }

    @property
    def webhook(self) -> str | None:
        """The `webhook` URL of the run's request, if it has one."""
        return webhook_of(self.request)


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadRecord:
    """A thread as the store keeps it (its graph state is in the checkpointer)."""

    thread_id: str
    created_at: str
    updated_at: str
    metadata: dict[str, Any]
    """The client's metadata, with `graph_id` and `assistant_id` once a run bound it to a graph."""
    status: ServerThreadStatus
    """As its last run left it (`busy` is read from its runs: `ThreadRows.busy`)."""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ThreadRecord:
        """A row of `agentmap_threads`."""
        return cls(
            thread_id=row["thread_id"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            metadata=column(row, "metadata", {}),
            status=ServerThreadStatus(row["status"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CronRecord:
    """A cron as the store keeps it: its schedule, the run body each tick starts, and its next tick."""

    cron_id: str
    assistant_id: str
    thread_id: str | None
    """The thread its ticks run on; None: each tick runs without one (`on_run_completed` says what is kept)."""
    schedule: str
    end_time: str | None
    next_run: int | None
    """Its next tick, in seconds since the epoch; None: no tick is left before `end_time`."""
    payload: dict[str, Any]
    """The body it was made with (updated by `crons.update`): what each tick's run body is made of."""
    metadata: dict[str, Any]
    enabled: bool
    on_run_completed: str | None
    created_at: str
    updated_at: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> CronRecord:
        """A row of `agentmap_crons`."""
        return cls(
            cron_id=row["cron_id"],
            assistant_id=row["assistant_id"],
            thread_id=row["thread_id"],
            schedule=row["schedule"],
            end_time=row["end_time"],
            next_run=row["next_run"],
            payload=column(row, "payload", {}),
            metadata=column(row, "metadata", {}),
            enabled=bool(row["enabled"]),
            on_run_completed=row["on_run_completed"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


class CronChanges(TypedDict, total=False):
    """The columns `crons.update` changes (`CronRows.update`): only those given are written."""

    schedule: str
    end_time: str | None
    next_run: int | None
    payload: dict[str, Any]
    metadata: dict[str, Any]
    enabled: bool
    on_run_completed: str


@dataclass(frozen=True, slots=True)
class Tick:
    """A cron's tick: the run it starts is accepted only by the replica that moves the cron from `due` to
    `following` (`RunRows.accept(tick=...)`), so each tick makes one run across replicas."""

    cron_id: str
    due: int
    following: int | None
    """The tick after it (None: the cron has none left)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionRecord:
    """A version of a served assistant: one revision of its workflow (`runtime.revisions`), numbered from 1 in the
    order the replicas first served it (`agentmap_assistant_versions`)."""

    assistant_id: str
    version: int
    graph_id: str
    revision: str
    """The revision's full id (the SHA-256 of its manifest)."""
    description: str
    metadata: dict[str, Any]
    """What the assistant's `metadata` says at this version (`file`, `revision`, `input_keys`, `state_keys`)."""
    created_at: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> VersionRecord:
        """A row of `agentmap_assistant_versions`."""
        return cls(
            assistant_id=row["assistant_id"],
            version=int(row["version"]),
            graph_id=row["graph_id"],
            revision=row["revision"],
            description=row["description"] or "",
            metadata=column(row, "metadata", {}),
            created_at=row["created_at"],
        )


def webhook_of(request: Mapping[str, Any]) -> str | None:
    """The `webhook` URL of a run's recorded request (`RunRequest.payload`, `RunRecord.request`), if it has one."""
    url = (request.get("body") or {}).get("webhook")
    return str(url) if url else None


def column(row: Mapping[str, Any], key: str, empty: Any = None) -> Any:
    """The JSON column `key` of a stored row, read so that one damaged record cannot fail every answer listing it.

    Text that is not JSON is read as `empty`; a lone surrogate (a thread's metadata took them before request bodies
    were checked, and no answer can carry one) is replaced by U+FFFD. Either is logged, naming the row.
    """
    text = row[key]
    if not text:
        return empty
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        _log.warning("%s: its %s is not JSON (%s), so it is answered as %r", _named(row), key, exc, empty)
        return empty
    if _SURROGATE_ESCAPE.search(text):  # json.dumps writes every character beyond U+FFFF as two of these too
        value, changed = repaired(value)
        if changed:
            _log.warning(
                "%s: its %s holds lone surrogates (stored before bodies were checked), answered as U+FFFD; "
                "delete it or write it again to clear this",
                _named(row),
                key,
            )
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _named(row: Mapping[str, Any]) -> str:
    for kind in ("run", "cron", "thread", "assistant"):
        if row.get(f"{kind}_id"):
            return f"{kind} {row[f'{kind}_id']}"
    return "a stored row"
