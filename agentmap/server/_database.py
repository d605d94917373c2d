"""The run store's database: one transaction interface over SQLite and PostgreSQL, and the conditions of a query.

A `Database` knows how to make a transaction (`transaction()`, serialised against other writers), how to hold a
thread or a run's event numbering until it ends, how to wake the other replicas, and the few bits of SQL that
differ (the database's clock, the next queue number, the row lock of a claim). `_sqlitestore.SqliteDatabase`
and `_pgstore.PostgresDatabase` are the two; the store's parts (`_store.py`) share one and hold the SQL, one
text for both (`?` placeholders; PostgreSQL's turns them into `%s`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentmap.server._filters import Filter

__all__ = ["Database", "Tx", "Where"]


class Tx(Protocol):
    """One transaction: run a statement, get its rows (as dicts) or its row count."""

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    def count(self, sql: str, args: Sequence[Any] = ()) -> int: ...


@dataclass(frozen=True, slots=True)
class Where:
    """The conditions a statement on one kind of row selects by (joined by `AND`), with their arguments.

    Each part of the store reads its rows through one method that takes a `Where` (`ThreadRows._select`,
    `RunRows._select`, `CronRows._select`): a condition every read of a kind must meet (a user's filter, say)
    is added there once.
    """

    conditions: tuple[str, ...] = ()
    args: tuple[Any, ...] = ()

    def also(self, condition: str, *args: Any) -> Where:
        """These conditions and `condition` (its `?` placeholders taking `args`)."""
        return Where((*self.conditions, condition), (*self.args, *args))

    def both(self, other: Where) -> Where:
        """These conditions and `other`'s."""
        return Where((*self.conditions, *other.conditions), (*self.args, *other.args))

    @property
    def sql(self) -> str:
        """The `WHERE` clause (with a space before it), or nothing when there is no condition."""
        return f" WHERE {' AND '.join(self.conditions)}" if self.conditions else ""


class Database:
    """A transaction and the SQL that differs between the databases; the store's parts share one.

    Subclasses provide `transaction()` and, where the database needs them, `lock_thread`, `lock_events`,
    `announce`, `listen`, `unreachable` and `close`.
    """

    shared = False
    """Whether other machines read this store: then a run's events are written to it for their followers."""
    claim_lock = ""
    """The clause that keeps two replicas from selecting one run at once (SQLite's writer lock already does)."""
    next_seq = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM agentmap_runs)"
    """The queue number of a run accepted now."""
    clock = "((julianday('now') - 2440587.5) * 86400.0)"
    """The database's time now, in seconds since 1970 (what a run's lease is set and compared in)."""

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        """A transaction that may write (serialised against other writers); committed when the block ends, rolled
        back when it raises."""
        raise NotImplementedError
        yield  # pragma: no cover

    def matching(self, column: str, wanted: Filter) -> Where:
        """The conditions that a row's JSON `column` (its metadata) passes a user's filter (`_filters.Filter`): the
        SQL of each database's JSON functions; a row whose column is no JSON passes none."""
        raise NotImplementedError

    def lock_thread(self, tx: Tx, thread_id: str) -> None:
        """Hold `thread_id` against other writers until the transaction ends (SQLite's writer lock already does)."""

    def lock_events(self, tx: Tx, run_id: str) -> None:
        """Hold the numbering of `run_id`'s events until the transaction ends (SQLite's writer lock already does)."""

    def announce(self, tx: Tx, what: str) -> None:
        """Tell the other replicas (PostgreSQL `NOTIFY`); nothing to tell on one machine."""

    async def listen(self, wake: Callable[[str], None]) -> None:
        """Call `wake(what)` on every change another replica makes, until cancelled; on one machine there is
        none to hear of, and this returns at once."""

    def unreachable(self, exc: BaseException) -> bool:
        """Whether `exc` says the database cannot be reached now (a lost connection), not that a run failed."""
        return False

    def close(self) -> None:
        """Close the connections."""
