"""The run store's database in PostgreSQL: what every replica of `agentmap serve` on one database shares.

Connections come from psycopg's pool. The schema is made under an advisory lock, so replicas that start at the
same moment on an empty database wait for each other instead of deadlocking. Every change a replica must hear
of (a run accepted, ended, handed back, asked to stop) is a `NOTIFY agentmap_runs` sent with the transaction
that makes it; `listen` wakes the replica's queue and the clients waiting on a run from it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agentmap.errors import ConfigError, ErrorCode
from agentmap.server._audit import AUDIT_TABLE
from agentmap.server._database import Database, Tx, Where
from agentmap.server._filters import Filter
from agentmap.server._quota import QUOTA_TABLE
from agentmap.server._store_crons import CRON_TABLE
from agentmap.server._store_versions import VERSION_TABLES

__all__ = ["CHANNEL", "SCHEMA_LOCK", "PostgresDatabase"]

_log = logging.getLogger("agentmap.server")

CHANNEL = "agentmap_runs"
SCHEMA_LOCK = 0x41474D53  # "AGMS": the advisory lock held while a replica makes or upgrades the schema

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS agentmap_threads (thread_id TEXT PRIMARY KEY, created_at TEXT, updated_at TEXT, "
    "metadata TEXT, status TEXT)",
    "CREATE SEQUENCE IF NOT EXISTS agentmap_runs_seq",
    "CREATE TABLE IF NOT EXISTS agentmap_runs (run_id TEXT PRIMARY KEY, thread_id TEXT, assistant_id TEXT, "
    "created_at TEXT, updated_at TEXT, status TEXT, metadata TEXT, multitask_strategy TEXT, seq BIGINT, "
    "graph_id TEXT, request TEXT, owner TEXT, lease_until DOUBLE PRECISION DEFAULT 0, attempt INTEGER DEFAULT 0, "
    "result TEXT, cancel TEXT, stateless INTEGER DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS agentmap_run_events (run_id TEXT, seq INTEGER, event TEXT, data TEXT, "
    "PRIMARY KEY (run_id, seq))",
    "CREATE INDEX IF NOT EXISTS agentmap_runs_thread ON agentmap_runs (thread_id, seq)",
    "CREATE INDEX IF NOT EXISTS agentmap_runs_queue ON agentmap_runs (status, seq)",
    "ALTER TABLE agentmap_runs ADD COLUMN IF NOT EXISTS webhook_due DOUBLE PRECISION",
    "ALTER TABLE agentmap_runs ADD COLUMN IF NOT EXISTS webhook_tries INTEGER DEFAULT 0",
    "CREATE INDEX IF NOT EXISTS agentmap_runs_webhook ON agentmap_runs (webhook_due) WHERE webhook_due IS NOT NULL",
    "ALTER TABLE agentmap_run_events ADD COLUMN IF NOT EXISTS attempt INTEGER",  # an event's id: attempt.idx
    "ALTER TABLE agentmap_run_events ADD COLUMN IF NOT EXISTS idx INTEGER",
    CRON_TABLE,
    *VERSION_TABLES,
    "ALTER TABLE agentmap_runs ADD COLUMN IF NOT EXISTS user_id TEXT",  # who started it: what quotas count by
    "CREATE INDEX IF NOT EXISTS agentmap_runs_user ON agentmap_runs (user_id, status)",
    *AUDIT_TABLE,
    *QUOTA_TABLE,
    # a JSON column read as jsonb, or NULL when jsonb refuses it (a NUL character, a lone surrogate): one such row
    # cannot fail every filtered query (`matching`)
    "CREATE OR REPLACE FUNCTION agentmap_jsonb(value text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE STRICT "
    "PARALLEL SAFE AS $$ BEGIN RETURN value::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END $$",
]


class _PgTx:
    def __init__(self, cursor: Any) -> None:
        self._cur = cursor

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        self._cur.execute(sql.replace("?", "%s"), tuple(args))
        return list(self._cur.fetchall()) if self._cur.description else []

    def count(self, sql: str, args: Sequence[Any] = ()) -> int:
        self._cur.execute(sql.replace("?", "%s"), tuple(args))
        return int(self._cur.rowcount)


class PostgresDatabase(Database):
    """The store's database in PostgreSQL (`url`), shared by every replica."""

    def unreachable(self, exc: BaseException) -> bool:
        """A lost connection or a pool with none to give (a checkpoint write meets them too)."""
        import psycopg
        from psycopg_pool import PoolTimeout

        return isinstance(exc, (psycopg.OperationalError, PoolTimeout))

    claim_lock = " FOR UPDATE OF r SKIP LOCKED"
    shared = True
    next_seq = "nextval('agentmap_runs_seq')"
    clock = "EXTRACT(EPOCH FROM now())::float8"  # the transaction's start (see `RunRows.claim`)

    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        self._url = url
        try:
            self._pool = ConnectionPool(
                url, min_size=1, max_size=8, kwargs={"row_factory": dict_row, "prepare_threshold": None}, open=True
            )
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                for statement in _SCHEMA:
                    conn.execute(statement)
        except psycopg.Error as exc:
            raise ConfigError(
                f"cannot open the run store in PostgreSQL: {str(exc).strip()}",
                code=ErrorCode.BAD_CHECKPOINTER,
                hint="check the URL (postgresql://user:password@host:port/database) and that the server runs",
            ) from None

    def close(self) -> None:
        """Close the pool."""
        self._pool.close()

    def matching(self, column: str, wanted: Filter) -> Where:
        """Each term a `jsonb` comparison of the column's key (jsonb's equality: `"1"` is no `1`, `1` is `1.0`);
        `$contains` is jsonb's containment of the values in an array."""
        where = Where()
        for term in wanted.terms:
            if term.op == "eq":
                where = where.also(
                    f"agentmap_jsonb({column}) -> ?::text = agentmap_jsonb(?)", term.key, json.dumps(term.values[0])
                )
            else:
                where = where.also(
                    f"jsonb_typeof(agentmap_jsonb({column}) -> ?::text) = 'array' "
                    f"AND agentmap_jsonb({column}) -> ?::text @> agentmap_jsonb(?)",
                    term.key,
                    term.key,
                    json.dumps(list(term.values)),
                )
        return where

    @contextmanager
    def transaction(self) -> Iterator[_PgTx]:
        """A transaction on a connection of the pool; one that changed a row wakes the other replicas."""
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            tx = _PgTx(cur)
            yield tx
            # every change of a run wakes the other replicas (sent when the transaction commits)
            if cur.statusmessage and not cur.statusmessage.startswith("SELECT"):
                self.announce(tx, "runs")

    def announce(self, tx: Tx, what: str) -> None:
        """`NOTIFY agentmap_runs` with `what`, sent when the transaction commits."""
        tx.rows("SELECT pg_notify(?, ?)", (CHANNEL, what))

    def lock_thread(self, tx: Tx, thread_id: str) -> None:
        """Hold the thread until the transaction ends (a replica accepting a run on it waits for this one)."""
        tx.rows("SELECT pg_advisory_xact_lock(hashtext(?))", (thread_id,))

    def lock_events(self, tx: Tx, run_id: str) -> None:
        """Hold the numbering of the run's events (two replicas writing them across a handover take turns)."""
        tx.rows("SELECT pg_advisory_xact_lock(hashtext(?))", (f"events {run_id}",))

    async def listen(self, wake: Callable[[str], None]) -> None:
        """Call `wake(what)` on every change any replica makes (`runs`: a run's record, `events`: a run's
        events), until cancelled; reconnecting when the connection drops, and waking then, as changes may have
        been missed."""
        import psycopg

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._url, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    wake("runs")
                    async for note in conn.notifies():
                        wake(note.payload)
            except psycopg.Error as exc:
                _log.warning("lost the run store's notifications (%s); reconnecting", str(exc).strip())
                wake("runs")
                await asyncio.sleep(1.0)
