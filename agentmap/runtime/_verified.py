"""The savers AgentMap makes check what they read and name what is wrong: a record that does not match its
checksum or was written elsewhere (`_integrity.py`), a row missing from its thread (`_heads.py`), or a SQLite file
SQLite finds damaged, is `CorruptCheckpointError` (`corrupt-checkpoint`, exit 2) naming the thread, what is
wrong, and how to go on (the newest checkpoint that reads whole, or a copy of the file); never a resume from an
earlier step that runs finished nodes again, nor a traceback.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentmap.errors import AgentMapError, CorruptCheckpointError
from agentmap.runtime import _heads
from agentmap.runtime._integrity import (
    SEAL,
    binding,
    check_row,
    check_tuple,
    checkpoint_keys,
    opening,
    write_keys,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import CheckpointTuple

__all__ = ["Verified", "damaged_file", "is_damage"]


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite's `exc` says its file is damaged (not locked, busy, full or refused by a constraint)."""
    text = str(exc).lower()
    if type(exc) is sqlite3.DatabaseError or "could not decode" in text or "malformed" in text:
        return True
    # the tables the saver made at open no longer have their columns: the file's schema itself was damaged
    return isinstance(exc, sqlite3.OperationalError) and text.startswith(("no such column", "no such table"))


def damaged_file(exc: sqlite3.DatabaseError, where: str, thread_id: str | None = None) -> CorruptCheckpointError:
    """The error for a SQLite file that SQLite itself finds damaged (`where` names it; `thread_id` the thread
    being read, if any)."""
    reading = f"thread {thread_id!r}: " if thread_id else ""
    return CorruptCheckpointError(
        f"{reading}the checkpoint file {where} is damaged: {exc}",
        hint="restore it from a copy, or recover what it holds with `sqlite3 FILE .recover`; start new runs on "
        "another file",
    )


def _where_of(config: RunnableConfig | None) -> tuple[str, str]:
    configurable = (config or {}).get("configurable", {})
    return str(configurable.get("thread_id", "")), str(configurable.get("checkpoint_ns", ""))


class Verified:
    """Sync saver methods that seal each record with its key, check what they read, and turn damage into a
    `CorruptCheckpointError` naming what to do (mixed into LangGraph's SQLite and PostgreSQL savers)."""

    _where: str = "database"

    @property
    def _postgres(self) -> bool:
        return hasattr(self, "_cursor")

    def setup(self) -> None:
        super().setup()  # type: ignore[misc]
        if self.__dict__.get("_agentmap_heads"):
            return
        if self._postgres:
            from langgraph.checkpoint.postgres import _internal

            with _internal.get_connection(self.conn) as conn:  # type: ignore[attr-defined]
                _heads.install(self, conn)
        else:
            _heads.install(self, self.conn)  # type: ignore[attr-defined]
        self.__dict__["_agentmap_heads"] = True

    # -- reading ------------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config.get("configurable", {})
        if not configurable.get("checkpoint_id"):  # the thread opened at its latest: is anything missing?
            self._check_head(config)
        try:
            return self._read(config)
        except Exception as exc:
            raise self._named(config, exc) from None

    def _read(self, config: RunnableConfig) -> CheckpointTuple | None:
        """LangGraph's `get_tuple`, each record checked to be where it was written."""
        if self._postgres:  # each row is checked as it is loaded (`_load_checkpoint_tuple`)
            return super().get_tuple(config)  # type: ignore[misc, no-any-return]
        with opening() as opened:
            item: CheckpointTuple | None = super().get_tuple(config)  # type: ignore[misc]
        check_tuple(item, opened)
        return item

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        try:
            with contextlib.closing(super().list(config, **kwargs)) as inner:  # type: ignore[misc]
                while True:
                    with opening() as opened:
                        item = next(inner, None)
                    if item is None:
                        return
                    if not self._postgres:
                        check_tuple(item, opened)
                    yield item
        except Exception as exc:
            raise self._named(config, exc) from None

    def _load_checkpoint_tuple(self, value: Any) -> CheckpointTuple:
        """(PostgreSQL) a row LangGraph read, checked before it is loaded."""
        check_row(value)
        return super()._load_checkpoint_tuple(value)  # type: ignore[misc, no-any-return]

    def _check_head(self, config: RunnableConfig) -> None:
        thread_id, ns = _where_of(config)
        try:
            problem = _heads.check(self, thread_id, ns)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc, config) from None
        if problem is None:
            return
        copy = f"restore the {'database' if self._postgres else 'checkpoint file'} from a copy made after its last step"
        if problem.go_on_from:
            then = f" ({problem.reruns})" if problem.reruns else ""
            hint = f"{copy}, or go on from what is there{then}: agentmap resume {thread_id} --from-checkpoint " + str(
                problem.go_on_from
            )
        else:
            hint = f"{copy}, or start the run again (agentmap run FILE --thread {thread_id} --restart)"
        raise CorruptCheckpointError(f"thread {thread_id!r}: {problem.text}; it was not resumed", hint=hint)

    def _named(self, config: RunnableConfig | None, exc: Exception) -> Exception:
        """What reading `config` raised, a damaged record (or metadata that does not decode) named."""
        if isinstance(exc, sqlite3.DatabaseError):
            return self._damaged(exc, config)
        if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):  # metadata that is not JSON, say
            exc = CorruptCheckpointError(f"a saved record does not decode ({type(exc).__name__}: {exc})")
        elif isinstance(exc, TypeError | AttributeError | KeyError | ValueError) and not isinstance(
            exc, AgentMapError
        ):  # a row whose columns hold what LangGraph never writes (text for bytes, a NULL type)
            exc = CorruptCheckpointError(f"a saved row does not read ({type(exc).__name__}: {exc})")
        if isinstance(exc, CorruptCheckpointError):
            config = config or self._first_damaged()  # listing every thread: which one is damaged
            return self._located(config, exc) if config else exc
        return exc

    def _first_damaged(self) -> RunnableConfig | None:
        """The first thread with a checkpoint that does not read whole (what a listing of all threads ran into)."""
        with contextlib.suppress(Exception):
            for thread_id in self._thread_ids():
                if any(not self._reads_whole(thread_id, "", c) for c, _, _ in self._history(thread_id, "")):
                    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        return None

    def _thread_ids(self) -> builtins.list[str]:
        query = "SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id"
        if self._postgres:
            with self._cursor() as cur:  # type: ignore[attr-defined]
                return [str(r["thread_id"]) for r in cur.execute(query).fetchall()]
        with self.cursor(transaction=False) as cur:  # type: ignore[attr-defined]
            return [str(r[0]) for r in cur.execute(query).fetchall()]

    def _located(self, config: RunnableConfig, exc: CorruptCheckpointError) -> CorruptCheckpointError:
        """`exc` naming the thread, the damaged checkpoint and its step, and the newest one that reads whole."""
        thread_id, ns = _where_of(config)
        damaged: tuple[str, Any] | None = None
        good: tuple[str, Any] | None = None
        for checkpoint_id, step, _ in self._history(thread_id, ns):
            if not self._reads_whole(thread_id, ns, checkpoint_id):
                damaged = damaged or (checkpoint_id, step)
                continue
            if damaged is not None:
                good = (checkpoint_id, step)
                break
        where = f"thread {thread_id!r}"
        if damaged is not None:
            where += f": checkpoint {damaged[0]} (step {damaged[1]})"
        if good is None:
            hint = "no earlier checkpoint of the thread reads whole: start the run again on a new thread (--restart)"
        else:
            hint = (
                f"continue from the last good checkpoint (step {good[1]}): agentmap resume {thread_id} "
                f"--from-checkpoint {good[0]}"
            )
        return CorruptCheckpointError(f"{where} is damaged: {exc.message}; it was not resumed", hint=hint)

    def _reads_whole(self, thread_id: str, ns: str, checkpoint_id: str) -> bool:
        try:
            self._read({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}})
        except Exception:  # damaged, misplaced, or refused: not one to go on from
            return False
        return True

    # -- writing ------------------------------------------------------------------------------------

    def put(self, config: RunnableConfig, checkpoint: Any, metadata: Any, new_versions: Any) -> RunnableConfig:
        pairs, seal = checkpoint_keys(config, checkpoint, new_versions, postgres=self._postgres)
        if seal is not None:
            metadata = {**metadata, SEAL: seal}
        try:
            with binding(pairs):
                return super().put(config, checkpoint, metadata, new_versions)  # type: ignore[misc, no-any-return]
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def put_writes(self, config: RunnableConfig, writes: Any, task_id: str, task_path: str = "") -> None:
        try:
            with binding(write_keys(config, writes, task_id)):
                super().put_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)  # type: ignore[misc]
        _heads.forget(self, str(thread_id))

    def _damaged(self, exc: sqlite3.DatabaseError, config: RunnableConfig | None = None) -> Exception:
        if not is_damage(exc):
            return exc
        thread_id, _ = _where_of(config)
        return damaged_file(exc, self._where, thread_id or None)

    # -- going on from a chosen checkpoint ----------------------------------------------------------

    def set_aside_damaged(self, thread_id: str, checkpoint_id: str) -> builtins.list[str]:
        """Make thread `thread_id` ready to go on from `checkpoint_id`: its checkpoints newer than it that are
        damaged or misplaced, and those that came after them, move (with their pending writes) into
        `agentmap_damaged_checkpoints` / `agentmap_damaged_writes`, kept for inspection; the rows left are taken
        as they are (its heads counted anew). Returns the ids moved; checkpoints that read whole stay."""
        moved: builtins.list[str] = []
        newer = [(c, parent) for c, _, parent in self._history(thread_id, "") if c > checkpoint_id]
        for newer_id, parent in reversed(newer):  # oldest first, so that what came after a moved one moves too
            if parent in moved or not self._reads_whole(thread_id, "", newer_id):
                moved.append(newer_id)
        if moved:
            self._move(thread_id, moved)
        _heads.recount(self, thread_id)
        return moved

    def _move(self, thread_id: str, ids: builtins.list[str]) -> None:
        postgres = self._postgres
        mark = "%s" if postgres else "?"
        for table, aside in (
            ("checkpoints", "agentmap_damaged_checkpoints"),
            ("checkpoint_writes" if postgres else "writes", "agentmap_damaged_writes"),
        ):
            make = (
                f"CREATE TABLE IF NOT EXISTS {aside} (LIKE {table})"
                if postgres
                else f"CREATE TABLE IF NOT EXISTS {aside} AS SELECT * FROM {table} WHERE 0"
            )
            where = f"WHERE thread_id = {mark} AND checkpoint_ns = '' AND checkpoint_id = {mark}"
            statements: builtins.list[tuple[str, tuple[str, ...]]] = [(make, ())]
            for checkpoint_id in ids:
                statements += [
                    (f"INSERT INTO {aside} SELECT * FROM {table} {where}", (thread_id, checkpoint_id)),
                    (f"DELETE FROM {table} {where}", (thread_id, checkpoint_id)),
                ]
            if postgres:
                with self._cursor() as cur:  # type: ignore[attr-defined]
                    for sql, args in statements:
                        cur.execute(sql, args)
            else:
                with self.cursor() as cur:  # type: ignore[attr-defined]  # one transaction, committed at the end
                    for sql, args in statements:
                        cur.execute(sql, args)

    def _history(self, thread_id: str, ns: str) -> builtins.list[tuple[str, Any, Any]]:
        """The thread's checkpoint ids, steps and parents, newest first, read without decoding any record."""
        postgres = self._postgres
        query = (
            "SELECT checkpoint_id, metadata, parent_checkpoint_id FROM checkpoints WHERE thread_id = {0} "
            "AND checkpoint_ns = {0} ORDER BY checkpoint_id DESC"
        ).format("%s" if postgres else "?")
        if postgres:
            with self._cursor() as cur:  # type: ignore[attr-defined]
                found = cur.execute(query, (thread_id, ns)).fetchall()
                rows = [(r["checkpoint_id"], r["metadata"], r["parent_checkpoint_id"]) for r in found]
        else:
            with self.cursor(transaction=False) as cur:  # type: ignore[attr-defined]
                rows = builtins.list(cur.execute(query, (thread_id, ns)).fetchall())
        return [(str(checkpoint_id), _step(metadata), parent) for checkpoint_id, metadata, parent in rows]


def _step(metadata: Any) -> Any:
    if isinstance(metadata, bytes | str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return "unknown"
    return metadata.get("step", "unknown") if isinstance(metadata, dict) else "unknown"
