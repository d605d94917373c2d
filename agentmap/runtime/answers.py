"""One answer per pause: an answer is claimed in the checkpoint database before the run continues.

Two resumes of one paused thread started together would otherwise both run, each with its own answer, and the
checkpoint written last would win without a word. Before a paused thread continues, each answer is inserted
into the table `agentmap_answers` of the checkpoint's own database, keyed by (thread, checkpoint namespace,
checkpoint id, interrupt id): the key is unique, so of two claims of one question exactly one is inserted; the
other reads the answer that won and is refused (`already-answered`).

SQLite and PostgreSQL savers (the ones `checkpointer()` makes, or LangGraph's own) and the in-memory saver
are covered; a claim made again by the same claimant (a server's run taken over by another replica) stands.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from agentmap.agents._saver_sql import kept_beside, saver_kind
from agentmap.errors import ConfigError, ErrorCode

__all__ = ["TABLE", "claim_answers", "claimants", "refuse_if_answered", "taken_answers"]

TABLE = "agentmap_answers"
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, "
    "checkpoint_id TEXT NOT NULL, interrupt_id TEXT NOT NULL, answer TEXT NOT NULL, claimant TEXT NOT NULL, "
    "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, interrupt_id))"
)
_INSERT = f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
_SELECT = (
    f"SELECT interrupt_id, answer, claimant FROM {TABLE} WHERE thread_id = ? AND checkpoint_ns = ? "
    "AND checkpoint_id = ?"
)
_MEMORY_LOCK = threading.Lock()
_LOOK_BACK = 20  # checkpoints searched back for the last pause
_INTERRUPT = "__interrupt__"  # the channel of LangGraph's pending writes that hold a pause's questions

Key = tuple[str, str, str]
Claims = dict[str, tuple[str, str]]  # interrupt id -> (the answer as JSON, who claimed it)


def claim_answers(
    saver: Any, config: Mapping[str, Any], answers: Mapping[str, Any], thread_id: str, claimant: str | None = None
) -> None:
    """Claim the answers (interrupt id -> answer) to the pause saved at `config` (a snapshot's config).

    Raises:
        ConfigError: Another resume claimed one of these questions first (`already-answered`, exit 2); its
            answer is in the message. None of these answers is kept then.
    """
    if not answers:
        return
    who = claimant or uuid.uuid4().hex
    mine = {str(i): (_text(a), who) for i, a in answers.items()}
    claims = _claims(saver, config, thread_id, mine)
    won = {i: claims[i] for i in mine if i in claims and claims[i][1] != who}
    if won:
        raise _taken(thread_id, ", ".join(mine[i][0] for i in won), won)


def refuse_if_answered(saver: Any, answer: Any, thread_id: str) -> None:
    """Refuse `answer` for a thread that no longer waits because its last pause was answered already (a second
    resume that arrived once the first had moved the run on).

    Raises:
        ConfigError: `already-answered`, naming the answer taken.
    """
    if _kind(saver) is None:
        return
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for saved in list(saver.list(config, limit=_LOOK_BACK)):  # a list: the saver's lock is held while it lists
        if any(write[1] == _INTERRUPT for write in saved.pending_writes or ()):
            claims = _claims(saver, saved.config, thread_id, {})
            if claims:
                raise _taken(thread_id, _text(answer), claims)
            return


def taken_answers(saver: Any, config: Mapping[str, Any], thread_id: str) -> dict[str, Any]:
    """The answers (interrupt id -> answer) claimed for the pause saved at `config` (empty when none was)."""
    return {i: json.loads(text) for i, (text, _) in _claims(saver, config, thread_id, {}).items()}


def claimants(saver: Any, config: Mapping[str, Any], thread_id: str) -> dict[str, str]:
    """Who claimed each answer (interrupt id -> claimant) of the pause saved at `config`."""
    return {i: who for i, (_, who) in _claims(saver, config, thread_id, {}).items()}


def _text(answer: Any) -> str:
    return json.dumps(answer, ensure_ascii=False, default=str)


def _claims(saver: Any, config: Mapping[str, Any], thread_id: str, mine: Claims) -> Claims:
    """Insert `mine` (unless a claim of the pause at `config` holds one of them), then read its claims."""
    configurable = config.get("configurable", {})
    checkpoint_id = configurable.get("checkpoint_id")
    if not checkpoint_id:
        return {}
    key: Key = (thread_id, str(configurable.get("checkpoint_ns") or ""), str(checkpoint_id))
    kind = _kind(saver)
    return {} if kind is None else kind(saver, key, mine)


def _kind(saver: Any) -> Any:
    """How to claim in `saver`'s database; None for a saver of another kind (an async-only one, say)."""

    return {"sqlite": _claim_sqlite, "postgres": _claim_postgres, "memory": _claim_memory}.get(saver_kind(saver) or "")


def _taken(thread_id: str, yours: str, won: Claims) -> ConfigError:
    theirs = ", ".join(text for text, _ in won.values())
    return ConfigError(
        f"thread {thread_id!r} was already answered: {theirs} was taken by another resume, which continues the "
        f"run; your answer {yours} was not used",
        code=ErrorCode.ALREADY_ANSWERED,
        hint=f"`agentmap threads show {thread_id}` shows where the run stands now (if it still waits, the resume "
        f"that took the answer stopped first: `agentmap resume {thread_id}` continues with that answer)",
    )


def _claim_sqlite(saver: Any, key: Key, mine: Claims) -> Claims:
    conn = saver.conn
    with saver.lock:
        conn.execute(_CREATE)
        conn.commit()
        conn.execute("BEGIN IMMEDIATE")  # the write lock first: the insert and the read see one state
        try:
            conn.executemany(_INSERT, [(*key, i, text, who) for i, (text, who) in mine.items()])
            claims: Claims = {r[0]: (r[1], r[2]) for r in conn.execute(_SELECT, key)}
            _finish(conn, claims, mine)
        except BaseException:
            conn.rollback()
            raise
    return claims


def _finish(conn: Any, claims: Claims, mine: Claims) -> None:
    """Keep the claim only when every answer of it was taken (never half of a set of answers)."""
    if all(claims.get(i) == mine[i] for i in mine):
        conn.commit()
    else:
        conn.rollback()


def _claim_postgres(saver: Any, key: Key, mine: Claims) -> Claims:
    import psycopg
    from langgraph.checkpoint.postgres import _internal

    with saver.lock, _internal.get_connection(saver.conn) as conn:
        with contextlib.suppress(psycopg.errors.UniqueViolation):  # made by another process at the same moment
            conn.execute(_CREATE)
        with conn.transaction():
            with conn.cursor() as cur:
                cur.executemany(_pg(_INSERT), [(*key, i, text, who) for i, (text, who) in mine.items()])
                cur.execute(_pg(_SELECT), key)
                claims: Claims = {_field(r, 0): (_field(r, 1), _field(r, 2)) for r in cur.fetchall()}
            if not all(claims.get(i) == mine[i] for i in mine):
                raise psycopg.Rollback()  # never half of a set of answers
    return claims


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


def _field(row: Any, index: int) -> str:
    return str(row[("interrupt_id", "answer", "claimant")[index]] if isinstance(row, Mapping) else row[index])


def _claim_memory(saver: Any, key: Key, mine: Claims) -> Claims:

    table: dict[Key, Claims] = kept_beside(saver, "answers", dict)  # the in-memory saver's claims, beside it
    with _MEMORY_LOCK:
        claims = table.setdefault(key, {})
        if not any(i in claims for i in mine):
            claims.update(mine)
        return dict(claims)
