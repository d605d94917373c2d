"""The call journal's rows: where they are kept, one class per store behind `JournalRows` (a table of the
checkpoint's database, SQLite or PostgreSQL, or the process's memory beside an in-memory saver), each row a
`JournalRow`, and how many entries each task wrote (`agentmap_journal_heads`, kept by a trigger). `rows_of(saver)`
picks a saver's store once. Whether a row read back is what was written is `_journal_seal.py`; what a row means
for a call, `journal.py`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol

from agentmap.agents._checkpoint_saves import Key
from agentmap.agents._saver_sql import (
    Execute,
    ExecuteMany,
    kept_beside,
    postgres_sql,
    postgres_sql_many,
    postgres_trigger,
    saver_kind,
    sqlite_sql,
    sqlite_sql_many,
)

__all__ = [
    "HEADS",
    "REPLAYS",
    "TABLE",
    "CallKey",
    "JournalRow",
    "JournalRows",
    "MemoryRows",
    "PostgresRows",
    "SqliteRows",
    "TaskRows",
    "create_statements",
    "rows_of",
]

TABLE = "agentmap_journal"
REPLAYS = "agentmap_journal_replays"  # each time a resume answered a call from its entry (for `threads show --calls`)
HEADS = "agentmap_journal_heads"  # how many entries each task wrote, kept by a trigger: a deleted entry is seen
_KEY = "thread_id, checkpoint_ns, step, node, task_id, call_index"
_TABLES = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, "
    "step INTEGER NOT NULL, node TEXT NOT NULL, task_id TEXT NOT NULL, call_index INTEGER NOT NULL, "
    "kind TEXT NOT NULL, name TEXT NOT NULL, digest TEXT NOT NULL, status TEXT NOT NULL, response TEXT, "
    f"started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION, duration_ms DOUBLE PRECISION, "
    f"PRIMARY KEY ({_KEY}))",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_task ON {TABLE} (task_id)",
    f"CREATE TABLE IF NOT EXISTS {REPLAYS} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, "
    "step INTEGER NOT NULL, node TEXT NOT NULL, task_id TEXT NOT NULL, call_index INTEGER NOT NULL, "
    "replayed_at DOUBLE PRECISION NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {REPLAYS}_thread ON {REPLAYS} (thread_id)",
    f"CREATE TABLE IF NOT EXISTS {HEADS} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, "
    "task_id TEXT NOT NULL, step INTEGER NOT NULL, node TEXT NOT NULL, entries INTEGER NOT NULL, "
    "PRIMARY KEY (thread_id, checkpoint_ns, task_id))",
    # entries journaled before heads were kept: counted once, when the table is still empty
    f"INSERT INTO {HEADS} SELECT thread_id, checkpoint_ns, task_id, min(step), min(node), count(*) FROM {TABLE} "
    f"WHERE NOT EXISTS (SELECT 1 FROM {HEADS}) GROUP BY thread_id, checkpoint_ns, task_id",
)
_SAME_TASK = "thread_id = NEW.thread_id AND checkpoint_ns = NEW.checkpoint_ns AND task_id = NEW.task_id"
_SAME_ENTRY = f"{_SAME_TASK} AND step = NEW.step AND node = NEW.node AND call_index = NEW.call_index"
_NEW_HEAD = (
    f"INSERT INTO {HEADS} SELECT NEW.thread_id, NEW.checkpoint_ns, NEW.task_id, NEW.step, NEW.node, 0 "
    f"WHERE NOT EXISTS (SELECT 1 FROM {HEADS} WHERE {_SAME_TASK})"
)
_COUNT = f"UPDATE {HEADS} SET entries = entries + 1 WHERE {_SAME_TASK}"
_CREATE = {
    "sqlite": (
        *_TABLES,
        f"CREATE TRIGGER IF NOT EXISTS {HEADS} BEFORE INSERT ON {TABLE} "
        f"WHEN NOT EXISTS (SELECT 1 FROM {TABLE} WHERE {_SAME_ENTRY}) BEGIN {_NEW_HEAD}; {_COUNT}; END",
    ),
    "postgres": (
        *_TABLES,
        postgres_trigger(
            HEADS,
            TABLE,
            f"IF NOT EXISTS (SELECT 1 FROM {TABLE} WHERE {_SAME_ENTRY}) THEN INSERT INTO {HEADS} VALUES "
            f"(NEW.thread_id, NEW.checkpoint_ns, NEW.task_id, NEW.step, NEW.node, 0) ON CONFLICT DO NOTHING; "
            f"{_COUNT}; END IF; RETURN NEW;",
        ),
    ),
}


def create_statements(kind: str) -> tuple[str, ...]:
    """The statements making the journal's tables and the trigger counting each task's entries (`sqlite`,
    `postgres`): the checkpoint savers run them when they set up their tables, the journal on first use."""
    return _CREATE[kind]


class CallKey(NamedTuple):
    """Where a call is journaled: LangGraph gives a task resumed from the same checkpoint the same id, and a node
    makes its calls in the same order, so a call has the same key in the run that crashed and in its resume."""

    thread_id: str
    checkpoint_ns: str
    step: int
    node: str
    task_id: str
    call_index: int


@dataclass(frozen=True, slots=True)
class JournalRow:
    """One entry of the journal as it is stored. Read back, its fields are what the store holds (a row changed on
    disk may hold anything): `_journal_seal.intact` says whether it is what was written."""

    key: CallKey
    kind: str
    """`model` or `tool`."""
    name: str
    digest: str
    """sha256 of the request (journal.digest)."""
    status: str
    """`started`, `finished` or `failed`."""
    response: str | None
    """The response column: the response as JSON, sealed with its checksum (`_journal_seal.seal`)."""
    started_at: float
    finished_at: float | None = None
    duration_ms: float | None = None

    def values(self) -> tuple[Any, ...]:
        """The row's columns, in the table's order."""
        call = (self.kind, self.name, self.digest, self.status, self.response)
        return (*self.key, *call, self.started_at, self.finished_at, self.duration_ms)


@dataclass(frozen=True, slots=True)
class TaskRows:
    """A task's entries, found by its task id or by the rest of their key (one damaged key column still matches),
    and how many entries the task wrote (None: not counted, as for entries journaled before the count was kept)."""

    rows: tuple[JournalRow, ...]
    written: int | None


class JournalRows(Protocol):
    """Where one checkpoint saver's journal entries are kept (`rows_of(saver)`)."""

    def get(self, key: CallKey) -> JournalRow | None:
        """The entry of call `key` as stored; None when the call was never journaled."""
        ...

    def put(self, row: JournalRow) -> None:
        """Write `row` in place of the entry of its key, if any (a call started, then finished or failed)."""
        ...

    def replayed(self, key: CallKey, at: float) -> None:
        """Count that a resume answered call `key` from its entry at `at` (`time.time()`)."""
        ...

    def saved(self, checkpoint: Key) -> bool:
        """Whether LangGraph's checkpoint (thread, namespace, id) is in the saver's store."""
        ...

    def task_rows(self, key: CallKey) -> TaskRows:
        """The entries of the task that makes call `key` (see `TaskRows`); none from a store whose rows nobody
        can change (the process's memory)."""
        ...

    def entries(self, thread_id: str) -> list[tuple[JournalRow, int]]:
        """The entries of thread `thread_id`, oldest call first (by start, then call index), each with how many
        times a resume answered its call from it."""
        ...

    def queued(self) -> list[JournalRow]:
        """Every entry `queued` for a provider batch job (`llm_batch.py`), oldest first."""
        ...

    def answered(self) -> list[JournalRow]:
        """Every model call's entry `finished` or `failed` (what a batch's calls cost:
        `journal_entries.answered_calls`)."""
        ...

    def settle_queued(self, rows: Sequence[JournalRow]) -> list[bool]:
        """Write each of `rows` (an answer: `finished` or `failed`) over its entry if that entry is still `queued`
        with the row's digest, all at once (one transaction); whether each was written."""
        ...


_COLUMNS = (
    "thread_id",
    "checkpoint_ns",
    "step",
    "node",
    "task_id",
    "call_index",
    "kind",
    "name",
    "digest",
    "status",
    "response",
    "started_at",
    "finished_at",
    "duration_ms",
)
_J = ", ".join(f"j.{c}" for c in _COLUMNS)
_REPLAYED = f"INSERT INTO {REPLAYS} VALUES (?, ?, ?, ?, ?, ?, ?)"
_PUT = (
    f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT ({_KEY}) DO UPDATE SET "
    "kind = excluded.kind, name = excluded.name, digest = excluded.digest, status = excluded.status, "
    "response = excluded.response, started_at = excluded.started_at, finished_at = excluded.finished_at, "
    "duration_ms = excluded.duration_ms"
)
_GET = (
    f"SELECT {_J} FROM {TABLE} j WHERE j.thread_id = ? AND j.checkpoint_ns = ? AND j.step = ? AND j.node = ? "
    "AND j.task_id = ? AND j.call_index = ?"
)
_NEAR = (  # and how many entries the task wrote: a row of NULLs but that when it has none
    f"SELECT {_J}, h.entries FROM (SELECT 1 AS one) o LEFT JOIN {HEADS} h ON h.thread_id = ? "
    f"AND h.checkpoint_ns = ? AND h.task_id = ? LEFT JOIN {TABLE} j ON j.task_id = ? "
    "OR (j.thread_id = ? AND j.checkpoint_ns = ? AND j.step = ? AND j.node = ?)"
)
_LIST = (
    f"SELECT {_J}, (SELECT count(*) FROM {REPLAYS} r WHERE r.thread_id = j.thread_id "
    "AND r.checkpoint_ns = j.checkpoint_ns AND r.step = j.step AND r.node = j.node AND r.task_id = j.task_id "
    f"AND r.call_index = j.call_index) FROM {TABLE} j WHERE j.thread_id = ? ORDER BY j.started_at, j.call_index"
)
_QUEUED = f"SELECT {_J} FROM {TABLE} j WHERE j.status = 'queued' ORDER BY j.started_at, j.call_index"
_ANSWERED = f"SELECT {_J} FROM {TABLE} j WHERE j.kind = 'model' AND j.status IN ('finished', 'failed')"
_SETTLE = (
    f"UPDATE {TABLE} SET status = ?, response = ?, finished_at = ?, duration_ms = ? WHERE thread_id = ? "
    "AND checkpoint_ns = ? AND step = ? AND node = ? AND task_id = ? AND call_index = ? AND status = 'queued' "
    "AND digest = ?"
)
_SAVED = "SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ? LIMIT 1"  # ids are unique


def _row(columns: Any) -> JournalRow:
    return JournalRow(CallKey(*columns[:6]), *columns[6:14])


class _InDatabase:
    """The journal's tables in the checkpoint's own database, through the saver's connection and lock."""

    def __init__(self, execute: Execute, many: ExecuteMany) -> None:
        self._execute = execute
        self._many = many

    def get(self, key: CallKey) -> JournalRow | None:
        found = self._execute(_GET, key)
        return _row(found[0]) if found else None

    def put(self, row: JournalRow) -> None:
        self._execute(_PUT, row.values())

    def replayed(self, key: CallKey, at: float) -> None:
        self._execute(_REPLAYED, (*key, at))

    def saved(self, checkpoint: Key) -> bool:
        thread, _, checkpoint_id = checkpoint
        return bool(self._execute(_SAVED, (thread, checkpoint_id)))

    def task_rows(self, key: CallKey) -> TaskRows:
        thread, ns, step, node, task, _ = key
        found = self._execute(_NEAR, (thread, ns, task, task, thread, ns, step, node))
        written = found[0][-1] if found else None
        return TaskRows(tuple(_row(r) for r in found if r[0] is not None), written)

    def entries(self, thread_id: str) -> list[tuple[JournalRow, int]]:
        return [(_row(r), int(r[-1])) for r in self._execute(_LIST, (thread_id,))]

    def queued(self) -> list[JournalRow]:
        return [_row(r) for r in self._execute(_QUEUED, ())]

    def answered(self) -> list[JournalRow]:
        return [_row(r) for r in self._execute(_ANSWERED, ())]

    def settle_queued(self, rows: Sequence[JournalRow]) -> list[bool]:
        if not rows:
            return []
        update = [(_SETTLE, (r.status, r.response, r.finished_at, r.duration_ms, *r.key, r.digest)) for r in rows]
        return [count > 0 for count in self._many(update)]


def _made(saver: Any) -> dict[Any, bool]:
    """Which tables were made in `saver`'s database (by the statements that make them): `saver_sql`'s marks."""
    return kept_beside(saver, "made", dict)


class SqliteRows(_InDatabase):
    """The journal of a `SqliteSaver` (and AgentMap's subclass of it): tables of its SQLite file."""

    def __init__(self, saver: Any) -> None:
        made = _made(saver)
        create = _CREATE["sqlite"]
        super().__init__(
            sqlite_sql(saver.conn, saver.lock, made, create), sqlite_sql_many(saver.conn, saver.lock, made, create)
        )


class PostgresRows(_InDatabase):
    """The journal of a `PostgresSaver` (and AgentMap's subclass of it): tables of its database."""

    def __init__(self, saver: Any) -> None:
        made = _made(saver)
        create = _CREATE["postgres"]
        super().__init__(
            postgres_sql(saver.conn, saver.lock, made, create),
            postgres_sql_many(saver.conn, saver.lock, made, create),
        )


class MemoryRows:
    """The journal of an `InMemorySaver`: kept in the process beside it, gone with it (and with the process)."""

    def __init__(self, saver: Any) -> None:
        self._storage = saver.storage  # LangGraph's checkpoints: thread -> namespace -> checkpoint id -> ...
        self._lock = threading.Lock()
        self._rows: dict[CallKey, JournalRow] = {}
        self._replays: dict[CallKey, int] = {}

    def get(self, key: CallKey) -> JournalRow | None:
        with self._lock:
            return self._rows.get(key)

    def put(self, row: JournalRow) -> None:
        with self._lock:
            self._rows[row.key] = row

    def replayed(self, key: CallKey, at: float) -> None:
        with self._lock:
            self._replays[key] = self._replays.get(key, 0) + 1

    def saved(self, checkpoint: Key) -> bool:
        thread, _, checkpoint_id = checkpoint
        return any(checkpoint_id in saved for saved in list(self._storage.get(thread, {}).values()))

    def task_rows(self, key: CallKey) -> TaskRows:
        return TaskRows((), None)  # nothing in memory is damaged on disk

    def entries(self, thread_id: str) -> list[tuple[JournalRow, int]]:
        with self._lock:
            found = [(row, self._replays.get(key, 0)) for key, row in self._rows.items() if key[0] == thread_id]
        return sorted(found, key=lambda entry: (entry[0].started_at, entry[0].key.call_index))

    def queued(self) -> list[JournalRow]:
        with self._lock:
            found = [row for row in self._rows.values() if row.status == "queued"]
        return sorted(found, key=lambda row: (row.started_at, row.key.call_index))

    def answered(self) -> list[JournalRow]:
        with self._lock:
            return [row for row in self._rows.values() if row.kind == "model" and row.status in ("finished", "failed")]

    def settle_queued(self, rows: Sequence[JournalRow]) -> list[bool]:
        written = []
        with self._lock:
            for row in rows:
                found = self._rows.get(row.key)
                ok = found is not None and found.status == "queued" and found.digest == row.digest
                if found is not None and ok:
                    self._rows[row.key] = replace(row, started_at=found.started_at)
                written.append(ok)
        return written


_STORES: dict[str, type[SqliteRows | PostgresRows | MemoryRows]] = {
    "sqlite": SqliteRows,
    "postgres": PostgresRows,
    "memory": MemoryRows,
}


def rows_of(saver: Any) -> JournalRows | None:
    """Where `saver` keeps the journal's rows (made the first time, then the same for as long as the saver
    lives), or None: no saver, or a saver of another kind (an async-only one, say), which keeps no journal."""
    if saver is None:
        return None
    store = _STORES.get(saver_kind(saver) or "")
    if store is None:
        return None
    return kept_beside(saver, "journal", lambda: store(saver))
