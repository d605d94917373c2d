"""The run store's base: one transaction interface over SQLite and PostgreSQL, and what every row kind shares.

`Store` (`_store.py`) is made of the row kinds: runs and the queue (`_store.py`), threads (`_store_threads.py`),
crons and webhook deliveries (`_store_crons.py`). Each builds on `StoreBase`: `_tx()` (a transaction), the
thread lock, the wake-up of other replicas, which the database subclasses (`_sqlitestore.py`, `_pgstore.py`)
provide.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from agentmap.runtime.values import repaired

__all__ = ["RunStatus", "ServerThreadStatus", "StoreBase", "column", "decoded", "now"]

_log = logging.getLogger("agentmap.server")

RunStatus = Literal["pending", "running", "success", "error", "interrupted"]
"""A served run's status (`csv_specs/serve.md`): queued, claimed by a replica, or how it ended."""

ServerThreadStatus = Literal["idle", "busy", "interrupted", "error"]
"""A served thread's status: no run, a run in progress, paused (or cut short), or its last run failed."""


def now() -> str:
    """The time now, as LangGraph's server writes it (ISO 8601, UTC)."""
    return datetime.now(UTC).isoformat()


class _Tx(Protocol):
    """One transaction: run a statement, get its rows (as dicts) or its row count."""

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    def count(self, sql: str, args: Sequence[Any] = ()) -> int: ...


class StoreBase:
    """The transaction hooks every row kind of the store uses (the SQL shared by both databases).

    Subclasses provide `_tx()` (a transaction that may write: serialised against other writers) and
    `_lock_thread` (hold a thread's row until the transaction ends), and `_claim_lock` (the clause that
    keeps two replicas from selecting one run at once).
    """

    _claim_lock = ""
    shared = False
    """Whether other machines read this store: then a run's events are written to it for their followers."""
    _next_seq = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM agentmap_runs)"
    _clock = "((julianday('now') - 2440587.5) * 86400.0)"
    """The database's time now, in seconds since 1970 (what a run's lease is set and compared in)."""

    @contextmanager
    def _tx(self) -> Iterator[_Tx]:
        raise NotImplementedError
        yield  # pragma: no cover

    def _lock_thread(self, tx: _Tx, thread_id: str) -> None:
        """Hold `thread_id` against other writers until the transaction ends (SQLite's writer lock already does)."""

    def _lock_events(self, tx: _Tx, run_id: str) -> None:
        """Hold the numbering of `run_id`'s events until the transaction ends (SQLite's writer lock already does)."""

    def unreachable(self, exc: BaseException) -> bool:
        """Whether `exc` says the database cannot be reached now (a lost connection), not that a run failed."""
        return False

    def close(self) -> None:
        """Close the connections."""

    def wait_for_news(self) -> Any:
        """An awaitable source of wake-ups from other replicas (None: there are none, one process serves)."""
        return None

    def _announce(self, tx: _Tx, what: str) -> None:
        """Tell the other replicas (PostgreSQL `NOTIFY`); nothing to tell on one machine."""


_UNFINISHED_OF_THREAD = "SELECT run_id FROM agentmap_runs WHERE thread_id = ? AND status IN ('pending', 'running')"


def decoded(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row with its JSON columns read (by `column`)."""
    data = dict(row)
    for key in ("metadata", "request", "result"):
        if key in data:
            data[key] = column(row, key, {} if key == "metadata" else None)
    if "stateless" in data:
        data["stateless"] = bool(data["stateless"])
    return data


def column(row: Mapping[str, Any], key: str, empty: Any = None) -> Any:
    """The JSON column `key` of a stored row, read so that one damaged record cannot fail every answer listing it.

    Text that is not JSON is read as `empty`; a lone surrogate (a thread's metadata took them before request bodies
    were checked, and no answer can carry one) is replaced by U+FFFD. Either is logged, naming the row.
    """
    text = row[key]
    if not text:
        return empty
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        _log.warning("%s: its %s is not JSON (%s), so it is answered as %r", _named(row), key, exc, empty)
        return empty
    if _SURROGATE_ESCAPE.search(text):  # json.dumps writes every character beyond U+FFFF as two of these too
        value, changed = repaired(value)
        if changed:
            _log.warning(
                "%s: its %s holds lone surrogates (stored before bodies were checked), answered as U+FFFD; "
                "delete it or write it again to clear this",
                _named(row),
                key,
            )
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _named(row: Mapping[str, Any]) -> str:
    for kind in ("run", "cron", "thread"):
        if row.get(f"{kind}_id"):
            return f"{kind} {row[f'{kind}_id']}"
    return "a stored row"
