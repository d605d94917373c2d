"""The head of each thread: what was written, kept by the database itself, so that a row deleted is noticed.

A record's checksum says what it is and where it was written (`_integrity.py`), but a row that is gone leaves
nothing to check: a thread whose newest checkpoints were deleted (or restored from an older backup) reads as a
thread that stopped earlier, and resuming it runs finished steps again. So the table `agentmap_heads` keeps,
for each thread and checkpoint namespace, its newest checkpoint id, how many checkpoints were written, the
newest checkpoint that has pending writes and how many, and how many checkpoints name a parent that is not
there (the gaps a person accepted by going on with `--from-checkpoint`); `agentmap_journal_heads` keeps how
many call journal entries each task wrote. Triggers in the database keep both, in the transaction that inserts
the row: no extra round trip, whoever writes. Deleting rows updates neither.

`check` compares them with the rows, in one query, when a thread is opened (its latest checkpoint read), not
at each step. `recount` takes the rows as they are (going on from a chosen checkpoint accepts what is missing).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from agentmap.agents._journal_rows import HEADS as JOURNAL_HEADS
from agentmap.agents._journal_rows import TABLE as JOURNAL
from agentmap.agents._journal_rows import create_statements as journal_tables
from agentmap.agents._saver_sql import postgres_trigger

__all__ = ["Problem", "check", "forget", "install", "recount"]

HEADS = "agentmap_heads"

_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {HEADS} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, "
    "checkpoint_id TEXT NOT NULL DEFAULT '', checkpoints INTEGER NOT NULL DEFAULT 0, "
    "writes_of TEXT NOT NULL DEFAULT '', writes INTEGER NOT NULL DEFAULT 0, gaps INTEGER NOT NULL DEFAULT 0, "
    "PRIMARY KEY (thread_id, checkpoint_ns))"
)
_SAME_HEAD = "thread_id = NEW.thread_id AND checkpoint_ns = NEW.checkpoint_ns"
_SAME_CHECKPOINT = f"{_SAME_HEAD} AND checkpoint_id = NEW.checkpoint_id"
_UPSERT = (  # UPSERT inside a trigger keeps its own conflict clause, whatever the outer statement's (`OR REPLACE`)
    f"INSERT INTO {HEADS} (thread_id, checkpoint_ns, {{columns}}) "
    "VALUES (NEW.thread_id, NEW.checkpoint_ns, {values}) "
    f"ON CONFLICT (thread_id, checkpoint_ns) DO UPDATE SET {{update}}"
)
_CHECKPOINT = {
    "columns": "checkpoint_id, checkpoints",
    "values": "NEW.checkpoint_id, 1",
    "update": f"checkpoints = {HEADS}.checkpoints + 1, "
    f"checkpoint_id = {{max}}({HEADS}.checkpoint_id, NEW.checkpoint_id)",
}
_WRITE = {
    "columns": "writes_of, writes",
    "values": "NEW.checkpoint_id, 1",
    "update": f"writes = CASE WHEN {HEADS}.writes_of = NEW.checkpoint_id THEN {HEADS}.writes + 1 "
    f"WHEN {HEADS}.writes_of < NEW.checkpoint_id THEN 1 ELSE {HEADS}.writes END, "
    f"writes_of = {{max}}({HEADS}.writes_of, NEW.checkpoint_id)",
}


def _upsert(counted: dict[str, str], greatest: str) -> str:
    return _UPSERT.format(**counted).format(max=greatest)


def _sqlite_triggers() -> list[str]:
    return [
        f"CREATE TRIGGER IF NOT EXISTS {HEADS}_checkpoint BEFORE INSERT ON checkpoints "
        f"WHEN NOT EXISTS (SELECT 1 FROM checkpoints WHERE {_SAME_CHECKPOINT}) "
        f"BEGIN {_upsert(_CHECKPOINT, 'max')}; END",
        f"CREATE TRIGGER IF NOT EXISTS {HEADS}_write BEFORE INSERT ON writes "
        f"WHEN NOT EXISTS (SELECT 1 FROM writes WHERE {_SAME_CHECKPOINT} AND task_id = NEW.task_id AND idx = NEW.idx) "
        f"BEGIN {_upsert(_WRITE, 'max')}; END",
    ]


def _postgres_triggers() -> list[str]:
    write = f"{_SAME_CHECKPOINT} AND task_id = NEW.task_id AND idx = NEW.idx"
    return [
        postgres_trigger(
            f"{HEADS}_{name}",
            table,
            f"IF NOT EXISTS (SELECT 1 FROM {table} WHERE {same}) THEN {_upsert(counted, 'GREATEST')}; END IF; "
            "RETURN NEW;",
        )
        for name, table, same, counted in (
            ("checkpoint", "checkpoints", _SAME_CHECKPOINT, _CHECKPOINT),
            ("write", "checkpoint_writes", write, _WRITE),
        )
    ]


def _writes(postgres: bool) -> str:
    return "checkpoint_writes" if postgres else "writes"


def _counted(postgres: bool, where: str) -> str:
    """The heads of the threads `where` selects, counted from their rows."""
    writes = _writes(postgres)
    same = "w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns"
    newest_write = f"(SELECT max(w.checkpoint_id) FROM {writes} w WHERE {same})"
    return (
        f"INSERT INTO {HEADS} (thread_id, checkpoint_ns, checkpoint_id, checkpoints, writes_of, writes, gaps) "
        f"SELECT c.thread_id, c.checkpoint_ns, max(c.checkpoint_id), count(*), coalesce({newest_write}, ''), "
        f"(SELECT count(*) FROM {writes} w WHERE {same} AND w.checkpoint_id = {newest_write}), "
        f"(SELECT count(*) FROM checkpoints d WHERE d.thread_id = c.thread_id AND d.checkpoint_ns = c.checkpoint_ns "
        f"AND {_ORPHAN.format('d')}) FROM checkpoints c {where} GROUP BY c.thread_id, c.checkpoint_ns"
    )


_ORPHAN = (  # a checkpoint whose parent is not there
    "{0}.parent_checkpoint_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM checkpoints p WHERE p.thread_id = "
    "{0}.thread_id AND p.checkpoint_ns = {0}.checkpoint_ns AND p.checkpoint_id = {0}.parent_checkpoint_id)"
)


def install(saver: Any, conn: Any) -> None:
    """Make the heads tables and their triggers in `saver`'s database (on its connection `conn`), counting the
    threads already there the first time; the call journal's tables too, which the check reads."""
    postgres = hasattr(saver, "_cursor")
    if postgres:
        with conn.transaction():
            made = conn.execute(f"SELECT to_regclass('{HEADS}') IS NOT NULL AS made").fetchone()["made"]
            for statement in [_TABLE, *_postgres_triggers(), *journal_tables("postgres")]:
                conn.execute(statement)
            if not made:
                conn.execute(_counted(True, ""))
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "readonly" in str(exc):
            return  # a read-only file: nothing can be written to it, nor deleted
        raise
    try:
        made = conn.execute(f"SELECT 1 FROM sqlite_master WHERE name = '{HEADS}'").fetchone() is not None
        for statement in [_TABLE, *_sqlite_triggers(), *journal_tables("sqlite")]:
            conn.execute(statement)
        if not made:
            conn.execute(_counted(False, ""))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _execute(saver: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
    """Run `statements` in one transaction of `saver`'s database; the rows of the last."""
    rows: list[Any] = []
    if hasattr(saver, "_cursor"):
        from langgraph.checkpoint.postgres import _internal

        with saver.lock, _internal.get_connection(saver.conn) as conn, conn.transaction(), conn.cursor() as cur:
            for sql, params in statements:
                cur.execute(sql.replace("?", "%s"), params)
            if cur.description:
                rows = [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in cur.fetchall()]
        return rows
    with saver.cursor() as cur:
        for sql, params in statements:
            rows = list(cur.execute(sql, params).fetchall())
    return rows


def recount(saver: Any, thread_id: str) -> None:
    """Take thread `thread_id`'s rows as they are: its heads counted anew from its checkpoints, writes and call
    journal (what a person accepts by going on from a chosen checkpoint)."""
    postgres = hasattr(saver, "_cursor")
    _execute(
        saver,
        [
            (f"DELETE FROM {HEADS} WHERE thread_id = ?", (thread_id,)),
            (_counted(postgres, "WHERE c.thread_id = ?"), (thread_id,)),
            (
                f"UPDATE {JOURNAL_HEADS} SET entries = (SELECT count(*) FROM {JOURNAL} j WHERE "
                f"j.thread_id = {JOURNAL_HEADS}.thread_id AND j.checkpoint_ns = {JOURNAL_HEADS}.checkpoint_ns "
                f"AND j.task_id = {JOURNAL_HEADS}.task_id) WHERE thread_id = ?",
                (thread_id,),
            ),
        ],
    )


def forget(saver: Any, thread_id: str) -> None:
    """Drop thread `thread_id`'s heads (the thread was deleted)."""
    _execute(saver, [(f"DELETE FROM {HEADS} WHERE thread_id = ?", (thread_id,))])


_LOST_ENTRIES = (
    f"FROM {JOURNAL_HEADS} h WHERE h.thread_id = ? AND h.entries > (SELECT count(*) FROM {JOURNAL} j "
    "WHERE j.thread_id = h.thread_id AND j.checkpoint_ns = h.checkpoint_ns AND j.task_id = h.task_id)"
)
_ORPHANS = f"FROM checkpoints c WHERE c.thread_id = ? AND c.checkpoint_ns = ? AND {_ORPHAN.format('c')}"
_CHECK = (  # every column named: PostgreSQL's rows are dicts
    "SELECT h.checkpoint_id AS head, h.checkpoints AS written, h.writes_of AS writes_of, h.writes AS writes, "
    "h.gaps AS gaps, (SELECT count(*) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?) AS present, "
    "(SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?) AS newest, "
    "(SELECT count(*) FROM {writes} w WHERE w.thread_id = ? AND w.checkpoint_ns = ? "
    "AND w.checkpoint_id = h.writes_of) AS writes_there, (SELECT count(*) {orphans}) AS orphans, "
    f"(SELECT count(*) {_LOST_ENTRIES}) AS lost "
    f"FROM (SELECT 1 AS one) o LEFT JOIN {HEADS} h ON h.thread_id = ? AND h.checkpoint_ns = ?"
)


@dataclass(frozen=True)
class Problem:
    """What is missing from a thread: a sentence, the checkpoint to go on from (if any), and what going on from
    it runs again."""

    text: str
    go_on_from: str | None = None
    reruns: str = ""


def check(saver: Any, thread_id: str, ns: str) -> Problem | None:
    """What is missing from thread `thread_id` (namespace `ns`) against its heads, or None when nothing is.

    A database without heads (a read-only file made before them) is not checked.
    """
    postgres = hasattr(saver, "_cursor")
    params = (thread_id, ns) * 4 + (thread_id, thread_id, ns)
    try:
        (row,) = _execute(saver, [(_CHECK.format(writes=_writes(postgres), orphans=_ORPHANS), params)])
    except Exception as exc:
        if HEADS in str(exc) and ("no such table" in str(exc) or "does not exist" in str(exc)):
            return None  # a file made read-only before it had heads
        raise
    head, written, writes_of, writes, gaps, present, newest, writes_there, orphans, lost = row
    if head is None:
        if present:
            return Problem("its record of the checkpoints written (agentmap_heads) is gone", newest)
        return None
    if not present:  # (none written: its first writes were saved, its first checkpoint not yet)
        return Problem(f"all {written} of its checkpoints are gone") if written else None
    if newest != head:
        if newest < head and present == written:
            return Problem(f"its newest checkpoint {head} is not there, and {newest} stands in its place (renamed)")
        if newest < head:
            return Problem(
                f"its newest checkpoint {head} is missing ({written} were written, {present} are there)",
                newest,
                "the steps after it run again",
            )
        return Problem(f"checkpoint {newest} is newer than any its runs wrote (an id renamed, or a row copied in)")
    if present < written:
        missing = written - present
        return Problem(f"{missing} of its {written} checkpoints {'is' if missing == 1 else 'are'} missing", newest)
    if present > written:
        return Problem(f"it has {present} checkpoints where its runs wrote {written} (rows copied in)")
    if orphans > gaps:
        orphan = _one(saver, f"SELECT min(c.checkpoint_id) AS orphan {_ORPHANS}", (thread_id, ns))
        return Problem(f"checkpoint {orphan} names a parent checkpoint that is not there (deleted, or renamed)", newest)
    if writes_of == head and writes_there != writes:
        return Problem(
            f"{writes - writes_there} of the {writes} pending writes of its latest checkpoint {head} are missing",
            head,
            "the nodes whose writes are missing run again",
        )
    if lost:
        return _lost_entry(saver, thread_id, newest)
    return None


def _lost_entry(saver: Any, thread_id: str, newest: str) -> Problem:
    """The first call journal entry of the thread that is gone (a node numbers its calls from 0)."""
    columns = "SELECT h.checkpoint_ns AS ns, h.task_id AS task, h.node AS node, h.step AS step, h.entries AS entries"
    ns, task, node, step, entries = _one(saver, f"{columns} {_LOST_ENTRIES}", (thread_id,), whole=True)
    there = _execute(
        saver,
        [
            (
                f"SELECT call_index FROM {JOURNAL} WHERE thread_id = ? AND checkpoint_ns = ? AND task_id = ?",
                (thread_id, ns, task),
            )
        ],
    )
    gone = min(set(range(int(entries))) - {int(r[0]) for r in there}, default=entries - 1)
    return Problem(
        f"the call journal's entry for call {gone} of node {node!r} (step {step}) is missing (deleted, or "
        "damaged in its key): it was not replayed, and the call it recorded is not made again",
        newest,
        "a call whose entry is missing is made again if its node runs again",
    )


def _one(saver: Any, sql: str, params: tuple[Any, ...], *, whole: bool = False) -> Any:
    rows = _execute(saver, [(sql, params)])
    if not rows:
        return (None, None) if whole else None
    return rows[0] if whole else rows[0][0]
