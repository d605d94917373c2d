"""The call journal read and settled from outside a node's run (`journal.py` records the calls as a node makes
them): a thread's entries (`agentmap threads show ID --calls`, a batch row's tokens and cost), the model calls
queued for provider batch jobs and the answers the batch writes into them, and the calls answered (what a batch
spent, call by call)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentmap.agents._journal_rows import CallKey, JournalRow, rows_of
from agentmap.agents._journal_seal import opened, seal, unsealed
from agentmap.agents.llm_batch import ANSWER_KEY, ERROR_KEY, Queued

__all__ = [
    "AnsweredCall",
    "Entry",
    "QueuedAnswer",
    "QueuedCall",
    "answer_queued",
    "answer_queued_many",
    "answered_calls",
    "journal_entries",
    "queued_calls",
]


@dataclass(frozen=True)
class Entry:
    """One journaled call, as `agentmap threads show ID --calls` lists it."""

    step: int
    node: str
    call_index: int
    kind: str
    name: str
    status: str
    duration_ms: float | None
    started_at: float
    task_id: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost: float | None = None
    replays: int = 0
    """How many times a resume answered the call from this entry instead of making it."""
    cache_hit: bool = False
    """Whether the LLM response cache answered the model call (no provider was called)."""

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON values."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class QueuedCall:
    """A model call journaled `queued` for a provider batch job: where it is, and the request to send."""

    key: CallKey
    digest: str
    name: str
    request: Queued | None
    """None: the entry holds no request the batch can read (damaged): the batch fails its row."""


def queued_calls(saver: Any) -> list[QueuedCall]:
    """Every call of `saver`'s journal waiting for a provider batch job, oldest first.

    Raises:
        CorruptCheckpointError: An entry is not what was written.
    """
    rows = rows_of(saver)
    if rows is None:
        return []
    found = []
    for row in rows.queued():
        text = opened(row)
        found.append(QueuedCall(row.key, row.digest, row.name, Queued.from_dict(json.loads(text) if text else None)))
    return found


def answer_queued(
    saver: Any, call: QueuedCall, *, answer: Any = None, usage: Any = None, error: str | None = None
) -> bool:
    """Write a provider batch job's `answer` (its body, with the call's `usage`: tokens and cost at the batch
    price) to the entry of `call` as `finished`, or its `error` as `failed`: the row's run reads it when it
    continues. Nothing is written (False) unless the entry is still the
    queued call it was (a call answered twice, or made meanwhile as a normal call, keeps its first answer)."""
    return answer_queued_many(saver, [QueuedAnswer(call, answer, usage, error)])[0]


@dataclass(frozen=True)
class QueuedAnswer:
    """What a provider batch job said of a queued call: its `answer` and `usage`, or its `error`."""

    call: QueuedCall
    answer: Any = None
    usage: Any = None
    error: str | None = None


def answer_queued_many(saver: Any, answers: Sequence[QueuedAnswer]) -> list[bool]:
    """`answer_queued` for many calls at once, in one transaction of the store (a job's answers cost one commit):
    whether each was written."""
    rows = rows_of(saver)
    if rows is None:
        return [False] * len(answers)
    now = time.time()
    settled: list[JournalRow] = []
    for given in answers:
        call = given.call
        response: dict[str, Any]
        if given.error is not None:
            status, response = "failed", {ERROR_KEY: given.error}
        else:
            status, response = "finished", {ANSWER_KEY: given.answer, "usage": given.usage or {}}
        text = seal(call.key, status, call.digest, json.dumps(response, ensure_ascii=False, default=str))
        settled.append(JournalRow(call.key, "model", call.name, call.digest, status, text, now, now, 0.0))
    return rows.settle_queued(settled)


@dataclass(frozen=True)
class AnsweredCall:
    """A model call of the journal that has its answer (`failed`: its error), with the tokens and cost it carries
    (`input_tokens`, `output_tokens`, `cached_tokens`, `cache_write_tokens`, `cost`: the price paid, a provider
    batch job's answer at the batch price)."""

    key: CallKey
    digest: str
    name: str
    failed: bool
    usage: Mapping[str, Any]


def answered_calls(saver: Any) -> list[AnsweredCall]:
    """Every model call of `saver`'s journal that was answered or failed (what a batch spent, call by call)."""
    rows = rows_of(saver)
    if rows is None:
        return []
    return [
        AnsweredCall(row.key, row.digest, row.name, row.status == "failed", _usage(row.response))
        for row in rows.answered()
    ]


def journal_entries(saver: Any, thread_id: str) -> list[Entry]:
    """The journal of `thread_id` in `saver`'s database, oldest call first (empty without one)."""
    rows = rows_of(saver)
    return [] if rows is None else [_entry(row, replays) for row, replays in rows.entries(thread_id)]


def _entry(row: JournalRow, replays: int) -> Entry:
    key = row.key
    return Entry(
        int(key.step),
        str(key.node),
        int(key.call_index),
        str(row.kind),
        str(row.name),
        str(row.status),
        row.duration_ms,
        row.started_at,
        str(key.task_id),
        replays=replays,
        **_usage(row.response),
    )


def _usage(response: Any) -> dict[str, Any]:
    """The tokens and cost a model call's journaled response carries beside the reply (llm/adapter.py)."""
    response = unsealed(response)
    try:
        usage = json.loads(response).get("usage") if response else None
    except (ValueError, AttributeError):
        return {}
    if not isinstance(usage, Mapping):
        return {}
    keys = ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens", "cost")
    found = {k: usage[k] for k in keys if isinstance(usage.get(k), (int, float))}
    return found | {"cache_hit": True} if usage.get("cache_hit") is True else found
