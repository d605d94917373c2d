"""A served run's states and the moves between them: one enum, one table, consulted wherever the store moves a run.

A run is `pending` from the moment it is accepted, `running` once a replica claims it (and again whenever a
replica claims it after its lease ran out or it was handed back), and ends `success`, `error` or `interrupted`
(paused on a question, stopped by a client, or cancelled while it waited on the queue). An ended run never
moves again: a paused thread is resumed by a new run.

The store (`_store_runs.py`) checks every move it makes against `MOVES` (`check_move`), and the statuses its
statements select from are read off the same table (`moved_from`), so a move the table does not allow is a bug
caught in one place, in the transaction that would have made it (which rolls back).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Literal

__all__ = [
    "ENDED",
    "MOVES",
    "UNFINISHED",
    "IllegalMove",
    "Mover",
    "RunStatus",
    "check_move",
    "moved_from",
    "sql_list",
]


class RunStatus(StrEnum):
    """A served run's status (`csv_specs/serve.md`), as the store keeps it and LangGraph's server shows it."""

    PENDING = "pending"
    """Accepted, waiting on the queue (or kept for the replica a client waits on)."""
    RUNNING = "running"
    """Claimed by a replica, which renews its lease while it runs it."""
    SUCCESS = "success"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    """Paused on a question, stopped by a client, or cancelled while it waited."""


UNFINISHED: tuple[RunStatus, ...] = (RunStatus.PENDING, RunStatus.RUNNING)
"""The statuses of a run that is still to end: waiting on the queue, or claimed by a replica."""
ENDED: tuple[RunStatus, ...] = (RunStatus.SUCCESS, RunStatus.ERROR, RunStatus.INTERRUPTED)
"""The statuses a run ends with."""

Mover = Literal["accept", "claim", "cancel", "finish"]
"""The store's operations that move a run (`RunRows.accept`, `claim`, `request_cancel`, `finish`)."""

MOVES: Mapping[tuple[RunStatus | None, RunStatus], Mover] = {
    (None, RunStatus.PENDING): "accept",
    (RunStatus.PENDING, RunStatus.RUNNING): "claim",
    (RunStatus.RUNNING, RunStatus.RUNNING): "claim",  # again: its lease ran out, or its replica handed it back
    (RunStatus.PENDING, RunStatus.INTERRUPTED): "cancel",  # still on the queue: it ends at once
    (RunStatus.RUNNING, RunStatus.SUCCESS): "finish",
    (RunStatus.RUNNING, RunStatus.ERROR): "finish",
    (RunStatus.RUNNING, RunStatus.INTERRUPTED): "finish",
}
"""Every move a run may make (`(before, after)`, `None`: not recorded yet), and the operation that makes it."""


class IllegalMove(RuntimeError):
    """A move of a run that `MOVES` does not allow: a bug in the server, never a client's mistake."""


def check_move(before: RunStatus | None, after: RunStatus, by: Mover) -> None:
    """Refuse a move of a run that `MOVES` does not give to `by`.

    Raises:
        IllegalMove: naming the move and the moves `by` may make.
    """
    if MOVES.get((before, after)) != by:
        allowed = ", ".join(f"{b or 'new'} -> {a}" for (b, a), mover in MOVES.items() if mover == by)
        raise IllegalMove(f"{by} cannot move a run from {before or 'new'} to {after} (it moves {allowed})")


def moved_from(after: RunStatus, by: Mover) -> tuple[RunStatus, ...]:
    """The statuses from which `by` moves a run to `after` (what its statement selects), in the enum's order."""
    return tuple(s for s in RunStatus if MOVES.get((s, after)) == by)


def sql_list(statuses: tuple[RunStatus, ...]) -> str:
    """`statuses` as an SQL list (`('pending', 'running')`), for `status IN ...` in the store's statements."""
    return "(" + ", ".join(f"'{s.value}'" for s in statuses) + ")"
