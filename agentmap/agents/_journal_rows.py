"""The call journal's rows: where they are kept (a table of the checkpoint's database, or on an in-memory saver),
how each is sealed with a checksum of its key, status, request digest and response, and how many each task wrote
(`agentmap_journal_heads`, kept by a trigger): an entry changed or deleted is `corrupt-checkpoint`, never a call
made again (`journal.py` decides what a row means for a call).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from agentmap.agents._node_calls import NODE
from agentmap.agents._saver_sql import postgres_trigger, saver_kind, saver_sql
from agentmap.errors import CorruptCheckpointError

__all__ = [
    "HEADS",
    "REPLAYS",
    "TABLE",
    "check_task",
    "create_statements",
    "intact",
    "opened",
    "rows_of",
    "seal",
    "unsealed",
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


_REPLAYED = f"INSERT INTO {REPLAYS} VALUES (?, ?, ?, ?, ?, ?, ?)"
_PUT = (
    f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT ({_KEY}) DO UPDATE SET "
    "kind = excluded.kind, name = excluded.name, digest = excluded.digest, status = excluded.status, "
    "response = excluded.response, started_at = excluded.started_at, finished_at = excluded.finished_at, "
    "duration_ms = excluded.duration_ms"
)
_GET = (
    f"SELECT status, digest, response FROM {TABLE} WHERE thread_id = ? AND checkpoint_ns = ? AND step = ? "
    "AND node = ? AND task_id = ? AND call_index = ?"
)
_NEAR = (  # a task's entries, found by its task id or by the rest of its key: one damaged key column still matches;
    # and how many entries the task wrote (a row of NULLs but that when it has none)
    "SELECT j.thread_id, j.checkpoint_ns, j.step, j.node, j.task_id, j.call_index, j.status, j.digest, j.response, "
    f"h.entries FROM (SELECT 1 AS one) o LEFT JOIN {HEADS} h ON h.thread_id = ? AND h.checkpoint_ns = ? "
    f"AND h.task_id = ? LEFT JOIN {TABLE} j ON j.task_id = ? "
    "OR (j.thread_id = ? AND j.checkpoint_ns = ? AND j.step = ? AND j.node = ?)"
)
_LIST = (
    "SELECT step, node, call_index, kind, name, status, duration_ms, started_at, task_id, response, "
    f"(SELECT count(*) FROM {REPLAYS} r WHERE r.thread_id = j.thread_id AND r.checkpoint_ns = j.checkpoint_ns "
    "AND r.step = j.step AND r.node = j.node AND r.task_id = j.task_id AND r.call_index = j.call_index) "
    f"FROM {TABLE} j WHERE thread_id = ? ORDER BY started_at, call_index"
)
_SAVED = "SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ? LIMIT 1"  # ids are unique
_MEMORY_LOCK = threading.Lock()


def rows_of(saver: Any) -> Callable[..., Any] | None:
    """How `saver` keeps the journal's rows (`f(saver, op, key, values)`), or None: a saver of another kind."""
    kind = saver_kind(saver)
    if kind in ("sqlite", "postgres"):
        return _in_database
    return _memory if kind == "memory" else None


_SEAL = "b3:"  # no JSON text starts so: a response written before checksums is read as it is
_SEAL_V2 = "b2:"  # the checksum of entries written before it covered the key
_STATUSES = ("started", "finished", "failed")


def _checksum(key: tuple[Any, ...] | None, status: str, request_digest: str, text: str | None) -> str:
    fields = (*(str(k) for k in key or ()), status, request_digest, text or "")
    return hashlib.blake2b("\x00".join(fields).encode("utf-8"), digest_size=16).hexdigest()


def seal(key: tuple[Any, ...], status: str, request_digest: str, text: str | None) -> str:
    """The response column: a checksum of the entry's key (thread, namespace, step, node, task, call index),
    status, request digest and response, then the response."""
    return f"{_SEAL}{_checksum(key, status, request_digest, text)}:{text or ''}"


def unsealed(text: str | None) -> str | None:
    """The response inside a response column, unchecked (for listing)."""
    if text is None or not text.startswith((_SEAL, _SEAL_V2)):
        return text
    return text[len(_SEAL) + 33 :] or None


def intact(key: tuple[Any, ...], status: str, request_digest: str, text: str | None) -> bool:
    """Whether an entry read back is what was written (an entry written before checksums is taken as it is)."""
    if status not in _STATUSES:
        return False
    if text is None or not text.startswith((_SEAL, _SEAL_V2)):  # written before checksums
        return True
    inner = unsealed(text)
    version = None if text.startswith(_SEAL_V2) else key
    return text == f"{text[:3]}{_checksum(version, status, request_digest, inner)}:{inner or ''}"


def _run_sql(execute: Callable[[str, tuple[Any, ...]], Any], op: str, key: tuple[Any, ...], values: Any) -> Any:
    if op == "get":
        rows = execute(_GET, key)
        return rows[0] if rows else None
    if op == "put":
        return execute(_PUT, (*key, *values))
    if op == "replayed":
        return execute(_REPLAYED, (*key, *values))
    if op == "saved":  # whether LangGraph's checkpoint (thread, namespace, id) is in the store
        return bool(execute(_SAVED, (key[0], key[2])))
    if op == "near":  # key: task, thread, namespace, step, node
        return execute(_NEAR, (key[1], key[2], key[0], *key))
    return execute(_LIST, key)


def _in_database(saver: Any, op: str, key: tuple[Any, ...], values: Any = None) -> Any:
    execute = saver_sql(saver, _CREATE[saver_kind(saver) or "sqlite"])
    assert execute is not None
    return _run_sql(execute, op, key, values)


def _memory(saver: Any, op: str, key: tuple[Any, ...], values: Any = None) -> Any:
    if op == "saved":
        thread, _, checkpoint_id = key
        return any(checkpoint_id in saved for saved in list(saver.storage.get(thread, {}).values()))
    with _MEMORY_LOCK:
        table: dict[tuple[Any, ...], list[Any]] = saver.__dict__.setdefault("_agentmap_journal_rows", {})
        if op == "get":
            row = table.get(key)
            return None if row is None else (row[3], row[2], row[4])
        replays: dict[tuple[Any, ...], int] = saver.__dict__.setdefault("_agentmap_journal_replays", {})
        if op == "put":
            table[key] = list(values)  # kind, name, digest, status, response, started_at, finished_at, duration
        elif op == "replayed":
            replays[key] = replays.get(key, 0) + 1
        elif op == "list":
            rows = [(k[2], k[3], k[5], r[0], r[1], r[3], r[7], r[5], k[4], r[4], replays.get(k, 0))
                    for k, r in table.items() if k[0] == key[0]]  # fmt: skip
            return sorted(rows, key=lambda r: (r[7], r[2]))
        return []  # `near`: nothing in memory is damaged on disk


def opened(key: tuple[Any, ...], status: str, request_digest: str, text: str | None) -> str | None:
    """The response of the entry `key` read back, its checksum checked.

    Raises:
        CorruptCheckpointError: The entry is not what was written (its status, request digest or response
            changed on disk): it is never replayed, and the call is never made again on its account.
    """
    if not intact(key, status, request_digest, text):
        raise _damaged(key)
    return unsealed(text)


def check_task(saver: Any, rows: Callable[..., Any], key: tuple[Any, ...]) -> None:
    """At a node's first call the journal has no entry for (`key`), check its task's entries: one whose key was
    damaged on disk (its thread, step, node, task or call index) is not found by its key, and one deleted is not
    found at all (fewer entries than the task wrote): the call it recorded would be made again without a word.

    Raises:
        CorruptCheckpointError: An entry of the task does not match its checksum, or is missing.
    """
    node = NODE.get()
    if node is None or node.checked:
        return
    node.checked = True
    thread, ns, step, name, task, _ = key
    found = rows(saver, "near", (task, thread, ns, step, name))
    present = [row for row in found if row[0] is not None]
    for row in present:
        if not intact(tuple(row[:6]), *row[6:9]):
            raise _damaged(key)
    written = found[0][9] if found and len(found[0]) > 9 else None
    if written is not None and len(present) < written:
        raise _damaged(key, f"holds {len(present)} of the {written} entries it wrote (deleted)")


def _damaged(key: tuple[Any, ...], what: str = "") -> CorruptCheckpointError:
    thread, _, step, node, _, index = key
    found = (
        f"the call journal of node {node!r} (step {step}) {what}; no call was made again"
        if what
        else f"the call journal's entry for call {index} of node {node!r} (step {step}) is damaged; it was not replayed"
    )
    return CorruptCheckpointError(
        f"thread {thread!r}: {found}",
        hint=f"`agentmap threads show {thread}` lists the thread's checkpoints: continue from the one before that "
        f"step with agentmap resume {thread} --from-checkpoint ID",
    )
