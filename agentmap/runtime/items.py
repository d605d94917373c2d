"""`item_store`: the LangGraph store kept beside the checkpoints (memory, a SQLite file, a PostgreSQL database),
opened through the same connections and checks as the checkpointer (`checkpoint.py`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

__all__ = ["item_store"]


def item_store(value: str | None = None, *, lazy: bool = False) -> Any:
    """The LangGraph store kept beside the checkpoints of `value`: memory that outlives a thread.

    The same `value` as `checkpointer`: `"memory"` an in-memory store, a SQLite file a store in that file
    (its own tables), a `postgresql://` URL a store in that database (the process's pool). Nodes reach it as
    LangGraph's `get_store()`; `agentmap serve` offers it as the `/store` endpoints.

    With `lazy`, nothing is opened until a node first uses the store (a run whose nodes never do pays nothing).

    Raises:
        ConfigError: As `checkpointer`.
    """
    if lazy:
        return _opened_on_first_use(value)
    # Here, not at the top: a run whose nodes never use the lazy store loads none of the savers' code.
    from agentmap.runtime.checkpoint import _POSTGRES, checkpoint_target, sqlite_path

    target = checkpoint_target(value)
    if target.strip().lower() == "memory":
        from langgraph.store.memory import InMemoryStore

        return InMemoryStore()
    if target.startswith(_POSTGRES):
        return _postgres_store(target)
    return _sqlite_store(sqlite_path(target) or Path(target))


def _opened_on_first_use(value: str | None) -> Any:
    from langgraph.store.base import BaseStore

    class OpenedOnFirstUse(BaseStore):
        """`item_store(value)`, opened by the first operation."""

        def __init__(self) -> None:
            self._store: Any = None
            self._lock = threading.Lock()

        def _opened(self) -> Any:
            with self._lock:
                if self._store is None:
                    self._store = item_store(value)
                return self._store

        def batch(self, ops: Any) -> Any:
            return self._opened().batch(ops)

        async def abatch(self, ops: Any) -> Any:
            return await self._opened().abatch(ops)

    return OpenedOnFirstUse()


def _sqlite_store(path: Path) -> Any:
    from agentmap.runtime.checkpoint import _need, _on_sqlite

    _need("langgraph.store.sqlite", "sqlite")
    from langgraph.store.sqlite import SqliteStore

    return _on_sqlite(path, "the store in", SqliteStore, autocommit=True)


def _postgres_store(url: str) -> Any:
    from agentmap.runtime.checkpoint import _need, _on_postgres

    _need("langgraph.store.postgres", "postgres")
    from langgraph.store.postgres import PostgresStore

    return _on_postgres(url, "store", PostgresStore)
