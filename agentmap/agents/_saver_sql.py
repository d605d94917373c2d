"""SQL in a checkpoint's own database: the tables AgentMap keeps beside LangGraph's checkpoints (the call
journal, the LLM response cache) are read and written through the saver's connection and lock, each statement in
its own transaction, the table made on first use.

```python
execute = saver_sql(saver, "CREATE TABLE IF NOT EXISTS t (...)")   # None for a saver of another kind
rows = execute("SELECT a FROM t WHERE b = ?", ("x",))              # `?` placeholders for both databases
```
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["Execute", "saver_kind", "saver_sql", "sqlite_sql"]

Execute = Callable[[str, tuple[Any, ...]], list[Any]]


def saver_kind(saver: Any) -> str | None:
    """`sqlite`, `postgres` or `memory` for LangGraph's savers of those kinds (and AgentMap's subclasses)."""
    names = {c.__name__ for c in type(saver).__mro__}
    for kind, name in (("sqlite", "SqliteSaver"), ("postgres", "PostgresSaver"), ("memory", "InMemorySaver")):
        if name in names:
            return kind
    return None


def saver_sql(saver: Any, create: str) -> Execute | None:
    """How to run SQL in `saver`'s database (SQLite or PostgreSQL), `create` (statements between `;`) run once
    first; None for others."""
    kind = saver_kind(saver)
    if kind == "sqlite":
        return sqlite_sql(saver.conn, saver.lock, saver.__dict__, create)
    if kind == "postgres":
        return _postgres_sql(saver, create)
    return None


def sqlite_sql(conn: sqlite3.Connection, lock: Any, marks: MutableMapping[str, Any], create: str) -> Execute:
    """SQL on a SQLite connection shared under `lock`; `marks` remembers that `create` ran."""

    def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
        with lock:
            if not marks.get(create):
                for statement in create.split(";"):
                    conn.execute(statement)
                marks[create] = True
            try:
                rows = list(conn.execute(sql, params))
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        return rows

    return execute


def _postgres_sql(saver: Any, create: str) -> Execute:
    import psycopg
    from langgraph.checkpoint.postgres import _internal

    def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
        with saver.lock, _internal.get_connection(saver.conn) as conn:
            if not saver.__dict__.get(create):
                try:
                    for statement in create.split(";"):
                        conn.execute(statement)
                except psycopg.errors.UniqueViolation:  # made by another process at the same moment
                    conn.rollback()
                saver.__dict__[create] = True
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(sql.replace("?", "%s"), params)
                rows = cur.fetchall() if cur.description else []
        return [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in rows]

    return execute
