"""SQL in a checkpoint's own database: the tables AgentMap keeps beside LangGraph's checkpoints (the call
journal, the LLM response cache) are read and written through the saver's connection and lock, each statement in
its own transaction (or several in one: `saver_sql_many`), the table made on first use. What AgentMap keeps for a
saver in the process (that a table was made, the in-memory saver's journal and answers) is `kept_beside` it, never
set on the saver.

```python
execute = saver_sql(saver, "CREATE TABLE IF NOT EXISTS t (...)")   # None for a saver of another kind
rows = execute("SELECT a FROM t WHERE b = ?", ("x",))              # `?` placeholders for both databases
many = saver_sql_many(saver, "CREATE TABLE ...")                    # several statements, one transaction
counts = many([("UPDATE t SET a = ? WHERE b = ?", (1, "x")), ...])  # the rows each one changed
```
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any, TypeVar

__all__ = [
    "Create",
    "Execute",
    "ExecuteMany",
    "kept_beside",
    "postgres_sql",
    "postgres_trigger",
    "saver_kind",
    "saver_sql",
    "saver_sql_many",
    "sqlite_sql",
]

Execute = Callable[[str, tuple[Any, ...]], list[Any]]
ExecuteMany = Callable[[Sequence[tuple[str, tuple[Any, ...]]]], list[int]]
"""Statements run in one transaction (one commit: a batch writing a row per call pays one), each one's changed rows."""
Create = str | tuple[str, ...]
"""What makes a table: statements between `;`, or a tuple of statements (a trigger's body holds `;` of its own)."""


def _statements(create: Create) -> tuple[str, ...]:
    return tuple(create.split(";")) if isinstance(create, str) else create


def postgres_trigger(name: str, table: str, body: str) -> str:
    """A PostgreSQL statement making the row trigger `name`, run before each insert into `table` (its function
    `name()` doing `body`, a PL/pgSQL block that ends `RETURN NEW;`), unless it is there. Processes making it at
    once take turns (a transaction lock), and one finding it made takes no lock on the table."""
    return (
        f"DO $d$ BEGIN PERFORM pg_advisory_xact_lock(hashtext('{name}')); "
        f"IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = '{name}') THEN "
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN {body} END $f$; "
        f"CREATE TRIGGER {name} BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {name}(); END IF; END $d$"
    )


T = TypeVar("T")
_BESIDE: dict[int, dict[str, Any]] = {}  # id(saver) -> what is kept for it, dropped when the saver is
_BESIDE_LOCK = threading.RLock()  # what `make` makes may keep something beside the saver too


def kept_beside(saver: Any, what: str, make: Callable[[], T]) -> T:
    """What is kept for `saver` under the name `what` (`make()` the first time), for as long as the saver lives:
    no attribute is set on the saver (LangGraph's, or a user's), and a saver that is gone takes it along.

    What is kept must not refer to the saver (it would then live as long as the process).
    """
    kept = _BESIDE.get(id(saver))
    if kept is not None and what in kept:
        return kept[what]  # type: ignore[no-any-return]
    with _BESIDE_LOCK:
        kept = _BESIDE.get(id(saver))
        if kept is None:
            kept = _BESIDE[id(saver)] = {}
            weakref.finalize(saver, _BESIDE.pop, id(saver), None)  # before its id can be another object's
        if what not in kept:
            kept[what] = make()
        return kept[what]  # type: ignore[no-any-return]


def saver_kind(saver: Any) -> str | None:
    """`sqlite`, `postgres` or `memory` for LangGraph's savers of those kinds (and AgentMap's subclasses)."""
    names = {c.__name__ for c in type(saver).__mro__}
    for kind, name in (("sqlite", "SqliteSaver"), ("postgres", "PostgresSaver"), ("memory", "InMemorySaver")):
        if name in names:
            return kind
    return None


def saver_sql(saver: Any, create: Create) -> Execute | None:
    """How to run SQL in `saver`'s database (SQLite or PostgreSQL), `create` run once first; None for others."""
    return _for_saver(saver, create, {"sqlite": sqlite_sql, "postgres": postgres_sql})


def saver_sql_many(saver: Any, create: Create) -> ExecuteMany | None:
    """How to run several statements in one transaction in `saver`'s database (see `saver_sql`)."""
    return _for_saver(saver, create, {"sqlite": sqlite_sql_many, "postgres": postgres_sql_many})


def _for_saver(saver: Any, create: Create, makers: Mapping[str, Callable[..., T]]) -> T | None:
    """What `makers` makes for `saver`'s kind of database from its connection, lock and tables made; None for others."""
    maker = makers.get(saver_kind(saver) or "")
    return None if maker is None else maker(saver.conn, saver.lock, kept_beside(saver, "made", dict), create)


def _made_sqlite(conn: sqlite3.Connection, marks: MutableMapping[Any, Any], create: Create) -> None:
    if not marks.get(create):
        for statement in _statements(create):
            conn.execute(statement)
        marks[create] = True


def sqlite_sql(conn: sqlite3.Connection, lock: Any, marks: MutableMapping[Any, Any], create: Create) -> Execute:
    """SQL on a SQLite connection shared under `lock`; `marks` remembers that `create` ran."""

    def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
        with lock:
            _made_sqlite(conn, marks, create)
            try:
                rows = list(conn.execute(sql, params))
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        return rows

    return execute


def sqlite_sql_many(
    conn: sqlite3.Connection, lock: Any, marks: MutableMapping[Any, Any], create: Create
) -> ExecuteMany:
    """Statements in one transaction on a SQLite connection shared under `lock` (see `sqlite_sql`)."""

    def many(statements: Sequence[tuple[str, tuple[Any, ...]]]) -> list[int]:
        with lock:
            _made_sqlite(conn, marks, create)
            try:
                counts = [conn.execute(sql, params).rowcount for sql, params in statements]
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        return counts

    return many


def postgres_sql(pool: Any, lock: Any, marks: MutableMapping[Any, Any], create: Create) -> Execute:
    """SQL on a PostgreSQL connection or pool (a `PostgresSaver`'s `conn`) shared under `lock`; `marks`
    remembers that `create` ran."""
    from langgraph.checkpoint.postgres import _internal

    def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
        with lock, _internal.get_connection(pool) as conn:
            _made_postgres(conn, marks, create)
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(sql.replace("?", "%s"), params)
                rows = cur.fetchall() if cur.description else []
        return [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in rows]

    return execute


def postgres_sql_many(pool: Any, lock: Any, marks: MutableMapping[Any, Any], create: Create) -> ExecuteMany:
    """Statements in one transaction on a PostgreSQL connection or pool (see `postgres_sql`)."""
    from langgraph.checkpoint.postgres import _internal

    def many(statements: Sequence[tuple[str, tuple[Any, ...]]]) -> list[int]:
        counts = []
        with lock, _internal.get_connection(pool) as conn:
            _made_postgres(conn, marks, create)
            with conn.transaction(), conn.cursor() as cur:
                for sql, params in statements:
                    cur.execute(sql.replace("?", "%s"), params)
                    counts.append(cur.rowcount)
        return counts

    return many


def _made_postgres(conn: Any, marks: MutableMapping[Any, Any], create: Create) -> None:
    import psycopg

    if not marks.get(create):
        for statement in _statements(create):
            try:
                conn.execute(statement)
            except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable, psycopg.errors.DuplicateObject):
                # made by another process at the same moment (its table, or its row type): the next one is still made
                conn.rollback()
        marks[create] = True
