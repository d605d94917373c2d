"""The run store: thread and run records, the run queue and the crons, one interface over SQLite and PostgreSQL.

The graph state of a thread lives in the checkpointer; this store holds what the server adds around it: when a
thread was made, its metadata and status, its runs (which are also the queue), their events for followers on
other replicas, the crons and the webhook deliveries due, the audit log's table and the runs counted against quotas.

`Store` is made of parts, one per kind of row, each holding the SQL of its kind and sharing the store's
`Database` (how a transaction is made: `_sqlitestore.SqliteDatabase` serialises writers with `BEGIN IMMEDIATE`,
`_pgstore.PostgresDatabase` with row locks, `FOR UPDATE ... SKIP LOCKED`): `runs` (`_store_runs.py`, the queue),
`events` (`_store_events.py`), `threads` (`_store_threads.py`), `crons` and `deliveries` (`_store_crons.py`), `audit`
(`_audit.py`), `versions` (`_store_versions.py`, the assistants' versions); the quota's count is taken in
`RunRows.accept` (`_quota.py`). The routes, the protocols and the studio call their methods; none of them writes
SQL. What they take and give are the records of `_records.py`. A client's read takes the filter its user's auth
handler returned (`visible`, `_filters.Filter`), which the database turns into conditions of the query itself
(`Database.matching`).
"""

from __future__ import annotations

from agentmap.server._audit import AuditRows
from agentmap.server._database import Database
from agentmap.server._store_crons import CronRows, DeliveryRows
from agentmap.server._store_events import RunEventRows
from agentmap.server._store_runs import RunRows
from agentmap.server._store_threads import ThreadRows
from agentmap.server._store_versions import VersionRows

__all__ = ["Store", "open_store"]


class Store:
    """The run store's parts, over one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.threads = ThreadRows(db)
        self.runs = RunRows(db)
        """The runs, and the queue they make."""
        self.events = RunEventRows(db)
        self.crons = CronRows(db)
        self.deliveries = DeliveryRows(db)
        """The webhook deliveries due on the runs' rows."""
        self.audit = AuditRows(db)
        """The audit log's table (`--audit table`)."""
        self.versions = VersionRows(db)
        """The assistants' versions, and the one new runs take."""

    @property
    def shared(self) -> bool:
        """Whether other machines read this store: then a run's events are written to it for their followers."""
        return self.db.shared

    def unreachable(self, exc: BaseException) -> bool:
        """Whether `exc` says the database cannot be reached now (a lost connection), not that a run failed."""
        return self.db.unreachable(exc)

    def close(self) -> None:
        """Close the database's connections."""
        self.db.close()


def open_store(checkpoint: str) -> Store:
    """The run store beside the checkpointer `checkpoint` names: the same PostgreSQL database, the SQLite file
    itself (its own tables), or memory."""
    from agentmap.runtime.checkpoint import is_postgres, sqlite_path, state_file

    value = checkpoint.strip()
    if is_postgres(value):
        from agentmap.server._pgstore import PostgresDatabase

        return Store(PostgresDatabase(value))
    from agentmap.server._sqlitestore import SqliteDatabase

    if value.lower() == "memory":
        return Store(SqliteDatabase(None))
    path = sqlite_path(value) or state_file("serve.db")
    path.parent.mkdir(parents=True, exist_ok=True)
    return Store(SqliteDatabase(path))
