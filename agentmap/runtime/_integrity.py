"""Damaged checkpoints are found, named and never resumed: every record carries a checksum of its bytes.

Every value the savers AgentMap makes write (a checkpoint, a channel's value, a node's pending write) goes
through the serializer, which stores it as `(kind + "+b2", digest + bytes)`: a 16-byte BLAKE2b digest of what
was written, checked on every read. Records written before checksums (a bare kind) are read as they are.

A record whose digest does not match, or that does not decode, raises `CorruptCheckpointError`
(`corrupt-checkpoint`). The sync savers (`_Verified`) then name the thread, the damaged checkpoint and its
step, and the newest checkpoint of the thread that still reads whole, with the command that continues from
it. A SQLite file too damaged to read at all is the same error, naming the file.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from agentmap.errors import ConfigError, CorruptCheckpointError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import CheckpointTuple

__all__ = ["CorruptCheckpointError", "Verified", "damaged_file", "is_damage", "sealed", "unsealed"]

_TAG = "+b2"
_DIGEST = 16


def _digest(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=_DIGEST).digest()


def sealed(kind: str, raw: bytes) -> tuple[str, bytes]:
    """A serialized value with the checksum of its bytes in front (and its kind saying so)."""
    return kind + _TAG, _digest(raw) + raw


def unsealed(data: tuple[str, bytes], load: Callable[[tuple[str, bytes]], Any]) -> Any:
    """`load` of the value inside `data`, its checksum checked first (a record without one is loaded as is).

    Raises:
        CorruptCheckpointError: The bytes differ from those written, or they do not decode.
    """
    kind, raw = data
    if kind.endswith(_TAG):
        raw = bytes(raw)
        digest, raw = raw[:_DIGEST], raw[_DIGEST:]
        if _digest(raw) != digest:
            raise CorruptCheckpointError("a saved record's bytes do not match the checksum they were written with")
        kind = kind.removesuffix(_TAG)
    try:
        return load((kind, raw))
    except ConfigError:
        raise
    except Exception as exc:  # whatever a damaged record makes the decoder raise
        raise CorruptCheckpointError(f"a saved record does not decode ({type(exc).__name__}: {exc})") from None


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite's `exc` says its file is damaged (not locked, busy, full or refused by a constraint)."""
    text = str(exc).lower()
    if type(exc) is sqlite3.DatabaseError or "could not decode" in text:
        return True
    # the tables the saver made at open no longer have their columns: the file's schema itself was damaged
    return isinstance(exc, sqlite3.OperationalError) and text.startswith(("no such column", "no such table"))


def damaged_file(exc: sqlite3.DatabaseError, where: str) -> CorruptCheckpointError:
    """The error for a SQLite file that SQLite itself finds damaged (`where` names it)."""
    return CorruptCheckpointError(
        f"the checkpoint file {where} is damaged: {exc}",
        hint="restore it from a copy, or recover what it holds with `sqlite3 FILE .recover`; start new runs on "
        "another file",
    )


class Verified:
    """Sync saver methods that turn a damaged record into a `CorruptCheckpointError` naming what to do."""

    _where: str = "database"

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        try:
            return super().get_tuple(config)  # type: ignore[misc, no-any-return]
        except Exception as exc:
            raise self._named(config, exc) from None

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        try:
            yield from super().list(config, **kwargs)  # type: ignore[misc]
        except Exception as exc:
            raise self._named(config, exc) from None

    def _named(self, config: RunnableConfig | None, exc: Exception) -> Exception:
        """What reading `config` raised, a damaged record (or metadata that does not decode) named."""
        if isinstance(exc, sqlite3.DatabaseError):
            return self._damaged(exc)
        if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):  # metadata that is not JSON, say
            exc = CorruptCheckpointError(f"a saved record does not decode ({type(exc).__name__}: {exc})")
        if isinstance(exc, CorruptCheckpointError) and config:
            return self._located(config, exc)
        return exc

    def put(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        try:
            return super().put(*args, **kwargs)  # type: ignore[misc, no-any-return]
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().put_writes(*args, **kwargs)  # type: ignore[misc]
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def _damaged(self, exc: sqlite3.DatabaseError) -> Exception:
        return damaged_file(exc, self._where) if is_damage(exc) else exc

    def _located(self, config: RunnableConfig, exc: CorruptCheckpointError) -> CorruptCheckpointError:
        """`exc` naming the thread, the damaged checkpoint and its step, and the newest one that reads whole."""
        configurable = config.get("configurable", {})
        thread_id = str(configurable.get("thread_id", ""))
        ns = str(configurable.get("checkpoint_ns", ""))
        damaged: tuple[str, Any] | None = None
        good: tuple[str, Any] | None = None
        for checkpoint_id, step in self._history(thread_id, ns):
            try:
                super().get_tuple(  # type: ignore[misc]
                    {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}
                )
            except Exception:  # damaged, or refused: not one to go on from
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

    def set_aside_damaged(self, thread_id: str, checkpoint_id: str) -> builtins.list[str]:
        """Move the thread's damaged checkpoints newer than `checkpoint_id` (and their pending writes) into
        `agentmap_damaged_checkpoints` / `agentmap_damaged_writes`, kept for inspection, so that the thread can
        go on from `checkpoint_id`; returns their ids. Checkpoints that read whole stay where they are."""
        moved: builtins.list[str] = []
        for newer, _ in self._history(thread_id, ""):
            if newer <= checkpoint_id:
                break
            try:
                super().get_tuple(  # type: ignore[misc]
                    {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": newer}}
                )
            except Exception:
                moved.append(newer)
        if moved:
            self._move(thread_id, moved)
        return moved

    def _move(self, thread_id: str, ids: builtins.list[str]) -> None:
        postgres = hasattr(self, "_cursor")
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

    def _history(self, thread_id: str, ns: str) -> builtins.list[tuple[str, Any]]:
        """The thread's checkpoint ids and steps, newest first, read without decoding any record."""
        postgres = hasattr(self, "_cursor")
        query = (
            "SELECT checkpoint_id, metadata FROM checkpoints WHERE thread_id = {0} AND checkpoint_ns = {0} "
            "ORDER BY checkpoint_id DESC"
        ).format("%s" if postgres else "?")
        if postgres:
            with self._cursor() as cur:  # type: ignore[attr-defined]
                rows = [(r["checkpoint_id"], r["metadata"]) for r in cur.execute(query, (thread_id, ns)).fetchall()]
        else:
            with self.cursor(transaction=False) as cur:  # type: ignore[attr-defined]
                rows = builtins.list(cur.execute(query, (thread_id, ns)).fetchall())
        return [(str(checkpoint_id), _step(metadata)) for checkpoint_id, metadata in rows]


def _step(metadata: Any) -> Any:
    if isinstance(metadata, bytes | str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return "unknown"
    return metadata.get("step", "unknown") if isinstance(metadata, dict) else "unknown"
