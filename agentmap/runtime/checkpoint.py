"""Checkpointers named by a string: `"memory"`, `"runs.db"`, `"sqlite:path"`, `"postgresql://..."`.

LangGraph's savers do the storing; this module turns a short name into one, so a config file or a
command line can ask for persistence without writing Python, and gives every saver it makes the
allow-list serializer (a checkpoint that names any Python object outside the list is refused, never built).

```python
saver = agentmap.checkpointer("runs.db")             # sync runs, and async runs (its I/O in a worker thread)
async with agentmap.async_checkpointer("postgresql://u@host/db") as saver:   # the same, opened and closed
    ...
```
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap._paths import state_file
from agentmap.agents._checkpoint_saves import settle
from agentmap.errors import ConfigError, ErrorCode
from agentmap.runtime._integrity import CorruptCheckpointError
from agentmap.runtime._serializer import UnsafeCheckpointError, safe_serializer
from agentmap.runtime._verified import Verified, damaged_file, is_damage

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import CheckpointTuple

__all__ = [
    "DEFAULT_CHECKPOINT",
    "CorruptCheckpointError",
    "UnsafeCheckpointError",
    "async_checkpointer",
    "checkpoint_exists",
    "checkpoint_target",
    "checkpointer",
    "close_pools",
    "is_postgres",
    "redacted",
    "resolve_checkpointer",
    "safe_serializer",
    "sqlite_path",
    "state_file",
]

DEFAULT_CHECKPOINT = ".agentmap/runs.db"
"""Where `agentmap run --thread` saves runs unless `--checkpoint`, `AGENTMAP_CHECKPOINT` or `AGENTMAP_STATE_DIR`
says otherwise (`state_file("runs.db")`)."""

_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_POSTGRES = ("postgresql://", "postgres://")


def is_postgres(value: str) -> bool:
    """Whether a checkpointer string is a PostgreSQL URL (`postgresql://...`, `postgres://...`)."""
    return value.startswith(_POSTGRES)


def sqlite_path(value: str) -> Path | None:
    """The SQLite file a checkpointer string names (`x.db`, `x.sqlite`, `sqlite:x`), or None for other strings."""
    if value.startswith("sqlite:"):
        return Path(value.removeprefix("sqlite:"))
    return Path(value) if value.lower().endswith(_SUFFIXES) else None


def checkpoint_target(value: str | None, *, create: bool = True) -> str:
    """The checkpoint to use: `value`, else `AGENTMAP_CHECKPOINT`, else `runs.db` of AgentMap's own folder
    (`state_file`: `$AGENTMAP_STATE_DIR`, else `.agentmap/`; made unless `create` is false)."""
    chosen = value or os.environ.get("AGENTMAP_CHECKPOINT") or ""
    if chosen:
        return chosen
    default = state_file("runs.db")
    if create:
        default.parent.mkdir(parents=True, exist_ok=True)
    return str(default)


def checkpoint_exists(value: str | None) -> bool:
    """Whether the checkpoint `value` names may hold threads (false for a SQLite file not made yet)."""
    target = checkpoint_target(value, create=False)
    if target.strip().lower() == "memory" or target.startswith(_POSTGRES):
        return True
    return (sqlite_path(target) or Path(target)).is_file()


def checkpointer(value: str | None = None) -> Any:
    """A LangGraph saver for `value`, usable by sync and async runs alike.

    Args:
        value: `"memory"`, a SQLite file (`runs.db`, `x.sqlite`, `sqlite:PATH`, any other path is taken as a
            SQLite file too), or a Postgres URL (`postgresql://...`, needs the `postgres` extra). None uses
            `AGENTMAP_CHECKPOINT`, else `.agentmap/runs.db`.

    Returns:
        A `SqliteSaver` or `PostgresSaver` (with the allow-list serializer) whose async methods run its sync
        ones in a worker thread, so `ainvoke`/`astream` work too (`async_checkpointer` opens it from async code).

    Raises:
        ConfigError: The file's folder does not exist, the database cannot be opened, or an extra is missing.
    """
    target = checkpoint_target(value)
    if target.strip().lower() == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver(serde=safe_serializer())
    if target.startswith(_POSTGRES):
        return _postgres_saver(target)
    return _sqlite_saver(sqlite_path(target) or Path(target))


def resolve_checkpointer(value: Any) -> Any:
    """A LangGraph checkpointer for `value` (what `agentmap.compile(checkpointer=...)` accepts).

    Args:
        value: `"memory"`, a path ending in `.db`/`.sqlite`, `sqlite:PATH` or a `postgresql://` URL (see
            `checkpointer`), or anything else, returned unchanged (a saver object, None, True/False for subgraphs).

    Raises:
        ConfigError: An unknown name, a file in a folder that does not exist or cannot be opened, or an extra
            missing.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.lower() != "memory" and not text.startswith(_POSTGRES) and not sqlite_path(text):
        raise ConfigError(
            f"unknown checkpointer {value!r}",
            code=ErrorCode.BAD_CHECKPOINTER,
            hint='use "memory", a SQLite file path ending in .db or .sqlite, "sqlite:PATH", a postgresql:// URL, '
            "or a LangGraph saver",
        )
    return checkpointer(text)


@asynccontextmanager
async def async_checkpointer(value: str | None = None) -> AsyncIterator[Any]:
    """The saver `checkpointer(value)` makes, for code on an event loop: opened in a worker thread, closed on exit.

    Its async methods run their SQL in worker threads, so its I/O never blocks the loop, and it keeps what the
    runtime keeps beside checkpoints: the call journal, checksums and the answer claim (`csv_specs/llm.md`,
    `csv_specs/human.md`), as every saver AgentMap makes does.
    """
    saver = await asyncio.to_thread(checkpointer, value)
    try:
        yield saver
    finally:
        conn = getattr(saver, "conn", None)
        if isinstance(conn, sqlite3.Connection):  # a Postgres saver draws on the process's pool, closed at exit
            await asyncio.to_thread(conn.close)


# -- savers -------------------------------------------------------------------------------------


class _ThreadedAsync:
    """Async methods for a sync saver: the same SQL, run in a worker thread (never a raw NotImplementedError)."""

    # `self` is the saver this class is mixed into (see `_saver_class`), which has the sync methods.
    async def aget_tuple(self: Any, config: RunnableConfig) -> CheckpointTuple | None:
        result: CheckpointTuple | None = await asyncio.to_thread(self.get_tuple, config)
        return result

    async def alist(self: Any, config: RunnableConfig | None, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        for item in await asyncio.to_thread(lambda: list(self.list(config, **kwargs))):
            yield item

    async def aput(self: Any, *args: Any, **kwargs: Any) -> RunnableConfig:
        result: RunnableConfig = await asyncio.to_thread(self.put, *args, **kwargs)
        return result

    async def aput_writes(self: Any, *args: Any, **kwargs: Any) -> None:
        await asyncio.to_thread(self.put_writes, *args, **kwargs)

    async def adelete_thread(self: Any, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)


class _Announced:
    """`put` announces each checkpoint it saved (or failed to): a node's model and tool calls wait for the
    checkpoint its step started from (agents/_checkpoint_saves.py), woken at once instead of asking the store."""

    announces_saves = True

    def put(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        config, checkpoint = [*args, kwargs.get("config"), kwargs.get("checkpoint")][:2]
        try:
            result: RunnableConfig = super().put(*args, **kwargs)  # type: ignore[misc]
        except BaseException:
            settle(config, checkpoint, saved=False)
            raise
        settle(config, checkpoint, saved=True)
        return result


def _saver_class(base: type, where: str) -> type:
    """`base` with async methods over its sync ones, damaged records named (`where`: its file or database), and
    each checkpoint it saves announced."""
    bases = (_ThreadedAsync, _Announced, Verified, base)
    return type(f"AgentMap{base.__name__}", bases, {"__module__": __name__, "_where": where})


def _checked_path(path: Path) -> Path:
    folder = path.parent
    if not folder.is_dir():
        raise ConfigError(
            f"cannot open checkpoint file {path}: the folder {folder} does not exist",
            code=ErrorCode.BAD_CHECKPOINTER,
            hint="make the folder first, or name a file in an existing folder",
        )
    if path.is_dir():
        raise ConfigError(
            f"cannot open checkpoint file {path}: it is a folder", code=ErrorCode.BAD_CHECKPOINTER, hint="name a file"
        )
    return path


def _need(module: str, extra: str) -> None:
    if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
        raise ConfigError(
            f"this checkpoint needs the {extra} checkpointer ({module}), which is not installed",
            code=ErrorCode.MISSING_EXTRA,
            hint=f'pip install "agentmap[{extra}]"',
        )


def _sqlite_saver(path: Path) -> Any:
    _need("langgraph.checkpoint.sqlite", "sqlite")
    from langgraph.checkpoint.sqlite import SqliteSaver

    # SqliteSaver serialises access with its own lock, so one connection may serve LangGraph's threads
    saver_class = _saver_class(SqliteSaver, str(path))
    return _on_sqlite(path, "checkpoint file", lambda conn: saver_class(conn, serde=safe_serializer()))


def _on_sqlite(path: Path, what: str, make: Callable[[Any], Any], *, autocommit: bool = False) -> Any:
    """`make(connection)` for the SQLite file `path`, its tables set up (`.setup()`).

    Raises:
        ConfigError: The file cannot be opened or set up (`what` names it: checkpoint file, store).
    """
    _checked_path(path)
    try:
        if autocommit:  # a store that commits itself, in WAL mode beside the checkpoints
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
        else:
            conn = sqlite3.connect(path, check_same_thread=False)
        made = make(conn)
        made.setup()
    except sqlite3.DatabaseError as exc:
        if is_damage(exc):  # malformed, not a database: damage, not a wrong name
            raise damaged_file(exc, str(path)) from None
        raise ConfigError(
            f"cannot open {what} {path}: {exc}",
            code=ErrorCode.BAD_CHECKPOINTER,
            hint="name a SQLite file you can write to (a new file is created)",
        ) from None
    except sqlite3.Error as exc:
        raise ConfigError(
            f"cannot open {what} {path}: {exc}",
            code=ErrorCode.BAD_CHECKPOINTER,
            hint="name a SQLite file you can write to (a new file is created)",
        ) from None
    return made


_SETUP_LOCK = 0x41474D43  # "AGMC": the advisory lock held while the checkpoint tables are made


def _take_turns(conn: Any) -> None:
    """Hold the setup lock, asking again until it is free: a process blocked in `pg_advisory_lock` would hold
    a snapshot that the holder's `CREATE INDEX CONCURRENTLY` waits for, and neither would ever go on."""
    while not conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (_SETUP_LOCK,)).fetchone()["got"]:
        time.sleep(0.05)


_POOLS: dict[str, Any] = {}
_POOLS_LOCK = threading.Lock()


def _pool(url: str, options: dict[str, Any]) -> Any:
    """The process's connection pool for the database at `url`: one per database, shared by its savers.

    Pools live as long as the process and are closed when it exits: a pool dropped while in use would be
    closed by the garbage collector on whichever thread it happens to run, one of the pool's own included.
    """
    from psycopg_pool import ConnectionPool

    with _POOLS_LOCK:
        pool = _POOLS.get(url)
        if pool is None or pool.closed:
            if not _POOLS:
                atexit.register(close_pools)
            pool = _POOLS[url] = ConnectionPool(url, min_size=1, max_size=8, kwargs=options, open=True)
        return pool


def close_pools(url: str | None = None) -> None:
    """Close this process's connection pool of the database at `url` (every pool without `url`).

    A program that is done with a database (a test that made its own) closes its pool here, so its idle
    connections do not count against the server's `max_connections` for as long as the process lives; a saver
    of that database opened again later gets a new pool. Every pool is closed when the process exits.
    """
    with _POOLS_LOCK:
        for key in [url] if url is not None else list(_POOLS):
            pool = _POOLS.pop(key, None)
            if pool is not None:
                pool.close()


def _postgres_saver(url: str) -> Any:
    _need("langgraph.checkpoint.postgres", "postgres")
    from langgraph.checkpoint.postgres import PostgresSaver

    saver_class = _saver_class(PostgresSaver, redacted(url))
    return _on_postgres(url, "checkpoint", lambda conn: saver_class(conn, serde=safe_serializer()))


def _on_postgres(url: str, what: str, make: Callable[[Any], Any]) -> Any:
    """`make(pool)` for the database at `url`, its tables set up first by `make(connection).setup()`.

    One plain connection first: a wrong URL or a server that is down fails at once (a pool would retry for its
    whole timeout), and the tables are set up on it while processes starting together take turns.

    Raises:
        ConfigError: The database cannot be reached or set up (`what` names it: checkpoint, store).
    """
    import psycopg
    from psycopg.rows import dict_row

    options: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    try:
        with psycopg.Connection.connect(url, **options) as conn:
            _take_turns(conn)
            try:
                make(conn).setup()
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
        return make(_pool(url, options))
    except psycopg.Error as exc:
        raise ConfigError(
            f"cannot open the Postgres {what} {redacted(url)}: {str(exc).strip()}",
            code=ErrorCode.BAD_CHECKPOINTER,
            hint="check the URL (postgresql://user:password@host:port/database) and that the server runs",
        ) from None


def redacted(url: str) -> str:
    """`url` with its password (if any) shown as `***`: what errors and messages may print."""
    head, sep, tail = url.partition("@")
    if not sep or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, credentials = head.partition("//")
    return f"{scheme}//{credentials.split(':', 1)[0]}:***@{tail}"
